package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/journal"
)

// row is a record as krply_records stores it.
type row struct {
	rec      *event.Record
	part     int64
	visible  bool
	bodyHash []byte
}

// Append stores a batch in one transaction. See the package documentation
// for how concurrent writers of one cluster are ordered.
func (s *Store) Append(ctx context.Context, records []event.Record) (storage.AppendResult, error) {
	if err := s.check(ctx, "append"); err != nil {
		return storage.AppendResult{}, err
	}
	batch := make([]event.Record, len(records))
	for i := range records {
		rec := records[i]
		if err := journal.Validate(&rec); err != nil {
			return storage.AppendResult{}, fmt.Errorf("postgres: append: record %d of %d: %w", i, len(records), err)
		}
		if len(rec.Object) > 0 && rec.ObjectHash == "" {
			rec.ObjectHash = event.ObjectHash(rec.Object)
		}
		batch[i] = rec
	}
	if len(batch) == 0 {
		return storage.AppendResult{}, nil
	}
	parts := make([]int64, len(batch))
	for i := range batch {
		parts[i] = s.parts.of(batch[i].ObservedAt)
	}
	for attempt := 0; ; attempt++ {
		if err := s.parts.ensure(ctx, s.pool, parts); err != nil {
			return storage.AppendResult{}, fmt.Errorf("postgres: append: %w", err)
		}
		res, err := s.appendOnce(ctx, batch, parts)
		var pe *pgconn.PgError
		switch {
		case err == nil:
			return res, nil
		case noPartition(err) && attempt < 3:
			// Another process's compaction dropped a partition this
			// one knew: create it again.
			s.parts.forget()
		case errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001") && attempt < 10:
			s.log.V(1).Info("retrying an append", "code", pe.Code, "attempt", attempt+1)
		default:
			return storage.AppendResult{}, fmt.Errorf("postgres: append: %w", err)
		}
	}
}

func key(cluster, id string) string { return cluster + "\x00" + id }

// appendOnce runs the transaction of an Append in two round trips: one
// pipeline that begins it, locks the clusters and reads what the batch
// depends on, and one that writes and commits. The clusters' row locks,
// taken in cluster order (writers never wait in a cycle) and held until
// the commit, serialize the writers of a cluster: each reads the IDs and
// takes its sequence numbers after the previous one committed.
func (s *Store) appendOnce(ctx context.Context, batch []event.Record, parts []int64) (storage.AppendResult, error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return storage.AppendResult{}, err
	}
	// A connection released inside a transaction (an error below) is
	// closed by the pool, which rolls the transaction back.
	defer conn.Release()
	c := conn.Conn()
	in := newAppendInput(batch)
	reads := &pgx.Batch{}
	reads.Queue("BEGIN")
	// pgx prepares each statement once per connection, and PostgreSQL may
	// then keep a generic plan made while the tables were small: the
	// look-up of the batch's event IDs would keep scanning the growing
	// partition. An Append plans for its values every time; reads keep
	// PostgreSQL's choice (plan_cache_mode auto), as planning every read
	// cost the server more than running it.
	reads.Queue("SET LOCAL plan_cache_mode = force_custom_plan")
	queueLock(reads, in.clusters)
	reads.Queue(inFlightLock)
	// One look-up in the event ID index per record (LATERAL with LIMIT
	// keeps the planner from hashing the batch against a scan of the
	// records, which it chose for batches of 10,000 and which grows with
	// the journal). An EventID is stored at most once per cluster.
	reads.Queue(`SELECT k.c, k.id, r.seq FROM unnest($1::text[], $2::text[]) AS k(c, id)
CROSS JOIN LATERAL (SELECT r.seq FROM krply_records r WHERE r.event_id = k.id AND r.cluster_id = k.c LIMIT 1) r`, in.idClusters, in.ids)
	reads.Queue("SELECT nextval('krply_seq') FROM generate_series(1, $1)", len(batch))
	queueBaselineRead(reads, in)
	queueStatusRead(reads, in)
	seen, seqs, err := readBatch(ctx, c, reads, in)
	if err != nil {
		_, _ = c.Exec(ctx, "ROLLBACK")
		return storage.AppendResult{}, err
	}
	res, rows := in.assign(seen, seqs, parts)
	if len(rows) == 0 {
		_, err := c.Exec(ctx, "COMMIT")
		return res, err
	}
	writes := &pgx.Batch{}
	if err := queueRows(writes, rows, in); err != nil {
		_, _ = c.Exec(ctx, "ROLLBACK")
		return storage.AppendResult{}, err
	}
	writes.Queue("COMMIT")
	if err := c.SendBatch(ctx, writes).Close(); err != nil {
		_, _ = c.Exec(ctx, "ROLLBACK")
		return storage.AppendResult{}, err
	}
	return res, nil
}

// queueLock queues the row locks of the clusters, creating their rows
// when missing.
func queueLock(b *pgx.Batch, clusters []string) {
	b.Queue("INSERT INTO krply_clusters (cluster_id) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING", clusters)
	b.Queue(`SELECT 1 FROM krply_clusters WHERE cluster_id = ANY($1) ORDER BY cluster_id COLLATE "C" FOR UPDATE`, clusters)
}

type baselineKey struct{ cluster, stream, id string }

type baselineState struct{ begun, ended, dirty bool }

// appendInput is what an Append reads before it writes.
type appendInput struct {
	batch    []event.Record
	clusters []string
	// ids and idClusters: the EventID and cluster of each record.
	ids, idClusters []string
	// baselines: the states of the baselines the batch names.
	baselines map[baselineKey]*baselineState
	bkeys     []baselineKey
	// statuses: the status of each stream of the batch (key: cluster and
	// stream, empty id).
	statuses map[baselineKey]*storage.StreamStatus
	skeys    []baselineKey
}

func newAppendInput(batch []event.Record) *appendInput {
	in := &appendInput{batch: batch, baselines: map[baselineKey]*baselineState{}, statuses: map[baselineKey]*storage.StreamStatus{}}
	seenCluster := map[string]bool{}
	for i := range batch {
		rec := &batch[i]
		if !seenCluster[rec.ClusterID] {
			seenCluster[rec.ClusterID] = true
			in.clusters = append(in.clusters, rec.ClusterID)
		}
		in.ids, in.idClusters = append(in.ids, rec.EventID), append(in.idClusters, rec.ClusterID)
		if rec.StreamID == "" {
			continue
		}
		if sk := (baselineKey{cluster: rec.ClusterID, stream: rec.StreamID}); in.statuses[sk] == nil {
			st := journal.NewStatus(rec.StreamID)
			in.statuses[sk] = &st
			in.skeys = append(in.skeys, sk)
		}
		if rec.BaselineID != "" {
			if bk := (baselineKey{rec.ClusterID, rec.StreamID, rec.BaselineID}); in.baselines[bk] == nil {
				in.baselines[bk] = &baselineState{}
				in.bkeys = append(in.bkeys, bk)
			}
		}
	}
	sort.Strings(in.clusters)
	return in
}

func columns(keys []baselineKey) (cs, ss, ids []string) {
	for _, k := range keys {
		cs, ss, ids = append(cs, k.cluster), append(ss, k.stream), append(ids, k.id)
	}
	return cs, ss, ids
}

func queueBaselineRead(b *pgx.Batch, in *appendInput) {
	if len(in.bkeys) == 0 {
		return
	}
	cs, ss, ids := columns(in.bkeys)
	b.Queue(`SELECT b.cluster_id, b.stream_id, b.baseline_id, b.begun, b.ended FROM krply_baselines b
JOIN unnest($1::text[], $2::text[], $3::text[]) AS k(c, s, id) ON b.cluster_id = k.c AND b.stream_id = k.s AND b.baseline_id = k.id`, cs, ss, ids)
}

func queueStatusRead(b *pgx.Batch, in *appendInput) {
	if len(in.skeys) == 0 {
		return
	}
	cs, ss, _ := columns(in.skeys)
	b.Queue(`SELECT t.cluster_id, t.stream_id, t.status FROM krply_streams t
JOIN unnest($1::text[], $2::text[]) AS k(c, s) ON t.cluster_id = k.c AND t.stream_id = k.s`, cs, ss)
}

// readBatch sends the reads and returns the stored IDs (cluster and ID to
// seq) and the sequence numbers taken, ascending; it fills in's baseline
// states and statuses.
func readBatch(ctx context.Context, c *pgx.Conn, b *pgx.Batch, in *appendInput) (map[string]int64, []int64, error) {
	br := c.SendBatch(ctx, b)
	defer br.Close()
	for range 5 { // BEGIN, the plan mode, the cluster rows, their locks, the in-flight lock
		if _, err := br.Exec(); err != nil {
			return nil, nil, err
		}
	}
	seen := map[string]int64{}
	rows, _ := br.Query()
	for rows.Next() {
		var cluster, id string
		var seq int64
		if err := rows.Scan(&cluster, &id, &seq); err != nil {
			rows.Close()
			return nil, nil, err
		}
		seen[key(cluster, id)] = seq
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, nil, err
	}
	rows, _ = br.Query()
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, nil, err
	}
	slices.Sort(seqs)
	if len(in.bkeys) > 0 {
		rows, _ = br.Query()
		for rows.Next() {
			var k baselineKey
			var st baselineState
			if err := rows.Scan(&k.cluster, &k.stream, &k.id, &st.begun, &st.ended); err != nil {
				rows.Close()
				return nil, nil, err
			}
			*in.baselines[k] = st
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, nil, fmt.Errorf("reading baselines: %w", err)
		}
	}
	if err := readStatuses(br, in); err != nil {
		return nil, nil, err
	}
	return seen, seqs, br.Close()
}

// readStatuses reads the result of queueStatusRead into in's statuses.
func readStatuses(br pgx.BatchResults, in *appendInput) error {
	if len(in.skeys) == 0 {
		return nil
	}
	rows, _ := br.Query()
	defer rows.Close()
	for rows.Next() {
		var k baselineKey
		var raw []byte
		if err := rows.Scan(&k.cluster, &k.stream, &raw); err != nil {
			return err
		}
		if err := json.Unmarshal(raw, in.statuses[k]); err != nil {
			return fmt.Errorf("%w: status of stream %s: %v", storage.ErrIncompatible, k.stream, err)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("reading stream statuses: %w", err)
	}
	return nil
}

// assign decides which records are new (not stored, not earlier in the
// batch), gives them sequence numbers in batch order, and returns the
// result and their rows.
func (in *appendInput) assign(seen map[string]int64, seqs []int64, parts []int64) (storage.AppendResult, []row) {
	res := storage.AppendResult{Seqs: make([]int64, len(in.batch))}
	var rows []row
	for i := range in.batch {
		rec := &in.batch[i]
		k := key(rec.ClusterID, rec.EventID)
		if seq, ok := seen[k]; ok {
			res.Seqs[i] = seq
			res.Duplicates++
			continue
		}
		rec.IngestSeq = seqs[len(rows)]
		seen[k] = rec.IngestSeq
		res.Seqs[i] = rec.IngestSeq
		rows = append(rows, row{rec: rec, part: parts[i], visible: true})
	}
	res.Inserted = len(rows)
	return res, rows
}

// queueRows queues the writes of new records: the baselines' states and
// the items they make visible, bodies, the rows, the stream statuses and
// the cluster totals.
func queueRows(b *pgx.Batch, rows []row, in *appendInput) error {
	queueBaselines(b, rows, in)
	queueBodies(b, rows)
	if err := queueInsert(b, rows, false); err != nil {
		return err
	}
	for _, r := range rows {
		if r.rec.StreamID != "" {
			journal.ApplyStatus(in.statuses[baselineKey{cluster: r.rec.ClusterID, stream: r.rec.StreamID}], r.rec)
		}
	}
	return queueStatuses(b, in.statuses)
}

// queueBaselines decides the visibility of baseline items (hidden while
// their baseline has begun and not ended as of the end of the batch, when
// readers see it), records the baselines' states, and makes the stored
// items of the baselines that end in this batch visible.
func queueBaselines(b *pgx.Batch, rows []row, in *appendInput) {
	if len(in.bkeys) == 0 {
		return
	}
	var ended []baselineKey
	for i := range rows {
		rec := rows[i].rec
		if rec.BaselineID == "" || rec.StreamID == "" || rec.Type != event.TypeBaseline || rec.Baseline == nil {
			continue
		}
		k := baselineKey{rec.ClusterID, rec.StreamID, rec.BaselineID}
		st := in.baselines[k]
		switch rec.Baseline.Phase {
		case event.BaselineBegin:
			st.begun, st.dirty = true, true
		case event.BaselineEnd:
			if !st.ended {
				ended = append(ended, k)
			}
			st.ended, st.dirty = true, true
		}
	}
	for i := range rows {
		if rec := rows[i].rec; storage.IsBaselineItem(rec) {
			st := in.baselines[baselineKey{rec.ClusterID, rec.StreamID, rec.BaselineID}]
			rows[i].visible = !(st.begun && !st.ended)
		}
	}
	var dirty []baselineKey
	var begun, endedCol []bool
	for _, k := range in.bkeys {
		if st := in.baselines[k]; st.dirty {
			dirty, begun, endedCol = append(dirty, k), append(begun, st.begun), append(endedCol, st.ended)
		}
	}
	if len(dirty) > 0 {
		cs, ss, ids := columns(dirty)
		b.Queue(`INSERT INTO krply_baselines (cluster_id, stream_id, baseline_id, begun, ended)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::boolean[], $5::boolean[])
ON CONFLICT (cluster_id, stream_id, baseline_id) DO UPDATE SET begun = excluded.begun, ended = excluded.ended`, cs, ss, ids, begun, endedCol)
	}
	if len(ended) > 0 {
		// Items stored by earlier batches become visible with the end.
		cs, ss, ids := columns(ended)
		b.Queue(`UPDATE krply_records r SET visible = true
FROM unnest($1::text[], $2::text[], $3::text[]) AS k(c, s, id)
WHERE r.cluster_id = k.c AND r.stream_id = k.s AND r.item_baseline = k.id AND NOT r.visible`, cs, ss, ids)
	}
}

// queueBodies stores each distinct body once per cluster, and counts the
// new ones in their clusters' totals (BodyBytes counts their raw size:
// PostgreSQL compresses large values itself, TOAST, so that is an upper
// bound of what they take).
func queueBodies(b *pgx.Batch, rows []row) {
	var cs []string
	var hashes, data [][]byte
	var lens []int32
	done := map[string]bool{}
	for i := range rows {
		rec := rows[i].rec
		if len(rec.Object) == 0 {
			continue
		}
		h := sha256.Sum256(rec.Object)
		rows[i].bodyHash = h[:]
		if k := key(rec.ClusterID, string(h[:])); !done[k] {
			done[k] = true
			cs, hashes, data, lens = append(cs, rec.ClusterID), append(hashes, h[:]), append(data, rec.Object), append(lens, int32(len(rec.Object)))
		}
	}
	if len(cs) == 0 {
		return
	}
	// Not ON CONFLICT DO NOTHING, which costs several times a look-up
	// when the row exists: the cluster's lock, held since before this
	// statement, keeps every other writer of the cluster's bodies out.
	b.Queue(`WITH added AS (
	INSERT INTO krply_bodies (cluster_id, hash, raw_len, data)
	SELECT * FROM unnest($1::text[], $2::bytea[], $3::integer[], $4::bytea[]) AS k(c, h, l, d)
	WHERE NOT EXISTS (SELECT 1 FROM krply_bodies b WHERE b.cluster_id = k.c AND b.hash = k.h)
	RETURNING cluster_id, raw_len
), totals AS (SELECT cluster_id, count(*) AS n, sum(raw_len) AS bytes FROM added GROUP BY cluster_id)
UPDATE krply_clusters c SET bodies = c.bodies + t.n, body_bytes = c.body_bytes + t.bytes, raw_bytes = c.raw_bytes + t.bytes
FROM totals t WHERE c.cluster_id = t.cluster_id`, cs, hashes, lens, data)
}

// queueInsert queues the insert of the rows and the count of them in
// their clusters' totals. skipStored skips the rows whose EventID the
// partition holds already (ON CONFLICT DO NOTHING); an Append, which read
// the stored IDs under its clusters' locks, does not need it, and a plain
// insert of new rows costs less.
func queueInsert(b *pgx.Batch, rows []row, skipStored bool) error {
	n := len(rows)
	var (
		cluster, eventID, typ, stream = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		seq, observed, part           = make([]int64, n), make([]int64, n), make([]int64, n)
		grp, res, ns, name, uid, rv   = make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n), make([]*string, n)
		synthetic, deleted, visible   = make([]bool, n), make([]bool, n), make([]bool, n)
		progress                      = make([]bool, n)
		itemBaseline, target          = make([]*string, n), make([]*string, n)
		bodyHash, meta                = make([][]byte, n), make([][]byte, n)
	)
	for i := range rows {
		rec := rows[i].rec
		cluster[i], eventID[i], typ[i], stream[i] = rec.ClusterID, rec.EventID, string(rec.Type), rec.StreamID
		seq[i], observed[i], part[i] = rec.IngestSeq, nanos(rec.ObservedAt), rows[i].part
		if rec.IsObjectChange() {
			ref := rec.Resource
			grp[i], res[i], ns[i], name[i], uid[i], rv[i] = &ref.Group, &ref.Resource, &ref.Namespace, &ref.Name, &ref.UID, &ref.ResourceVersion
			deleted[i] = rec.WatchType == event.Deleted
		}
		synthetic[i], visible[i] = rec.Synthetic, rows[i].visible
		_, progress[i] = storage.ProgressRV(*rec)
		if storage.IsBaselineItem(rec) {
			id := rec.BaselineID
			itemBaseline[i] = &id
		}
		if rec.Type == event.TypeAuditCorrelation && rec.Audit != nil {
			t := rec.Audit.TargetEventID
			target[i] = &t
		}
		bodyHash[i] = rows[i].bodyHash
		m := *rec
		m.Object, m.IngestSeq = nil, 0
		b, err := json.Marshal(&m)
		if err != nil {
			return fmt.Errorf("encoding record %q: %w", rec.EventID, err)
		}
		meta[i] = b
	}
	queueObjects(b, rows)
	onConflict := ""
	if skipStored {
		onConflict = "ON CONFLICT (event_id, cluster_id, part) DO NOTHING"
	}
	b.Queue(`WITH added AS (
	INSERT INTO krply_records (cluster_id, seq, part, event_id, type, stream_id, observed_at, grp, resource, namespace, name, uid, rv,
		synthetic, deleted, item_baseline, visible, progress, body_hash, target, meta)
	SELECT * FROM unnest($1::text[], $2::bigint[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[],
		$14::boolean[], $15::boolean[], $16::text[], $17::boolean[], $18::boolean[], $19::bytea[], $20::text[], $21::bytea[])
	`+onConflict+`
	RETURNING cluster_id, type
), totals AS (SELECT cluster_id, count(*) AS n, count(*) FILTER (WHERE type = 'event') AS events FROM added GROUP BY cluster_id)
UPDATE krply_clusters c SET records = c.records + t.n, events = c.events + t.events FROM totals t WHERE c.cluster_id = t.cluster_id`,
		cluster, seq, part, eventID, typ, stream, observed, grp, res, ns, name, uid, rv,
		synthetic, deleted, itemBaseline, visible, progress, bodyHash, target, meta)
	return nil
}

// queueObjects queues the objects the rows change, for krply_objects.
func queueObjects(b *pgx.Batch, rows []row) {
	var cs, ss, res, grp, ns, name []string
	seen := map[string]bool{}
	for _, r := range rows {
		rec := r.rec
		if !rec.IsObjectChange() {
			continue
		}
		ref := rec.Resource
		k := rec.ClusterID + "\x00" + rec.StreamID + "\x00" + ref.Resource + "\x00" + ref.Group + "\x00" + ref.Namespace + "\x00" + ref.Name
		if seen[k] {
			continue
		}
		seen[k] = true
		cs, ss, res, grp, ns, name = append(cs, rec.ClusterID), append(ss, rec.StreamID), append(res, ref.Resource), append(grp, ref.Group), append(ns, ref.Namespace), append(name, ref.Name)
	}
	if len(cs) == 0 {
		return
	}
	// As for bodies: the cluster's lock keeps other writers out, and a
	// look-up costs a fraction of ON CONFLICT DO NOTHING on a row that
	// exists.
	b.Queue(`INSERT INTO krply_objects (cluster_id, stream_id, resource, grp, namespace, name)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[]) AS k(c, s, r, g, n, m)
WHERE NOT EXISTS (SELECT 1 FROM krply_objects o WHERE o.cluster_id = k.c AND o.stream_id = k.s AND o.resource = k.r AND o.grp = k.g AND o.namespace = k.n AND o.name = k.m)`,
		cs, ss, res, grp, ns, name)
}

// queueStatuses queues the upsert of stream statuses.
func queueStatuses(b *pgx.Batch, statuses map[baselineKey]*storage.StreamStatus) error {
	var cs, ss, raws []string
	for k, st := range statuses {
		raw, err := json.Marshal(st)
		if err != nil {
			return err
		}
		cs, ss, raws = append(cs, k.cluster), append(ss, k.stream), append(raws, string(raw))
	}
	if len(cs) == 0 {
		return nil
	}
	b.Queue(`INSERT INTO krply_streams (cluster_id, stream_id, status)
SELECT c, s, r::jsonb FROM unnest($1::text[], $2::text[], $3::text[]) AS k(c, s, r)
ON CONFLICT (cluster_id, stream_id) DO UPDATE SET status = excluded.status`, cs, ss, raws)
	return nil
}

// sendBatch sends b in the transaction tx and reports its first error.
func sendBatch(ctx context.Context, tx pgx.Tx, b *pgx.Batch) error {
	return tx.SendBatch(ctx, b).Close()
}
