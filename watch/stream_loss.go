package watch

// Loss of continuity: gaps and coverage changes, and when the loss began.

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/krply/krply/event"
)

// recordGap writes a gap from the last durable moment to now, unless the
// journal already says the stream is not covered.
func (s *stream) recordGap(ctx context.Context, reason string) error {
	if !s.covered {
		return nil
	}
	now := s.observedNow()
	gap := s.gapRecord(s.lastAt, now, reason, s.rv)
	if err := s.c.committer.submit(ctx, writeItem{stream: s, recs: []event.Record{gap}}, true); err != nil {
		return err
	}
	s.openGap = gap.EventID
	s.log.Info("gap recorded", "from", gap.Gap.From, "to", gap.Gap.To, "lastResourceVersion", s.rv, "reason", reason)
	s.loseCoverage(s.lastAt)
	return nil
}

// markUnavailable records that the server denies or does not serve the
// stream: a gap from the last durable moment when the stream was covered,
// and a coverage change, both once per outage.
func (s *stream) markUnavailable(ctx context.Context, cause error) error {
	reason := cause.Error()
	code := 0
	var status apierrors.APIStatus
	if errors.As(cause, &status) {
		code = int(status.Status().Code)
		reason = fmt.Sprintf("%d %s: %s", code, status.Status().Reason, status.Status().Message)
	}
	s.setState(StateUnavailable, reason)
	if !s.available {
		s.log.V(1).Info("stream still unavailable", "reason", reason, "backoff", s.backoff.next())
		return nil
	}
	now := s.observedNow()
	var recs []event.Record
	from := now
	if s.covered {
		from = s.lastAt
		recs = append(recs, s.gapRecord(s.lastAt, now, reason, s.rv))
	}
	recs = append(recs, s.coverageRecord(false, reason, code, now))
	if err := s.c.committer.submit(ctx, writeItem{stream: s, recs: recs}, true); err != nil {
		return err
	}
	if recs[0].Type == event.TypeGap {
		s.openGap = recs[0].EventID
	}
	s.log.Info("stream unavailable: coverage lost, retrying with backoff", "reason", reason, "code", code, "from", from)
	s.available = false
	s.loseCoverage(from)
	return nil
}

func (s *stream) loseCoverage(from time.Time) {
	if s.covered || s.lossFrom.IsZero() {
		s.lossFrom = from
	}
	s.covered = false
	s.m.covered.Set(0)
	s.mu.Lock()
	s.coveredAt = time.Time{}
	s.mu.Unlock()
}

// lossStart is the From of inferred deletions: when continuity was lost.
func (s *stream) lossStart() time.Time {
	if s.lossFrom.IsZero() {
		return s.lastAt
	}
	return s.lossFrom
}
