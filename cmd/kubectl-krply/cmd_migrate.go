package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/krply/krply"
	"github.com/krply/krply/recorder"
	"github.com/krply/krply/storage/postgres"
	"github.com/krply/krply/storage/sqlite"
)

// olderJournal says that a SQLite journal's schema is older than this
// plugin's and how to migrate it; nil for any other error.
func olderJournal(path string, err error) error {
	inc, older := recorder.OlderJournal(err)
	if !older {
		return nil
	}
	return fmt.Errorf("journal %s has schema version %d, older than the %d this kubectl-krply reads, and a query never writes a journal: "+
		"migrate it once with kubectl krply migrate --journal %s (a recorder of this version also migrates it when it starts)",
		path, inc.FileVersion, inc.SupportedVersion, path)
}

func (e *env) migrateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Bring a journal written by an older krply to this version's schema",
		Long: `migrate opens the journal for writing, which brings its schema to this
version's, and closes it. Queries open a journal read-only and never
migrate it; a recorder migrates it when it starts. Migrating rebuilds
tables in one transaction, in time proportional to the journal, printing
its progress on stderr; it needs about twice the journal's size free on
its disk and refuses to start otherwise, naming both. A process of an
older krply that has the journal open fails to write it afterwards, so
stop older recorders first. A journal already at this version is left
as it is.`,
		Example: `  kubectl krply migrate --journal krply.db`,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return e.migrate(cmd.Context())
		},
	}
}

func (e *env) migrate(ctx context.Context) error {
	if e.server != "" {
		return usagef("migrate works on a journal (--journal), not on a query API (--server)")
	}
	path := e.journal
	if isPostgres(path) {
		_, closeJournal, err := openStore(ctx, path, false)
		if err != nil {
			return recorder.JournalError(path, err)
		}
		if err := closeJournal(); err != nil {
			return err
		}
		fmt.Fprintf(e.Out, "journal %s: PostgreSQL tables at schema version %d\n", recorder.Redacted(path), postgres.SchemaVersion)
		return nil
	}
	if _, err := os.Stat(path); err != nil {
		return fmt.Errorf("journal %s: %w (give --journal or KRPLY_JOURNAL)", path, errors.Unwrap(err))
	}
	// A read-only open refuses an older journal without touching it.
	_, closeJournal, err := openStore(ctx, path, true)
	if err == nil {
		if err := closeJournal(); err != nil {
			return err
		}
		fmt.Fprintf(e.Out, "journal %s: already at schema version %d, nothing to do\n", path, sqlite.SchemaVersion)
		return nil
	}
	inc, older := recorder.OlderJournal(err)
	if !older {
		return recorder.JournalError(path, err)
	}
	_, closeJournal, err = openStore(ctx, path, false, krply.WithSQLiteOptions(sqlite.WithMigrationProgress(e.migrationProgress(path))))
	if err != nil {
		return recorder.JournalError(path, err)
	}
	if err := closeJournal(); err != nil {
		return err
	}
	// Another process may have migrated it meanwhile; either way it is
	// current now.
	fmt.Fprintf(e.Out, "journal %s: at schema version %d now (it was %d)\n", path, sqlite.SchemaVersion, inc.FileVersion)
	return nil
}

// migrationProgress returns a sqlite.WithMigrationProgress callback that
// prints the migration's percent on stderr, at its start, every tenth of
// the way and at its end.
func (e *env) migrationProgress(path string) func(sqlite.MigrationProgress) {
	printed := -1
	return func(p sqlite.MigrationProgress) {
		if pct := p.Percent(); printed < 0 || pct == 100 || pct >= printed+10 {
			printed = pct - pct%10
			fmt.Fprintf(e.ErrOut, "migrating journal %s from schema version %d to %d: %d%%\n", path, p.From, p.To, pct)
		}
	}
}
