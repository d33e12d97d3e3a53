package sqlite

import (
	"fmt"

	"github.com/go-logr/logr"

	"github.com/krply/krply/storage"
)

// ErrInvalidArgument: an option of Open has a value that cannot work. It is
// storage.ErrInvalidArgument, the sentinel of every krply package.
var ErrInvalidArgument = storage.ErrInvalidArgument

// Synchronous is SQLite's synchronous setting for the journal's writes.
type Synchronous int

const (
	// SyncNormal (the default) syncs the write-ahead log at checkpoints,
	// not at every commit. A power loss or OS crash may lose the last
	// committed batches but never corrupts the file or splits a batch;
	// a process crash loses nothing. See the package documentation for
	// why re-delivery makes this safe.
	SyncNormal Synchronous = iota
	// SyncFull syncs the write-ahead log at every commit: a committed
	// batch survives a power loss, at the cost of one fsync per Append.
	SyncFull
)

func (s Synchronous) pragma() (string, error) {
	switch s {
	case SyncNormal:
		return "NORMAL", nil
	case SyncFull:
		return "FULL", nil
	}
	return "", fmt.Errorf("sqlite: %w: unknown synchronous setting %d (use SyncNormal or SyncFull)", ErrInvalidArgument, int(s))
}

// String returns the SQLite name of the setting.
func (s Synchronous) String() string {
	p, err := s.pragma()
	if err != nil {
		return fmt.Sprintf("Synchronous(%d)", int(s))
	}
	return p
}

// Option configures Open.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	synchronous   Synchronous
	readers       int
	cacheKiB      int
	logger        logr.Logger
	loggerSet     bool
	keyframeCache int
	mmapBytes     int64
	readOnly      bool
	// indexVersions is WithVersionIndex's, when indexSet.
	indexVersions int
	indexSet      bool
	// migrationProgress is WithMigrationProgress's.
	migrationProgress func(MigrationProgress)
}

func defaultConfig() config {
	return config{
		synchronous:   SyncNormal,
		readers:       4,
		cacheKiB:      16 << 10,
		keyframeCache: 1 << 15,
		mmapBytes:     0,
	}
}

func (c *config) validate() error {
	if _, err := c.synchronous.pragma(); err != nil {
		return err
	}
	if c.readers < 1 {
		return fmt.Errorf("sqlite: %w: at least one read connection is needed, got %d", ErrInvalidArgument, c.readers)
	}
	if c.cacheKiB < 0 {
		return fmt.Errorf("sqlite: %w: negative cache size %d KiB", ErrInvalidArgument, c.cacheKiB)
	}
	if c.mmapBytes < 0 {
		return fmt.Errorf("sqlite: %w: negative mmap size %d", ErrInvalidArgument, c.mmapBytes)
	}
	if c.indexVersions < 0 {
		return fmt.Errorf("sqlite: %w: negative version index budget %d (0 turns the index off)", ErrInvalidArgument, c.indexVersions)
	}
	if c.keyframeCache < 0 {
		return fmt.Errorf("sqlite: %w: negative keyframe cache size %d", ErrInvalidArgument, c.keyframeCache)
	}
	return nil
}

// WithSynchronous sets the durability of a committed Append (default
// SyncNormal).
func WithSynchronous(s Synchronous) Option {
	return optionFunc(func(c *config) { c.synchronous = s })
}

// WithReadConnections sets the size of the read connection pool (default
// 4). Writes always use one dedicated connection.
func WithReadConnections(n int) Option {
	return optionFunc(func(c *config) { c.readers = n })
}

// WithCacheSize sets SQLite's page cache per connection in KiB (default
// 16 MiB for the writer; readers get a quarter each).
func WithCacheSize(kib int) Option {
	return optionFunc(func(c *config) { c.cacheKiB = kib })
}

// WithKeyframeCache sets for how many objects the writer remembers which
// body their next version is delta-encoded against, and the hash of their
// latest body, to store a new version without reading (default 32768,
// about 380 bytes each with their bookkeeping; 0 disables the cache). An
// object changed after it fell out of the cache costs one indexed read;
// a larger cache costs memory for every object it holds. Decoded
// keyframes are kept separately, at most 1024 of them.
func WithKeyframeCache(objects int) Option {
	return optionFunc(func(c *config) { c.keyframeCache = objects })
}

// DefaultVersionIndex is the version index's budget, in versions
// (records of objects), of a Store that writes; see WithVersionIndex.
const DefaultVersionIndex = 1 << 21

// WithVersionIndex sets the budget of the version index, the most records
// of objects it holds (default DefaultVersionIndex for a Store that
// writes, 0 — off — WithReadOnly). The index keeps, in memory, each
// object's record keys (observed time and seq) and what deciding their
// visibility needs, about 40 bytes each, so that LatestAt (object at a
// time) finds its record without SQLite and reads only that record. It is
// built by one scan of the journal, started by the first LatestAt: within
// it over a small journal, on a goroutine of its own over one of some
// hundred thousand records or more, SQLite answering meanwhile (no
// question waits for the scan; BuildVersionIndex does). It is brought up
// to date before every answer with what any process appended since; a
// compaction builds it again. Over its budget it keeps the recent part
// of every object's history (three quarters of the budget, and each
// object's state before it), and SQLite answers a question about an
// earlier time, with the same answers; when each object's newest version
// alone is over the budget, SQLite answers every question.
// A long-lived reader (a query server on a read-only journal) may want it
// on; a tool that asks a few questions does not, as the first pays for the
// scan.
func WithVersionIndex(versions int) Option {
	return optionFunc(func(c *config) { c.indexVersions, c.indexSet = versions, true })
}

// indexBudget is the version index's budget; 0 when it is off.
func (c *config) indexBudget() int {
	if c.indexSet {
		return c.indexVersions
	}
	if c.readOnly {
		return 0
	}
	return DefaultVersionIndex
}

// WithLogger sets the logger (default: the logger in Open's context, or
// none).
func WithLogger(l logr.Logger) Option {
	return optionFunc(func(c *config) { c.logger = l; c.loggerSet = true })
}

// WithMmapSize sets how many bytes of the file each read connection maps
// into memory (SQLite's mmap_size; default 0, off). Mapped pages are read
// without a system call, but SQLite parses a mapped page again on every
// visit instead of keeping it in its page cache, which makes point reads
// (ObjectAt, a history) slower, not faster. Consider it for scans of a
// journal much larger than the page cache that nobody writes: every
// commit, from this process or another, drops every reader's map, and
// faulting the pages in again costs more than the system calls the map
// saved. AliveAt maps the file anyway, on a pool of its own (see the
// package documentation's Concurrency).
func WithMmapSize(bytes int64) Option {
	return optionFunc(func(c *config) { c.mmapBytes = bytes })
}

// WithReadOnly opens the journal read-only, for a process that only
// queries it. Open then never creates the file (a missing one is an
// error wrapping fs.ErrNotExist), never migrates an older schema (an
// *IncompatibleError says to open it once without WithReadOnly), and
// never writes the journal; Append and Compact return an error wrapping
// storage.ErrReadOnly. Every query works and sees what other processes
// commit, as they commit it.
//
// SQLite's readers share the write-ahead log with writers through the
// journal's -shm file. A reader of a file a writer may write must have
// one, since a writer may be live or start while it reads: when there is
// none, SQLite creates it (and an empty -wal file) next to the journal,
// and a read-only store leaves them there on Close (the next writer
// removes them). Where no writer is live (no -shm file, and no -wal file
// holding commits) and none is expected — the file has no write
// permission or this process may not write it (a read-only or immutable
// file), or it lies in a folder this process may not write — the store
// reads the file as immutable (SQLite's immutable=1: no locks, no shared
// memory) and creates nothing, which is exact for a journal nobody
// writes: a copy, an archive, a read-only mount. Should another process
// write it after all,
// every call fails, saying to open it again, rather than answer from a
// file changing underneath; and if a -wal file there holds commits (a
// writer crashed), Open fails, saying how to read them.
//
// The writer's settings (WithSynchronous, WithKeyframeCache, and
// WithCacheSize for the writer) do not apply.
func WithReadOnly() Option {
	return optionFunc(func(c *config) { c.readOnly = true })
}
