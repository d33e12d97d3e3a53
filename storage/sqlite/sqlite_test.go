package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/storagetest"
)

// openTemp opens a fresh journal in the test's temporary directory.
func openTemp(t testing.TB, opts ...sqlite.Option) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"), opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store { return openTemp(t) })
}

func TestCompactRandomSeeds(t *testing.T) {
	storagetest.CompactRandom(t, func(t *testing.T) storage.Store { return openTemp(t) }, 2, 5, 9)
}
