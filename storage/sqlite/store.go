package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/krply/krply/storage"
)

const driverName = "sqlite"

// writeBusyTimeout is how long a write waits for another process's write
// transaction to end before it fails with SQLITE_BUSY. A Compact holds the
// write lock for its whole run, seconds on a large journal: a recorder in
// another process waits rather than fails.
const writeBusyTimeout = time.Minute

// Store is a krply journal in one SQLite file. It implements storage.Store.
type Store struct {
	path string
	cfg  config
	log  logr.Logger

	// lifecycle guards closed and inFlight; Close waits on idle until no
	// operation is in flight. (Not an RWMutex: Compact reads through the
	// public Reader methods while it is itself an operation.)
	lifecycle sync.Mutex
	idle      *sync.Cond
	closed    bool
	inFlight  int

	w *sql.DB // exactly one connection: the only writer; nil when read-only
	r *sql.DB // the read pool, query_only
	// scan is the pool of AliveAt's statements, which read a row for
	// each of many objects all over the file: the read pool but for the
	// file mapped into memory (see scanMmapBytes); r itself when
	// WithMmapSize maps as much.
	scan *sql.DB
	// immutable is set when a read-only Store reads the file as
	// immutable; it notices when the file changes after all.
	immutable *immutableFile

	// writeMu serializes Append and Compact; the fields below belong to
	// the writer. Other processes may write the journal too: every write
	// transaction first catches up with them (see catchUp), so the next
	// IDs are read afresh and the caches below hold only what no other
	// process can invalidate but a compaction.
	writeMu sync.Mutex
	// checkpoints copies the write-ahead log into the file (nil when
	// read-only).
	checkpoints  *checkpointer
	nextSeq      int64
	nextBodyID   int64
	nextObjectID int64
	// seqFloor is the journal's seq floor as of this Store's last write
	// transaction: it grows with every compaction, by any process.
	seqFloor int64
	// sized holds the multi-row INSERTs and the IN (...) lookups, by
	// their text and row (key) count; see sizedKey.
	sized     map[string]*sql.Stmt
	stmts     writerStmts
	objectIDs map[storage.ObjectID]int64
	// names holds committed rows of the name tables; nameStmts find and
	// insert them.
	names     names
	nameStmts nameStmts
	keyframes cache[int64, keyframe] // object row id -> its keyframe and latest body (raw not set)
	// keyframeRaw holds decoded keyframes by body id; many objects share
	// one (see kindKeyframes).
	keyframeRaw cache[int64, []byte]
	// kindKeyframes holds, per cluster/group/resource, the latest
	// keyframe: the first version of a new object is delta-encoded
	// against it when they are alike (pods of one ReplicaSet are).
	kindKeyframes map[kindKey]keyframe
	// streamObjects caches the rows known to be in stream_objects.
	streamObjects map[[2]int64]bool

	bases cache[int64, []byte] // keyframe body id -> raw body, for readers
	// Hot read statements, prepared once (database/sql keeps one prepared
	// copy per read connection).
	latestAtStmt, keyframeStmt *sql.Stmt
	// recordStmts holds the statements Records and Streams build, prepared
	// on first use: parsing one costs more than running it.
	recordStmts stmtCache
	// timelines are the streams' timelines, kept for readers.
	timelines timelines
	// streamRows maps stream IDs to their row ids (string -> int64), as
	// readers found them.
	streamRows sync.Map
	// rowNames resolves the row ids that read statements select.
	rowNames rowNames
	// index is the version index (see index.go); nil when off.
	index *versionIndex
	// gate tells whether the journal changed since what the Store keeps
	// for readers was read; statuses are the stream statuses so kept.
	gate     *changeGate
	statuses statusCache
}

// kindKey names a kind of object in a cluster.
type kindKey struct{ cluster, group, resource string }

// keyframe is the body a new version of an object is delta-encoded
// against, and the object's latest body, so that an unchanged body (a
// relist) is recognised without a query.
type keyframe struct {
	bodyID     int64
	raw        []byte
	lastHash   string
	lastBodyID int64
}

var (
	_ storage.Store        = (*Store)(nil)
	_ storage.BulkAppender = (*Store)(nil)
)

// Path returns the journal's file name.
func (s *Store) Path() string { return s.path }

// Close releases the store, waiting for calls in flight, and stops the
// version index's build if one runs on its own goroutine. Calls after
// Close return storage.ErrClosed; closing twice returns storage.ErrClosed.
func (s *Store) Close() error {
	s.lifecycle.Lock()
	if s.closed {
		s.lifecycle.Unlock()
		return fmt.Errorf("sqlite: close %s: %w", s.path, storage.ErrClosed)
	}
	s.closed = true
	for s.inFlight > 0 {
		s.idle.Wait()
	}
	s.lifecycle.Unlock()
	s.index.close()
	s.stmts.close()
	s.nameStmts.close()
	for _, st := range s.sized {
		st.Close()
	}
	s.latestAtStmt.Close()
	s.keyframeStmt.Close()
	s.recordStmts.close()
	gerr := s.gate.close()
	cerr := s.checkpoints.close()
	var werr error
	if s.w != nil {
		werr = s.w.Close()
	}
	var serr error
	if s.scan != s.r {
		serr = s.scan.Close()
	}
	return errors.Join(s.r.Close(), serr, gerr, cerr, werr)
}

// enter starts an operation; the returned func ends it.
func (s *Store) enter() (func(), error) {
	s.lifecycle.Lock()
	defer s.lifecycle.Unlock()
	if s.closed {
		return nil, fmt.Errorf("sqlite: %s: %w", s.path, storage.ErrClosed)
	}
	if s.immutable != nil {
		if err := s.immutable.check(); err != nil {
			return nil, err
		}
	}
	s.inFlight++
	return s.exit, nil
}

// enterWrite is enter for Append and Compact, which a read-only Store
// refuses.
func (s *Store) enterWrite(op string) (func(), error) {
	done, err := s.enter()
	if err != nil {
		return nil, err
	}
	if s.cfg.readOnly {
		done()
		return nil, fmt.Errorf("sqlite: %s %s: %w (opened with WithReadOnly)", op, s.path, storage.ErrReadOnly)
	}
	return done, nil
}

func (s *Store) exit() {
	s.lifecycle.Lock()
	defer s.lifecycle.Unlock()
	s.inFlight--
	if s.inFlight == 0 {
		s.idle.Broadcast()
	}
}
