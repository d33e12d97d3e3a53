package pgtruth

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/krply/krply/krplytest/truth"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/postgres"
	"github.com/krply/krply/storage/postgres/internal/pgtest"
	"github.com/krply/krply/storage/transfer"
)

// backend records a run into a new database of the package's PostgreSQL
// server. PostgreSQL has no read-only mode to ask for: a reader opens the
// database as a writer does and sees what others commit as they commit it.
// A failed run's journal is exported next to its oracle (storage/transfer),
// since the database goes with the server when the tests end.
var backend = truth.Backend{
	Name:       "postgres",
	Package:    "./internal/pgtruth/ (in storage/postgres)",
	NewJournal: func(t testing.TB, _ string) string { return pgtest.NewDatabase(t) },
	Open:       open,
	OpenReader: open,
	Keep: func(ctx context.Context, dsn, dir string) error {
		st, err := postgres.Open(ctx, dsn)
		if err != nil {
			return err
		}
		defer st.Close()
		f, err := os.Create(filepath.Join(dir, keptJournal))
		if err != nil {
			return err
		}
		if _, err := transfer.Export(ctx, st, f); err != nil {
			_ = f.Close()
			return fmt.Errorf("export the journal: %w", err)
		}
		return f.Close()
	},
}

// keptJournal is the export of a failed run's journal in its folder.
const keptJournal = "journal.ndjson"

func open(ctx context.Context, dsn string) (storage.Store, error) { return postgres.Open(ctx, dsn) }

func TestMain(m *testing.M) {
	if code, ok := truth.ChildMain(backend); ok {
		os.Exit(code)
	}
	os.Exit(pgtest.RunMain(m))
}

// TestTruth runs the truth test on PostgreSQL: truth.Run fails it on any
// mismatch, as on SQLite.
func TestTruth(t *testing.T) { truth.Run(t, backend) }

// TestRecheck checks the journal a failed TestTruth exported, imported
// into a new database, again with the oracle saved next to it:
// KRPLY_TRUTH_RECHECK names the folder.
func TestRecheck(t *testing.T) {
	dir := os.Getenv(truth.RecheckEnv)
	if dir == "" {
		t.Skipf("set %s to the folder a failed TestTruth kept", truth.RecheckEnv)
	}
	ctx := context.Background()
	st, err := postgres.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	f, err := os.Open(filepath.Join(dir, keptJournal))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := transfer.Import(ctx, f, st); err != nil {
		t.Fatalf("import the kept journal: %v", err)
	}
	truth.Recheck(t, st, dir)
}
