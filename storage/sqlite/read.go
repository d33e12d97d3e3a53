package sqlite

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/journal"
)

// recordSelect selects a record with its object's name and body. The %s
// is the body data column (or NULL to skip bodies). The cluster, stream,
// object scope and baseline are row ids, which rowNames resolves.
const recordSelect = recordHead + `r.cluster, o.scope, o.name, ` + recordTail

// objectRecordSelect is recordSelect without the cluster, scope and name
// of the object, for the rows of one known object (see scanRows): no join
// of objects.
const objectRecordSelect = recordHead + recordTail

// The type, watch type and synthetic flag of a record are one column
// (recordKinds): each column costs the driver a call or two, with a
// lock, per row. The codes are this package's, types below 16 and watch
// types below 8 (TestRecordKindsFit), so that the column is below 256,
// which the driver hands over without an allocation.
const (
	recordHead  = `SELECT r.seq, r.event_id, ` + recordKinds + `, r.stream, r.observed_at, `
	recordKinds = `r.type | (r.watch_type << 4) | ((r.synthetic <> 0) << 7)`
	recordTail  = `b.hash, b.raw_len, b.base, %s, r.baseline, r.meta`
)

// recordJoins follow the join of the objects row o of a record r.
const recordJoins = ` LEFT JOIN bodies b ON b.obj = r.obj AND b.id = r.body`

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

// rowRefs is what a scanned record row holds besides its record: the
// body not decoded yet (when a delta's base must be read, after the
// rows are closed) and the row ids not resolved to names yet.
type rowRefs struct {
	rawLen int64
	base   sql.NullInt64
	data   []byte
	// The row ids of the record's cluster, stream, object scope and
	// baseline; 0 for none.
	cluster, stream, scope, baseline int64
}

// recordRow scans the columns of recordSelect, then extra ones. Integer
// and text columns are scanned into interfaces (database/sql stores the
// driver's value as it is, without reflection) and blobs as RawBytes
// (without a copy; they are valid until the next row).
type recordRow struct {
	// obj is the object of every row when the rows have no scope and
	// name columns (objectRecordSelect).
	obj                                    *storage.ObjectID
	dest                                   []any
	seq, kinds, stream, observed           any
	eventID                                idColumn
	cluster, scope, name, rawLen, base, bl any
	hash, data, meta                       sql.RawBytes
	// m is the meta of the row scanned last.
	m recordMeta
}

func newRecordRow(obj *storage.ObjectID, extra ...any) *recordRow {
	rw := &recordRow{obj: obj}
	rw.dest = []any{&rw.seq, &rw.eventID, &rw.kinds, &rw.stream, &rw.observed}
	if obj == nil {
		rw.dest = append(rw.dest, &rw.cluster, &rw.scope, &rw.name)
	}
	rw.dest = append(append(rw.dest, &rw.hash, &rw.rawLen, &rw.base, &rw.data, &rw.bl, &rw.meta), extra...)
	return rw
}

// scan reads the current row into r and refs, but for its body data,
// which stays in rw.data.
func (rw *recordRow) scan(rows *sql.Rows, r *event.Record, refs *rowRefs) error {
	if err := rows.Scan(rw.dest...); err != nil {
		return err
	}
	r.IngestSeq = asInt(rw.seq)
	r.EventID = rw.eventID.id
	kinds := asInt(rw.kinds)
	setKinds(r, kinds)
	r.ObservedAt = decodeTime(asInt(rw.observed))
	refs.cluster, refs.stream, refs.scope, refs.baseline = asInt(rw.cluster), asInt(rw.stream), asInt(rw.scope), asInt(rw.bl)
	refs.rawLen = asInt(rw.rawLen)
	if b, ok := rw.base.(int64); ok {
		refs.base = sql.NullInt64{Int64: b, Valid: true}
	}
	if err := decodeMeta(rw.meta, &rw.m); err != nil {
		return fmt.Errorf("%w: record %d: meta: %v", errCorruptBody, r.IngestSeq, err)
	}
	rw.m.applyTo(r)
	if rw.obj != nil {
		// An object's records are of its cluster (Append finds the object
		// row by the record's cluster).
		r.ClusterID = rw.obj.ClusterID
		r.Resource.Group, r.Resource.Resource, r.Resource.Namespace, r.Resource.Name = rw.obj.Group, rw.obj.Resource, rw.obj.Namespace, rw.obj.Name
	} else if rw.name != nil {
		r.Resource.Name = nameOf(rw.name)
	}
	if rw.hash != nil {
		r.ObjectHash = hex.EncodeToString(rw.hash)
	}
	return nil
}

// setKinds sets a record's type, watch type and synthetic flag from its
// recordKinds column.
func setKinds(r *event.Record, kinds int64) {
	r.Type, r.WatchType, r.Synthetic = typeNames[int(kinds&0xf)], watchNames[int(kinds>>4&0x7)], kinds>>7 != 0
}

// nameOf is an object's name column scanned into an interface: text, or
// a blob; "" for anything else.
func nameOf(v any) string {
	switch name := v.(type) {
	case string:
		return name
	case []byte:
		return string(name)
	}
	return ""
}

// idColumn scans an event ID column (see encodeID) straight from the
// driver's value: scanned into an interface, a blob would be copied.
type idColumn struct{ id string }

func (c *idColumn) Scan(src any) error {
	c.id = decodeID(src)
	return nil
}

// asInt is an integer column scanned into an interface; 0 for NULL.
func asInt(v any) int64 {
	n, _ := v.(int64)
	return n
}

// scanRecords scans record rows, with their body data, into records
// whose names are not resolved and their refs; extra receives the
// columns that follow a record's (the same on every row).
func scanRecords(rows *sql.Rows, extra ...any) ([]event.Record, []rowRefs, error) {
	return scanRows(rows, nil, nil, extra...)
}

// scanRows is scanRecords; decode, when not nil, decodes the bodies it
// can while scanning (see decodeCached), whose data is then not kept.
// With obj, the rows are of objectRecordSelect, all of that object.
func scanRows(rows *sql.Rows, obj *storage.ObjectID, decode func(r *event.Record, data []byte, refs *rowRefs) (bool, error), extra ...any) ([]event.Record, []rowRefs, error) {
	defer rows.Close()
	rw := newRecordRow(obj, extra...)
	// Rows go to a scratch chunk reused across calls, then to chunks,
	// copied once into place at the end: appending to one slice copies
	// each record (some 400 bytes, with pointers) about twice over as it
	// grows, and chunks growing from one row allocate twice the rows.
	scratch := scanScratchPool.Get().(*scanChunk)
	var chunks []scanChunk
	recs, refs := scratch.recs[:0], scratch.refs[:0]
	defer func() {
		// Drop what the rows point at before the next call.
		used := len(recs)
		if len(chunks) > 0 {
			used = len(chunks[0].recs)
		}
		clear(scratch.recs[:used])
		clear(scratch.refs[:used])
		scanScratchPool.Put(scratch)
	}()
	for rows.Next() {
		if len(recs) == cap(recs) {
			chunks = append(chunks, scanChunk{recs, refs})
			n := min(2*len(recs), 4096)
			recs, refs = make([]event.Record, 0, n), make([]rowRefs, 0, n)
		}
		recs, refs = append(recs, event.Record{}), append(refs, rowRefs{})
		if err := rw.scanRow(rows, decode, &recs[len(recs)-1], &refs[len(refs)-1]); err != nil {
			return nil, nil, err
		}
	}
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	if len(chunks) == 0 && len(recs) == 0 {
		// No rows: an empty list, not nil (what readers always returned).
		return []event.Record{}, nil, nil
	}
	chunks = append(chunks, scanChunk{recs, refs})
	n := 0
	for _, c := range chunks {
		n += len(c.recs)
	}
	allRecs, allRefs := make([]event.Record, 0, n), make([]rowRefs, 0, n)
	for _, c := range chunks {
		allRecs, allRefs = append(allRecs, c.recs...), append(allRefs, c.refs...)
	}
	return allRecs, allRefs, nil
}

// scanRow scans the current row into r and ref, decoding its body with
// decode when it can, else keeping the body's data in ref.
func (rw *recordRow) scanRow(rows *sql.Rows, decode func(r *event.Record, data []byte, refs *rowRefs) (bool, error), r *event.Record, ref *rowRefs) error {
	if err := rw.scan(rows, r, ref); err != nil {
		return err
	}
	if rw.data == nil {
		return nil
	}
	if decode != nil {
		if ok, err := decode(r, rw.data, ref); ok || err != nil {
			if err != nil {
				return fmt.Errorf("record %d (%s): %w", r.IngestSeq, r.EventID, err)
			}
			return nil
		}
	}
	ref.data = bytes.Clone(rw.data)
	return nil
}

// scanRowsInto is scanRows appending to recs and refs, for a caller that
// knows how many rows to expect: with room for them, nothing is copied.
func scanRowsInto(rows *sql.Rows, decode func(r *event.Record, data []byte, refs *rowRefs) (bool, error), recs []event.Record, refs []rowRefs, extra ...any) ([]event.Record, []rowRefs, error) {
	defer rows.Close()
	rw := newRecordRow(nil, extra...)
	for rows.Next() {
		recs, refs = append(recs, event.Record{}), append(refs, rowRefs{})
		if err := rw.scanRow(rows, decode, &recs[len(recs)-1], &refs[len(refs)-1]); err != nil {
			return nil, nil, err
		}
	}
	return recs, refs, rows.Err()
}

// scanScratchRows is how many rows the scratch chunk of scanRows holds.
const scanScratchRows = 128

// scanScratchPool holds the scratch chunks of scanRows.
var scanScratchPool = sync.Pool{New: func() any {
	return &scanChunk{recs: make([]event.Record, 0, scanScratchRows), refs: make([]rowRefs, 0, scanScratchRows)}
}}

// scanChunk is a run of scanned rows.
type scanChunk struct {
	recs []event.Record
	refs []rowRefs
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

// queryRow runs a read statement of one row prepared once per text.
func (s *Store) queryRow(ctx context.Context, text string, args ...any) *sql.Row {
	st, err := s.recordStmts.get(ctx, s.r, text)
	if err != nil || st == nil {
		return s.r.QueryRowContext(ctx, text, args...)
	}
	return st.QueryRowContext(ctx, args...)
}

// getQuery is the statement of Get: prepared once (cachedQuery), as
// callers may read many records one Get at a time.
var getQuery = fmt.Sprintf(recordSelect, "b.data") + ` FROM records r LEFT JOIN objects o ON o.id = r.obj` + recordJoins + ` WHERE r.id_key = ? AND r.event_id = ?`

// getManyChunk is how many EventIDs one statement of GetMany looks up.
const getManyChunk = 256

// GetMany implements storage.MultiGetter: the records are looked up by
// their EventIDs' keys, up to getManyChunk in one statement. A page of a
// snapshot reads its bodies so, one statement per chunk instead of one
// per record (BenchmarkSnapshotPages).
func (s *Store) GetMany(ctx context.Context, eventIDs []string) ([]event.Record, error) {
	done, err := s.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	byID := make(map[string]event.Record, len(eventIDs))
	for start := 0; start < len(eventIDs); start += getManyChunk {
		args := paddedArgs(eventIDs[start:min(start+getManyChunk, len(eventIDs))], getManyChunk, func(id string) any { return keyOf(encodeID(id)) })
		rows, err := s.cachedQuery(ctx, getManyQuery(len(args)), args...)
		var recs []event.Record
		if err == nil {
			recs, err = s.decodeRows(ctx, rows)
		}
		if err != nil {
			return nil, s.readErr(fmt.Sprintf("get %d records", len(eventIDs)), err)
		}
		// Keys may collide: a record is kept by its EventID, and only
		// the IDs asked for are looked up below.
		for _, rec := range recs {
			byID[rec.EventID] = rec
		}
	}
	out := make([]event.Record, len(eventIDs))
	for i, id := range eventIDs {
		rec, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("sqlite: get %s: %w", id, storage.ErrNotFound)
		}
		out[i] = rec
	}
	return out, nil
}

// paddedArgs returns the arguments of ids (arg of each) for an IN list,
// padded with the last one to a power of two, at least 8 and at most
// most: a few statements, prepared once, serve every length.
func paddedArgs(ids []string, most int, arg func(string) any) []any {
	n := 8
	for n < len(ids) {
		n *= 2
	}
	args := make([]any, min(n, most))
	for i := range args {
		if i < len(ids) {
			args[i] = arg(ids[i])
		} else {
			args[i] = args[len(ids)-1]
		}
	}
	return args
}

// getManyQuery is the statement of GetMany for n keys.
func getManyQuery(n int) string {
	return fmt.Sprintf(recordSelect, "b.data") + ` FROM records r INDEXED BY records_id LEFT JOIN objects o ON o.id = r.obj` + recordJoins +
		` WHERE r.id_key IN (?` + strings.Repeat(",?", n-1) + `)`
}

// decodeRows scans record rows (extra as in scanRecords), closes them,
// resolves their names and decodes the bodies: while scanning when the
// body is a keyframe or its base is cached, after the rows are closed
// when the base must be read (another query, which a pool of one
// connection could not run while the rows are open).
func (s *Store) decodeRows(ctx context.Context, rows *sql.Rows, extra ...any) ([]event.Record, error) {
	return s.decodeRowsOf(ctx, rows, nil, extra...)
}

// decodeRowsOf is decodeRows; with obj, of the rows of objectRecordSelect,
// all of that object.
func (s *Store) decodeRowsOf(ctx context.Context, rows *sql.Rows, obj *storage.ObjectID, extra ...any) ([]event.Record, error) {
	recs, refs, err := scanRows(rows, obj, s.decodeInPlace, extra...)
	if err != nil {
		return nil, err
	}
	return s.finishRows(ctx, recs, refs)
}

// decodeInPlace decodes a body while its row is scanned when its base is
// cached (see scanRows).
func (s *Store) decodeInPlace(r *event.Record, data []byte, ref *rowRefs) (bool, error) {
	raw, ok, err := s.decodeCached(data, int(ref.rawLen), ref.base)
	if ok {
		r.Object = json.RawMessage(raw)
	}
	return ok, err
}

// decodeRowsUpTo is decodeRowsOf when the rows hold max records or fewer;
// nil when they hold more, with no body decoded (the rows' bodies are
// decoded once they are all read).
func (s *Store) decodeRowsUpTo(ctx context.Context, rows *sql.Rows, obj *storage.ObjectID, max int) ([]event.Record, error) {
	recs, refs, err := scanRows(rows, obj, nil)
	if err != nil || len(recs) > max {
		return nil, err
	}
	return s.finishRows(ctx, recs, refs)
}

// finishRows decodes the bodies scanRows left (ref.data) and resolves the
// records' row ids to names.
func (s *Store) finishRows(ctx context.Context, recs []event.Record, refs []rowRefs) ([]event.Record, error) {
	res := resolver{ctx: ctx, q: s.r, shared: &s.rowNames}
	for i := range recs {
		r, ref := &recs[i], &refs[i]
		if ref.data != nil {
			raw, err := s.decodeBody(ctx, ref.data, int(ref.rawLen), ref.base)
			if err != nil {
				return nil, fmt.Errorf("record %d (%s): %w", r.IngestSeq, r.EventID, err)
			}
			r.Object = json.RawMessage(raw)
		}
		if err := res.resolve(r, ref); err != nil {
			return nil, err
		}
	}
	return recs, nil
}

// decodeCached decodes a body whose base, if it has one, is cached;
// false when the base must be read.
func (s *Store) decodeCached(data []byte, rawLen int, base sql.NullInt64) ([]byte, bool, error) {
	if !base.Valid {
		raw, err := inflateKeyframe(data, rawLen)
		return raw, err == nil, err
	}
	baseRaw, ok := s.bases.get(base.Int64)
	if !ok {
		return nil, false, nil
	}
	raw, err := applyDelta(baseRaw, data, rawLen)
	return raw, err == nil, err
}

func (s *Store) decodeBody(ctx context.Context, data []byte, rawLen int, base sql.NullInt64) ([]byte, error) {
	if !base.Valid {
		return inflateKeyframe(data, rawLen)
	}
	baseRaw, err := s.keyframe(ctx, base.Int64)
	if err != nil {
		return nil, err
	}
	return applyDelta(baseRaw, data, rawLen)
}

// keyframe returns the raw bytes of the keyframe body id, from the cache
// or read and cached.
func (s *Store) keyframe(ctx context.Context, id int64) ([]byte, error) {
	if raw, ok := s.bases.get(id); ok {
		return raw, nil
	}
	var rawLen int
	var data []byte
	if err := s.keyframeStmt.QueryRowContext(ctx, id).Scan(&rawLen, &data); err != nil {
		return nil, fmt.Errorf("keyframe %d: %w", id, err)
	}
	raw, err := inflateKeyframe(data, rawLen)
	if err != nil {
		return nil, err
	}
	s.bases.put(id, raw)
	return raw, nil
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
	rows, err := s.cachedQuery(ctx, getQuery, keyOf(encodeID(eventID)), encodeID(eventID))
	var recs []event.Record
	if err == nil {
		recs, err = s.decodeRows(ctx, rows)
	}
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

// pageLimit is a query's page size: its Limit, or the default.
func pageLimit(limit int) int {
	if limit <= 0 {
		return journal.DefaultLimit
	}
	return limit
}

// Records implements storage.Reader.
func (s *Store) Records(ctx context.Context, q storage.Query) (storage.Page, error) {
	done, err := s.enter()
	if err != nil {
		return storage.Page{}, err
	}
	defer done()
	limit := pageLimit(q.Limit)
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
		// when they are (see storage/compaction).
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
	gen, err := s.gate.generation(ctx)
	if err != nil {
		return storage.StreamStatus{}, s.readErr("stream "+streamID, err)
	}
	if st, ok := s.statuses.get(gen, streamID); ok {
		return st, nil
	}
	st, err := scanStream(s.queryRow(ctx, `SELECT `+streamColumns+` FROM streams WHERE stream_id = ?`, streamID))
	if errors.Is(err, sql.ErrNoRows) {
		return storage.StreamStatus{}, fmt.Errorf("sqlite: stream %s: %w", streamID, storage.ErrNotFound)
	}
	if err != nil {
		return storage.StreamStatus{}, s.readErr("stream "+streamID, err)
	}
	s.statuses.put(gen, st.StreamStatus)
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
	if q.Limit > 0 {
		// Most histories fit in a page: their rows are read in the
		// table's order, up to one more than the page, and sorted by seq
		// here. Only a longer history needs the page's first rows by seq
		// picked (and sorted) by SQLite first, and then read again by
		// key: BenchmarkObjectHistory/large, 100 versions, 0.62-0.69 ms
		// of CPU that way, 0.52-0.59 read whole. A longer history reads
		// a page's rows more than it needs, bodies not decoded.
		whole := q
		whole.Limit = 0
		query, args := objectHistoryQuery(obj, whole, vis)
		rows, err := s.cachedQuery(ctx, query+" LIMIT ?", append(args, q.Limit+1)...)
		if err != nil {
			return nil, err
		}
		recs, err := s.decodeRowsUpTo(ctx, rows, &obj, q.Limit)
		if err != nil || recs != nil {
			sortBySeq(recs)
			return recs, err
		}
	}
	query, args := objectHistoryQuery(obj, q, vis)
	rows, err := s.cachedQuery(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	recs, err := s.decodeRowsOf(ctx, rows, &obj)
	if err != nil {
		return nil, err
	}
	sortBySeq(recs)
	return recs, nil
}

// sortBySeq orders records by seq; rows read in seq order cost one pass.
func sortBySeq(recs []event.Record) {
	bySeq := func(a, b event.Record) int { return cmp.Compare(a.IngestSeq, b.IngestSeq) }
	if !slices.IsSortedFunc(recs, bySeq) {
		slices.SortFunc(recs, bySeq)
	}
}

// recordsKey names the primary key of records, (obj, observed_at, seq)
// (schema version 6), for INDEXED BY: the statements that read an
// object's records by time seek it and no index by stream.
const recordsKey = `sqlite_autoindex_records_1`

// objectHistoryQuery is the statement of ObjectHistory. Records are
// keyed by (object, observed_at, seq) (schema version 6), so an object's
// rows are read in that order straight from the table, side by side on a
// few pages, time bounds and all; they come in seq order unless the
// object's records were observed out of order (objectHistory sorts them
// by seq, in one pass when they are in order). With a limit, the keys of
// the first rows by seq are picked (and sorted) first, and the rows read
// after: sorting the rows themselves would copy them, bodies and all,
// through a temporary B-tree.
func objectHistoryQuery(obj storage.ObjectID, q storage.HistoryQuery, vis visibility) (string, []any) {
	a := "r"
	if q.Limit > 0 {
		a = "x"
	}
	visible, visArgs := vis.where(a, "", 0)
	var w strings.Builder
	w.WriteString(` FROM records ` + a + ` INDEXED BY ` + recordsKey)
	if a == "r" {
		w.WriteString(recordJoins)
	}
	w.WriteString(` WHERE ` + a + `.obj = ` + objectSubquery + ` AND ` + visible)
	args := append(objectArgs(obj), visArgs...)
	if !q.Since.IsZero() {
		w.WriteString(" AND " + a + ".observed_at >= ?")
		args = append(args, encodeTime(q.Since))
	}
	if !q.Until.IsZero() {
		w.WriteString(" AND " + a + ".observed_at <= ?")
		args = append(args, encodeTime(q.Until))
	}
	if q.StreamID != "" {
		w.WriteString(" AND " + a + ".stream = (SELECT id FROM streams WHERE stream_id = ?)")
		args = append(args, q.StreamID)
	}
	if q.AfterSeq > 0 {
		w.WriteString(" AND " + a + ".seq > ?")
		args = append(args, q.AfterSeq)
	}
	if q.Limit == 0 {
		return fmt.Sprintf(objectRecordSelect, bodyColumn(q.WithoutBodies)) + w.String(), args
	}
	w.WriteString(" ORDER BY x.seq LIMIT ?")
	args = append(args, q.Limit)
	return fmt.Sprintf(objectRecordSelect, bodyColumn(q.WithoutBodies)) + ` FROM (SELECT x.obj, x.observed_at, x.seq` + w.String() + `) h` +
		` JOIN records r ON r.obj = h.obj AND r.observed_at = h.observed_at AND r.seq = h.seq` + recordJoins, args
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
	latestAtHead = freshColumns + ` FROM records r INDEXED BY ` + recordsKey + ` LEFT JOIN objects o ON o.id = r.obj` + recordJoins +
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
	if recs, ok, err := s.indexedLatestAt(ctx, obj, at); ok || err != nil {
		return recs, err
	}
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
	if q.StreamID == "" {
		query, args := aliveQuery(q, vis, rowID, aliveOfStream, nil)
		recs, err := s.scanQuery(ctx, query, args...)
		if err != nil {
			return nil, s.readErr("alive", err)
		}
		sortByObject(recs)
		return recs, nil
	}
	recs, err := s.aliveInStream(ctx, q, vis, rowID)
	if err != nil {
		return nil, s.readErr("alive in "+q.StreamID, err)
	}
	sortByObject(recs)
	return recs, nil
}

// aliveInStream is AliveAt of a stream. It first reads each of the
// stream's objects' latest visible record of any stream, which the index
// by object finds without reading a row (the stream is in the row): where
// that record is the stream's, it is the stream's latest too (a later one
// of the stream would be later of all). Only for the objects whose latest
// record is another stream's — recorded by several streams — it asks again
// with the stream in the condition.
func (s *Store) aliveInStream(ctx context.Context, q storage.AliveQuery, vis visibility, rowID int64) ([]event.Record, error) {
	query, args := aliveQuery(q, vis, rowID, aliveOfAnyStream, nil)
	latest, err := s.scanQuery(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	out := latest[:0]
	var others []string                    // the names of objects whose latest record is another stream's
	var otherIDs map[storage.ObjectID]bool // and the objects
	for _, rec := range latest {
		switch {
		case rec.StreamID != q.StreamID:
			if otherIDs == nil {
				otherIDs = map[storage.ObjectID]bool{}
			}
			others, otherIDs[storage.ObjectIDOf(rec)] = append(others, rec.Resource.Name), true
		case rec.WatchType != event.Deleted:
			out = append(out, rec)
		}
	}
	const chunk = 500
	for start := 0; start < len(others); start += chunk {
		query, args := aliveQuery(q, vis, rowID, aliveOfStream, others[start:min(start+chunk, len(others))])
		recs, err := s.scanQuery(ctx, query, args...)
		if err != nil {
			return nil, err
		}
		for _, rec := range recs {
			// Names are matched in every scope of the stream.
			if otherIDs[storage.ObjectIDOf(rec)] {
				out = append(out, rec)
			}
		}
	}
	return out, nil
}

// scanQuery runs a statement on the scan pool and decodes its records.
func (s *Store) scanQuery(ctx context.Context, query string, args ...any) ([]event.Record, error) {
	rows, err := s.scan.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return s.decodeRows(ctx, rows)
}

// How aliveQuery picks an object's latest record.
const (
	// aliveOfStream: the latest visible record of q.StreamID, or of any
	// stream when it is not set, and only when it is not a deletion.
	aliveOfStream = iota
	// aliveOfAnyStream: the latest visible record of any stream of each
	// object of q.StreamID, deletions too (see aliveInStream).
	aliveOfAnyStream
)

// aliveQuery is the statement of AliveAt; rowID is the row of q.StreamID,
// when it is set. names, when not empty, restricts a stream's objects to
// those names.
func aliveQuery(q storage.AliveQuery, vis visibility, rowID int64, mode int, names []string) (string, []any) {
	var where []string
	var args []any
	latest := `(SELECT x.obj, x.observed_at, x.seq FROM records x INDEXED BY ` + recordsKey + ` WHERE x.obj = o.id AND x.observed_at <= ?`
	args = append(args, encodeTime(q.At))
	switch {
	case q.StreamID != "" && mode == aliveOfAnyStream:
		visible, visArgs := vis.where("x", q.IncludeBaseline, 0)
		latest += ` AND ` + visible
		args = append(args, visArgs...)
		where, args = append(where, "o.id IN (SELECT obj FROM stream_objects WHERE stream = ?)"), append(args, rowID)
	case q.StreamID != "":
		visible, visArgs := vis.where("x", q.IncludeBaseline, rowID)
		latest += ` AND x.stream = ? AND ` + visible
		args = append(append(args, rowID), visArgs...)
		where, args = append(where, "o.id IN (SELECT obj FROM stream_objects WHERE stream = ?)"), append(args, rowID)
		if len(names) > 0 {
			where = append(where, "o.name IN (?"+strings.Repeat(",?", len(names)-1)+")")
			for _, n := range names {
				args = append(args, n)
			}
		}
	default:
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
	if mode != aliveOfAnyStream {
		where = append(where, "r.watch_type <> "+strconv.Itoa(codeDeleted))
	}
	// Ordered by object in Go (sortByObject): sorting in SQL would copy
	// every row, body and all, through a sorter.
	from := ` FROM scopes p JOIN objects o ON o.scope = p.id`
	if q.StreamID != "" {
		from = ` FROM objects o` // the stream's objects: no condition on the scope
	}
	query := fmt.Sprintf(recordSelect, bodyColumn(q.WithoutBodies)) + from + ` JOIN records r INDEXED BY ` + recordsKey + ` ON (r.obj, r.observed_at, r.seq) = ` + latest + recordJoins +
		` WHERE ` + strings.Join(where, " AND ")
	return query, args
}

// sortByObject orders records by cluster, group, resource, namespace and
// name, as SQLite orders text (by bytes).
func sortByObject(recs []event.Record) {
	slices.SortFunc(recs, func(a, b event.Record) int {
		return cmp.Or(strings.Compare(a.ClusterID, b.ClusterID), strings.Compare(a.Resource.Group, b.Resource.Group),
			strings.Compare(a.Resource.Resource, b.Resource.Resource), strings.Compare(a.Resource.Namespace, b.Resource.Namespace),
			strings.Compare(a.Resource.Name, b.Resource.Name))
	})
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

// correlationsProbe tells whether the journal holds a correlation record.
const correlationsProbe = `SELECT EXISTS (SELECT 1 FROM records INDEXED BY records_target WHERE target IS NOT NULL)`

// Correlations implements storage.Reader.
func (s *Store) Correlations(ctx context.Context, eventIDs []string) (map[string][]event.Record, error) {
	done, err := s.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	out := map[string][]event.Record{}
	if len(eventIDs) == 0 {
		return out, nil
	}
	// Correlation records come from an audit source, which most journals
	// lack: a probe of their index, cheaper than a look-up of the IDs,
	// answers for all of them then.
	var some bool
	if err := s.queryRow(ctx, correlationsProbe).Scan(&some); err != nil {
		return nil, s.readErr("correlations", err)
	}
	if !some {
		return out, nil
	}
	const chunk = 500
	for start := 0; start < len(eventIDs); start += chunk {
		args := paddedArgs(eventIDs[start:min(start+chunk, len(eventIDs))], chunk, encodeID)
		n := len(args)
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
