package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/storagetest"
)

// TestVersionIndexSameAnswers compares a Store answering from its
// version index with one answering from SQLite alone, on simulated
// journals written in turn by a third Store on the same file (another
// set of connections, as another process has: the index learns of its
// writes only from the journal) and by the indexed Store itself, with
// compactions by the third.
func TestVersionIndexSameAnswers(t *testing.T) {
	t.Run("whole", func(t *testing.T) { sameAnswers(t, 1) })
	// A budget of a small part of the journal's records of objects: the
	// index keeps the recent part of each history, SQLite answers the rest.
	t.Run("budget", func(t *testing.T) { sameAnswers(t, 2, sqlite.WithVersionIndex(40)) })
}

func sameAnswers(t *testing.T, seed uint64, viewOpts ...sqlite.Option) {
	ctx := context.Background()
	storagetest.SameAnswers(t, func(t *testing.T) ([]storage.Store, storage.Reader, storage.Reader) {
		path := filepath.Join(t.TempDir(), "journal.db")
		open := func(opts ...sqlite.Option) *sqlite.Store {
			s, err := sqlite.Open(ctx, path, opts...)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := s.Close(); err != nil {
					t.Error(err)
				}
			})
			return s
		}
		other := open(sqlite.WithVersionIndex(40))
		reference := open(sqlite.WithVersionIndex(0), sqlite.WithReadOnly())
		view := open(viewOpts...)
		return []storage.Store{other, view}, reference, view
	}, seed)
}
