package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/journal"
)

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
	// knownBodies maps the hashes of the bodies the batch stores to their
	// ids; nextBodyID is the next id to assign.
	knownBodies map[bodyKey]int64
	nextBodyID  int64
	// newObjects are the objects rows this transaction adds;
	// nextObjectID is the next id to assign, and nextSeq the next
	// sequence number of Append.
	newObjects   map[int64]bool
	nextObjectID int64
	nextSeq      int64
	// objectRows, streamObjectRows, bodyRows and recordRows are the
	// arguments of the rows to insert.
	objectRows, streamObjectRows, bodyRows, recordRows [][]any
	streamObjects                                      map[[2]int64]bool
	records, events, bodies, bodyBytes, rawBodyByte    int64
	// names are the name rows this transaction found or inserted.
	names names
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
	tx, end, err := s.beginWrite(ctx, "append")
	if err != nil {
		return storage.AppendResult{}, err
	}
	defer end()
	at := s.newAppendTx(ctx, tx)
	res, err := at.appendAll(records)
	if err != nil {
		return storage.AppendResult{}, s.explainWrite(err)
	}
	if err := tx.Commit(); err != nil {
		return storage.AppendResult{}, s.explainWrite(fmt.Errorf("sqlite: append: commit: %w", err))
	}
	s.publish(at)
	return res, nil
}

// appendAll writes the records of a batch that are not stored yet, under
// the next sequence numbers, and the stream states and totals they change.
func (at *appendTx) appendAll(records []event.Record) (storage.AppendResult, error) {
	res := storage.AppendResult{Seqs: make([]int64, len(records))}
	ids := make([]any, len(records))
	hashes := make([]string, len(records))
	for i := range records {
		ids[i] = encodeID(records[i].EventID)
		hashes[i] = bodyHash(&records[i])
	}
	existing, err := at.lookupAll(records, ids)
	if err != nil {
		return res, err
	}
	at.nextSeq = at.s.nextSeq
	for i := range records {
		key := idKey(ids[i])
		if old, ok := existing[key]; ok {
			res.Seqs[i] = old
			res.Duplicates++
			continue
		}
		seq := at.nextSeq
		if err := at.add(&records[i], ids[i], hashes[i], seq); err != nil {
			return res, fmt.Errorf("sqlite: append record %d (%s): %w", i, records[i].EventID, err)
		}
		existing[key] = seq // a second copy in the same batch
		res.Seqs[i] = seq
		res.Inserted++
		at.nextSeq++
	}
	if err := at.flush(); err != nil {
		return res, err
	}
	return res, at.finish()
}

// lookupAll finds what of a batch is stored already: the sequence numbers
// of its stored EventIDs (returned, keyed by idKey) and its stored
// objects. Bodies are not looked up by hash (schema version 5): body
// compares a new body with its object's latest and with the batch's.
func (at *appendTx) lookupAll(records []event.Record, ids []any) (map[string]int64, error) {
	existing, err := at.existingSeqs(ids)
	if err != nil {
		return nil, err
	}
	if err := at.lookupObjects(records, existing, ids); err != nil {
		return nil, err
	}
	return existing, nil
}

// publish brings the Store's next IDs and caches up to a committed
// Append, each cache emptied when it grew too large.
func (s *Store) publish(at *appendTx) {
	s.nextSeq = at.nextSeq
	s.nextBodyID = at.nextBodyID
	s.nextObjectID = at.nextObjectID
	objectsKept := true
	for k, v := range at.objects {
		if len(s.objectIDs) > 1<<16 {
			clear(s.objectIDs)
			objectsKept = false
		}
		s.objectIDs[k] = v
	}
	s.names.publish(at.names, objectsKept)
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
}

func (s *Store) newAppendTx(ctx context.Context, tx *sql.Tx) *appendTx {
	at := &appendTx{s: s, ctx: ctx, tx: tx, streams: map[string]*streamState{}, objects: map[storage.ObjectID]int64{},
		keyframes: map[int64]keyframe{}, streamObjects: map[[2]int64]bool{}, kindKeyframes: map[kindKey]keyframe{},
		knownBodies: map[bodyKey]int64{}, nextBodyID: s.nextBodyID, newObjects: map[int64]bool{}, nextObjectID: s.nextObjectID,
		names: newNames()}
	at.bindStmts()
	return at
}

func (at *appendTx) bindStmts() {
	ctx, tx, ws := at.ctx, at.tx, &at.s.stmts
	at.stmts = writerStmts{
		bodyRow: tx.StmtContext(ctx, ws.bodyRow), objectBodyRow: tx.StmtContext(ctx, ws.objectBodyRow),
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
		var err error
		if objID, err = at.object(storage.ObjectIDOf(*rec)); err != nil {
			return err
		}
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
	cluster, err := at.clusterRow(rec.ClusterID)
	if err != nil {
		return err
	}
	var baseline any
	if rec.BaselineID != "" {
		if baseline, err = at.baselineRow(rec.BaselineID); err != nil {
			return err
		}
	}
	at.recordRows = append(at.recordRows, []any{seq, keyOf(id), id, typeCodes[rec.Type], cluster, streamRow,
		encodeTime(rec.ObservedAt), watchCodes[rec.WatchType], synthetic, objID, bodyRow, target, baseline, meta})
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

// lookupObjects finds the rows of the objects that the batch's new object
// changes name and the store does not remember, so that object needs no
// query: an object not found is new. Objects of a scope the writer knows
// whole (knownScope: a relist into a new namespace) are not looked up. existing and ids are those of
// Append (records already stored are skipped).
func (at *appendTx) lookupObjects(records []event.Record, existing map[string]int64, ids []any) error {
	var keys []any
	type scopedName struct {
		scope int64
		name  string
	}
	wanted := map[scopedName]storage.ObjectID{}
	for i := range records {
		if !records[i].IsObjectChange() {
			continue
		}
		if _, dup := existing[idKey(ids[i])]; dup {
			continue
		}
		obj := storage.ObjectIDOf(records[i])
		if _, ok := at.s.objectIDs[obj]; ok {
			continue
		}
		scope, err := at.scopeRow(obj.ClusterID, obj.Namespace, obj.Group, obj.Resource)
		if err != nil {
			return fmt.Errorf("sqlite: append: %w", err)
		}
		if at.knownScope(scope) {
			continue
		}
		key := scopedName{scope, obj.Name}
		if _, seen := wanted[key]; seen {
			continue
		}
		wanted[key] = obj
		keys = append(keys, scope, obj.Name)
	}
	err := at.lookup(objectLookup, keys, func(rows *sql.Rows) error {
		var id int64
		var key scopedName
		if err := rows.Scan(&id, &key.scope, &key.name); err != nil {
			return err
		}
		at.objects[wanted[key]] = id
		return nil
	})
	if err != nil {
		return fmt.Errorf("sqlite: append: look up objects: %w", err)
	}
	return nil
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

// object returns the row id of obj, which lookupObjects has looked for,
// and queues a new row when it is not stored.
func (at *appendTx) object(obj storage.ObjectID) (int64, error) {
	if id, ok := at.objects[obj]; ok {
		return id, nil
	}
	if id, ok := at.s.objectIDs[obj]; ok {
		return id, nil
	}
	scope, err := at.scopeRow(obj.ClusterID, obj.Namespace, obj.Group, obj.Resource)
	if err != nil {
		return 0, err
	}
	id := at.nextObjectID
	at.nextObjectID++
	at.objectRows = append(at.objectRows, []any{id, scope, obj.Name})
	at.newObjects[id] = true
	at.objects[obj] = id
	return id, nil
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
