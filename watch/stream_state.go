package watch

// The stream's shared state: what the committer made durable, and the
// status, sync and failure the Collector reports.

import (
	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// durable is called by the committer once records of the stream are
// durable.
func (s *stream) durable(recs []event.Record) {
	var events, bytes int64
	gaps := 0
	progressed := false
	s.mu.Lock()
	for i := range recs {
		r := &recs[i]
		if rv, ok := storage.ProgressRV(*r); ok {
			s.durableRV, s.durableAt = rv, r.ObservedAt
			progressed = true
		}
		if r.IsObjectChange() {
			events++
			bytes += int64(len(r.Object))
		}
		if r.Type == event.TypeGap {
			gaps++
		}
	}
	s.events += events
	s.bytes += bytes
	s.gaps += gaps
	s.mu.Unlock()
	if progressed {
		s.c.notifyProgress()
	}
	s.c.appended.Notify()
	s.m.events.Add(float64(events))
	s.m.bytes.Add(float64(bytes))
	if gaps > 0 {
		s.m.gaps.Add(float64(gaps))
	}
}

func (s *stream) setState(st StreamState, reason string) {
	s.mu.Lock()
	s.state, s.degraded = st, reason
	s.mu.Unlock()
}

func (s *stream) markSynced() {
	s.mu.Lock()
	already := s.synced
	s.synced = true
	s.mu.Unlock()
	if !already {
		s.c.streamSynced()
	}
}

func (s *stream) isSynced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.synced
}

func (s *stream) fatalErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fatal
}

func (s *stream) status() StreamStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := StreamStatus{
		StreamID:            s.id,
		Stream:              s.stream,
		Resource:            s.res,
		State:               s.state,
		Synced:              s.synced,
		Covered:             !s.coveredAt.IsZero(),
		CoveredSince:        s.coveredAt,
		LastResourceVersion: s.durableRV,
		LastDurableAt:       s.durableAt,
		Gaps:                s.gaps,
		Events:              s.events,
		Bytes:               s.bytes,
		Baselines:           s.baselines,
		Relists:             s.relists,
		DegradedReason:      s.degraded,
	}
	switch s.state {
	case StateBackoff, StateUnavailable, StatePending:
		st.Degraded = true
	case StateStopped:
		st.Degraded = s.fatal != nil
		if s.fatal != nil {
			st.DegradedReason = s.fatal.Error()
		}
	}
	return st
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
