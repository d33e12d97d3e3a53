package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// The version index is what etcd's treeIndex is to its store: per object,
// the key of each of its records — observed time and seq — with what
// deciding visibility needs (stream, baseline, kind), in memory, so that
// an object's record at a time is found without SQLite and SQLite is
// asked only for the one record it names, by its table key. A writer's
// commit empties every reader connection's page cache, so under a
// recorder each statement a read saves is pages not fetched again.
//
// The index never answers from a stale view: before each answer it is
// brought up to the journal's newest seq as the kept timelines' check
// reads it (one query every reader makes anyway), reading only the
// records appended since, by this Store or any other process. Seqs
// follow commit order across processes, so the records after the newest
// seq indexed are exactly what is new. A compaction, which removes
// records, raises the journal's seq floor: the index is built again.

// indexVersion is one record of an object in the index: 32 bytes.
type indexVersion struct {
	observedAt int64 // encodeTime
	seq        int64
	stream     int32 // stream row id, 0 for none
	baseline   int32 // baseline row id, 0 for none
	kinds      uint8 // recordKinds: type | watch type << 4 | synthetic << 7
}

func (v *indexVersion) synthetic() bool { return v.kinds>>7 != 0 }

// versionIndex is the index of a Store; safe for concurrent use.
type versionIndex struct {
	// budget is the most versions indexed: past it the index keeps the
	// newest part of each object's history (trim), and a question about
	// the older part is answered from SQLite.
	budget int

	mu sync.RWMutex
	// built is set once the index holds the journal up to maxSeq; off
	// when even the newest version of each object is over the budget.
	built, off bool
	floor      int64 // the journal's seq floor when built
	maxSeq     int64
	maxObject  int64
	versions   int
	// objects maps an object to its row id, and byRow holds each
	// object's versions by row id, ordered by (observedAt, seq): all of
	// them, or, for an object in truncated, only its newest (see trim).
	objects   map[storage.ObjectID]int64
	byRow     [][]indexVersion
	truncated map[int64]bool
	// baselineRows caches baseline row ids by baseline ID: baseline rows
	// are only ever inserted.
	baselineRows sync.Map

	// building is closed when the build running on its own goroutine
	// (buildBackground) ends, nil when none runs; buildErr holds its
	// error for the next caller. background is its context, which stop
	// (close) ends.
	building   chan struct{}
	buildErr   error
	background context.Context
	stop       context.CancelFunc
}

// newVersionIndex returns an empty index of the budget, which builds
// itself on a goroutine of its own over a large journal.
func newVersionIndex(budget int) *versionIndex {
	x := &versionIndex{budget: budget}
	x.background, x.stop = context.WithCancel(context.Background())
	return x
}

// indexScan reads the object records after a seq, oldest first; at build,
// with seq 0, in the table's order (by object, then time), which needs no
// sort and reads the file front to back.
const (
	indexColumns   = `SELECT obj, observed_at, seq, coalesce(stream, 0), ` + recordKinds + `, coalesce(baseline, 0) FROM records r`
	indexBuildScan = indexColumns + ` WHERE obj > 0`
	indexCatchUp   = indexColumns + ` INDEXED BY records_seq WHERE seq > ? AND obj > 0 ORDER BY seq`
	indexObjects   = `SELECT o.id, c.name, p.grp, p.resource, p.namespace, o.name FROM objects o JOIN scopes p ON p.id = o.scope` +
		` JOIN clusters c ON c.id = p.cluster WHERE o.id > ?`
	indexMaxSeq = `SELECT coalesce(max(seq), 0), (SELECT seq_floor FROM totals WHERE id = 1) FROM records`
	// indexRecord reads one record of an object by its table key.
	indexRecord = `%s FROM records r` + recordJoins + ` WHERE r.obj = ? AND r.observed_at = ? AND r.seq = ?`
)

// indexBackgroundFrom is the size of a journal, in records, from which
// the index is built on a goroutine of its own while SQLite answers (a
// million records take the scan about a second, which every question
// asked meanwhile would wait for); a smaller journal's is built within
// the first answer that needs it.
var indexBackgroundFrom int64 = 1 << 17

// indexBuildHook, set by tests, runs first in a build on its own
// goroutine; its error fails the build.
var indexBuildHook func(context.Context) error

// current brings the index up to bound, the journal's newest seq as a
// check read it, when the journal's seq floor is floor; it reports false
// when the index is off (over its budget), or while it is built on a
// goroutine of its own (a journal of indexBackgroundFrom records or
// more): SQLite answers meanwhile. The error of a build on its own
// goroutine goes to the next caller, and the one after builds again.
func (x *versionIndex) current(ctx context.Context, db *sql.DB, bound, floor int64) (bool, error) {
	return x.bringUp(ctx, db, bound, floor, false)
}

// bringUp is current; with wait, it waits for a build on its own
// goroutine to end, and builds within the call where current would start
// one.
func (x *versionIndex) bringUp(ctx context.Context, db *sql.DB, bound, floor int64, wait bool) (bool, error) {
	for {
		ok, building, err := x.tryBringUp(ctx, db, bound, floor, wait)
		if building == nil || !wait {
			return ok, err
		}
		select {
		case <-building:
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// tryBringUp is bringUp up to a build on its own goroutine, which it
// returns when one runs (started by the call, unless wait).
func (x *versionIndex) tryBringUp(ctx context.Context, db *sql.DB, bound, floor int64, wait bool) (bool, chan struct{}, error) {
	x.mu.RLock()
	ok, off := x.built && x.floor == floor && x.maxSeq >= bound, x.off && x.floor == floor
	x.mu.RUnlock()
	if ok || off {
		return ok, nil, nil
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.built && x.floor == floor && x.maxSeq >= bound {
		return true, nil, nil
	}
	if x.off && x.floor == floor {
		return false, nil, nil
	}
	if err := x.buildErr; err != nil {
		x.buildErr = nil
		return false, nil, fmt.Errorf("version index: %w", err)
	}
	if x.building != nil {
		return false, x.building, nil
	}
	rebuild := !x.built || x.floor != floor
	if rebuild && !wait && bound-floor >= indexBackgroundFrom {
		x.buildBackground(db)
		return false, x.building, nil
	}
	tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return false, nil, err
	}
	defer tx.Rollback()
	if rebuild {
		err = x.build(ctx, tx)
	} else {
		err = x.catchUp(ctx, tx, bound)
	}
	if err != nil {
		x.built = false
		x.byRow, x.objects = nil, nil
		return false, nil, fmt.Errorf("version index: %w", err)
	}
	return x.built, nil, nil
}

// buildBackground builds the index anew on a goroutine of its own, into
// an index of its own, and puts it in place once built (under x.mu, which
// the caller holds to start it); close stops it. Answers meanwhile
// come from SQLite, and the first after it brings it up to date.
func (x *versionIndex) buildBackground(db *sql.DB) {
	done := make(chan struct{})
	x.building = done
	go func() {
		defer close(done)
		ctx := x.background
		fresh := &versionIndex{budget: x.budget}
		err := func() error {
			if hook := indexBuildHook; hook != nil {
				if err := hook(ctx); err != nil {
					return err
				}
			}
			tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
			if err != nil {
				return err
			}
			defer tx.Rollback()
			return fresh.build(ctx, tx)
		}()
		x.mu.Lock()
		defer x.mu.Unlock()
		x.building = nil
		if err != nil {
			if ctx.Err() == nil {
				x.buildErr = err
			}
			return
		}
		x.built, x.off, x.floor, x.maxSeq, x.maxObject, x.versions = fresh.built, fresh.off, fresh.floor, fresh.maxSeq, fresh.maxObject, fresh.versions
		x.objects, x.byRow, x.truncated = fresh.objects, fresh.byRow, fresh.truncated
	}()
}

// close stops a build on its own goroutine and waits for it.
func (x *versionIndex) close() {
	if x == nil {
		return
	}
	x.stop()
	x.mu.RLock()
	done := x.building
	x.mu.RUnlock()
	if done != nil {
		<-done
	}
}

// BuildVersionIndex brings the version index (WithVersionIndex) up to the
// journal now, and returns when it is: over a journal of some hundred
// thousand records or more the index is built on a goroutine of its own,
// started by the first LatestAt, which SQLite answers meanwhile, so that
// no question waits for the scan. A server that wants its first answers
// from the index, or a benchmark, calls it after Open. It does nothing
// when the index is off.
func (s *Store) BuildVersionIndex(ctx context.Context) error {
	done, err := s.enter()
	if err != nil {
		return err
	}
	defer done()
	if s.index == nil {
		return nil
	}
	v, err := s.loadTimelines(ctx)
	if err != nil {
		return s.readErr("version index", err)
	}
	if _, err := s.index.bringUp(ctx, s.r, v.bound, v.floor, true); err != nil {
		return s.readErr("version index", err)
	}
	return nil
}

// build reads the whole journal into the index.
func (x *versionIndex) build(ctx context.Context, tx *sql.Tx) error {
	x.built, x.off, x.versions, x.maxSeq, x.maxObject = false, false, 0, 0, 0
	x.objects, x.byRow, x.truncated = map[storage.ObjectID]int64{}, nil, map[int64]bool{}
	if err := tx.QueryRowContext(ctx, indexMaxSeq).Scan(&x.maxSeq, &x.floor); err != nil {
		return err
	}
	if err := x.readObjects(ctx, tx); err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, indexBuildScan)
	if err != nil {
		return err
	}
	defer rows.Close()
	var obj, prev, kinds, stream, baseline int64
	var v indexVersion
	var run []indexVersion
	flush := func() {
		if prev != 0 {
			x.byRow[prev] = append(x.byRow[prev], run...)
		}
		run = run[:0]
	}
	for rows.Next() {
		if err := rows.Scan(&obj, &v.observedAt, &v.seq, &stream, &kinds, &baseline); err != nil {
			return err
		}
		if obj != prev {
			flush()
			prev = obj
			if obj >= int64(len(x.byRow)) {
				return fmt.Errorf("record %d of object row %d, which the objects table lacks", v.seq, obj)
			}
		}
		v.stream, v.baseline, v.kinds = int32(stream), int32(baseline), uint8(kinds)
		run = append(run, v)
		x.versions++
		if x.versions > x.budget {
			flush()
			prev = obj
			if !x.trim() {
				return rows.Close()
			}
		}
	}
	flush()
	if err := rows.Err(); err != nil {
		return err
	}
	x.built = true
	return nil
}

// readObjects adds the objects after x.maxObject.
func (x *versionIndex) readObjects(ctx context.Context, tx *sql.Tx) error {
	rows, err := tx.QueryContext(ctx, indexObjects, x.maxObject)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id int64
		var o storage.ObjectID
		if err := rows.Scan(&id, &o.ClusterID, &o.Group, &o.Resource, &o.Namespace, &o.Name); err != nil {
			return err
		}
		x.objects[o] = id
		x.maxObject = max(x.maxObject, id)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if n := int(x.maxObject) + 1; n > len(x.byRow) {
		x.byRow = append(x.byRow, make([][]indexVersion, n-len(x.byRow))...)
	}
	return nil
}

// catchUp adds the records after x.maxSeq, in a transaction begun after
// bound was read.
func (x *versionIndex) catchUp(ctx context.Context, tx *sql.Tx, bound int64) error {
	if err := x.readObjects(ctx, tx); err != nil {
		return err
	}
	rows, err := tx.QueryContext(ctx, indexCatchUp, x.maxSeq)
	if err != nil {
		return err
	}
	defer rows.Close()
	var obj, kinds, stream, baseline int64
	var v indexVersion
	for rows.Next() {
		if err := rows.Scan(&obj, &v.observedAt, &v.seq, &stream, &kinds, &baseline); err != nil {
			return err
		}
		if obj >= int64(len(x.byRow)) {
			return fmt.Errorf("record %d of object row %d, which the objects table lacks", v.seq, obj)
		}
		v.stream, v.baseline, v.kinds = int32(stream), int32(baseline), uint8(kinds)
		x.maxSeq = max(x.maxSeq, v.seq)
		if versions := x.byRow[obj]; x.truncated[obj] && len(versions) > 0 && !versionBefore(versions[0], v) {
			continue // older than what is kept of the object: SQLite answers for that time
		}
		x.byRow[obj] = insertVersion(x.byRow[obj], v)
		x.versions++
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if x.versions > x.budget && !x.trim() {
		return nil
	}
	// The transaction began after bound was read, so it saw every record
	// up to bound: those of no object advance the index too.
	x.maxSeq = max(x.maxSeq, bound)
	return nil
}

// versionBefore tells whether a's key (observedAt, seq) is before b's.
func versionBefore(a, b indexVersion) bool {
	return a.observedAt < b.observedAt || a.observedAt == b.observedAt && a.seq < b.seq
}

// insertVersion adds v to versions ordered by (observedAt, seq): at the
// end, as a new version mostly is.
func insertVersion(versions []indexVersion, v indexVersion) []indexVersion {
	i := len(versions)
	for i > 0 && versionBefore(v, versions[i-1]) {
		i--
	}
	return slices.Insert(versions, i, v)
}

// trim brings the index within its budget by keeping, of each object,
// only its versions observed from a time on and the last one before it
// (the object's state then): its record at a later time is then in the
// index, and at an earlier one, SQLite's to find. Any suffix of an
// object's versions answers so; one time for all objects keeps the recent
// past of every object. The time is chosen to keep three quarters of the
// budget, later while the versions before it (one per object) take the
// index over. It turns the index off (false) when the newest version of
// each object alone is over the budget.
func (x *versionIndex) trim() bool {
	times := make([]int64, 0, x.versions)
	for _, versions := range x.byRow {
		for _, v := range versions {
			times = append(times, v.observedAt)
		}
	}
	slices.Sort(times)
	for keep := max(x.budget*3/4, 1); ; keep /= 2 {
		x.trimFrom(times[len(times)-keep])
		if x.versions <= x.budget {
			return true
		}
		if keep == 1 {
			x.built, x.off, x.objects, x.byRow, x.truncated = false, true, nil, nil, nil
			return false
		}
	}
}

// trimFrom keeps, of each object, its versions observed at or after from
// and the last one before.
func (x *versionIndex) trimFrom(from int64) {
	x.versions = 0
	for row, versions := range x.byRow {
		i, _ := slices.BinarySearchFunc(versions, from, func(v indexVersion, from int64) int {
			if v.observedAt < from {
				return -1
			}
			return 1
		})
		if i > 1 {
			x.byRow[row] = slices.Clone(versions[i-1:])
			x.truncated[int64(row)] = true
		}
		x.versions += len(x.byRow[row])
	}
}

// hidden is the open baselines of a visibility by stream row, whose
// synthetic records after minBegin are left out.
type hidden struct {
	streams map[int32]hiddenStream
}

type hiddenStream struct {
	minBegin  int64
	baselines map[int32]bool
}

// latest returns the object's last version observed at or before at that
// is visible (a seq up to bound, not an item of an open baseline); false
// when none is. known is false when the answer lies in the part of the
// object's history the index does not keep (see trim).
func (x *versionIndex) latest(row int64, at, bound int64, h hidden) (found indexVersion, ok, known bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if row <= 0 || row >= int64(len(x.byRow)) {
		return indexVersion{}, false, true
	}
	versions := x.byRow[row]
	i, _ := slices.BinarySearchFunc(versions, at, func(v indexVersion, at int64) int {
		if v.observedAt <= at {
			return -1
		}
		return 1
	})
	for i--; i >= 0; i-- {
		v := versions[i]
		if v.seq > bound {
			continue
		}
		if v.synthetic() && len(h.streams) > 0 {
			if hs, ok := h.streams[v.stream]; ok && v.seq > hs.minBegin && hs.baselines[v.baseline] {
				continue
			}
		}
		return v, true, true
	}
	return indexVersion{}, false, !x.truncated[row]
}

// objectRow returns an object's row id; false when the index does not
// know it (the journal holds no record of it).
func (x *versionIndex) objectRow(obj storage.ObjectID) (int64, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	row, ok := x.objects[obj]
	return row, ok
}

// hiddenOf returns the open baselines of vis by stream and baseline row.
func (s *Store) hiddenOf(ctx context.Context, vis visibility) (hidden, error) {
	var h hidden
	for i, os := range vis.open {
		if vis.rows[i] == 0 {
			continue
		}
		hs := hiddenStream{minBegin: os.minBegin, baselines: map[int32]bool{}}
		for _, id := range os.ids {
			row, err := s.baselineRow(ctx, id)
			if err != nil {
				return hidden{}, err
			}
			hs.baselines[int32(row)] = true
		}
		if h.streams == nil {
			h.streams = map[int32]hiddenStream{}
		}
		h.streams[int32(vis.rows[i])] = hs
	}
	return h, nil
}

// baselineRow returns the row id of a baseline ID (0 for none).
func (s *Store) baselineRow(ctx context.Context, id string) (int64, error) {
	if row, ok := s.index.baselineRows.Load(id); ok {
		return row.(int64), nil
	}
	var row int64
	err := s.queryRow(ctx, `SELECT id FROM baselines WHERE baseline_id = ?`, id).Scan(&row)
	if err == sql.ErrNoRows {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	s.index.baselineRows.Store(id, row)
	return row, nil
}

// indexedLatestAt is LatestAt from the version index: the kept timelines'
// check, the index brought up to it, and one read of the record by its
// key. It reports false when the index cannot answer (it is off, or the
// record went in a compaction since the check), and LatestAt asks SQLite.
func (s *Store) indexedLatestAt(ctx context.Context, obj storage.ObjectID, at time.Time) ([]event.Record, bool, error) {
	if s.index == nil {
		return nil, false, nil
	}
	v, err := s.loadTimelines(ctx)
	if err != nil {
		return nil, false, err
	}
	if ok, err := s.index.current(ctx, s.r, v.bound, v.floor); !ok || err != nil {
		return nil, false, err
	}
	open := v.open
	if v.maxSeq > v.bound {
		open = openBaselinesOf(v.byStream, v.bound)
	}
	vis, err := s.visibilityOf(ctx, v, open)
	if err != nil {
		return nil, false, err
	}
	h, err := s.hiddenOf(ctx, vis)
	if err != nil {
		return nil, false, err
	}
	row, ok := s.index.objectRow(obj)
	if !ok {
		return nil, true, nil
	}
	found, ok, known := s.index.latest(row, encodeTime(at), v.bound, h)
	if !known {
		return nil, false, nil
	}
	if !ok {
		return nil, true, nil
	}
	rows, err := s.cachedQuery(ctx, fmt.Sprintf(indexRecord, fmt.Sprintf(objectRecordSelect, "b.data")), row, found.observedAt, found.seq)
	if err != nil {
		return nil, false, err
	}
	recs, err := s.decodeRowsOf(ctx, rows, &obj)
	if err != nil || len(recs) == 0 {
		return nil, false, err
	}
	return recs, true, nil
}
