package sqlite

import (
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/journal"
)

const streamColumns = `id, stream_id, cluster, checkpoint_rv, checkpoint_at, available, availability_reason, last_baseline_id, last_baseline_end_at, open_baseline_id, gaps, last_gap_at, first_observed_at, last_observed_at, records, last_seq`

// streamState is a row of the streams table.
type streamState struct {
	rowID int64
	storage.StreamStatus
}

type scanner interface{ Scan(dest ...any) error }

func scanStream(sc scanner) (*streamState, error) {
	var st streamState
	var cluster string
	var available int
	var checkpointAt, baselineEndAt, lastGapAt, firstAt, lastAt int64
	if err := sc.Scan(&st.rowID, &st.StreamID, &cluster, &st.CheckpointRV, &checkpointAt, &available, &st.AvailabilityReason,
		&st.LastBaselineID, &baselineEndAt, &st.OpenBaselineID, &st.Gaps, &lastGapAt, &firstAt, &lastAt,
		&st.Records, &st.LastSeq); err != nil {
		return nil, err
	}
	st.Available = available != 0
	st.Stream, _ = event.ParseStreamID(st.StreamID)
	st.CheckpointAt = decodeTime(checkpointAt)
	st.LastBaselineEndAt = decodeTime(baselineEndAt)
	st.LastGapAt = decodeTime(lastGapAt)
	st.FirstObservedAt = decodeTime(firstAt)
	st.LastObservedAt = decodeTime(lastAt)
	return &st, nil
}

// updateArgs are the arguments of writerStmts.updateStream.
func (st *streamState) updateArgs() []any {
	available := 0
	if st.Available {
		available = 1
	}
	return []any{st.CheckpointRV, encodeTime(st.CheckpointAt), available, st.AvailabilityReason,
		st.LastBaselineID, encodeTime(st.LastBaselineEndAt), st.OpenBaselineID, st.Gaps, encodeTime(st.LastGapAt),
		encodeTime(st.FirstObservedAt), encodeTime(st.LastObservedAt), st.Records, st.LastSeq, st.rowID}
}

func (at *appendTx) stream(streamID, cluster string) (*streamState, error) {
	if st, ok := at.streams[streamID]; ok {
		return st, nil
	}
	st, err := scanStream(at.stmts.streamRow.QueryRowContext(at.ctx, streamID))
	if errors.Is(err, sql.ErrNoRows) {
		zero := encodeTime(time.Time{})
		res, err := at.stmts.insertStream.ExecContext(at.ctx, streamID, cluster, zero, zero, zero, zero, zero)
		if err != nil {
			return nil, fmt.Errorf("new stream %s: %w", streamID, err)
		}
		rowID, err := res.LastInsertId()
		if err != nil {
			return nil, fmt.Errorf("new stream %s: %w", streamID, err)
		}
		st = &streamState{rowID: rowID, StreamStatus: journal.NewStatus(streamID)}
	} else if err != nil {
		return nil, fmt.Errorf("stream %s: %w", streamID, err)
	}
	at.streams[streamID] = st
	return st, nil
}
