package sqlite

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/go-logr/logr"
)

// MigrationProgress is how far Open has come migrating an older journal's
// schema (WithMigrationProgress).
type MigrationProgress struct {
	// From and To are the schema versions: the file's and this package's.
	From, To int
	// Written is how many bytes the migration has written so far (its
	// write-ahead log), Expected about how many it writes in all: the
	// tables it rebuilds take about the file's size again. Expected is an
	// estimate; Written may pass it.
	Written, Expected int64
	// Done is true once the migration committed.
	Done bool
}

// Percent is Written of Expected: at most 99 until Done, 100 then.
func (p MigrationProgress) Percent() int {
	switch {
	case p.Done:
		return 100
	case p.Expected <= 0:
		return 0
	}
	return int(min(99, p.Written*100/p.Expected))
}

// WithMigrationProgress calls fn while Open migrates an older journal's
// schema: when the migration starts, about every second while it runs,
// and once it committed (Done). fn is called from another goroutine than
// Open's and must not block; it is not called when the journal needs no
// migration. Open also logs the progress, with the percent, at most every
// tenth of the way.
func WithMigrationProgress(fn func(MigrationProgress)) Option {
	return optionFunc(func(c *config) { c.migrationProgress = fn })
}

// migrationSpaceFactor is how much free space a migration needs, in
// multiples of the journal's size (the file and its write-ahead log). The
// migration to schema version 6 rebuilds the records and bodies tables in
// one transaction: the new tables go to the write-ahead log (about the
// file's size again), and the checkpoint after the commit grows the file
// by most of that before the log is emptied, so the disk holds the old
// file, the log and the grown file at once.
const migrationSpaceFactor = 2

// progressEvery is how often a migration's progress is read.
var progressEvery = time.Second

// MigrationSpaceError is returned by Open when migrating a journal's
// schema would not fit in the free space of its file system. Nothing was
// changed. It wraps ErrDiskFull.
type MigrationSpaceError struct {
	// Path is the journal; From and To are the schema versions.
	Path     string
	From, To int
	// Free is the free space of the journal's file system, Needed about
	// what the migration takes there (bytes).
	Free, Needed int64
}

func (e *MigrationSpaceError) Error() string {
	return fmt.Sprintf("sqlite: migrating %s from schema version %d to %d needs about %s free on its file system, which has %s: "+
		"free space there or enlarge the volume, then open it again (nothing was changed)", e.Path, e.From, e.To, bytesIEC(e.Needed), bytesIEC(e.Free))
}

func (e *MigrationSpaceError) Unwrap() error { return ErrDiskFull }

// bytesIEC formats n bytes with a binary unit ("1.5 GiB (1610612736 bytes)").
func bytesIEC(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d bytes", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB (%d bytes)", float64(n)/float64(div), "KMGTPE"[exp], n)
}

// journalBytes returns the size of the journal's file and its write-ahead
// log.
func journalBytes(path string) (int64, error) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	n := st.Size()
	if wal, err := os.Stat(path + "-wal"); err == nil {
		n += wal.Size()
	}
	return n, nil
}

// checkMigrationSpace refuses to migrate the journal at path from schema
// version from when its file system has less free space than the
// migration takes.
func checkMigrationSpace(path string, from int) error {
	size, err := journalBytes(path)
	if err != nil {
		return fmt.Errorf("sqlite: migrate %s: %w", path, err)
	}
	free, err := freeSpace(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("sqlite: migrate %s: free space: %w", path, err)
	}
	if needed := migrationSpaceFactor * size; free < needed {
		return &MigrationSpaceError{Path: path, From: from, To: SchemaVersion, Free: free, Needed: needed}
	}
	return nil
}

// watchMigration reports the progress of the migration of the journal at
// path from schema version from (to fn, if any, and to log) until the
// returned func is called with the migration's result.
func watchMigration(path string, from int, fn func(MigrationProgress), log logr.Logger) (finish func(error)) {
	size, _ := journalBytes(path)
	p := MigrationProgress{From: from, To: SchemaVersion, Expected: size + size/10}
	report := func(p MigrationProgress) {
		if fn != nil {
			fn(p)
		}
	}
	log.Info("migrating the journal's schema; queries and recording wait until it is done", "from", from, "to", SchemaVersion,
		"bytes", size, "percent", 0)
	report(p)
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(stopped)
		tick := time.NewTicker(progressEvery)
		defer tick.Stop()
		logged := 0
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			if wal, err := os.Stat(path + "-wal"); err == nil {
				p.Written = wal.Size()
			}
			report(p)
			if pct := p.Percent(); pct >= logged+10 {
				logged = pct - pct%10
				log.Info("migrating the journal's schema", "from", from, "to", SchemaVersion, "percent", pct, "elapsed", time.Since(start).Round(time.Second).String())
			}
		}
	}()
	return func(err error) {
		cancel()
		<-stopped
		if err != nil {
			if !errors.Is(err, context.Canceled) {
				log.Error(err, "migrating the journal's schema failed; the journal is as it was", "from", from, "to", SchemaVersion)
			}
			return
		}
		p.Done = true
		report(p)
		log.Info("migrated the journal's schema", "from", from, "to", SchemaVersion, "percent", 100, "elapsed", time.Since(start).Round(time.Millisecond).String())
	}
}
