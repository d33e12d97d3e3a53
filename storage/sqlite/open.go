package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/go-logr/logr"
	"github.com/krply/krply/storage"
)

// Open opens the journal at path, creating it if it does not exist and
// migrating an older schema forward. A file that is not a krply journal,
// is corrupt, was written by a newer krply, or whose tables are not those
// of the schema version in its header yields an error wrapping
// storage.ErrIncompatible (an *IncompatibleError), and the file is left
// untouched. A journal this process cannot write (the file, its folder,
// or its -wal and -shm files are read-only) is refused before SQLite
// touches it, with an error wrapping storage.ErrReadOnly: open it with
// WithReadOnly instead. The caller must Close the store.
func Open(ctx context.Context, path string, opts ...Option) (*Store, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o.apply(&cfg)
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if !cfg.loggerSet {
		cfg.logger = logr.FromContextOrDiscard(ctx)
	}

	version, err := prepareFile(ctx, path, cfg)
	if err != nil {
		return nil, err
	}
	s := newStore(path, cfg)
	if !cfg.readOnly {
		if err := s.openWriter(ctx, version); err != nil {
			s.closeDBs()
			return nil, err
		}
	}
	if err := s.openReaders(ctx); err != nil {
		s.closeDBs()
		return nil, err
	}
	syncMode, _ := cfg.synchronous.pragma()
	s.log.V(1).Info("journal opened", "schemaVersion", SchemaVersion, "migratedFrom", version, "synchronous", syncMode,
		"readOnly", cfg.readOnly, "immutable", s.immutable != nil)
	return s, nil
}

// prepareFile checks the file at path before it is opened (creating a
// new journal there unless cfg is read-only) and returns its schema
// version.
func prepareFile(ctx context.Context, path string, cfg config) (int, error) {
	isNew, err := inspectFile(path)
	if err != nil {
		return 0, err
	}
	switch {
	case cfg.readOnly && isNew:
		return 0, noJournal(path)
	case !cfg.readOnly:
		if err := checkWritable(path, isNew); err != nil {
			return 0, err
		}
	}
	if isNew {
		if err := create(ctx, path); err != nil {
			return 0, err
		}
	}
	version, err := checkVersion(ctx, path)
	if err != nil {
		return 0, err
	}
	if cfg.readOnly && version != SchemaVersion {
		return 0, &IncompatibleError{Path: path, FileVersion: version, SupportedVersion: SchemaVersion,
			Reason: fmt.Sprintf("schema version %d, which a read-only open does not migrate to %d: open it once without WithReadOnly", version, SchemaVersion)}
	}
	return version, nil
}

// newStore returns a Store of the journal at path with empty caches and
// no connection.
func newStore(path string, cfg config) *Store {
	s := &Store{
		path:          path,
		cfg:           cfg,
		log:           cfg.logger.WithValues("journal", path),
		objectIDs:     map[storage.ObjectID]int64{},
		names:         newNames(),
		streamObjects: map[[2]int64]bool{},
		kindKeyframes: map[kindKey]keyframe{},
		keyframes:     newCache[int64, keyframe](cfg.keyframeCache),
		keyframeRaw:   newCache[int64, []byte](1024),
		sized:         map[string]*sql.Stmt{},
		bases:         newCache[int64, []byte](1024),
	}
	if budget := cfg.indexBudget(); budget > 0 {
		s.index = newVersionIndex(budget)
	}
	s.idle = sync.NewCond(&s.lifecycle)
	return s
}

// openWriter opens the writer's connection, migrates the schema from
// version and prepares the writer's statements.
func (s *Store) openWriter(ctx context.Context, version int) error {
	syncMode, _ := s.cfg.synchronous.pragma()
	// Every write transaction takes the write lock at BEGIN (IMMEDIATE),
	// so writes of several processes queue up and never need to retry; a
	// write waits up to writeBusyTimeout for the one in progress.
	writerDSN := fileURL(s.path) + "?_txlock=immediate" +
		fmt.Sprintf("&_pragma=busy_timeout(%d)", writeBusyTimeout.Milliseconds()) +
		"&_pragma=synchronous(" + syncMode + ")" +
		fmt.Sprintf("&_pragma=cache_size(-%d)", s.cfg.cacheKiB) +
		"&_pragma=temp_store(MEMORY)"
	var err error
	if s.w, err = sql.Open(driverName, writerDSN); err != nil {
		return fmt.Errorf("sqlite: open %s: %w", s.path, err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxLifetime(0)
	s.w.SetConnMaxIdleTime(0)
	if version < SchemaVersion {
		if err := checkMigrationSpace(s.path, version); err != nil {
			return err
		}
		finish := watchMigration(s.path, version, s.cfg.migrationProgress, s.log)
		err = migrate(ctx, s.w, version)
		finish(err)
	}
	if err != nil {
		return fmt.Errorf("%w (%s)", err, s.path)
	}
	var mode string
	if err := s.w.QueryRowContext(ctx, `PRAGMA journal_mode = WAL`).Scan(&mode); err != nil || mode != "wal" {
		return fmt.Errorf("sqlite: %s: enable WAL (got %q): %v", s.path, mode, err)
	}
	// The checkpointer copies the log into the file; see checkpointer.
	if _, err := s.w.ExecContext(ctx, `PRAGMA wal_autocheckpoint = 0`); err != nil {
		return fmt.Errorf("sqlite: %s: %w", s.path, err)
	}
	if s.checkpoints, err = openCheckpointer(s.path, syncMode, &s.writeMu, s.log); err != nil {
		return err
	}
	if err := s.stmts.prepare(ctx, s.w); err != nil {
		return fmt.Errorf("sqlite: %s: %w", s.path, err)
	}
	if err := s.nameStmts.prepare(ctx, s.w); err != nil {
		return fmt.Errorf("sqlite: %s: %w", s.path, err)
	}
	if err := s.prepareSized(ctx); err != nil {
		return fmt.Errorf("sqlite: %s: %w", s.path, err)
	}
	if err := s.readCounters(ctx, s.stmts.counters); err != nil {
		return fmt.Errorf("sqlite: %s: read sequence: %w", s.path, err)
	}
	return nil
}

// openReaders opens the read pool and prepares the hot read statements.
// A read-only Store's pool opens the file read-only (mode=ro), sharing
// the write-ahead log with writers through the -shm file, which SQLite
// creates when it is missing. The pool reads the file as immutable
// instead, creating nothing, where no writer is live (no -shm file, no
// write-ahead log holding commits) and none is expected: the file is
// read-only (no write permission, or not writable by this process), or
// SQLite cannot create the -shm file (a folder this process may not
// write); see WithReadOnly.
func (s *Store) openReaders(ctx context.Context) error {
	if s.cfg.readOnly && !exists(s.path+"-shm") && !nonEmpty(s.path+"-wal") && !fileWritable(s.path) {
		return s.openImmutable(ctx)
	}
	err := s.openPool(ctx, "")
	if err != nil && s.cfg.readOnly && cannotShare(err) && !exists(s.path+"-shm") {
		if nonEmpty(s.path + "-wal") {
			return walNeedsShm(s.path, err)
		}
		s.closeReadPools()
		return s.openImmutable(ctx)
	}
	return err
}

// openImmutable opens the read pool on the file as immutable, watching
// it for writes.
func (s *Store) openImmutable(ctx context.Context) error {
	imm, err := watchImmutable(s.path)
	if err != nil {
		return err
	}
	if err := s.openPool(ctx, "&immutable=1"); err != nil {
		return err
	}
	s.immutable = imm
	return nil
}

// scanMmapBytes is how much of the file the scan pool (Store.scan), the
// pool of AliveAt, maps. A statement that reads a row for each of many
// objects visits pages all over the file, more than a connection's page
// cache holds: without a map each of those visits is a pread system call
// (a quarter of the CPU of AliveAt over 10,000 objects on a 1M-event
// journal, which mapping cuts by about a fifth).
//
// The point reads (LatestAt, Watermark, ObjectHistory, the others) keep
// the unmapped pool: a journal that changes loses every reader's map on
// every commit, as SQLite unmaps the whole file in each connection that
// sees the database changed, and faults each page in again on the next
// visit. A statement that reads thousands of pages pays that once; a
// point read pays it on each of its few pages, after every commit. Under
// a recording writer, faulting the pages in again costs point reads more
// than the system calls the map saves, and they are no faster mapped on a
// quiet journal either. SQLite also parses a mapped page again on every visit,
// where an unmapped one stays parsed in the page cache (see
// WithMmapSize).
const scanMmapBytes = 1 << 30

// openPool opens the read pools with the extra URI parameters and
// prepares their statements.
func (s *Store) openPool(ctx context.Context, extra string) error {
	var err error
	if s.r, err = s.openReadPool(extra, s.cfg.mmapBytes); err != nil {
		return err
	}
	gate, err := s.openReadPool(extra, 0)
	if err != nil {
		return err
	}
	gate.SetMaxOpenConns(1)
	gate.SetMaxIdleConns(1)
	s.gate = &changeGate{db: gate}
	s.scan = s.r
	if s.cfg.mmapBytes < scanMmapBytes {
		// Connections are opened on first use.
		if s.scan, err = s.openReadPool(extra, scanMmapBytes); err != nil {
			return err
		}
	}
	if s.latestAtStmt, err = s.r.PrepareContext(ctx, latestAtQuery); err != nil {
		return fmt.Errorf("sqlite: %s: prepare: %w", s.path, err)
	}
	if s.keyframeStmt, err = s.r.PrepareContext(ctx, keyframeQuery); err != nil {
		return fmt.Errorf("sqlite: %s: prepare: %w", s.path, err)
	}
	return nil
}

// openReadPool opens a pool of read connections that map mmapBytes of the
// file, with the extra URI parameters.
func (s *Store) openReadPool(extra string, mmapBytes int64) (*sql.DB, error) {
	readerDSN := fileURL(s.path) + "?_pragma=busy_timeout(10000)&_pragma=query_only(1)" +
		fmt.Sprintf("&_pragma=mmap_size(%d)", mmapBytes) +
		fmt.Sprintf("&_pragma=cache_size(-%d)", max(s.cfg.cacheKiB/4, 1024)) +
		"&_pragma=temp_store(MEMORY)"
	if s.cfg.readOnly {
		readerDSN += "&mode=ro" + extra
	}
	db, err := sql.Open(driverName, readerDSN)
	if err != nil {
		return nil, fmt.Errorf("sqlite: open %s for reading: %w", s.path, err)
	}
	db.SetMaxOpenConns(s.cfg.readers)
	db.SetMaxIdleConns(s.cfg.readers)
	return db, nil
}

// closeReadPools closes the read pools.
func (s *Store) closeReadPools() {
	if s.gate != nil {
		s.gate.close()
		s.gate = nil
	}
	if s.scan != nil && s.scan != s.r {
		s.scan.Close()
	}
	if s.r != nil {
		s.r.Close()
	}
	s.scan, s.r = nil, nil
}

// closeDBs closes the connections of a Store that failed to open.
func (s *Store) closeDBs() {
	s.closeReadPools()
	s.checkpoints.close()
	if s.w != nil {
		s.w.Close()
	}
}

// create makes a new, empty journal at path. It builds the file under a
// temporary name of its own and links it into place, so a crash during
// creation never leaves a half-made journal at path, and of processes
// creating the same journal at once one wins and the others open its
// file (a rename would replace a journal another process already
// writes).
func create(ctx context.Context, path string) error {
	tmp := fmt.Sprintf("%s.creating-%d", path, os.Getpid())
	for _, f := range []string{tmp, tmp + "-journal", tmp + "-wal", tmp + "-shm"} {
		// Left by a crash of an earlier process with this pid.
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("sqlite: create %s: %w", path, err)
		}
	}
	db, err := sql.Open(driverName, fileURL(tmp))
	if err != nil {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	err = func() error {
		if _, err := db.ExecContext(ctx, `PRAGMA page_size = 4096`); err != nil {
			return err
		}
		if err := migrate(ctx, db, 0); err != nil {
			return err
		}
		_, err := db.ExecContext(ctx, `PRAGMA journal_mode = WAL`)
		return err
	}()
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = place(tmp, path)
	}
	os.Remove(tmp)
	if err != nil {
		return fmt.Errorf("sqlite: create %s: %w", path, err)
	}
	if dir, err := os.Open(filepath.Dir(path)); err == nil {
		// Make the rename durable; not every platform can sync a directory.
		_ = dir.Sync()
		dir.Close()
	}
	return nil
}

// place puts the new journal tmp at path unless another process put one
// there first. An empty file at path (made by touch, say) is replaced.
func place(tmp, path string) error {
	err := os.Link(tmp, path)
	if errors.Is(err, os.ErrExist) {
		if fi, serr := os.Stat(path); serr != nil || fi.Size() > 0 {
			return nil // another process created it: open that one
		}
	}
	if err != nil {
		// Empty, or a file system without hard links.
		return os.Rename(tmp, path)
	}
	return nil
}
