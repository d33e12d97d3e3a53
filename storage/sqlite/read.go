package sqlite

import (
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/internal/journal"
)

// recordSelect selects a record with its stream ID, object name and body.
// The %s is the body data column (or NULL to skip bodies).
const recordSelect = `SELECT r.seq, r.event_id, r.type, c.name, s.stream_id, r.observed_at, r.watch_type, r.synthetic,
	p.grp, p.resource, p.namespace, o.name, b.hash, b.raw_len, b.base, %s, bl.baseline_id, r.meta`

// recordJoins follow the join of the objects row o of a record r.
const recordJoins = ` LEFT JOIN scopes p ON p.id = o.scope` + namedJoins

// namedJoins join what a record r points at but its object.
const namedJoins = ` JOIN clusters c ON c.id = r.cluster LEFT JOIN streams s ON s.id = r.stream` +
	` LEFT JOIN bodies b ON b.id = r.body LEFT JOIN baselines bl ON bl.id = r.baseline`

// clusterSubquery finds a cluster's row id from its ID.
const clusterSubquery = `(SELECT id FROM clusters WHERE name = ?)`

// objectSubquery finds an object's row id from its ObjectID fields.
const objectSubquery = `(SELECT id FROM objects WHERE scope = (SELECT id FROM scopes WHERE cluster = ` + clusterSubquery +
	` AND namespace = ? AND grp = ? AND resource = ?) AND name = ?)`

func objectArgs(obj storage.ObjectID) []any {
	return []any{obj.ClusterID, obj.Namespace, obj.Group, obj.Resource, obj.Name}
}

func bodyColumn(withoutBodies bool) string {
	if withoutBodies {
		return "NULL"
	}
	return "b.data"
}

// rowRecord is a scanned row whose body is not decoded yet; bodies are
// decoded after the rows are closed, because a delta's base may need
// another query.
type rowRecord struct {
	rec    event.Record
	rawLen sql.NullInt64
	base   sql.NullInt64
	data   []byte
}

// scanRecords scans record rows; extra receives the columns that follow a
// record's (the same on every row).
func scanRecords(rows *sql.Rows, extra ...any) ([]rowRecord, error) {
	defer rows.Close()
	var out []rowRecord
	for rows.Next() {
		var (
			rr                           rowRecord
			eventID                      any
			typ, watch, synthetic        int
			observed                     int64
			streamID                     sql.NullString
			grp, resource, namespace, nm sql.NullString
			hash, meta                   []byte
			baseline                     sql.NullString
		)
		dest := []any{&rr.rec.IngestSeq, &eventID, &typ, &rr.rec.ClusterID, &streamID, &observed, &watch, &synthetic,
			&grp, &resource, &namespace, &nm, &hash, &rr.rawLen, &rr.base, &rr.data, &baseline, &meta}
		if err := rows.Scan(append(dest, extra...)...); err != nil {
			return nil, err
		}
		r := &rr.rec
		r.EventID = decodeID(eventID)
		r.Type = typeNames[typ]
		r.StreamID = streamID.String
		r.ObservedAt = decodeTime(observed)
		r.WatchType = watchNames[watch]
		r.Synthetic = synthetic != 0
		var m recordMeta
		if err := decodeMeta(meta, &m); err != nil {
			return nil, fmt.Errorf("%w: record %d: meta: %v", errCorruptBody, r.IngestSeq, err)
		}
		m.applyTo(r)
		if baseline.Valid {
			r.BaselineID = baseline.String
		}
		if nm.Valid {
			r.Resource.Group, r.Resource.Resource, r.Resource.Namespace, r.Resource.Name = grp.String, resource.String, namespace.String, nm.String
		}
		if hash != nil {
			r.ObjectHash = hex.EncodeToString(hash)
		}
		out = append(out, rr)
	}
	return out, rows.Err()
}

// maxCachedStmts bounds the statements a stmtCache keeps. Records builds
// a few dozen distinct statements at most (the parameters are bound, only
// the shape of the filter and the type list are in the text); past the
// bound a statement is run without keeping it.
const maxCachedStmts = 256

// stmtCache keeps prepared read statements by their text; safe for
// concurrent use.
type stmtCache struct {
	mu    sync.Mutex
	stmts map[string]*sql.Stmt
}

// get returns the statement of text, prepared on db, or nil when the
// cache is full.
func (c *stmtCache) get(ctx context.Context, db *sql.DB, text string) (*sql.Stmt, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if st, ok := c.stmts[text]; ok {
		return st, nil
	}
	if len(c.stmts) >= maxCachedStmts {
		return nil, nil
	}
	st, err := db.PrepareContext(ctx, text)
	if err != nil {
		return nil, err
	}
	if c.stmts == nil {
		c.stmts = map[string]*sql.Stmt{}
	}
	c.stmts[text] = st
	return st, nil
}

func (c *stmtCache) close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.stmts {
		st.Close()
	}
	c.stmts = nil
}

// cachedQuery runs a read statement prepared once per text.
func (s *Store) cachedQuery(ctx context.Context, text string, args ...any) (*sql.Rows, error) {
	st, err := s.recordStmts.get(ctx, s.r, text)
	if err != nil {
		return nil, err
	}
	if st == nil {
		return s.r.QueryContext(ctx, text, args...)
	}
	return st.QueryContext(ctx, args...)
}

// query runs a record query on the read pool and decodes the bodies.
func (s *Store) query(ctx context.Context, q string, args ...any) ([]event.Record, error) {
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, err
	}
	return s.decodeRows(ctx, rows)
}

// decodeRows scans record rows (extra as in scanRecords), closes them, and
// decodes the bodies.
func (s *Store) decodeRows(ctx context.Context, rows *sql.Rows, extra ...any) ([]event.Record, error) {
	scanned, err := scanRecords(rows, extra...)
	if err != nil {
		return nil, err
	}
	out := make([]event.Record, len(scanned))
	for i := range scanned {
		rr := &scanned[i]
		if rr.data != nil {
			raw, err := s.decodeBody(ctx, rr.data, int(rr.rawLen.Int64), rr.base)
			if err != nil {
				return nil, fmt.Errorf("record %d (%s): %w", rr.rec.IngestSeq, rr.rec.EventID, err)
			}
			rr.rec.Object = json.RawMessage(raw)
		}
		out[i] = rr.rec
	}
	return out, nil
}

func (s *Store) decodeBody(ctx context.Context, data []byte, rawLen int, base sql.NullInt64) ([]byte, error) {
	if !base.Valid {
		return inflateKeyframe(data, rawLen)
	}
	baseRaw, ok := s.bases.get(base.Int64)
	if !ok {
		var baseLen int
		var baseData []byte
		if err := s.keyframeStmt.QueryRowContext(ctx, base.Int64).Scan(&baseLen, &baseData); err != nil {
			return nil, fmt.Errorf("keyframe %d: %w", base.Int64, err)
		}
		var err error
		if baseRaw, err = inflateKeyframe(baseData, baseLen); err != nil {
			return nil, err
		}
		s.bases.put(base.Int64, baseRaw)
	}
	return applyDelta(baseRaw, data, rawLen)
}

func (s *Store) readErr(op string, err error) error {
	if errors.Is(err, sql.ErrConnDone) || (err != nil && strings.Contains(err.Error(), "database is closed")) {
		return fmt.Errorf("sqlite: %s: %w", op, storage.ErrClosed)
	}
	return fmt.Errorf("sqlite: %s: %w", op, err)
}

// Get implements storage.Reader.
func (s *Store) Get(ctx context.Context, eventID string) (event.Record, error) {
	done, err := s.enter()
	if err != nil {
		return event.Record{}, err
	}
	defer done()
	recs, err := s.query(ctx, fmt.Sprintf(recordSelect, "b.data")+` FROM records r LEFT JOIN objects o ON o.id = r.obj`+recordJoins+` WHERE r.id_key = ? AND r.event_id = ?`, keyOf(encodeID(eventID)), encodeID(eventID))
	if err != nil {
		return event.Record{}, s.readErr("get "+eventID, err)
	}
	if len(recs) == 0 {
		return event.Record{}, fmt.Errorf("sqlite: get %s: %w", eventID, storage.ErrNotFound)
	}
	return recs[0], nil
}

// streamUntilBound bounds a stream's records by the seq of its last
// record observed at or before a time (NULL, matching nothing, when there
// is none). Its arguments are the stream's row id and the time.
const streamUntilBound = `r.seq <= (SELECT u.seq FROM records u INDEXED BY records_stream_time` +
	` WHERE u.stream = ? AND u.observed_at <= ? ORDER BY u.observed_at DESC, u.seq DESC LIMIT 1)`

// streamRow reads the row id of a stream (sql.ErrNoRows when there is
// none). Stream rows are only ever inserted, never deleted or renumbered,
// so a committed row id is remembered for good.
func (s *Store) streamRow(ctx context.Context, streamID string, rowID *int64) error {
	if id, ok := s.streamRows.Load(streamID); ok {
		*rowID = id.(int64)
		return nil
	}
	if err := s.readStreamRow(ctx, streamID, rowID); err != nil {
		return err
	}
	s.streamRows.Store(streamID, *rowID)
	return nil
}

func (s *Store) readStreamRow(ctx context.Context, streamID string, rowID *int64) error {
	rows, err := s.cachedQuery(ctx, `SELECT id FROM streams WHERE stream_id = ?`, streamID)
	if err != nil {
		return err
	}
	defer rows.Close()
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return err
		}
		return sql.ErrNoRows
	}
	if err := rows.Scan(rowID); err != nil {
		return err
	}
	return rows.Close()
}

// Records implements storage.Reader.
func (s *Store) Records(ctx context.Context, q storage.Query) (storage.Page, error) {
	done, err := s.enter()
	if err != nil {
		return storage.Page{}, err
	}
	defer done()
	limit := q.Limit
	if limit <= 0 {
		limit = journal.DefaultLimit
	}
	rq, matches, err := s.recordsQuery(ctx, q)
	if err != nil || !matches {
		return storage.Page{}, err
	}
	rows, err := s.cachedQuery(ctx, rq.text(q), append(rq.args, limit+1)...)
	if err != nil {
		return storage.Page{}, s.readErr("records", err)
	}
	recs, err := s.decodeRows(ctx, rows)
	if err != nil {
		return storage.Page{}, s.readErr("records", err)
	}
	page := storage.Page{Records: recs}
	if len(recs) > limit {
		page.Records = recs[:limit]
		page.Next = journal.EncodeCursor(recs[limit-1].IngestSeq)
	}
	return page, nil
}

// recordsQuery is the statement of a Records query: its conditions, their
// arguments, and the index it must use.
type recordsQuery struct {
	where []string
	args  []any
	index string
}

func (rq *recordsQuery) add(cond string, args ...any) {
	rq.where = append(rq.where, cond)
	rq.args = append(rq.args, args...)
}

// recordsQuery builds the statement of q; false when no record can match.
func (s *Store) recordsQuery(ctx context.Context, q storage.Query) (recordsQuery, bool, error) {
	var rq recordsQuery
	var rowID int64
	if q.StreamID != "" {
		err := s.streamRow(ctx, q.StreamID, &rowID)
		if errors.Is(err, sql.ErrNoRows) {
			return rq, false, nil
		}
		if err != nil {
			return rq, false, s.readErr("records of "+q.StreamID, err)
		}
		rq.add("r.stream = ?", rowID)
		rq.index = "records_stream"
	}
	if q.ClusterID != "" {
		rq.add("r.cluster = "+clusterSubquery, q.ClusterID)
	}
	if len(q.Types) > 0 && !rq.types(q.Types) {
		return rq, false, nil // no record has an unknown type
	}
	rq.timeBounds(q, rowID)
	if err := rq.seqBounds(q); err != nil {
		return rq, false, err
	}
	return rq, true, nil
}

// types restricts the query to the record types; false when none is
// known.
func (rq *recordsQuery) types(types []event.RecordType) bool {
	markersOnly := true
	codes := make([]string, 0, len(types))
	for _, t := range types {
		if code, ok := typeCodes[t]; ok {
			markersOnly = markersOnly && code != codeEvent
			codes = append(codes, strconv.Itoa(code))
		}
	}
	if len(codes) == 0 {
		return false
	}
	rq.add("r.type IN (" + strings.Join(codes, ",") + ")")
	if markersOnly {
		// Implies the partial index's condition, so it can be used.
		rq.add("r.type <> 1")
		rq.index = "records_marker"
	}
	return true
}

// timeBounds bounds ObservedAt by q.Since and q.Until; streamRow is the
// row id of q.StreamID, if it is set.
func (rq *recordsQuery) timeBounds(q storage.Query, streamRow int64) {
	if !q.Since.IsZero() {
		rq.add("r.observed_at >= ?", encodeTime(q.Since))
	}
	if q.Until.IsZero() {
		return
	}
	rq.add("r.observed_at <= ?", encodeTime(q.Until))
	if q.StreamID != "" {
		// Bound the walk by the seq of the stream's last record, by
		// (observed_at, seq), observed at or before Until, found by
		// one seek, instead of walking every later record. Every
		// record observed until then has a seq up to it: within a
		// stream ObservedAt does not decrease in seq order
		// (Append's contract), and a compaction's markers, which
		// break that order, sit at or before the record observed
		// when they are (see storage/internal/compaction).
		rq.add(streamUntilBound, streamRow, encodeTime(q.Until))
	}
}

// seqBounds bounds IngestSeq by q.AfterSeq, q.BeforeSeq and q.Cursor.
func (rq *recordsQuery) seqBounds(q storage.Query) error {
	if q.AfterSeq > 0 {
		rq.add("r.seq > ?", q.AfterSeq)
	}
	if q.BeforeSeq > 0 {
		rq.add("r.seq < ?", q.BeforeSeq)
	}
	if q.Cursor == "" {
		return nil
	}
	cursor, err := journal.DecodeCursor(q.Cursor)
	if err != nil {
		return fmt.Errorf("sqlite: records: %w", err)
	}
	if q.Descending {
		rq.add("r.seq < ?", cursor)
	} else {
		rq.add("r.seq > ?", cursor)
	}
	return nil
}

// text returns the statement; its last argument is the row limit.
func (rq *recordsQuery) text(q storage.Query) string {
	var b strings.Builder
	fmt.Fprintf(&b, recordSelect, bodyColumn(q.WithoutBodies))
	b.WriteString(" FROM records r")
	if rq.index != "" {
		b.WriteString(" INDEXED BY " + rq.index)
	}
	b.WriteString(" LEFT JOIN objects o ON o.id = r.obj" + recordJoins)
	if len(rq.where) > 0 {
		b.WriteString(" WHERE " + strings.Join(rq.where, " AND "))
	}
	if q.Descending {
		b.WriteString(" ORDER BY r.seq DESC")
	} else {
		b.WriteString(" ORDER BY r.seq")
	}
	b.WriteString(" LIMIT ?")
	return b.String()
}

// StreamStatus implements storage.Reader.
func (s *Store) StreamStatus(ctx context.Context, streamID string) (storage.StreamStatus, error) {
	done, err := s.enter()
	if err != nil {
		return storage.StreamStatus{}, err
	}
	defer done()
	st, err := scanStream(s.r.QueryRowContext(ctx, `SELECT `+streamColumns+` FROM streams WHERE stream_id = ?`, streamID))
	if errors.Is(err, sql.ErrNoRows) {
		return storage.StreamStatus{}, fmt.Errorf("sqlite: stream %s: %w", streamID, storage.ErrNotFound)
	}
	if err != nil {
		return storage.StreamStatus{}, s.readErr("stream "+streamID, err)
	}
	return st.StreamStatus, nil
}

// Streams implements storage.Reader.
func (s *Store) Streams(ctx context.Context, clusterID string) ([]storage.StreamStatus, error) {
	done, err := s.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	q, args := `SELECT `+streamColumns+` FROM streams ORDER BY stream_id`, []any{}
	if clusterID != "" {
		q, args = `SELECT `+streamColumns+` FROM streams WHERE cluster = ? ORDER BY stream_id`, []any{clusterID}
	}
	rows, err := s.cachedQuery(ctx, q, args...)
	if err != nil {
		return nil, s.readErr("streams", err)
	}
	defer rows.Close()
	var out []storage.StreamStatus
	for rows.Next() {
		st, err := scanStream(rows)
		if err != nil {
			return nil, s.readErr("streams", err)
		}
		out = append(out, st.StreamStatus)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("streams", err)
	}
	return out, nil
}

// ObjectHistory implements storage.Reader.
func (s *Store) ObjectHistory(ctx context.Context, obj storage.ObjectID, q storage.HistoryQuery) ([]event.Record, error) {
	done, err := s.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	recs, err := s.objectHistory(ctx, obj, q)
	if err != nil {
		return nil, s.readErr("history of "+objectName(obj), err)
	}
	return recs, nil
}

// objectHistory is ObjectHistory.
func (s *Store) objectHistory(ctx context.Context, obj storage.ObjectID, q storage.HistoryQuery) ([]event.Record, error) {
	vis, err := s.visibility(ctx)
	if err != nil {
		return nil, err
	}
	query, args := objectHistoryQuery(obj, q, vis)
	rows, err := s.cachedQuery(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return s.decodeRows(ctx, rows)
}

// objectHistoryQuery is the statement of ObjectHistory.
func objectHistoryQuery(obj storage.ObjectID, q storage.HistoryQuery, vis visibility) (string, []any) {
	visible, visArgs := vis.where("r", "", 0)
	var b strings.Builder
	fmt.Fprintf(&b, recordSelect, bodyColumn(q.WithoutBodies))
	b.WriteString(` FROM records r INDEXED BY records_object LEFT JOIN objects o ON o.id = r.obj` + recordJoins + ` WHERE r.obj = ` + objectSubquery + ` AND ` + visible)
	args := append(objectArgs(obj), visArgs...)
	if !q.Since.IsZero() {
		b.WriteString(" AND r.observed_at >= ?")
		args = append(args, encodeTime(q.Since))
	}
	if !q.Until.IsZero() {
		b.WriteString(" AND r.observed_at <= ?")
		args = append(args, encodeTime(q.Until))
	}
	if q.StreamID != "" {
		b.WriteString(" AND s.stream_id = ?")
		args = append(args, q.StreamID)
	}
	if q.AfterSeq > 0 {
		b.WriteString(" AND r.seq > ?")
		args = append(args, q.AfterSeq)
	}
	b.WriteString(" ORDER BY r.seq")
	if q.Limit > 0 {
		b.WriteString(" LIMIT ?")
		args = append(args, q.Limit)
	}
	return b.String(), args
}

func objectName(obj storage.ObjectID) string {
	return fmt.Sprintf("%s %s/%s %s/%s", obj.ClusterID, obj.Group, obj.Resource, obj.Namespace, obj.Name)
}

// latestAtHead and latestAtTail surround the condition that leaves out the
// items of open baselines. The statement also reads what the open
// baselines it was built from depend on — the newest baseline record and
// the compaction floor — so that one statement answers, and a change since
// the Store's timelines were loaded is seen (freshColumns).
const (
	freshColumns = `, (SELECT coalesce(max(seq), 0) FROM records INDEXED BY records_type_seq WHERE type = 2 AND type <> 1),` +
		` (SELECT seq_floor FROM totals WHERE id = 1)`
	latestAtHead = freshColumns + ` FROM records r INDEXED BY records_object LEFT JOIN objects o ON o.id = r.obj` + recordJoins +
		` WHERE r.obj = ` + objectSubquery + ` AND r.observed_at <= ?`
	latestAtTail = ` ORDER BY r.observed_at DESC, r.seq DESC LIMIT 1`
)

// latestAtQuery, prepared at Open, is LatestAt when no baseline is open.
var latestAtQuery = fmt.Sprintf(recordSelect, "b.data") + latestAtHead + latestAtTail

// latestAtSelfContained answers LatestAt without the kept timelines: it
// decides for each synthetic row it visits whether it is an item of an
// open baseline (its stream has the begin of its baseline and no end), at
// the cost of a walk of the stream's baseline markers with a JSON read of
// each. LatestAt falls back to it when baselines keep beginning or ending
// while it runs.
var latestAtSelfContained = fmt.Sprintf(recordSelect, "b.data") + latestAtHead + ` AND NOT (r.synthetic <> 0 AND ` + openItemSQL("r") + `)` + latestAtTail

// openItemSQL is the condition that the synthetic row a of the records
// table is an item of an open baseline: its stream has the begin record
// of the row's baseline and no end record of it (an inferred deletion
// follows its baseline's end).
func openItemSQL(a string) string {
	marker := func(phase string) string {
		return `SELECT 1 FROM records e INDEXED BY records_marker WHERE e.type = 2 AND e.type <> 1 AND e.stream = ` + a + `.stream` +
			` AND e.baseline = ` + a + `.baseline AND json_extract(CAST(e.meta AS TEXT), '$.bl.phase') = '` + phase + `'`
	}
	return `EXISTS (` + marker("begin") + `) AND NOT EXISTS (` + marker("end") + `)`
}

// LatestAt implements storage.Reader. Usually one statement: built with the
// open baselines of the kept timelines, it also reads whether they are
// still current; when they are not (or no row answers), the timelines
// are brought up to date and the statement runs again.
func (s *Store) LatestAt(ctx context.Context, obj storage.ObjectID, at time.Time) (event.Record, error) {
	done, err := s.enter()
	if err != nil {
		return event.Record{}, err
	}
	defer done()
	recs, err := s.latestAt(ctx, obj, at)
	if err != nil {
		return event.Record{}, s.readErr("latest of "+objectName(obj), err)
	}
	if len(recs) == 0 {
		return event.Record{}, fmt.Errorf("sqlite: %s at %s: %w", objectName(obj), at.UTC().Format(time.RFC3339Nano), storage.ErrNotFound)
	}
	return recs[0], nil
}

func (s *Store) latestAt(ctx context.Context, obj storage.ObjectID, at time.Time) ([]event.Record, error) {
	args := append(objectArgs(obj), encodeTime(at))
	v, ok := s.keptTimelines()
	for attempt := 0; attempt < 3; attempt++ {
		if !ok {
			var err error
			if v, err = s.loadTimelines(ctx); err != nil {
				return nil, err
			}
		}
		vis, err := s.visibilityOf(ctx, v, v.open)
		if err != nil {
			return nil, err
		}
		var rows *sql.Rows
		exclude, exArgs := vis.exclude("r", "", 0)
		if exclude == "" {
			rows, err = s.latestAtStmt.QueryContext(ctx, args...)
		} else {
			rows, err = s.cachedQuery(ctx, fmt.Sprintf(recordSelect, "b.data")+latestAtHead+` AND `+exclude+latestAtTail, append(args, exArgs...)...)
		}
		if err != nil {
			return nil, err
		}
		var baseline, floor int64
		recs, err := s.decodeRows(ctx, rows, &baseline, &floor)
		if err != nil {
			return nil, err
		}
		if len(recs) > 0 && baseline == v.maxBaseline && floor == v.floor {
			return recs, nil
		}
		prev := v
		if v, err = s.loadTimelines(ctx); err != nil {
			return nil, err
		}
		if len(recs) == 0 && v.maxBaseline == prev.maxBaseline && v.floor == prev.floor {
			// No baseline began or ended since the open set was read,
			// so none did before the statement either: none answers.
			return nil, nil
		}
		ok = true
	}
	rows, err := s.cachedQuery(ctx, latestAtSelfContained, args...)
	if err != nil {
		return nil, err
	}
	return s.decodeRows(ctx, rows, new(int64), new(int64))
}

// AliveAt implements storage.Reader.
func (s *Store) AliveAt(ctx context.Context, q storage.AliveQuery) ([]event.Record, error) {
	done, err := s.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	vis, err := s.visibility(ctx)
	if err != nil {
		return nil, s.readErr("alive", err)
	}
	var rowID int64
	if q.StreamID != "" {
		err := s.streamRow(ctx, q.StreamID, &rowID)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, nil
		}
		if err != nil {
			return nil, s.readErr("alive in "+q.StreamID, err)
		}
	}
	query, args := aliveQuery(q, vis, rowID)
	recs, err := s.query(ctx, query, args...)
	if err != nil {
		return nil, s.readErr("alive", err)
	}
	return recs, nil
}

// aliveQuery is the statement of AliveAt; rowID is the row of q.StreamID,
// when it is set.
func aliveQuery(q storage.AliveQuery, vis visibility, rowID int64) (string, []any) {
	var where []string
	var args []any
	latest := `(SELECT x.seq FROM records x INDEXED BY records_object WHERE x.obj = o.id AND x.observed_at <= ?`
	args = append(args, encodeTime(q.At))
	if q.StreamID != "" {
		visible, visArgs := vis.where("x", q.IncludeBaseline, rowID)
		latest += ` AND x.stream = ? AND ` + visible
		args = append(append(args, rowID), visArgs...)
		where, args = append(where, "o.id IN (SELECT obj FROM stream_objects WHERE stream = ?)"), append(args, rowID)
	} else {
		visible, visArgs := vis.where("x", q.IncludeBaseline, 0)
		latest += ` AND ` + visible
		args = append(args, visArgs...)
		if q.ClusterID != "" {
			where, args = append(where, "p.cluster = "+clusterSubquery), append(args, q.ClusterID)
		}
		if q.Namespace != "" {
			where, args = append(where, "p.namespace = ?"), append(args, q.Namespace)
		}
		if q.Group != "" {
			where, args = append(where, "p.grp = ?"), append(args, q.Group)
		}
		if q.Resource != "" {
			where, args = append(where, "p.resource = ?"), append(args, q.Resource)
		}
	}
	latest += ` ORDER BY x.observed_at DESC, x.seq DESC LIMIT 1)`
	where = append(where, "r.watch_type <> "+strconv.Itoa(codeDeleted))
	query := fmt.Sprintf(recordSelect, bodyColumn(q.WithoutBodies)) + ` FROM scopes p JOIN objects o ON o.scope = p.id JOIN records r ON r.seq = ` + latest + namedJoins +
		` WHERE ` + strings.Join(where, " AND ") + ` ORDER BY c.name, p.grp, p.resource, p.namespace, o.name`
	return query, args
}

// EventByResourceVersion implements storage.Reader.
// The first real record with the resourceVersion, else the first
// synthetic one, in seq order: see storage.Reader.
func (s *Store) EventByResourceVersion(ctx context.Context, obj storage.ObjectID, uid, rv string) (event.Record, error) {
	done, err := s.enter()
	if err != nil {
		return event.Record{}, err
	}
	defer done()
	history, err := s.objectHistory(ctx, obj, storage.HistoryQuery{WithoutBodies: true})
	if err != nil {
		return event.Record{}, s.readErr("history of "+objectName(obj), err)
	}
	var found *event.Record
	for i := range history {
		r := &history[i]
		if r.Resource.ResourceVersion != rv || uid != "" && r.Resource.UID != uid {
			continue
		}
		if !r.Synthetic {
			found = r
			break
		}
		if found == nil {
			found = r
		}
	}
	if found == nil {
		return event.Record{}, fmt.Errorf("sqlite: %s uid %q resourceVersion %q: %w", objectName(obj), uid, rv, storage.ErrNotFound)
	}
	rec, err := s.Get(ctx, found.EventID)
	if err != nil {
		return event.Record{}, err
	}
	return rec, nil
}

// Correlations implements storage.Reader.
func (s *Store) Correlations(ctx context.Context, eventIDs []string) (map[string][]event.Record, error) {
	done, err := s.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	out := map[string][]event.Record{}
	const chunk = 500
	for start := 0; start < len(eventIDs); start += chunk {
		ids := eventIDs[start:min(start+chunk, len(eventIDs))]
		// The list is padded with its last ID to a power of two, so that
		// a few statements, prepared once, serve every length.
		n := 8
		for n < len(ids) {
			n *= 2
		}
		n = min(n, chunk)
		args := make([]any, n)
		for i := range args {
			args[i] = encodeID(ids[min(i, len(ids)-1)])
		}
		q := fmt.Sprintf(recordSelect, "b.data") + ` FROM records r INDEXED BY records_target LEFT JOIN objects o ON o.id = r.obj` + recordJoins +
			` WHERE r.target IN (?` + strings.Repeat(",?", n-1) + `) ORDER BY r.seq`
		rows, err := s.cachedQuery(ctx, q, args...)
		if err != nil {
			return nil, s.readErr("correlations", err)
		}
		recs, err := s.decodeRows(ctx, rows)
		if err != nil {
			return nil, s.readErr("correlations", err)
		}
		for _, r := range recs {
			if r.Audit != nil {
				out[r.Audit.TargetEventID] = append(out[r.Audit.TargetEventID], r)
			}
		}
	}
	return out, nil
}

// Stats implements storage.Reader.
func (s *Store) Stats(ctx context.Context) (storage.Stats, error) {
	done, err := s.enter()
	if err != nil {
		return storage.Stats{}, err
	}
	defer done()
	var st storage.Stats
	if err := s.r.QueryRowContext(ctx, `SELECT records, events, bodies, body_bytes, raw_bytes FROM totals`).Scan(
		&st.Records, &st.Events, &st.Bodies, &st.BodyBytes, &st.RawBodyBytes); err != nil {
		return st, s.readErr("stats", err)
	}
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(s.path + suffix); err == nil {
			st.FileBytes += fi.Size()
		}
	}
	var pages, free, pageSize int64
	if err := s.r.QueryRowContext(ctx, `SELECT page_count, freelist_count, page_size FROM pragma_page_count(), pragma_freelist_count(), pragma_page_size()`).Scan(&pages, &free, &pageSize); err != nil {
		return st, s.readErr("stats: pages", err)
	}
	st.UsedBytes = (pages - free) * pageSize
	return st, nil
}
