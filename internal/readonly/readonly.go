// Package readonly opens a SQLite journal twice for tests: once writable,
// to write a journal, and once read-only (sqlite.WithReadOnly), to show
// what the consumers of a journal opened read-only answer and refuse.
package readonly

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/krply/krply/storage/sqlite"
)

// Journal opens a new SQLite journal in a temporary folder of t, writable
// (w) and read-only (ro). ro sees what w commits. Both are closed when t
// ends.
func Journal(t testing.TB) (w, ro *sqlite.Store) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	w, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	ro, err = sqlite.Open(ctx, path, sqlite.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ro.Close() })
	return w, ro
}
