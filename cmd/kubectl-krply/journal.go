package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/krply/krply"
	"github.com/krply/krply/recorder"
	"github.com/krply/krply/storage/postgres"
)

// isPostgres reports whether --journal names a PostgreSQL database (a
// connection URL) instead of a SQLite file.
func isPostgres(journal string) bool {
	return strings.HasPrefix(journal, "postgres://") || strings.HasPrefix(journal, "postgresql://")
}

// openStore opens the journal --journal names: a SQLite file
// (recorder.OpenFile), or with a postgres:// URL the PostgreSQL store
// (storage/postgres), which this module brings so that the core module
// does not. A PostgreSQL journal has no read-only mode: the plugin's
// queries only read it.
func openStore(ctx context.Context, journal string, readOnly bool, opts ...krply.Option) (*krply.Journal, func() error, error) {
	if !isPostgres(journal) {
		return recorder.OpenFile(ctx, journal, readOnly, opts...)
	}
	store, err := postgres.Open(ctx, journal)
	if err != nil {
		return nil, nil, fmt.Errorf("PostgreSQL: %w", err)
	}
	j, err := krply.NewJournal(store, opts...)
	if err != nil {
		return nil, nil, errors.Join(err, store.Close())
	}
	return j, func() error { return errors.Join(j.Close(), store.Close()) }, nil
}
