package memory

import (
	"context"
	"fmt"

	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/journal"
)

// RestoreStreams sets the checkpoint and availability of streams; see
// storage.StreamRestorer.
func (s *Store) RestoreStreams(ctx context.Context, streams []storage.StreamStatus) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: restore streams: %w", err)
	}
	if _, err := journal.ParseStreams(streams); err != nil {
		return fmt.Errorf("memory: restore streams: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("memory: restore streams: %w", storage.ErrClosed)
	}
	for _, want := range streams {
		ss := s.st.status[want.StreamID]
		if ss == nil {
			n := journal.NewStatus(want.StreamID)
			ss = &n
			s.st.status[want.StreamID] = ss
		}
		journal.RestoreDurable(ss, want)
	}
	return nil
}
