package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/internal/journal"
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
	// immutable is set when a read-only Store reads the file as
	// immutable; it notices when the file changes after all.
	immutable *immutableFile

	// writeMu serializes Append and Compact; the fields below belong to
	// the writer. Other processes may write the journal too: every write
	// transaction first catches up with them (see catchUp), so the next
	// IDs are read afresh and the caches below hold only what no other
	// process can invalidate but a compaction.
	writeMu      sync.Mutex
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
	keyframes *lru[int64, keyframe] // object row id -> its keyframe and latest body (raw not set)
	// keyframeRaw holds decoded keyframes by body id; many objects share
	// one (see kindKeyframes).
	keyframeRaw *lru[int64, []byte]
	// kindKeyframes holds, per cluster/group/resource, the latest
	// keyframe: the first version of a new object is delta-encoded
	// against it when they are alike (pods of one ReplicaSet are).
	kindKeyframes map[kindKey]keyframe
	// streamObjects caches the rows known to be in stream_objects.
	streamObjects map[[2]int64]bool

	bases *syncLRU[int64, []byte] // keyframe body id -> raw body, for readers
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

var _ storage.Store = (*Store)(nil)

// Open opens the journal at path, creating it if it does not exist and
// migrating an older schema forward. A file that is not a krply journal,
// is corrupt, or was written by a newer krply yields an error wrapping
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

	isNew, err := inspectFile(path)
	if err != nil {
		return nil, err
	}
	switch {
	case cfg.readOnly && isNew:
		return nil, noJournal(path)
	case !cfg.readOnly:
		if err := checkWritable(path, isNew); err != nil {
			return nil, err
		}
	}
	if isNew {
		if err := create(ctx, path); err != nil {
			return nil, err
		}
	}
	version, err := checkVersion(ctx, path)
	if err != nil {
		return nil, err
	}
	if cfg.readOnly && version != SchemaVersion {
		return nil, &IncompatibleError{Path: path, FileVersion: version, SupportedVersion: SchemaVersion,
			Reason: fmt.Sprintf("schema version %d, which a read-only open does not migrate to %d: open it once without WithReadOnly", version, SchemaVersion)}
	}

	s := &Store{
		path:          path,
		cfg:           cfg,
		log:           cfg.logger.WithValues("journal", path),
		objectIDs:     map[storage.ObjectID]int64{},
		streamObjects: map[[2]int64]bool{},
		kindKeyframes: map[kindKey]keyframe{},
		keyframes:     newLRU[int64, keyframe](cfg.keyframeCache),
		keyframeRaw:   newLRU[int64, []byte](1024),
		sized:         map[string]*sql.Stmt{},
		bases:         &syncLRU[int64, []byte]{lru: newLRU[int64, []byte](1024)},
	}
	s.idle = sync.NewCond(&s.lifecycle)
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
	if err := migrate(ctx, s.w, version); err != nil {
		return fmt.Errorf("%w (%s)", err, s.path)
	}
	var mode string
	if err := s.w.QueryRowContext(ctx, `PRAGMA journal_mode = WAL`).Scan(&mode); err != nil || mode != "wal" {
		return fmt.Errorf("sqlite: %s: enable WAL (got %q): %v", s.path, mode, err)
	}
	if _, err := s.w.ExecContext(ctx, `PRAGMA wal_autocheckpoint = 4000`); err != nil {
		return fmt.Errorf("sqlite: %s: %w", s.path, err)
	}
	if err := s.stmts.prepare(ctx, s.w); err != nil {
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
// creates when it is missing. Where it cannot (a folder this process may
// not write), and no write-ahead log holds commits, the pool reads the
// file as immutable; see WithReadOnly.
func (s *Store) openReaders(ctx context.Context) error {
	err := s.openPool(ctx, "")
	if err != nil && s.cfg.readOnly && cannotShare(err) && !exists(s.path+"-shm") {
		if nonEmpty(s.path + "-wal") {
			return walNeedsShm(s.path, err)
		}
		var imm *immutableFile
		if imm, err = watchImmutable(s.path); err != nil {
			return err
		}
		s.r.Close()
		if err = s.openPool(ctx, "&immutable=1"); err == nil {
			s.immutable = imm
		}
	}
	return err
}

// openPool opens the read pool with the extra URI parameters and prepares
// its statements.
func (s *Store) openPool(ctx context.Context, extra string) error {
	// Readers map the file: a page read is a memory access, not a
	// pread system call per page (the bulk of LatestAt's time without it).
	readerDSN := fileURL(s.path) + "?_pragma=busy_timeout(10000)&_pragma=query_only(1)" +
		fmt.Sprintf("&_pragma=mmap_size(%d)", s.cfg.mmapBytes) +
		fmt.Sprintf("&_pragma=cache_size(-%d)", max(s.cfg.cacheKiB/4, 1024)) +
		"&_pragma=temp_store(MEMORY)"
	if s.cfg.readOnly {
		readerDSN += "&mode=ro" + extra
	}
	var err error
	if s.r, err = sql.Open(driverName, readerDSN); err != nil {
		return fmt.Errorf("sqlite: open %s for reading: %w", s.path, err)
	}
	s.r.SetMaxOpenConns(s.cfg.readers)
	s.r.SetMaxIdleConns(s.cfg.readers)
	if s.latestAtStmt, err = s.r.PrepareContext(ctx, latestAtQuery); err != nil {
		return fmt.Errorf("sqlite: %s: prepare: %w", s.path, err)
	}
	if s.keyframeStmt, err = s.r.PrepareContext(ctx, `SELECT raw_len, data FROM bodies WHERE id = ?`); err != nil {
		return fmt.Errorf("sqlite: %s: prepare: %w", s.path, err)
	}
	return nil
}

// closeDBs closes the connections of a Store that failed to open.
func (s *Store) closeDBs() {
	for _, db := range []*sql.DB{s.w, s.r} {
		if db != nil {
			db.Close()
		}
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

// Path returns the journal's file name.
func (s *Store) Path() string { return s.path }

// Close releases the store, waiting for calls in flight. Calls after Close
// return storage.ErrClosed; closing twice returns storage.ErrClosed.
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
	s.stmts.close()
	for _, st := range s.sized {
		st.Close()
	}
	s.latestAtStmt.Close()
	s.keyframeStmt.Close()
	s.recordStmts.close()
	var werr error
	if s.w != nil {
		werr = s.w.Close()
	}
	return errors.Join(s.r.Close(), werr)
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

type writerStmts struct {
	bodyRow                               *sql.Stmt
	streamRow, insertStream, updateStream *sql.Stmt
	latestBody, updateTotals, counters    *sql.Stmt
}

// countersQuery reads what the next IDs follow from: the newest seq, the
// seq floor, the newest body and object IDs. Each is one seek.
const countersQuery = `SELECT (SELECT max(seq) FROM records), seq_floor, (SELECT max(id) FROM bodies), (SELECT max(id) FROM objects) FROM totals WHERE id = 1`

// readCounters sets the next IDs and the seq floor from countersQuery
// run by st.
func (s *Store) readCounters(ctx context.Context, st *sql.Stmt) error {
	var maxSeq, maxBody, maxObject sql.NullInt64
	var floor int64
	if err := st.QueryRowContext(ctx).Scan(&maxSeq, &floor, &maxBody, &maxObject); err != nil {
		return err
	}
	s.nextSeq = max(maxSeq.Int64, floor) + 1
	s.nextBodyID = maxBody.Int64 + 1
	s.nextObjectID = maxObject.Int64 + 1
	s.seqFloor = floor
	return nil
}

// catchUp is the first step of every write transaction, which holds the
// journal's write lock (BEGIN IMMEDIATE): other processes may have
// written since this Store's last write. Their appends only move the
// next IDs, which it reads again; the caches stay true, since a stored
// object, body or stream_objects row never changes and is removed only
// by a compaction. A compaction by another process — the seq floor grew
// — empties the caches that point at bodies and stream_objects rows.
// Body IDs are never reused (see Compact), so the readers' decoded
// keyframes stay true even then.
func (s *Store) catchUp(ctx context.Context, tx *sql.Tx) error {
	seq, body, object, floor := s.nextSeq, s.nextBodyID, s.nextObjectID, s.seqFloor
	if err := s.readCounters(ctx, tx.StmtContext(ctx, s.stmts.counters)); err != nil {
		return fmt.Errorf("read sequence: %w", err)
	}
	if s.seqFloor != floor {
		s.forgetBodies()
	}
	if seq != s.nextSeq || body != s.nextBodyID || object != s.nextObjectID || floor != s.seqFloor {
		s.log.V(1).Info("another process wrote the journal", "nextSeq", s.nextSeq, "compacted", floor != s.seqFloor)
	}
	return nil
}

// forgetBodies empties the writer's caches of bodies and stream_objects
// rows after a compaction.
func (s *Store) forgetBodies() {
	s.keyframes.clear()
	s.keyframeRaw.clear()
	clear(s.streamObjects)
	clear(s.kindKeyframes)
}

func (ws *writerStmts) prepare(ctx context.Context, db *sql.DB) error {
	for _, p := range []struct {
		stmt **sql.Stmt
		sql  string
	}{
		{&ws.bodyRow, `SELECT raw_len, base, data, hash FROM bodies WHERE id = ?`},
		{&ws.streamRow, `SELECT ` + streamColumns + ` FROM streams WHERE stream_id = ?`},
		{&ws.insertStream, `INSERT INTO streams (stream_id, cluster, checkpoint_at, last_baseline_end_at, last_gap_at, first_observed_at, last_observed_at) VALUES (?,?,?,?,?,?,?)`},
		{&ws.updateStream, `UPDATE streams SET checkpoint_rv=?, checkpoint_at=?, available=?, availability_reason=?, last_baseline_id=?, last_baseline_end_at=?, open_baseline_id=?, gaps=?, last_gap_at=?, first_observed_at=?, last_observed_at=?, records=?, last_seq=? WHERE id=?`},
		{&ws.latestBody, `SELECT body FROM records WHERE obj = ? AND body IS NOT NULL ORDER BY observed_at DESC, seq DESC LIMIT 1`},
		{&ws.updateTotals, `UPDATE totals SET records=records+?, events=events+?, bodies=bodies+?, body_bytes=body_bytes+?, raw_bytes=raw_bytes+? WHERE id=1`},
		{&ws.counters, countersQuery},
	} {
		st, err := db.PrepareContext(ctx, p.sql)
		if err != nil {
			ws.close()
			return fmt.Errorf("prepare %q: %w", p.sql, err)
		}
		*p.stmt = st
	}
	return nil
}

func (ws *writerStmts) close() {
	for _, st := range []*sql.Stmt{ws.bodyRow, ws.streamRow, ws.insertStream, ws.updateStream,
		ws.latestBody, ws.updateTotals, ws.counters} {
		if st != nil {
			st.Close()
		}
	}
}

const streamColumns = `id, stream_id, cluster, checkpoint_rv, checkpoint_at, available, availability_reason, last_baseline_id, last_baseline_end_at, open_baseline_id, gaps, last_gap_at, first_observed_at, last_observed_at, records, last_seq`

// streamState is a row of the streams table.
type streamState struct {
	rowID int64
	storage.StreamStatus
}

type scanner interface{ Scan(dest ...any) error }

func scanStream(sc scanner) (*streamState, error) {
	var st streamState
	var cluster string
	var available int
	var checkpointAt, baselineEndAt, lastGapAt, firstAt, lastAt int64
	if err := sc.Scan(&st.rowID, &st.StreamID, &cluster, &st.CheckpointRV, &checkpointAt, &available, &st.AvailabilityReason,
		&st.LastBaselineID, &baselineEndAt, &st.OpenBaselineID, &st.Gaps, &lastGapAt, &firstAt, &lastAt,
		&st.Records, &st.LastSeq); err != nil {
		return nil, err
	}
	st.Available = available != 0
	st.Stream, _ = event.ParseStreamID(st.StreamID)
	st.CheckpointAt = decodeTime(checkpointAt)
	st.LastBaselineEndAt = decodeTime(baselineEndAt)
	st.LastGapAt = decodeTime(lastGapAt)
	st.FirstObservedAt = decodeTime(firstAt)
	st.LastObservedAt = decodeTime(lastAt)
	return &st, nil
}

// updateArgs are the arguments of writerStmts.updateStream.
func (st *streamState) updateArgs() []any {
	available := 0
	if st.Available {
		available = 1
	}
	return []any{st.CheckpointRV, encodeTime(st.CheckpointAt), available, st.AvailabilityReason,
		st.LastBaselineID, encodeTime(st.LastBaselineEndAt), st.OpenBaselineID, st.Gaps, encodeTime(st.LastGapAt),
		encodeTime(st.FirstObservedAt), encodeTime(st.LastObservedAt), st.Records, st.LastSeq, st.rowID}
}

// appendTx is the state of one Append transaction. Caches of the store
// are updated from it only after the commit succeeded.
type appendTx struct {
	s       *Store
	ctx     context.Context
	tx      *sql.Tx
	stmts   writerStmts
	streams map[string]*streamState
	objects map[storage.ObjectID]int64
	// keyframes are the keyframe changes to publish after commit.
	keyframes     map[int64]keyframe
	kindKeyframes map[kindKey]keyframe
	// knownBodies maps the hashes of the batch's bodies that are stored
	// (or about to be) to their ids; nextBodyID is the next id to assign.
	knownBodies map[string]int64
	nextBodyID  int64
	// newObjects are the objects rows this transaction adds;
	// nextObjectID is the next id to assign.
	newObjects   map[int64]bool
	nextObjectID int64
	// objectRows, streamObjectRows, bodyRows and recordRows are the
	// arguments of the rows to insert.
	objectRows, streamObjectRows, bodyRows, recordRows [][]any
	streamObjects                                      map[[2]int64]bool
	records, events, bodies, bodyBytes, rawBodyByte    int64
}

// Append implements storage.Writer.
func (s *Store) Append(ctx context.Context, records []event.Record) (storage.AppendResult, error) {
	done, err := s.enterWrite("append to")
	if err != nil {
		return storage.AppendResult{}, err
	}
	defer done()
	for i := range records {
		if err := journal.Validate(&records[i]); err != nil {
			return storage.AppendResult{}, fmt.Errorf("sqlite: append: record %d of %d: %w", i, len(records), err)
		}
	}
	if len(records) == 0 {
		return storage.AppendResult{Seqs: []int64{}}, nil
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()

	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return storage.AppendResult{}, fmt.Errorf("sqlite: append: begin: %w", err)
	}
	defer tx.Rollback()
	if err := s.catchUp(ctx, tx); err != nil {
		return storage.AppendResult{}, fmt.Errorf("sqlite: append: %w", err)
	}
	at := s.newAppendTx(ctx, tx)
	res := storage.AppendResult{Seqs: make([]int64, len(records))}
	ids := make([]any, len(records))
	hashes := make([]string, len(records))
	for i := range records {
		ids[i] = encodeID(records[i].EventID)
		hashes[i] = bodyHash(&records[i])
	}
	existing, err := at.existingSeqs(ids)
	if err != nil {
		return storage.AppendResult{}, err
	}
	if err := at.lookupBodies(hashes); err != nil {
		return storage.AppendResult{}, err
	}
	if err := at.lookupObjects(records, existing, ids); err != nil {
		return storage.AppendResult{}, err
	}
	seq := s.nextSeq
	for i := range records {
		key := idKey(ids[i])
		if old, ok := existing[key]; ok {
			res.Seqs[i] = old
			res.Duplicates++
			continue
		}
		if err := at.add(&records[i], ids[i], hashes[i], seq); err != nil {
			return storage.AppendResult{}, fmt.Errorf("sqlite: append record %d (%s): %w", i, records[i].EventID, err)
		}
		existing[key] = seq // a second copy in the same batch
		res.Seqs[i] = seq
		res.Inserted++
		seq++
	}
	if err := at.flush(); err != nil {
		return storage.AppendResult{}, err
	}
	if err := at.finish(); err != nil {
		return storage.AppendResult{}, err
	}
	if err := tx.Commit(); err != nil {
		return storage.AppendResult{}, fmt.Errorf("sqlite: append: commit: %w", err)
	}
	s.nextSeq = seq
	s.nextBodyID = at.nextBodyID
	s.nextObjectID = at.nextObjectID
	for k, v := range at.objects {
		if len(s.objectIDs) > 1<<16 {
			clear(s.objectIDs)
		}
		s.objectIDs[k] = v
	}
	for obj, kf := range at.keyframes {
		s.keyframeRaw.put(kf.bodyID, kf.raw)
		kf.raw = nil
		s.keyframes.put(obj, kf)
	}
	if len(s.streamObjects) > 1<<16 {
		clear(s.streamObjects)
	}
	for pair := range at.streamObjects {
		s.streamObjects[pair] = true
	}
	if len(s.kindKeyframes) > 1024 {
		clear(s.kindKeyframes)
	}
	for k, kf := range at.kindKeyframes {
		s.kindKeyframes[k] = kf
	}
	return res, nil
}

func (s *Store) newAppendTx(ctx context.Context, tx *sql.Tx) *appendTx {
	at := &appendTx{s: s, ctx: ctx, tx: tx, streams: map[string]*streamState{}, objects: map[storage.ObjectID]int64{},
		keyframes: map[int64]keyframe{}, streamObjects: map[[2]int64]bool{}, kindKeyframes: map[kindKey]keyframe{},
		knownBodies: map[string]int64{}, nextBodyID: s.nextBodyID, newObjects: map[int64]bool{}, nextObjectID: s.nextObjectID}
	at.bindStmts()
	return at
}

func (at *appendTx) bindStmts() {
	ctx, tx, ws := at.ctx, at.tx, &at.s.stmts
	at.stmts = writerStmts{
		bodyRow:   tx.StmtContext(ctx, ws.bodyRow),
		streamRow: tx.StmtContext(ctx, ws.streamRow), insertStream: tx.StmtContext(ctx, ws.insertStream),
		updateStream: tx.StmtContext(ctx, ws.updateStream), latestBody: tx.StmtContext(ctx, ws.latestBody),
		updateTotals: tx.StmtContext(ctx, ws.updateTotals),
	}
}

// add queues rec for insertion under seq (its EventID is known not to be
// stored) and applies it to its stream's status. hash is the ObjectHash
// of its body, if it has one.
func (at *appendTx) add(rec *event.Record, id any, hash string, seq int64) error {
	var stream *streamState
	var streamRow, objRow, bodyRow, target any
	if rec.StreamID != "" {
		st, err := at.stream(rec.StreamID, rec.ClusterID)
		if err != nil {
			return err
		}
		stream, streamRow = st, st.rowID
	}
	var objID int64
	if rec.IsObjectChange() {
		objID = at.object(storage.ObjectIDOf(*rec))
		objRow = objID
		if stream == nil {
			// Object changes always have a stream (journal.Validate).
		} else if pair := [2]int64{stream.rowID, objID}; !at.s.streamObjects[pair] && !at.streamObjects[pair] {
			at.streamObjectRows = append(at.streamObjectRows, []any{stream.rowID, objID})
			at.streamObjects[pair] = true
		}
	}
	if len(rec.Object) > 0 {
		b, err := at.body(rec.Object, hash, objID, kindKey{rec.ClusterID, rec.Resource.Group, rec.Resource.Resource})
		if err != nil {
			return err
		}
		bodyRow = b
	}
	if rec.Type == event.TypeAuditCorrelation && rec.Audit != nil && rec.Audit.TargetEventID != "" {
		target = encodeID(rec.Audit.TargetEventID)
	}
	meta, err := metaOf(rec, objRow != nil)
	if err != nil {
		return fmt.Errorf("encode: %w", err)
	}
	synthetic := 0
	if rec.Synthetic {
		synthetic = 1
	}
	at.recordRows = append(at.recordRows, []any{seq, keyOf(id), id, typeCodes[rec.Type], rec.ClusterID, streamRow,
		encodeTime(rec.ObservedAt), watchCodes[rec.WatchType], synthetic, objRow, bodyRow, target, meta})
	at.records++
	if rec.Type == event.TypeEvent {
		at.events++
	}
	if stream != nil {
		stored := *rec
		stored.IngestSeq = seq
		journal.ApplyStatus(&stream.StreamStatus, &stored)
	}
	return nil
}

// bodyHash returns the ObjectHash of a validated record's body, or "" when
// it has none. A given ObjectHash is used as it is (journal.Validate
// checked it), so a body is hashed at most once per Append.
func bodyHash(rec *event.Record) string {
	switch {
	case len(rec.Object) == 0:
		return ""
	case rec.ObjectHash != "":
		return rec.ObjectHash
	}
	return event.ObjectHash(rec.Object)
}

// idKey makes an encoded ID usable as a map key.
func idKey(id any) string {
	switch id := id.(type) {
	case []byte:
		return "b" + string(id)
	case string:
		return "t" + id
	}
	return ""
}

// existingSeqs returns the IngestSeq of every given (encoded) EventID
// that is stored, keyed by idKey.
func (at *appendTx) existingSeqs(ids []any) (map[string]int64, error) {
	out := make(map[string]int64)
	keys := make([]any, len(ids))
	for i, id := range ids {
		keys[i] = keyOf(id)
	}
	err := at.lookup(idLookup, keys, func(rows *sql.Rows) error {
		var id any
		var seq int64
		if err := rows.Scan(&id, &seq); err != nil {
			return err
		}
		out[idKey(id)] = seq
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("sqlite: append: look up event IDs: %w", err)
	}
	return out, nil
}

// lookupBodies finds which of the given body hashes (hex, "" for none)
// are stored already.
func (at *appendTx) lookupBodies(hashes []string) error {
	var keys []any
	for _, h := range hashes {
		if h != "" {
			b, _ := hex.DecodeString(h)
			keys = append(keys, keyOf(b))
		}
	}
	err := at.lookup(bodyLookup, keys, func(rows *sql.Rows) error {
		var hash []byte
		var id int64
		if err := rows.Scan(&hash, &id); err != nil {
			return err
		}
		at.knownBodies[hex.EncodeToString(hash)] = id
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: append: look up bodies: %w", err)
	}
	return nil
}

// lookupObjects finds the rows of the objects that the batch's new object
// changes name and the store does not remember, so that object needs no
// query: an object not found is new. existing and ids are those of
// Append (records already stored are skipped).
func (at *appendTx) lookupObjects(records []event.Record, existing map[string]int64, ids []any) error {
	var keys []any
	seen := map[storage.ObjectID]bool{}
	for i := range records {
		if !records[i].IsObjectChange() {
			continue
		}
		if _, dup := existing[idKey(ids[i])]; dup {
			continue
		}
		obj := storage.ObjectIDOf(records[i])
		if _, ok := at.s.objectIDs[obj]; ok || seen[obj] {
			continue
		}
		seen[obj] = true
		keys = append(keys, obj.ClusterID, obj.Namespace, obj.Group, obj.Resource, obj.Name)
	}
	err := at.lookup(objectLookup, keys, func(rows *sql.Rows) error {
		var id int64
		var obj storage.ObjectID
		if err := rows.Scan(&id, &obj.ClusterID, &obj.Namespace, &obj.Group, &obj.Resource, &obj.Name); err != nil {
			return err
		}
		at.objects[obj] = id
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: append: look up objects: %w", err)
	}
	return nil
}

// A keyLookup is a query that finds rows by a list of keys of columns
// values each: prefix is completed by "IN (...)" and its placeholders.
type keyLookup struct {
	prefix  string
	columns int
}

// The lookups of Append.
var (
	idLookup     = keyLookup{`SELECT event_id, seq FROM records WHERE id_key`, 1}
	bodyLookup   = keyLookup{`SELECT hash, id FROM bodies WHERE hash_key`, 1}
	objectLookup = keyLookup{`SELECT id, cluster, namespace, grp, resource, name FROM objects WHERE (cluster, namespace, grp, resource, name)`, 5}
)

// text returns the query for n keys.
func (l keyLookup) text(n int) string {
	if l.columns == 1 {
		return l.prefix + " IN " + placeholders(n)
	}
	row := placeholders(l.columns)
	return l.prefix + " IN (VALUES " + row + strings.Repeat(","+row, n-1) + ")"
}

// lookupSizes are the key counts of the prepared lookups, ascending. Keys
// are looked up in chunks of the largest size; a smaller rest goes to the
// smallest statement that holds it, padded with its last key repeated (a
// repeated key in IN (...) finds nothing twice). Preparing a statement
// per batch instead cost about as much as running it.
var lookupSizes = []int{1, 8, 64, 512}

// lookup runs l over keys (l.columns values per key, flattened) and calls
// scan for each row found.
func (at *appendTx) lookup(l keyLookup, keys []any, scan func(*sql.Rows) error) error {
	args := make([]any, 0, lookupSizes[len(lookupSizes)-1]*l.columns)
	for len(keys) > 0 {
		count := len(keys) / l.columns
		size := lookupSizes[len(lookupSizes)-1]
		for _, sz := range lookupSizes {
			if sz >= count {
				size = sz
				break
			}
		}
		n := min(size, count) * l.columns
		args = append(args[:0], keys[:n]...)
		for len(args) < size*l.columns {
			args = append(args, keys[n-l.columns:n]...)
		}
		keys = keys[n:]
		rows, err := at.tx.StmtContext(at.ctx, at.s.sized[sizedKey(l.prefix, size)]).QueryContext(at.ctx, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			if err := scan(rows); err != nil {
				rows.Close()
				return err
			}
		}
		if err := rows.Close(); err != nil {
			return err
		}
	}
	return nil
}

// A rowInsert is a multi-row INSERT: prefix is completed by rows of
// columns placeholders each.
//
// SQLite runs each of them in a statement journal (a copy of every page
// it touches, so the statement alone can be undone), about a tenth of
// Append's CPU: an INSERT that sets an INTEGER PRIMARY KEY from a
// parameter may abort on a non-integer value, whatever its conflict
// clause (OR FAIL does not help). Append assigns the keys itself, so that
// cost stays.
type rowInsert struct {
	prefix  string
	columns int
}

// The INSERTs of Append.
var (
	insertRecords       = rowInsert{`INSERT INTO records (seq, id_key, event_id, type, cluster, stream, observed_at, watch_type, synthetic, obj, body, target, meta) VALUES `, 13}
	insertBodies        = rowInsert{`INSERT INTO bodies (id, hash_key, hash, raw_len, base, data) VALUES `, 6}
	insertObjects       = rowInsert{`INSERT INTO objects (id, cluster, namespace, grp, resource, name) VALUES `, 6}
	insertStreamObjects = rowInsert{`INSERT OR IGNORE INTO stream_objects (stream, obj) VALUES `, 2}
)

// text returns the statement for n rows.
func (ins rowInsert) text(n int) string {
	row := placeholders(ins.columns)
	return ins.prefix + row + strings.Repeat(","+row, n-1)
}

// flush inserts the queued objects, bodies and records with multi-row
// INSERTs.
func (at *appendTx) flush() error {
	for _, q := range []struct {
		what string
		ins  rowInsert
		rows *[][]any
	}{
		{"objects", insertObjects, &at.objectRows},
		{"stream objects", insertStreamObjects, &at.streamObjectRows},
		{"bodies", insertBodies, &at.bodyRows},
		{"records", insertRecords, &at.recordRows},
	} {
		if err := at.insertRows(q.ins, *q.rows); err != nil {
			return fmt.Errorf("sqlite: append: insert %s: %w", q.what, err)
		}
		*q.rows = (*q.rows)[:0]
	}
	return nil
}

// insertSizes are the row counts of the prepared multi-row INSERTs; a
// batch is cut greedily into pieces of these sizes.
var insertSizes = []int{64, 16, 4, 1}

func (at *appendTx) insertRows(ins rowInsert, rows [][]any) error {
	args := make([]any, 0, min(len(rows), insertSizes[0])*ins.columns)
	for len(rows) > 0 {
		n := 1
		for _, size := range insertSizes {
			if size <= len(rows) {
				n = size
				break
			}
		}
		args = args[:0]
		for _, row := range rows[:n] {
			args = append(args, row...)
		}
		if _, err := at.tx.StmtContext(at.ctx, at.s.sized[sizedKey(ins.prefix, n)]).ExecContext(at.ctx, args...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// sizedKey names a statement of Store.sized: its prefix and its row or
// key count.
func sizedKey(prefix string, n int) string { return fmt.Sprintf("%s/%d", prefix, n) }

// placeholders returns a list of n placeholders: "(?,?,?)".
func placeholders(n int) string { return "(?" + strings.Repeat(",?", n-1) + ")" }

// prepareSized prepares the multi-row INSERTs and the lookups on the
// writer.
func (s *Store) prepareSized(ctx context.Context) error {
	prepare := func(key, text string) error {
		st, err := s.w.PrepareContext(ctx, text)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", text, err)
		}
		s.sized[key] = st
		return nil
	}
	for _, ins := range []rowInsert{insertRecords, insertBodies, insertObjects, insertStreamObjects} {
		for _, n := range insertSizes {
			if err := prepare(sizedKey(ins.prefix, n), ins.text(n)); err != nil {
				return err
			}
		}
	}
	for _, l := range []keyLookup{idLookup, bodyLookup, objectLookup} {
		for _, n := range lookupSizes {
			if err := prepare(sizedKey(l.prefix, n), l.text(n)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (at *appendTx) stream(streamID, cluster string) (*streamState, error) {
	if st, ok := at.streams[streamID]; ok {
		return st, nil
	}
	st, err := scanStream(at.stmts.streamRow.QueryRowContext(at.ctx, streamID))
	if errors.Is(err, sql.ErrNoRows) {
		zero := encodeTime(time.Time{})
		res, err := at.stmts.insertStream.ExecContext(at.ctx, streamID, cluster, zero, zero, zero, zero, zero)
		if err != nil {
			return nil, fmt.Errorf("new stream %s: %w", streamID, err)
		}
		rowID, err := res.LastInsertId()
		if err != nil {
			return nil, fmt.Errorf("new stream %s: %w", streamID, err)
		}
		st = &streamState{rowID: rowID, StreamStatus: journal.NewStatus(streamID)}
	} else if err != nil {
		return nil, fmt.Errorf("stream %s: %w", streamID, err)
	}
	at.streams[streamID] = st
	return st, nil
}

// object returns the row id of obj, which lookupObjects has looked for,
// and queues a new row when it is not stored.
func (at *appendTx) object(obj storage.ObjectID) int64 {
	if id, ok := at.objects[obj]; ok {
		return id
	}
	if id, ok := at.s.objectIDs[obj]; ok {
		return id
	}
	id := at.nextObjectID
	at.nextObjectID++
	at.objectRows = append(at.objectRows, []any{id, obj.ClusterID, obj.Namespace, obj.Group, obj.Resource, obj.Name})
	at.newObjects[id] = true
	at.objects[obj] = id
	return id
}

// body stores raw, whose ObjectHash is hashHex, once by hash and returns
// its row id. Bodies of an object (objRow != 0) are delta-encoded against
// the object's keyframe.
func (at *appendTx) body(raw []byte, hashHex string, objRow int64, kind kindKey) (int64, error) {
	var kf keyframe
	var haveKF bool
	if objRow != 0 {
		var err error
		if kf, haveKF, err = at.keyframe(objRow); err != nil {
			return 0, err
		}
		if haveKF && kf.lastHash == hashHex {
			return kf.lastBodyID, nil
		}
	}
	id, stored := at.knownBodies[hashHex]
	if !stored {
		var base any
		var data []byte
		if haveKF {
			if delta := encodeDelta(kf.raw, raw); len(delta) <= len(raw)/8 {
				base, data = kf.bodyID, delta
			}
		} else if objRow != 0 {
			// A new object: try the latest keyframe of its kind.
			kindKF, ok := at.kindKeyframes[kind]
			if !ok {
				kindKF, ok = at.s.kindKeyframes[kind]
			}
			if ok {
				if delta := encodeDelta(kindKF.raw, raw); len(delta) <= len(raw)/8 {
					base, data = kindKF.bodyID, delta
					kf, haveKF = keyframe{bodyID: kindKF.bodyID, raw: kindKF.raw}, true
				}
			}
		}
		if data == nil {
			var err error
			if data, err = deflateKeyframe(raw); err != nil {
				return 0, fmt.Errorf("compress body: %w", err)
			}
		}
		hash, _ := hex.DecodeString(hashHex)
		id = at.nextBodyID
		at.nextBodyID++
		at.knownBodies[hashHex] = id
		at.bodyRows = append(at.bodyRows, []any{id, keyOf(hash), hash, len(raw), base, data})
		at.bodies++
		at.bodyBytes += int64(len(data))
		at.rawBodyByte += int64(len(raw))
		if base == nil && objRow != 0 {
			kf = keyframe{bodyID: id, raw: raw}
			haveKF = true
			at.kindKeyframes[kind] = kf
		}
	}
	if objRow != 0 && haveKF {
		kf.lastHash, kf.lastBodyID = hashHex, id
		at.keyframes[objRow] = kf
	}
	return id, nil
}

// keyframe finds the keyframe of an object's latest body.
func (at *appendTx) keyframe(objRow int64) (keyframe, bool, error) {
	if kf, ok := at.keyframes[objRow]; ok {
		return kf, true, nil
	}
	if at.newObjects[objRow] {
		// No body of a new object is stored yet.
		return keyframe{}, false, nil
	}
	kf, ok := at.s.keyframes.get(objRow)
	if !ok {
		var latestID int64
		switch err := at.stmts.latestBody.QueryRowContext(at.ctx, objRow).Scan(&latestID); {
		case errors.Is(err, sql.ErrNoRows):
			return keyframe{}, false, nil
		case err != nil:
			return keyframe{}, false, fmt.Errorf("latest body: %w", err)
		}
		var rawLen int
		var base sql.NullInt64
		var data, latestHash []byte
		if err := at.stmts.bodyRow.QueryRowContext(at.ctx, latestID).Scan(&rawLen, &base, &data, &latestHash); err != nil {
			return keyframe{}, false, fmt.Errorf("latest body %d: %w", latestID, err)
		}
		kf = keyframe{bodyID: latestID, lastHash: hex.EncodeToString(latestHash), lastBodyID: latestID}
		if base.Valid {
			kf.bodyID = base.Int64
		}
	}
	raw, err := at.keyframeRaw(kf.bodyID)
	if err != nil {
		return keyframe{}, false, err
	}
	kf.raw = raw
	at.keyframes[objRow] = kf
	return kf, true, nil
}

// keyframeRaw returns the decoded keyframe with the given body id.
func (at *appendTx) keyframeRaw(bodyID int64) ([]byte, error) {
	if raw, ok := at.s.keyframeRaw.get(bodyID); ok {
		return raw, nil
	}
	var rawLen int
	var base sql.NullInt64
	var data, hash []byte
	if err := at.stmts.bodyRow.QueryRowContext(at.ctx, bodyID).Scan(&rawLen, &base, &data, &hash); err != nil {
		return nil, fmt.Errorf("keyframe %d: %w", bodyID, err)
	}
	if base.Valid {
		return nil, fmt.Errorf("%w: keyframe %d is a delta", errCorruptBody, bodyID)
	}
	raw, err := inflateKeyframe(data, rawLen)
	if err != nil {
		return nil, fmt.Errorf("keyframe %d: %w", bodyID, err)
	}
	return raw, nil
}

// finish writes the stream states and totals of the batch.
func (at *appendTx) finish() error {
	for _, st := range at.streams {
		if _, err := at.stmts.updateStream.ExecContext(at.ctx, st.updateArgs()...); err != nil {
			return fmt.Errorf("sqlite: append: update stream %s: %w", st.StreamID, err)
		}
	}
	if _, err := at.stmts.updateTotals.ExecContext(at.ctx, at.records, at.events, at.bodies, at.bodyBytes, at.rawBodyByte); err != nil {
		return fmt.Errorf("sqlite: append: update totals: %w", err)
	}
	return nil
}
