package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// countersQuery reads what the next IDs follow from: the newest seq, the
// seq floor, the newest body and object IDs. Each is one seek.
const countersQuery = `SELECT (SELECT max(seq) FROM records), seq_floor, (SELECT max(id) FROM bodies), (SELECT max(id) FROM objects) FROM totals WHERE id = 1`

// readCounters sets the next IDs and the seq floor from countersQuery
// run by st.
func (s *Store) readCounters(ctx context.Context, st *sql.Stmt) error {
	var maxSeq, maxBody, maxObject sql.NullInt64
	var floor int64
	if err := st.QueryRowContext(ctx).Scan(&maxSeq, &floor, &maxBody, &maxObject); err != nil {
		return err
	}
	s.nextSeq = max(maxSeq.Int64, floor) + 1
	s.nextBodyID = maxBody.Int64 + 1
	s.nextObjectID = maxObject.Int64 + 1
	s.seqFloor = floor
	return nil
}

// beginWrite takes the writer's lock (writeMu) and begins a write
// transaction, which holds the journal's write lock (BEGIN IMMEDIATE),
// caught up with what other processes wrote (catchUp). end rolls the
// transaction back unless it was committed, and releases writeMu. op
// names the operation in errors.
func (s *Store) beginWrite(ctx context.Context, op string) (tx *sql.Tx, end func(), err error) {
	s.writeMu.Lock()
	if tx, err = s.w.BeginTx(ctx, nil); err != nil {
		s.writeMu.Unlock()
		return nil, nil, fmt.Errorf("sqlite: %s: begin: %w", op, err)
	}
	end = func() {
		_ = tx.Rollback()
		s.checkpoints.wrote(ctx, s.w)
		s.writeMu.Unlock()
	}
	if err := s.catchUp(ctx, tx); err != nil {
		end()
		return nil, nil, fmt.Errorf("sqlite: %s: %w", op, err)
	}
	return tx, end, nil
}

// catchUp is the first step of every write transaction, which holds the
// journal's write lock (BEGIN IMMEDIATE): other processes may have
// written since this Store's last write. Their appends only move the
// next IDs, which it reads again; the caches stay true, since a stored
// object, body or stream_objects row never changes and is removed only
// by a compaction. A compaction by another process — the seq floor grew
// — empties the caches that point at bodies and stream_objects rows.
// Body IDs are never reused (see Compact), so the readers' decoded
// keyframes stay true even then.
func (s *Store) catchUp(ctx context.Context, tx *sql.Tx) error {
	seq, body, object, floor := s.nextSeq, s.nextBodyID, s.nextObjectID, s.seqFloor
	if err := s.readCounters(ctx, tx.StmtContext(ctx, s.stmts.counters)); err != nil {
		return fmt.Errorf("read sequence: %w", err)
	}
	if s.seqFloor != floor {
		s.forgetBodies()
	}
	if object != s.nextObjectID {
		// Another process added objects, maybe to scopes this one
		// created.
		s.names.forgetScopes()
	}
	if seq != s.nextSeq || body != s.nextBodyID || object != s.nextObjectID || floor != s.seqFloor {
		s.log.V(1).Info("another process wrote the journal", "nextSeq", s.nextSeq, "compacted", floor != s.seqFloor)
	}
	return nil
}

// forgetBodies empties the writer's caches of bodies and stream_objects
// rows after a compaction.
func (s *Store) forgetBodies() {
	s.keyframes.clear()
	s.keyframeRaw.clear()
	clear(s.streamObjects)
	clear(s.kindKeyframes)
}
