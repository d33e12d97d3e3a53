package sqlite

import (
	"context"
	"fmt"

	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/journal"
)

// RestoreStreams sets the checkpoint and availability of streams in one
// transaction; see storage.StreamRestorer.
func (s *Store) RestoreStreams(ctx context.Context, streams []storage.StreamStatus) error {
	done, err := s.enterWrite("restore streams of")
	if err != nil {
		return err
	}
	defer done()
	clusters, err := journal.ParseStreams(streams)
	if err != nil {
		return fmt.Errorf("sqlite: restore streams: %w", err)
	}
	if len(streams) == 0 {
		return nil
	}
	tx, end, err := s.beginWrite(ctx, "restore streams")
	if err != nil {
		return err
	}
	defer end()
	at := s.newAppendTx(ctx, tx)
	for i, want := range streams {
		st, err := at.stream(want.StreamID, clusters[i])
		if err != nil {
			return fmt.Errorf("sqlite: restore streams: %w", err)
		}
		journal.RestoreDurable(&st.StreamStatus, want)
		if _, err := at.stmts.updateStream.ExecContext(ctx, st.updateArgs()...); err != nil {
			return fmt.Errorf("sqlite: restore stream %s: %w", want.StreamID, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: restore streams: commit: %w", err)
	}
	return nil
}
