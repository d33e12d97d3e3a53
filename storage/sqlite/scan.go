package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// scanChunkObjects is how many objects ScanByObject reads per read
// transaction: their bodies are held in memory (as stored, compressed)
// while their records are read.
var scanChunkObjects = 128

// A chunk of objects is read by three statements in one read
// transaction: the objects' names, their bodies, then their records of
// the stream, each walking a table's key in order. RecordsByObject joins
// each record to its body, one seek in the bodies table per record,
// which costs about as much as reading both tables. Each column costs the
// driver calls and often an allocation per row, so the records' stream
// (the scan's) and cluster (their object's) are not read.
const (
	scanNamesQuery = `SELECT so.obj, o.scope, o.name FROM stream_objects so CROSS JOIN objects o ON o.id = so.obj` +
		` WHERE so.stream = ? AND so.obj >= ? AND so.obj < ?`
	scanBodiesQuery = `SELECT b.obj, b.id, b.hash, b.raw_len, b.base, %s FROM stream_objects so CROSS JOIN bodies b ON b.obj = so.obj` +
		` WHERE so.stream = ? AND so.obj >= ? AND so.obj < ? ORDER BY so.obj, b.id`
	scanRecordsQuery = `SELECT r.obj, r.seq, r.event_id, ` + recordKinds + `, r.observed_at, r.body, r.baseline, r.meta` +
		` FROM stream_objects so CROSS JOIN records r ON r.obj = so.obj` +
		` WHERE so.stream = ? AND so.obj >= ? AND so.obj < ? AND r.stream = so.stream%s ORDER BY so.obj, r.observed_at, r.seq`
)

// scanBody is a body of a chunk's object: its columns, hash and data in
// the scanner's arena.
type scanBody struct {
	obj, id    int64
	hash, data [2]int // offset, end in the arena
	rawLen     int
	base       sql.NullInt64
}

// scanNames is the scope and name of an object.
type scanNames struct{ scope, name any }

// objectScanner is the state of one ScanByObject, reused chunk after
// chunk and record after record.
type objectScanner struct {
	s        *Store
	q        storage.Query
	stream   int64
	typeCond string
	from     byObjectKey
	fn       func(*event.Record) error

	names map[int64]scanNames
	// bodies are the chunk's bodies in the order of their key (object,
	// id), and hint the one after the last found: an object's records
	// mostly have its bodies in that order.
	bodies []scanBody
	hint   int
	arena  []byte
	// bases are the keyframes decoded in this scan, by body id.
	bases map[int64][]byte
	rec   event.Record
	out   []byte
	res   resolver
	m     recordMeta
}

// ScanByObject implements storage.ObjectOrderScanner. It reads the
// stream's objects scanChunkObjects at a time, each chunk in a read
// transaction of its own: a chunk's records come from one view of the
// journal, and the records of a later chunk may include records appended
// meanwhile, as a later page of RecordsByObject would.
func (s *Store) ScanByObject(ctx context.Context, q storage.Query, fn func(*event.Record) error) error {
	if fn == nil {
		return fmt.Errorf("sqlite: scan by object: %w: no function to call", storage.ErrInvalidArgument)
	}
	done, err := s.enter()
	if err != nil {
		return err
	}
	defer done()
	bq, ok, err := s.byObjectQuery(ctx, q)
	if err != nil || !ok {
		return err
	}
	// The part's objects only: [from.obj, from.end).
	objs, err := s.streamObjectRows(ctx, bq.stream, bq.from.obj, bq.from.end)
	if err != nil {
		return s.readErr("scan by object of "+q.StreamID, err)
	}
	sc := &objectScanner{s: s, q: q, stream: bq.stream, typeCond: bq.typeCond, from: bq.from, fn: fn,
		names: map[int64]scanNames{}, bases: map[int64][]byte{},
		res: resolver{ctx: ctx, q: s.r, shared: &s.rowNames}}
	for i := 0; i < len(objs); i += scanChunkObjects {
		lo, hi := objs[i], objs[len(objs)-1]+1
		if j := i + scanChunkObjects; j < len(objs) {
			hi = objs[j]
		}
		if err := sc.chunk(ctx, lo, hi); err != nil {
			return err
		}
	}
	return nil
}

// chunk reads the records of the objects of rows [lo, hi).
func (sc *objectScanner) chunk(ctx context.Context, lo, hi int64) error {
	tx, err := sc.s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return sc.s.readErr("scan by object", err)
	}
	defer tx.Rollback()
	if err := sc.readNames(ctx, tx, lo, hi); err != nil {
		return sc.s.readErr("scan by object: names", err)
	}
	if err := sc.readBodies(ctx, tx, lo, hi); err != nil {
		return sc.s.readErr("scan by object: bodies", err)
	}
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(scanRecordsQuery, sc.typeCond), sc.stream, lo, hi)
	if err != nil {
		return sc.s.readErr("scan by object: records", err)
	}
	defer rows.Close()
	var obj, seq, kinds, observed, body, baseline any
	var eventID idColumn
	var meta sql.RawBytes
	dest := []any{&obj, &seq, &eventID, &kinds, &observed, &body, &baseline, &meta}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return sc.s.readErr("scan by object: records", err)
		}
		o, key := asInt(obj), byObjectKey{observed: asInt(observed), seq: asInt(seq)}
		if o == sc.from.obj && (key.observed < sc.from.observed || key.observed == sc.from.observed && key.seq < sc.from.seq) {
			continue // before the cursor
		}
		if err := sc.record(ctx, o, key, asInt(kinds), eventID.id, asInt(baseline), body, meta); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return sc.s.readErr("scan by object: records", err)
	}
	return nil
}

// record builds one record in sc.rec and hands it to the scan's function.
func (sc *objectScanner) record(ctx context.Context, obj int64, key byObjectKey, kinds int64, eventID string, baseline int64, body any, meta []byte) error {
	r := &sc.rec
	*r = event.Record{IngestSeq: key.seq, EventID: eventID, ObservedAt: decodeTime(key.observed)}
	setKinds(r, kinds)
	if err := decodeMeta(meta, &sc.m); err != nil {
		return fmt.Errorf("sqlite: scan by object: %w: record %d: meta: %v", errCorruptBody, r.IngestSeq, err)
	}
	sc.m.applyTo(r)
	n := sc.names[obj]
	refs := rowRefs{stream: sc.stream, scope: asInt(n.scope), baseline: baseline}
	if err := sc.res.resolve(r, &refs); err != nil {
		return sc.s.readErr("scan by object: names", err)
	}
	// An object's records are of its cluster (Append finds the object row
	// by the record's cluster).
	r.ClusterID = sc.res.scope.value.cluster
	r.Resource.Name = nameOf(n.name)
	if id, ok := body.(int64); ok {
		if b, ok := sc.body(obj, id); ok {
			r.ObjectHash = hex.EncodeToString(sc.arena[b.hash[0]:b.hash[1]])
			if !sc.q.WithoutBodies {
				raw, err := sc.decode(ctx, obj, b)
				if err != nil {
					return fmt.Errorf("sqlite: scan by object: record %d (%s): %w", r.IngestSeq, r.EventID, err)
				}
				r.Object = json.RawMessage(raw)
			}
		}
	}
	return sc.fn(r)
}

// decode returns a body's raw bytes in sc.out, reused for the next.
func (sc *objectScanner) decode(ctx context.Context, obj int64, b scanBody) ([]byte, error) {
	data := sc.arena[b.data[0]:b.data[1]]
	if !b.base.Valid {
		var err error
		sc.out, err = inflateKeyframeInto(sc.out[:0], data, b.rawLen)
		return sc.out, err
	}
	base, err := sc.base(ctx, obj, b.base.Int64)
	if err != nil {
		return nil, err
	}
	sc.out, err = applyDeltaInto(sc.out[:0], base, data, b.rawLen)
	return sc.out, err
}

// base returns the raw bytes of a keyframe that a delta of obj's is
// against: from this scan's keyframes, the Store's cache, the chunk's
// bodies of obj (an object's deltas are mostly against its own
// keyframes), or the journal.
func (sc *objectScanner) base(ctx context.Context, obj, id int64) ([]byte, error) {
	if raw, ok := sc.bases[id]; ok {
		return raw, nil
	}
	raw, ok := sc.s.bases.get(id)
	if !ok {
		var err error
		if b, ok := sc.body(obj, id); ok && !b.base.Valid {
			if raw, err = inflateKeyframe(sc.arena[b.data[0]:b.data[1]], b.rawLen); err != nil {
				return nil, fmt.Errorf("keyframe %d: %w", id, err)
			}
			sc.s.bases.put(id, raw)
		} else if raw, err = sc.s.keyframe(ctx, id); err != nil {
			return nil, err
		}
	}
	if len(sc.bases) >= scanChunkObjects*4 {
		clear(sc.bases)
	}
	sc.bases[id] = raw
	return raw, nil
}

// body returns the chunk's body id of obj.
func (sc *objectScanner) body(obj, id int64) (scanBody, bool) {
	// The body after the last found, or the last found again (a version
	// with the body of the one before).
	for _, i := range []int{sc.hint, sc.hint - 1} {
		if i >= 0 && i < len(sc.bodies) && sc.bodies[i].obj == obj && sc.bodies[i].id == id {
			sc.hint = i + 1
			return sc.bodies[i], true
		}
	}
	i, ok := slices.BinarySearchFunc(sc.bodies, scanBody{obj: obj, id: id}, func(a, b scanBody) int {
		if c := cmp.Compare(a.obj, b.obj); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	if !ok {
		return scanBody{}, false
	}
	sc.hint = i + 1
	return sc.bodies[i], true
}

// readNames reads the scope and name of the chunk's objects.
func (sc *objectScanner) readNames(ctx context.Context, tx *sql.Tx, lo, hi int64) error {
	clear(sc.names)
	rows, err := tx.QueryContext(ctx, scanNamesQuery, sc.stream, lo, hi)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var obj int64
		var n scanNames
		if err := rows.Scan(&obj, &n.scope, &n.name); err != nil {
			return err
		}
		sc.names[obj] = n
	}
	return rows.Err()
}

// readBodies reads the bodies of the chunk's objects into the arena, in
// the order of their key.
func (sc *objectScanner) readBodies(ctx context.Context, tx *sql.Tx, lo, hi int64) error {
	sc.bodies, sc.arena, sc.hint = sc.bodies[:0], sc.arena[:0], 0
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(scanBodiesQuery, bodyColumn(sc.q.WithoutBodies)), sc.stream, lo, hi)
	if err != nil {
		return err
	}
	defer rows.Close()
	var obj, id, rawLen, base any
	var hash, data sql.RawBytes
	dest := []any{&obj, &id, &hash, &rawLen, &base, &data}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		b := scanBody{obj: asInt(obj), id: asInt(id), rawLen: int(asInt(rawLen))}
		if n, ok := base.(int64); ok {
			b.base = sql.NullInt64{Int64: n, Valid: true}
		}
		b.hash[0] = len(sc.arena)
		sc.arena = append(sc.arena, hash...)
		b.hash[1] = len(sc.arena)
		b.data[0] = b.hash[1]
		sc.arena = append(sc.arena, data...)
		b.data[1] = len(sc.arena)
		sc.bodies = append(sc.bodies, b)
	}
	return rows.Err()
}
