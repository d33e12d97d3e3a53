package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/compaction"
	"github.com/krply/krply/storage/journal"
)

// Compact removes what is no longer needed to answer questions about times
// at or after before; see storage.Writer and storage/compaction
// for the rule. It runs in one transaction that holds every writer off
// (readers go on, and see the journal before or after it).
func (s *Store) Compact(ctx context.Context, before time.Time) (storage.CompactResult, error) {
	return s.compact(ctx, before, nil)
}

// CompactResources is Compact for the streams of the given resources
// only; see storage.ResourceCompactor. It drops no partition: the other
// streams' records in it stay.
func (s *Store) CompactResources(ctx context.Context, before time.Time, resources []string) (storage.CompactResult, error) {
	if len(resources) == 0 {
		return storage.CompactResult{}, nil
	}
	return s.compact(ctx, before, resources)
}

// compact compacts every stream when resources is nil, else the streams of
// those resources.
func (s *Store) compact(ctx context.Context, before time.Time, resources []string) (storage.CompactResult, error) {
	if err := s.check(ctx, "compact"); err != nil {
		return storage.CompactResult{}, err
	}
	var res storage.CompactResult
	err := s.inTx(ctx, "compact", func(tx pgx.Tx) error {
		var err error
		res, err = compactTx(ctx, tx, &s.parts, before, resources)
		return err
	})
	if err != nil {
		return storage.CompactResult{}, fmt.Errorf("postgres: compact: %w", err)
	}
	s.log.V(1).Info("compacted journal", "before", before, "recordsRemoved", res.RecordsRemoved,
		"bodiesRemoved", res.BodiesRemoved, "streams", res.Streams)
	return res, nil
}

// lockWriters holds every writer off until the transaction ends: appends
// insert into (and lock rows of) krply_clusters, which EXCLUSIVE mode
// blocks, while plain reads go on.
func lockWriters(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, "LOCK TABLE krply_clusters IN EXCLUSIVE MODE")
	return err
}

func compactTx(ctx context.Context, tx pgx.Tx, parts *partitions, before time.Time, resources []string) (storage.CompactResult, error) {
	if err := lockWriters(ctx, tx); err != nil {
		return storage.CompactResult{}, err
	}
	r := reader{q: tx, parts: parts}
	// Even when nothing goes, the partitions before the cut are dropped
	// (their records kept in the base partition); not when only some
	// resources are compacted, whose partitions hold the others' records.
	dropBefore := before
	var plan compaction.Plan
	var err error
	if resources == nil {
		plan, err = compaction.Decide(ctx, r, before)
	} else {
		plan, err = compaction.DecideResources(ctx, r, before, resources)
		dropBefore = time.Time{}
	}
	if err != nil {
		return storage.CompactResult{}, err
	}
	if err := applyPlan(ctx, tx, parts, dropBefore, plan.Remove, plan.Markers); err != nil {
		return storage.CompactResult{}, err
	}
	removedBodies, err := dropUnusedBodies(ctx, tx)
	if err != nil {
		return storage.CompactResult{}, err
	}
	return storage.CompactResult{
		RecordsRemoved: int64(len(plan.Remove) - len(plan.Markers)),
		BodiesRemoved:  removedBodies,
		Streams:        plan.Streams,
	}, nil
}

// applyPlan removes the records with the given seqs and inserts the
// markers (each reusing a removed seq), then recomputes what follows from
// the records: the statuses and baselines of the streams concerned and
// the totals of their clusters. The partitions that lie entirely before
// `before` are dropped, not emptied row by row: the few records of theirs
// the plan keeps move to the base partition first. Only what is removed
// from the other partitions is deleted.
func applyPlan(ctx context.Context, tx pgx.Tx, parts *partitions, before time.Time, remove []int64, markers []event.Record) error {
	removed := map[int64]bool{}
	for _, seq := range remove {
		removed[seq] = true
	}
	q, err := tx.Query(ctx, "SELECT DISTINCT cluster_id, stream_id FROM krply_records WHERE seq = ANY($1)", remove)
	if err != nil {
		return fmt.Errorf("finding the streams concerned: %w", err)
	}
	streams := map[baselineKey]bool{}
	clusters := map[string]bool{}
	for q.Next() {
		var k baselineKey
		if err := q.Scan(&k.cluster, &k.stream); err != nil {
			q.Close()
			return err
		}
		clusters[k.cluster] = true
		if k.stream != "" {
			streams[k] = true
		}
	}
	q.Close()
	if err := q.Err(); err != nil {
		return fmt.Errorf("finding the streams concerned: %w", err)
	}
	drop, err := droppable(ctx, tx, parts, before)
	if err != nil {
		return err
	}
	for _, part := range drop {
		if _, err := tx.Exec(ctx, "UPDATE krply_records SET part = $1 WHERE part = $2 AND NOT (seq = ANY($3))", int64(basePart), part, remove); err != nil {
			return fmt.Errorf("keeping records of partition %s: %w", partitionName(part), err)
		}
		if _, err := tx.Exec(ctx, "DROP TABLE "+pgx.Identifier{partitionName(part)}.Sanitize()); err != nil {
			return fmt.Errorf("dropping partition %s: %w", partitionName(part), err)
		}
	}
	if len(drop) > 0 {
		parts.forget()
	}
	if _, err := tx.Exec(ctx, "DELETE FROM krply_records WHERE seq = ANY($1)", remove); err != nil {
		return fmt.Errorf("removing records: %w", err)
	}
	if len(markers) > 0 {
		cut := parts.of(before)
		rows := make([]row, len(markers))
		for i := range markers {
			if !removed[markers[i].IngestSeq] {
				return fmt.Errorf("marker %q reuses sequence %d that is not removed", markers[i].EventID, markers[i].IngestSeq)
			}
			part := parts.of(markers[i].ObservedAt)
			if part < cut {
				part = basePart
			}
			rows[i] = row{rec: &markers[i], part: part, visible: true}
		}
		b := &pgx.Batch{}
		if err := queueInsert(b, rows, true); err != nil {
			return err
		}
		if err := sendBatch(ctx, tx, b); err != nil {
			return fmt.Errorf("inserting the markers: %w", err)
		}
	}
	for k := range streams {
		if err := rebuildStream(ctx, tx, parts, k); err != nil {
			return err
		}
	}
	for c := range clusters {
		if _, err := tx.Exec(ctx, `UPDATE krply_clusters SET
	records = (SELECT count(*) FROM krply_records WHERE cluster_id = $1),
	events = (SELECT count(*) FROM krply_records WHERE cluster_id = $1 AND type = 'event')
WHERE cluster_id = $1`, c); err != nil {
			return fmt.Errorf("recounting cluster %q: %w", c, err)
		}
	}
	return nil
}

// rebuildStream recomputes a stream's status (journal.RebuildStatus) and
// the begun/ended state of its baselines from the records left.
func rebuildStream(ctx context.Context, tx pgx.Tx, parts *partitions, k baselineKey) error {
	old, err := reader{q: tx, parts: parts}.StreamStatus(ctx, k.stream)
	if err != nil {
		return err
	}
	rows, err := tx.Query(ctx, "SELECT "+selectRecord(false)+" FROM krply_records r WHERE r.cluster_id = $1 AND r.stream_id = $2 ORDER BY r.seq", k.cluster, k.stream)
	if err != nil {
		return err
	}
	recs, err := scanRecords(rows)
	if err != nil {
		return err
	}
	ptrs := make([]*event.Record, len(recs))
	type state struct{ begun, ended bool }
	baselines := map[string]*state{}
	for i := range recs {
		ptrs[i] = &recs[i]
		if rec := &recs[i]; rec.Type == event.TypeBaseline && rec.Baseline != nil && rec.BaselineID != "" {
			st := baselines[rec.BaselineID]
			if st == nil {
				st = &state{}
				baselines[rec.BaselineID] = st
			}
			switch rec.Baseline.Phase {
			case event.BaselineBegin:
				st.begun = true
			case event.BaselineEnd:
				st.ended = true
			}
		}
	}
	st := journal.RebuildStatus(old, ptrs)
	b := &pgx.Batch{}
	if err := queueStatuses(b, map[baselineKey]*storage.StreamStatus{k: &st}); err != nil {
		return err
	}
	if err := sendBatch(ctx, tx, b); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, `DELETE FROM krply_objects o WHERE o.cluster_id = $1 AND o.stream_id = $2 AND NOT EXISTS (
	SELECT 1 FROM krply_records r WHERE r.cluster_id = o.cluster_id AND r.resource = o.resource AND r.grp = o.grp
		AND r.namespace = o.namespace AND r.name = o.name AND r.stream_id = o.stream_id)`, k.cluster, k.stream); err != nil {
		return fmt.Errorf("forgetting objects without records: %w", err)
	}
	if _, err := tx.Exec(ctx, "DELETE FROM krply_baselines WHERE cluster_id = $1 AND stream_id = $2", k.cluster, k.stream); err != nil {
		return err
	}
	for id, b := range baselines {
		if _, err := tx.Exec(ctx, "INSERT INTO krply_baselines (cluster_id, stream_id, baseline_id, begun, ended) VALUES ($1, $2, $3, $4, $5)",
			k.cluster, k.stream, id, b.begun, b.ended); err != nil {
			return err
		}
	}
	return nil
}

// dropUnusedBodies removes the bodies no record uses any more and
// recounts the bodies of the clusters that lost some.
func dropUnusedBodies(ctx context.Context, tx pgx.Tx) (int64, error) {
	q, err := tx.Query(ctx, `DELETE FROM krply_bodies b WHERE NOT EXISTS (
	SELECT 1 FROM krply_records r WHERE r.cluster_id = b.cluster_id AND r.body_hash = b.hash)
RETURNING cluster_id, raw_len`)
	if err != nil {
		return 0, fmt.Errorf("removing unused bodies: %w", err)
	}
	type totals struct{ n, raw int64 }
	lost := map[string]*totals{}
	var n int64
	for q.Next() {
		var c string
		var l int32
		if err := q.Scan(&c, &l); err != nil {
			q.Close()
			return 0, err
		}
		if lost[c] == nil {
			lost[c] = &totals{}
		}
		lost[c].n++
		lost[c].raw += int64(l)
		n++
	}
	q.Close()
	if err := q.Err(); err != nil {
		return 0, fmt.Errorf("removing unused bodies: %w", err)
	}
	for c, t := range lost {
		if _, err := tx.Exec(ctx, "UPDATE krply_clusters SET bodies = bodies - $2, body_bytes = body_bytes - $3, raw_bytes = raw_bytes - $3 WHERE cluster_id = $1", c, t.n, t.raw); err != nil {
			return 0, err
		}
	}
	return n, nil
}
