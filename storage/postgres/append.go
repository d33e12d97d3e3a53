package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"sort"

	"github.com/jackc/pgx/v5"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/internal/journal"
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
	var res storage.AppendResult
	if len(batch) == 0 {
		return res, nil
	}
	parts := make([]int64, len(batch))
	for i := range batch {
		parts[i] = s.parts.of(batch[i].ObservedAt)
	}
	var err error
	for attempt := 0; ; attempt++ {
		if err = s.parts.ensure(ctx, s.pool, parts); err != nil {
			break
		}
		err = s.inTx(ctx, "append", func(tx pgx.Tx) error {
			var err error
			res, err = appendTx(ctx, tx, batch, parts)
			return err
		})
		if !noPartition(err) || attempt == 3 {
			break
		}
		// Another process's compaction dropped a partition this one
		// knew: create it again.
		s.parts.forget()
	}
	if err != nil {
		return storage.AppendResult{}, fmt.Errorf("postgres: append: %w", err)
	}
	return res, nil
}

func key(cluster, id string) string { return cluster + "\x00" + id }

// lockClusters takes the row lock of each cluster, creating its row when
// missing, in cluster order (so that two writers never wait on each
// other in a cycle). Held until the transaction ends, it orders the
// cluster's writers: each takes its sequence numbers after the previous
// one committed.
func lockClusters(ctx context.Context, tx pgx.Tx, clusters []string) error {
	if _, err := tx.Exec(ctx, "INSERT INTO krply_clusters (cluster_id) SELECT unnest($1::text[]) ON CONFLICT DO NOTHING", clusters); err != nil {
		return fmt.Errorf("registering clusters: %w", err)
	}
	if _, err := tx.Exec(ctx, "SELECT 1 FROM krply_clusters WHERE cluster_id = ANY($1) ORDER BY cluster_id COLLATE \"C\" FOR UPDATE", clusters); err != nil {
		return fmt.Errorf("locking clusters: %w", err)
	}
	return nil
}

func appendTx(ctx context.Context, tx pgx.Tx, batch []event.Record, parts []int64) (storage.AppendResult, error) {
	res := storage.AppendResult{Seqs: make([]int64, len(batch))}
	var clusters []string
	idsOf := map[string][]string{}
	for i := range batch {
		c := batch[i].ClusterID
		if _, ok := idsOf[c]; !ok {
			clusters = append(clusters, c)
		}
		idsOf[c] = append(idsOf[c], batch[i].EventID)
	}
	sort.Strings(clusters)
	if err := lockClusters(ctx, tx, clusters); err != nil {
		return res, err
	}
	// De-duplication: the IDs are read under the clusters' locks, so no
	// other writer can store one of them before this one commits.
	seen := map[string]int64{}
	for _, c := range clusters {
		rows, err := tx.Query(ctx, "SELECT event_id, seq FROM krply_records WHERE cluster_id = $1 AND event_id = ANY($2)", c, idsOf[c])
		if err != nil {
			return res, err
		}
		for rows.Next() {
			var id string
			var seq int64
			if err := rows.Scan(&id, &seq); err != nil {
				rows.Close()
				return res, err
			}
			seen[key(c, id)] = seq
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return res, err
		}
	}
	var fresh []int
	pending := map[string]int{}
	for i := range batch {
		k := key(batch[i].ClusterID, batch[i].EventID)
		if seq, ok := seen[k]; ok {
			res.Seqs[i] = seq
			res.Duplicates++
			continue
		}
		if j, ok := pending[k]; ok {
			res.Seqs[i] = -1 - int64(j) // resolved below
			res.Duplicates++
			continue
		}
		pending[k] = i
		fresh = append(fresh, i)
	}
	if len(fresh) > 0 {
		seqs, err := nextSeqs(ctx, tx, len(fresh))
		if err != nil {
			return res, err
		}
		for n, i := range fresh {
			res.Seqs[i] = seqs[n]
			batch[i].IngestSeq = seqs[n]
		}
	}
	for i, seq := range res.Seqs {
		if seq < 0 {
			res.Seqs[i] = res.Seqs[-1-seq]
		}
	}
	res.Inserted = len(fresh)
	if len(fresh) == 0 {
		return res, nil
	}
	rows := make([]row, len(fresh))
	for n, i := range fresh {
		rows[n] = row{rec: &batch[i], part: parts[i], visible: true}
	}
	if err := storeRows(ctx, tx, rows); err != nil {
		return res, err
	}
	return res, nil
}

// nextSeqs takes n sequence numbers, ascending.
func nextSeqs(ctx context.Context, tx pgx.Tx, n int) ([]int64, error) {
	rows, err := tx.Query(ctx, "SELECT nextval('krply_seq') FROM generate_series(1, $1)", n)
	if err != nil {
		return nil, err
	}
	seqs, err := pgx.CollectRows(rows, pgx.RowTo[int64])
	if err != nil {
		return nil, err
	}
	slices.Sort(seqs)
	return seqs, nil
}

// storeRows inserts records that have their IngestSeq (new ones, or
// compaction markers), in IngestSeq order, with everything that follows
// from them: visibility of baseline items, bodies, stream statuses and
// cluster totals. The caller holds the locks of the records' clusters.
func storeRows(ctx context.Context, tx pgx.Tx, rows []row) error {
	if err := applyBaselines(ctx, tx, rows); err != nil {
		return err
	}
	if err := storeBodies(ctx, tx, rows); err != nil {
		return err
	}
	if err := insertRows(ctx, tx, rows); err != nil {
		return err
	}
	return applyStatuses(ctx, tx, rows)
}

type baselineKey struct{ cluster, stream, id string }

type baselineState struct{ begun, ended, dirty, opened bool }

// applyBaselines decides the visibility of baseline items (hidden while
// their baseline has begun and not ended), records the baselines' states,
// and makes the items of the baselines that end in this batch visible.
func applyBaselines(ctx context.Context, tx pgx.Tx, rows []row) error {
	states := map[baselineKey]*baselineState{}
	var cs, ss, ids []string
	for _, r := range rows {
		if r.rec.BaselineID == "" || r.rec.StreamID == "" {
			continue
		}
		k := baselineKey{r.rec.ClusterID, r.rec.StreamID, r.rec.BaselineID}
		if _, ok := states[k]; !ok {
			states[k] = &baselineState{}
			cs, ss, ids = append(cs, k.cluster), append(ss, k.stream), append(ids, k.id)
		}
	}
	if len(states) == 0 {
		return nil
	}
	q, err := tx.Query(ctx, `SELECT b.cluster_id, b.stream_id, b.baseline_id, b.begun, b.ended FROM krply_baselines b
JOIN unnest($1::text[], $2::text[], $3::text[]) AS k(c, s, id) ON b.cluster_id = k.c AND b.stream_id = k.s AND b.baseline_id = k.id`, cs, ss, ids)
	if err != nil {
		return fmt.Errorf("reading baselines: %w", err)
	}
	for q.Next() {
		var k baselineKey
		var st baselineState
		if err := q.Scan(&k.cluster, &k.stream, &k.id, &st.begun, &st.ended); err != nil {
			q.Close()
			return err
		}
		*states[k] = st
	}
	q.Close()
	if err := q.Err(); err != nil {
		return err
	}
	var endC, endS, endID []string
	for i := range rows {
		rec := rows[i].rec
		if rec.BaselineID == "" || rec.StreamID == "" {
			continue
		}
		st := states[baselineKey{rec.ClusterID, rec.StreamID, rec.BaselineID}]
		switch {
		case rec.Type == event.TypeBaseline && rec.Baseline != nil && rec.Baseline.Phase == event.BaselineBegin:
			st.begun, st.dirty = true, true
		case rec.Type == event.TypeBaseline && rec.Baseline != nil && rec.Baseline.Phase == event.BaselineEnd:
			if !st.ended {
				endC, endS, endID = append(endC, rec.ClusterID), append(endS, rec.StreamID), append(endID, rec.BaselineID)
			}
			st.ended, st.dirty = true, true
		}
	}
	// An item is hidden while its baseline is open as of the end of the
	// batch, which is when readers see it.
	for i := range rows {
		if rec := rows[i].rec; storage.IsBaselineItem(rec) {
			st := states[baselineKey{rec.ClusterID, rec.StreamID, rec.BaselineID}]
			rows[i].visible = !(st.begun && !st.ended)
		}
	}
	var uc, us, uid []string
	var ub, ue []bool
	for k, st := range states {
		if st.dirty {
			uc, us, uid, ub, ue = append(uc, k.cluster), append(us, k.stream), append(uid, k.id), append(ub, st.begun), append(ue, st.ended)
		}
	}
	if len(uc) > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO krply_baselines (cluster_id, stream_id, baseline_id, begun, ended)
SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::boolean[], $5::boolean[])
ON CONFLICT (cluster_id, stream_id, baseline_id) DO UPDATE SET begun = excluded.begun, ended = excluded.ended`, uc, us, uid, ub, ue); err != nil {
			return fmt.Errorf("writing baselines: %w", err)
		}
	}
	if len(endC) > 0 {
		// Items stored by earlier batches become visible with the end;
		// this batch's own items were decided above.
		if _, err := tx.Exec(ctx, `UPDATE krply_records r SET visible = true
FROM unnest($1::text[], $2::text[], $3::text[]) AS k(c, s, id)
WHERE r.cluster_id = k.c AND r.stream_id = k.s AND r.item_baseline = k.id AND NOT r.visible`, endC, endS, endID); err != nil {
			return fmt.Errorf("showing the items of ended baselines: %w", err)
		}
	}
	return nil
}

// storeBodies stores each distinct body once per cluster.
func storeBodies(ctx context.Context, tx pgx.Tx, rows []row) error {
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
		k := key(rec.ClusterID, string(h[:]))
		if done[k] {
			continue
		}
		done[k] = true
		cs, hashes, data, lens = append(cs, rec.ClusterID), append(hashes, h[:]), append(data, rec.Object), append(lens, int32(len(rec.Object)))
	}
	if len(cs) == 0 {
		return nil
	}
	q, err := tx.Query(ctx, `INSERT INTO krply_bodies (cluster_id, hash, raw_len, data)
SELECT * FROM unnest($1::text[], $2::bytea[], $3::integer[], $4::bytea[])
ON CONFLICT (cluster_id, hash) DO NOTHING
RETURNING cluster_id, raw_len`, cs, hashes, lens, data)
	if err != nil {
		return fmt.Errorf("storing bodies: %w", err)
	}
	type totals struct{ n, raw int64 }
	added := map[string]*totals{}
	for q.Next() {
		var c string
		var n int32
		if err := q.Scan(&c, &n); err != nil {
			q.Close()
			return err
		}
		if added[c] == nil {
			added[c] = &totals{}
		}
		added[c].n++
		added[c].raw += int64(n)
	}
	q.Close()
	if err := q.Err(); err != nil {
		return fmt.Errorf("storing bodies: %w", err)
	}
	for c, t := range added {
		// BodyBytes counts what the bodies take stored: PostgreSQL
		// compresses large values itself (TOAST), so it is their raw
		// size here, an upper bound.
		if _, err := tx.Exec(ctx, "UPDATE krply_clusters SET bodies = bodies + $2, body_bytes = body_bytes + $3, raw_bytes = raw_bytes + $3 WHERE cluster_id = $1", c, t.n, t.raw); err != nil {
			return err
		}
	}
	return nil
}

// insertRows inserts the records' rows in one statement.
func insertRows(ctx context.Context, tx pgx.Tx, rows []row) error {
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
	type counts struct{ records, events int64 }
	per := map[string]*counts{}
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
		if per[rec.ClusterID] == nil {
			per[rec.ClusterID] = &counts{}
		}
		per[rec.ClusterID].records++
		if rec.Type == event.TypeEvent {
			per[rec.ClusterID].events++
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO krply_records (cluster_id, seq, part, event_id, type, stream_id, observed_at, grp, resource, namespace, name, uid, rv,
	synthetic, deleted, item_baseline, visible, progress, body_hash, target, meta)
SELECT * FROM unnest($1::text[], $2::bigint[], $21::bigint[], $3::text[], $4::text[], $5::text[], $6::bigint[], $7::text[], $8::text[], $9::text[], $10::text[], $11::text[], $12::text[],
	$13::boolean[], $14::boolean[], $15::text[], $16::boolean[], $17::boolean[], $18::bytea[], $19::text[], $20::bytea[])
ON CONFLICT (cluster_id, event_id, part) DO NOTHING`,
		cluster, seq, eventID, typ, stream, observed, grp, res, ns, name, uid, rv,
		synthetic, deleted, itemBaseline, visible, progress, bodyHash, target, meta, part)
	if err != nil {
		return fmt.Errorf("inserting records: %w", err)
	}
	for c, n := range per {
		if _, err := tx.Exec(ctx, "UPDATE krply_clusters SET records = records + $2, events = events + $3 WHERE cluster_id = $1", c, n.records, n.events); err != nil {
			return err
		}
	}
	return nil
}

// applyStatuses advances the status of every stream the rows belong to.
func applyStatuses(ctx context.Context, tx pgx.Tx, rows []row) error {
	statuses := map[baselineKey]*storage.StreamStatus{}
	var cs, ss []string
	for _, r := range rows {
		if r.rec.StreamID == "" {
			continue
		}
		k := baselineKey{cluster: r.rec.ClusterID, stream: r.rec.StreamID}
		if statuses[k] == nil {
			st := journal.NewStatus(k.stream)
			statuses[k] = &st
			cs, ss = append(cs, k.cluster), append(ss, k.stream)
		}
	}
	if len(cs) == 0 {
		return nil
	}
	q, err := tx.Query(ctx, `SELECT t.cluster_id, t.stream_id, t.status FROM krply_streams t
JOIN unnest($1::text[], $2::text[]) AS k(c, s) ON t.cluster_id = k.c AND t.stream_id = k.s`, cs, ss)
	if err != nil {
		return fmt.Errorf("reading stream statuses: %w", err)
	}
	for q.Next() {
		var k baselineKey
		var raw []byte
		if err := q.Scan(&k.cluster, &k.stream, &raw); err != nil {
			q.Close()
			return err
		}
		if err := json.Unmarshal(raw, statuses[k]); err != nil {
			q.Close()
			return fmt.Errorf("%w: status of stream %s: %v", storage.ErrIncompatible, k.stream, err)
		}
	}
	q.Close()
	if err := q.Err(); err != nil {
		return err
	}
	for _, r := range rows {
		if r.rec.StreamID != "" {
			journal.ApplyStatus(statuses[baselineKey{cluster: r.rec.ClusterID, stream: r.rec.StreamID}], r.rec)
		}
	}
	return writeStatuses(ctx, tx, statuses)
}

func writeStatuses(ctx context.Context, tx pgx.Tx, statuses map[baselineKey]*storage.StreamStatus) error {
	var cs, ss []string
	var raws [][]byte
	for k, st := range statuses {
		b, err := json.Marshal(st)
		if err != nil {
			return err
		}
		cs, ss, raws = append(cs, k.cluster), append(ss, k.stream), append(raws, b)
	}
	if _, err := tx.Exec(ctx, `INSERT INTO krply_streams (cluster_id, stream_id, status)
SELECT c, s, r::jsonb FROM unnest($1::text[], $2::text[], $3::text[]) AS k(c, s, r)
ON CONFLICT (cluster_id, stream_id) DO UPDATE SET status = excluded.status`, cs, ss, bytesToStrings(raws)); err != nil {
		return fmt.Errorf("writing stream statuses: %w", err)
	}
	return nil
}

func bytesToStrings(bs [][]byte) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = string(b)
	}
	return out
}
