package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/compaction"
	"github.com/krply/krply/storage/journal"
)

// Compact implements storage.Writer with the shared rule of
// storage/compaction: it takes the journal's write lock (BEGIN
// IMMEDIATE), so that no process appends meanwhile, decides on that
// consistent view, and applies the plan in the same transaction. Bodies
// no record uses any more are deleted, except the one with the highest
// ID: body IDs are assigned upwards from it and so are never reused,
// which keeps what any process cached about a body ID true. The file
// does not shrink (SQLite reuses the free pages) unless the caller runs
// VACUUM. Every compaction raises the journal's seq floor, which tells
// other processes to drop their caches.
func (s *Store) Compact(ctx context.Context, before time.Time) (storage.CompactResult, error) {
	return s.compact(ctx, before, func() (compaction.Plan, error) { return compaction.Decide(ctx, s, before) })
}

// CompactResources is Compact for the streams of the given resources
// only; see storage.ResourceCompactor.
func (s *Store) CompactResources(ctx context.Context, before time.Time, resources []string) (storage.CompactResult, error) {
	return s.compact(ctx, before, func() (compaction.Plan, error) { return compaction.DecideResources(ctx, s, before, resources) })
}

func (s *Store) compact(ctx context.Context, before time.Time, decide func() (compaction.Plan, error)) (storage.CompactResult, error) {
	done, err := s.enterWrite("compact")
	if err != nil {
		return storage.CompactResult{}, err
	}
	defer done()
	tx, end, err := s.beginWrite(ctx, "compact")
	if err != nil {
		return storage.CompactResult{}, err
	}
	defer end()
	// The read pool sees what tx sees: no process can commit while tx
	// holds the write lock, and tx has written nothing yet.
	plan, err := decide()
	if err != nil {
		return storage.CompactResult{}, fmt.Errorf("sqlite: %w", err)
	}
	if len(plan.Remove) == 0 {
		return storage.CompactResult{}, nil
	}
	oldStatus, err := s.Streams(ctx, "")
	if err != nil {
		return storage.CompactResult{}, fmt.Errorf("sqlite: compact: %w", err)
	}
	// The seq floor keeps new seqs above every seq handed out before, and
	// grows with every compaction, even one after which nothing was
	// appended: other processes and the timelines of readers learn of a
	// compaction from it.
	newFloor := max(s.seqFloor+1, s.nextSeq-1)
	c := compactTx{s: s, ctx: ctx, tx: tx}
	res, err := c.apply(plan, oldStatus, newFloor)
	if err != nil {
		return storage.CompactResult{}, err
	}
	if err := tx.Commit(); err != nil {
		return storage.CompactResult{}, fmt.Errorf("sqlite: compact: commit: %w", err)
	}
	// Keyframes and stream_objects rows may be gone.
	s.forgetBodies()
	s.seqFloor = newFloor
	s.nextSeq = max(s.nextSeq, newFloor+1)
	s.log.V(1).Info("compacted journal", "before", before, "recordsRemoved", res.RecordsRemoved,
		"bodiesRemoved", res.BodiesRemoved, "streams", res.Streams)
	return res, nil
}

// compactTx applies a compaction plan inside the write transaction tx.
type compactTx struct {
	s   *Store
	ctx context.Context
	tx  *sql.Tx
}

func (c compactTx) exec(what, q string, args ...any) (int64, error) {
	res, err := c.tx.ExecContext(c.ctx, q, args...)
	if err != nil {
		return 0, fmt.Errorf("sqlite: compact: %s: %w", what, err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

func (c compactTx) count(what, q string) (int64, error) {
	var n int64
	if err := c.tx.QueryRowContext(c.ctx, q).Scan(&n); err != nil {
		return 0, fmt.Errorf("sqlite: compact: %s: %w", what, err)
	}
	return n, nil
}

// apply removes the plan's records, inserts its markers, removes what no
// record uses any more, sets the totals and the seq floor, and rebuilds
// the counters of the streams (oldStatus, as before).
func (c compactTx) apply(plan compaction.Plan, oldStatus []storage.StreamStatus, newFloor int64) (storage.CompactResult, error) {
	removed, removedEvents, err := c.removeRecords(plan.Remove)
	if err != nil {
		return storage.CompactResult{}, err
	}
	if err := c.insertMarkers(plan.Markers); err != nil {
		return storage.CompactResult{}, err
	}
	bodiesRemoved, err := c.removeUnused()
	if err != nil {
		return storage.CompactResult{}, err
	}
	// A body copied to several objects by the migration to schema version
	// 6 counts once, as its writer counted it; one walk of the bodies by id
	// counts them all.
	if _, err := c.exec("totals", `UPDATE totals SET records = (SELECT count(*) FROM records), events = events - ?,
		(bodies, body_bytes, raw_bytes) = (SELECT count(*), coalesce(sum(n), 0), coalesce(sum(r), 0)
			FROM (SELECT max(length(data)) AS n, max(raw_len) AS r FROM bodies GROUP BY id)), seq_floor = ?`, removedEvents, newFloor); err != nil {
		return storage.CompactResult{}, err
	}
	if err := c.rebuildStreams(oldStatus); err != nil {
		return storage.CompactResult{}, err
	}
	return storage.CompactResult{
		RecordsRemoved: removed - int64(len(plan.Markers)),
		BodiesRemoved:  bodiesRemoved,
		Streams:        plan.Streams,
	}, nil
}

// removeRecords deletes the records with the given seqs and returns how
// many records and how many events of them it deleted.
func (c compactTx) removeRecords(seqs []int64) (records, events int64, err error) {
	if _, err := c.exec("temp table", `CREATE TEMP TABLE IF NOT EXISTS compact_remove (seq INTEGER PRIMARY KEY)`); err != nil {
		return 0, 0, err
	}
	if _, err := c.exec("temp table", `DELETE FROM compact_remove`); err != nil {
		return 0, 0, err
	}
	ins, err := c.tx.PrepareContext(c.ctx, `INSERT INTO compact_remove (seq) VALUES (?)`)
	if err != nil {
		return 0, 0, fmt.Errorf("sqlite: compact: %w", err)
	}
	defer ins.Close()
	for _, seq := range seqs {
		if _, err := ins.ExecContext(c.ctx, seq); err != nil {
			return 0, 0, fmt.Errorf("sqlite: compact: %w", err)
		}
	}
	if events, err = c.count("count events", `SELECT count(*) FROM records WHERE type = 1 AND seq IN (SELECT seq FROM compact_remove)`); err != nil {
		return 0, 0, err
	}
	records, err = c.exec("remove records", `DELETE FROM records WHERE seq IN (SELECT seq FROM compact_remove)`)
	return records, events, err
}

// insertMarkers inserts the compaction baselines' markers under the
// sequence numbers they carry, which were just freed.
func (c compactTx) insertMarkers(markers []event.Record) error {
	at := c.s.newAppendTx(c.ctx, c.tx)
	ids := make([]any, len(markers))
	for i := range markers {
		ids[i] = encodeID(markers[i].EventID)
	}
	if clash, err := at.existingSeqs(ids); err != nil || len(clash) > 0 {
		return fmt.Errorf("sqlite: compact: marker event IDs already stored (%d): %v", len(clash), err)
	}
	for i := range markers {
		m := &markers[i]
		if err := at.add(m, ids[i], bodyHash(m), m.IngestSeq); err != nil {
			return fmt.Errorf("sqlite: compact: marker %s: %w", m.EventID, err)
		}
	}
	if err := at.flush(); err != nil {
		return fmt.Errorf("sqlite: compact: markers: %w", err)
	}
	return nil
}

// removeUnused deletes the bodies and stream_objects rows no record uses
// any more, and returns how many bodies it deleted. The body with the
// highest ID stays (with its keyframe, if it is a delta), so that the
// next ID is never one that was used before.
func (c compactTx) removeUnused() (int64, error) {
	before, err := c.count("count bodies", `SELECT count(*) FROM bodies`)
	if err != nil {
		return 0, err
	}
	// Deltas first, then keyframes no delta points at any more. A body
	// is its object's (schema version 6): it is unused when no record of
	// its object points at it.
	const unused = `NOT EXISTS (SELECT 1 FROM records r WHERE r.obj = bodies.obj AND r.body = bodies.id) AND id < (SELECT max(id) FROM bodies)`
	if _, err := c.exec("remove deltas", `DELETE FROM bodies WHERE base IS NOT NULL AND `+unused); err != nil {
		return 0, err
	}
	if _, err := c.exec("remove keyframes", `DELETE FROM bodies WHERE base IS NULL AND `+unused+` AND NOT EXISTS (SELECT 1 FROM bodies d WHERE d.base = bodies.id)`); err != nil {
		return 0, err
	}
	if _, err := c.exec("remove stream objects", `DELETE FROM stream_objects WHERE NOT EXISTS (SELECT 1 FROM records r WHERE r.obj = stream_objects.obj AND r.stream = stream_objects.stream)`); err != nil {
		return 0, err
	}
	after, err := c.count("count bodies", `SELECT count(*) FROM bodies`)
	return before - after, err
}

// rebuildStreams recomputes each stream's counters from the records that
// are left (journal.RebuildStatus).
func (c compactTx) rebuildStreams(oldStatus []storage.StreamStatus) error {
	update := c.tx.StmtContext(c.ctx, c.s.stmts.updateStream)
	for _, old := range oldStatus {
		recs, err := streamRecords(c.ctx, c.tx, old.StreamID)
		if err != nil {
			return err
		}
		st := streamState{StreamStatus: journal.RebuildStatus(old, recs)}
		if err := c.tx.QueryRowContext(c.ctx, `SELECT id FROM streams WHERE stream_id = ?`, old.StreamID).Scan(&st.rowID); err != nil {
			return fmt.Errorf("sqlite: compact: stream %s: %w", old.StreamID, err)
		}
		if _, err := update.ExecContext(c.ctx, st.updateArgs()...); err != nil {
			return fmt.Errorf("sqlite: compact: stream %s: %w", old.StreamID, err)
		}
	}
	return nil
}

// streamRecords reads a stream's records in IngestSeq order, without
// bodies, inside tx: the input of journal.RebuildStatus.
func streamRecords(ctx context.Context, tx *sql.Tx, streamID string) ([]*event.Record, error) {
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(recordSelect, "NULL")+` FROM records r INDEXED BY records_stream LEFT JOIN objects o ON o.id = r.obj`+recordJoins+
		` WHERE r.stream = (SELECT id FROM streams WHERE stream_id = ?) ORDER BY r.seq`, streamID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: compact: stream %s: %w", streamID, err)
	}
	recs, refs, err := scanRecords(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: compact: stream %s: %w", streamID, err)
	}
	// Names resolved in tx, uncached: the transaction may add rows that
	// roll back.
	res := resolver{ctx: ctx, q: tx}
	out := make([]*event.Record, len(recs))
	for i := range recs {
		if err := res.resolve(&recs[i], &refs[i]); err != nil {
			return nil, fmt.Errorf("sqlite: compact: stream %s: %w", streamID, err)
		}
		out[i] = &recs[i]
	}
	return out, nil
}
