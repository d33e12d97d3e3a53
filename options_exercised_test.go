package krply_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/krply/krply"
	"github.com/krply/krply/storage/sqlite"
)

// Tests of the options no other test exercises, each asserting its effect.

// WithSQLiteOptions reaches sqlite.Open after krply's own options, so they
// override them: the store logs to the SQLite logger, not the journal's,
// that it opened with synchronous FULL; an invalid one fails Open before
// any file is made.
func TestWithSQLiteOptions(t *testing.T) {
	var journalLines, sqliteLines []string
	capture := func(to *[]string) logr.Logger {
		return funcr.New(func(_, args string) { *to = append(*to, args) }, funcr.Options{Verbosity: 1})
	}
	path := filepath.Join(t.TempDir(), "krply.db")
	j, err := krply.Open(context.Background(), path, krply.WithLogger(capture(&journalLines)),
		krply.WithSQLiteOptions(sqlite.WithSynchronous(sqlite.SyncFull), sqlite.WithLogger(capture(&sqliteLines))))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := j.Store().(*sqlite.Store); !ok {
		t.Errorf("Store() is a %T, want *sqlite.Store", j.Store())
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	opened := func(lines []string) bool {
		for _, l := range lines {
			if strings.Contains(l, `"msg"="journal opened"`) && strings.Contains(l, `"synchronous"="FULL"`) {
				return true
			}
		}
		return false
	}
	if !opened(sqliteLines) {
		t.Errorf("the SQLite logger got %q, want journal opened with synchronous FULL", sqliteLines)
	}
	if opened(journalLines) {
		t.Errorf("the journal's logger got the store's messages %q: sqlite.WithLogger should override it", journalLines)
	}

	bad := filepath.Join(t.TempDir(), "bad.db")
	if _, err := krply.Open(context.Background(), bad, krply.WithSQLiteOptions(sqlite.WithReadConnections(0))); err == nil ||
		!strings.Contains(err.Error(), "at least one read connection") {
		t.Errorf("Open with no read connection: %v, want an error naming it", err)
	}
	if _, err := os.Stat(bad); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a failed Open left %s behind (%v)", bad, err)
	}
}
