package memory

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/compaction"
	"github.com/krply/krply/storage/journal"
)

// Compact removes what is no longer needed to answer questions about times
// at or after before; see storage.Writer and storage/compaction for
// the rule. It holds the write lock while it runs.
func (s *Store) Compact(ctx context.Context, before time.Time) (storage.CompactResult, error) {
	return s.compact(ctx, before, func(r storage.Reader) (compaction.Plan, error) { return compaction.Decide(ctx, r, before) })
}

// CompactResources is Compact for the streams of the given resources
// only; see storage.ResourceCompactor.
func (s *Store) CompactResources(ctx context.Context, before time.Time, resources []string) (storage.CompactResult, error) {
	return s.compact(ctx, before, func(r storage.Reader) (compaction.Plan, error) {
		return compaction.DecideResources(ctx, r, before, resources)
	})
}

func (s *Store) compact(ctx context.Context, before time.Time, decide func(storage.Reader) (compaction.Plan, error)) (storage.CompactResult, error) {
	if err := ctx.Err(); err != nil {
		return storage.CompactResult{}, fmt.Errorf("memory: compact: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return storage.CompactResult{}, fmt.Errorf("memory: compact: %w", storage.ErrClosed)
	}
	plan, err := decide(s.view())
	if err != nil {
		return storage.CompactResult{}, fmt.Errorf("memory: %w", err)
	}
	if len(plan.Remove) == 0 {
		return storage.CompactResult{}, nil
	}
	remove := make(map[int64]bool, len(plan.Remove))
	for _, seq := range plan.Remove {
		remove[seq] = true
	}
	kept := make([]*event.Record, 0, len(s.st.all)-len(plan.Remove)+len(plan.Markers))
	for _, rec := range s.st.all {
		if !remove[rec.IngestSeq] {
			kept = append(kept, rec)
		}
	}
	for i := range plan.Markers {
		if !remove[plan.Markers[i].IngestSeq] {
			return storage.CompactResult{}, fmt.Errorf("memory: compact: marker %q reuses sequence %d that is not removed", plan.Markers[i].EventID, plan.Markers[i].IngestSeq)
		}
		kept = append(kept, copyRecord(&plan.Markers[i], true))
	}
	sort.Slice(kept, func(i, j int) bool { return kept[i].IngestSeq < kept[j].IngestSeq })

	oldBodies := int64(len(s.st.bodies))
	oldStatus := s.st.status
	s.st.init()
	for _, rec := range kept {
		s.st.add(rec, false)
	}
	for id, old := range oldStatus {
		var recs []*event.Record
		if si := s.st.streamIdx[id]; si != nil {
			recs = si.all
		}
		st := journal.RebuildStatus(*old, recs)
		s.st.status[id] = &st
	}
	res := storage.CompactResult{
		RecordsRemoved: int64(len(plan.Remove) - len(plan.Markers)),
		BodiesRemoved:  oldBodies - int64(len(s.st.bodies)),
		Streams:        plan.Streams,
	}
	s.log.V(1).Info("compacted journal", "before", before, "recordsRemoved", res.RecordsRemoved,
		"bodiesRemoved", res.BodiesRemoved, "streams", res.Streams)
	return res, nil
}
