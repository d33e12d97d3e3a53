package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/internal/compaction"
	"github.com/krply/krply/storage/internal/journal"
)

// Compact implements storage.Writer with the shared rule of
// storage/internal/compaction: it takes the journal's write lock (BEGIN
// IMMEDIATE), so that no process appends meanwhile, decides on that
// consistent view, and applies the plan in the same transaction. Bodies
// no record uses any more are deleted, except the one with the highest
// ID: body IDs are assigned upwards from it and so are never reused,
// which keeps what any process cached about a body ID true. The file
// does not shrink (SQLite reuses the free pages) unless the caller runs
// VACUUM. Every compaction raises the journal's seq floor, which tells
// other processes to drop their caches.
func (s *Store) Compact(ctx context.Context, before time.Time) (storage.CompactResult, error) {
	done, err := s.enterWrite("compact")
	if err != nil {
		return storage.CompactResult{}, err
	}
	defer done()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()

	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return storage.CompactResult{}, fmt.Errorf("sqlite: compact: begin: %w", err)
	}
	defer tx.Rollback()
	if err := s.catchUp(ctx, tx); err != nil {
		return storage.CompactResult{}, fmt.Errorf("sqlite: compact: %w", err)
	}
	// The read pool sees what tx sees: no process can commit while tx
	// holds the write lock, and tx has written nothing yet.
	plan, err := compaction.Decide(ctx, s, before)
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
	exec := func(what, q string, args ...any) (int64, error) {
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return 0, fmt.Errorf("sqlite: compact: %s: %w", what, err)
		}
		n, _ := res.RowsAffected()
		return n, nil
	}
	if _, err := exec("temp table", `CREATE TEMP TABLE IF NOT EXISTS compact_remove (seq INTEGER PRIMARY KEY)`); err != nil {
		return storage.CompactResult{}, err
	}
	if _, err := exec("temp table", `DELETE FROM compact_remove`); err != nil {
		return storage.CompactResult{}, err
	}
	ins, err := tx.PrepareContext(ctx, `INSERT INTO compact_remove (seq) VALUES (?)`)
	if err != nil {
		return storage.CompactResult{}, fmt.Errorf("sqlite: compact: %w", err)
	}
	for _, seq := range plan.Remove {
		if _, err := ins.ExecContext(ctx, seq); err != nil {
			ins.Close()
			return storage.CompactResult{}, fmt.Errorf("sqlite: compact: %w", err)
		}
	}
	ins.Close()
	var removedEvents int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM records WHERE type = 1 AND seq IN (SELECT seq FROM compact_remove)`).Scan(&removedEvents); err != nil {
		return storage.CompactResult{}, fmt.Errorf("sqlite: compact: %w", err)
	}
	removed, err := exec("remove records", `DELETE FROM records WHERE seq IN (SELECT seq FROM compact_remove)`)
	if err != nil {
		return storage.CompactResult{}, err
	}

	// The markers take sequence numbers that were just freed.
	at := s.newAppendTx(ctx, tx)
	markerIDs := make([]any, len(plan.Markers))
	for i := range plan.Markers {
		markerIDs[i] = encodeID(plan.Markers[i].EventID)
	}
	if clash, err := at.existingSeqs(markerIDs); err != nil || len(clash) > 0 {
		return storage.CompactResult{}, fmt.Errorf("sqlite: compact: marker event IDs already stored (%d): %v", len(clash), err)
	}
	for i := range plan.Markers {
		m := &plan.Markers[i]
		if err := at.add(m, encodeID(m.EventID), bodyHash(m), m.IngestSeq); err != nil {
			return storage.CompactResult{}, fmt.Errorf("sqlite: compact: marker %s: %w", m.EventID, err)
		}
	}
	if err := at.flush(); err != nil {
		return storage.CompactResult{}, fmt.Errorf("sqlite: compact: markers: %w", err)
	}

	// The seq floor keeps new seqs above every seq handed out before, and
	// grows with every compaction, even one after which nothing was
	// appended: other processes and the timelines of readers learn of a
	// compaction from it.
	newFloor := max(s.seqFloor+1, s.nextSeq-1)

	// Bodies: deltas first, then keyframes no delta points at any more.
	bodiesBefore := int64(0)
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM bodies`).Scan(&bodiesBefore); err != nil {
		return storage.CompactResult{}, fmt.Errorf("sqlite: compact: %w", err)
	}
	// The body with the highest ID stays (with its keyframe, if it is a
	// delta), so that the next ID is never one that was used before.
	const unused = `NOT EXISTS (SELECT 1 FROM records r WHERE r.body = bodies.id) AND id < (SELECT max(id) FROM bodies)`
	if _, err := exec("remove deltas", `DELETE FROM bodies WHERE base IS NOT NULL AND `+unused); err != nil {
		return storage.CompactResult{}, err
	}
	if _, err := exec("remove keyframes", `DELETE FROM bodies WHERE base IS NULL AND `+unused+` AND NOT EXISTS (SELECT 1 FROM bodies d WHERE d.base = bodies.id)`); err != nil {
		return storage.CompactResult{}, err
	}
	if _, err := exec("remove stream objects", `DELETE FROM stream_objects WHERE NOT EXISTS (SELECT 1 FROM records r WHERE r.obj = stream_objects.obj AND r.stream = stream_objects.stream)`); err != nil {
		return storage.CompactResult{}, err
	}
	if _, err := exec("totals", `UPDATE totals SET records = (SELECT count(*) FROM records), events = events - ?,
		bodies = (SELECT count(*) FROM bodies), body_bytes = (SELECT coalesce(sum(length(data)), 0) FROM bodies),
		raw_bytes = (SELECT coalesce(sum(raw_len), 0) FROM bodies), seq_floor = ?`, removedEvents, newFloor); err != nil {
		return storage.CompactResult{}, err
	}
	var bodiesAfter int64
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM bodies`).Scan(&bodiesAfter); err != nil {
		return storage.CompactResult{}, fmt.Errorf("sqlite: compact: %w", err)
	}

	// Per-stream counters follow from the records that are left.
	for _, old := range oldStatus {
		recs, err := streamRecords(ctx, tx, old.StreamID)
		if err != nil {
			return storage.CompactResult{}, err
		}
		st := streamState{StreamStatus: journal.RebuildStatus(old, recs)}
		if err := tx.QueryRowContext(ctx, `SELECT id FROM streams WHERE stream_id = ?`, old.StreamID).Scan(&st.rowID); err != nil {
			return storage.CompactResult{}, fmt.Errorf("sqlite: compact: stream %s: %w", old.StreamID, err)
		}
		if _, err := at.stmts.updateStream.ExecContext(ctx, st.updateArgs()...); err != nil {
			return storage.CompactResult{}, fmt.Errorf("sqlite: compact: stream %s: %w", old.StreamID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return storage.CompactResult{}, fmt.Errorf("sqlite: compact: commit: %w", err)
	}
	// Keyframes and stream_objects rows may be gone.
	s.forgetBodies()
	s.seqFloor = newFloor
	s.nextSeq = max(s.nextSeq, newFloor+1)
	res := storage.CompactResult{
		RecordsRemoved: removed - int64(len(plan.Markers)),
		BodiesRemoved:  bodiesBefore - bodiesAfter,
		Streams:        plan.Streams,
	}
	s.log.V(1).Info("compacted journal", "before", before, "recordsRemoved", res.RecordsRemoved,
		"bodiesRemoved", res.BodiesRemoved, "streams", res.Streams)
	return res, nil
}

// streamRecords reads a stream's records in IngestSeq order, without
// bodies, inside tx: the input of journal.RebuildStatus.
func streamRecords(ctx context.Context, tx *sql.Tx, streamID string) ([]*event.Record, error) {
	rows, err := tx.QueryContext(ctx, fmt.Sprintf(recordSelect, "NULL")+` FROM records r INDEXED BY records_stream LEFT JOIN objects o ON o.id = r.obj`+recordJoins+
		` WHERE r.stream = (SELECT id FROM streams WHERE stream_id = ?) ORDER BY r.seq`, streamID)
	if err != nil {
		return nil, fmt.Errorf("sqlite: compact: stream %s: %w", streamID, err)
	}
	scanned, err := scanRecords(rows)
	if err != nil {
		return nil, fmt.Errorf("sqlite: compact: stream %s: %w", streamID, err)
	}
	out := make([]*event.Record, len(scanned))
	for i := range scanned {
		out[i] = &scanned[i].rec
	}
	return out, nil
}
