package truth

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/sqlite"
)

// sqliteBackend records a run into a SQLite journal in the run's folder;
// the check and the watch of a child's baseline open it read-only, with
// the version index on (a Store that writes has it by default), so that
// the querying processes answer from it as a query server would.
var sqliteBackend = Backend{
	Name:       "sqlite",
	Package:    "./krplytest/truth/",
	NewJournal: func(_ testing.TB, dir string) string { return filepath.Join(dir, "journal.db") },
	Open: func(ctx context.Context, journal string) (storage.Store, error) {
		return sqlite.Open(ctx, journal)
	},
	OpenReader: func(ctx context.Context, journal string) (storage.Store, error) {
		return sqlite.Open(ctx, journal, sqlite.WithReadOnly(), sqlite.WithVersionIndex(sqlite.DefaultVersionIndex))
	},
}

func TestMain(m *testing.M) {
	if code, ok := ChildMain(sqliteBackend); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// TestTruth runs the soak test (Run) on a SQLite journal, then checks that
// the checker notices every way a broken Collector, store or query would
// have written or answered that journal.
func TestTruth(t *testing.T) {
	res := Run(t, sqliteBackend)
	checkBrokenJournals(t, res.Oracle, res.Store, res.Config, res.Report)
	checkBrokenSeams(t, res.Oracle, res.Store, res.Config, res.Report)
}

// TestRecheck checks a journal kept by a failed TestTruth again, with the
// oracle saved next to it, then breaks it as TestTruth does (so that a
// failure of a broken journal's or seam's check reproduces too):
// KRPLY_TRUTH_RECHECK names the folder.
func TestRecheck(t *testing.T) {
	dir := os.Getenv(RecheckEnv)
	if dir == "" {
		t.Skipf("set %s to the folder a failed TestTruth kept", RecheckEnv)
	}
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "journal.db"), sqlite.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	o, cfg, report := recheck(t, st, dir)
	checkBrokenJournals(t, o, st, cfg, report)
	checkBrokenSeams(t, o, st, cfg, report)
}
