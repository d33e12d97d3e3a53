package postgres_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/postgres"
	"github.com/krply/krply/storage/postgres/internal/pgtest"
	"github.com/krply/krply/storage/storagetest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.RunMain(m)) }

var (
	dbOnce   sync.Mutex
	sharedDB string
	schemas  atomic.Int64
)

// database returns the package's test database, made on first use.
func database(t testing.TB) string {
	t.Helper()
	dbOnce.Lock()
	defer dbOnce.Unlock()
	if sharedDB == "" {
		sharedDB = pgtest.NewDatabase(&keepAlive{t})
	}
	return sharedDB
}

// keepAlive lets the shared database outlive the test that made it: the
// server is stopped after all tests anyway.
type keepAlive struct{ testing.TB }

func (k *keepAlive) Cleanup(func()) {}

// openFresh opens an empty journal: a new schema in the test database.
func openFresh(t *testing.T, opts ...postgres.Option) *postgres.Store {
	t.Helper()
	s, _ := openSchema(t, opts...)
	return s
}

// openSchema is openFresh that also returns the schema.
func openSchema(t *testing.T, opts ...postgres.Option) (*postgres.Store, string) {
	t.Helper()
	schema := fmt.Sprintf("journal_%d", schemas.Add(1))
	s, err := postgres.Open(context.Background(), database(t), append([]postgres.Option{postgres.WithSchema(schema)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, schema
}

// The tests of whole journals (the conformance suite, compaction on random
// journals, the round trip of a recorded journal, recorders in processes
// of their own, retention) run in parallel with each other, each on
// schemas of its own: the test process waits for PostgreSQL, or a control
// plane, for much of their time.

func TestConformance(t *testing.T) {
	t.Parallel()
	storagetest.Run(t, func(t *testing.T) storage.Store { return openFresh(t) })
}

func TestCompactRandom(t *testing.T) {
	t.Parallel()
	storagetest.CompactRandom(t, func(t *testing.T) storage.Store { return openFresh(t) }, 2, 5, 9)
}

// TestConformancePartitioned runs the suite on journals with partitions
// of two minutes, a few per fixture, so that Compact drops partitions
// (moving what it keeps of them to the base partition) instead of
// deleting rows: every answer about a time at or after the cut must stay
// the same all the same.
func TestConformancePartitioned(t *testing.T) {
	t.Parallel()
	open := func(t *testing.T) storage.Store { return openFresh(t, postgres.WithPartitionWidth(2*time.Minute)) }
	t.Run("Run", func(t *testing.T) { t.Parallel(); storagetest.Run(t, open) })
	t.Run("CompactRandom", func(t *testing.T) { t.Parallel(); storagetest.CompactRandom(t, open, 2, 5, 9) })
}

// plain hides every method of a store but storage.Reader's, so that the
// storage functions read timelines with Streams and Records queries
// instead of the Store's kept copy.
type plain struct{ storage.Reader }

// TestTimelinesSameAnswers compares a Store answering coverage from its
// kept timeline records with the same journal read without them, while
// the Store and another one on the same schema (another process's
// connections: the kept records learn of its writes and compactions only
// from the journal) write it in turn, on partitions of two minutes so
// that compactions drop partitions.
func TestTimelinesSameAnswers(t *testing.T) {
	t.Parallel()
	storagetest.SameAnswers(t, func(t *testing.T) ([]storage.Store, storage.Reader, storage.Reader) {
		view, schema := openSchema(t, postgres.WithPartitionWidth(2*time.Minute))
		other, err := postgres.Open(context.Background(), database(t), postgres.WithSchema(schema))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = other.Close() })
		return []storage.Store{other, view}, plain{other}, view
	}, 3)
}
