package watch

// Progress checkpoints: evidence, vouched for by the server, that the
// stream is still continuous, and the checkpoint of a clean stop.

import (
	"context"

	apiwatch "k8s.io/apimachinery/pkg/watch"

	"github.com/krply/krply/event"
)

// progress writes a progress checkpoint at the stream's resourceVersion,
// observed now, unless progress checkpoints are off or the stream's last
// evidence is less than half an interval old. Only something the server
// sent calls it: the end of a watch at its timeout, or a bookmark.
func (s *stream) progress(ctx context.Context, bookmark bool) error {
	iv := s.c.cfg.progressInterval
	if iv <= 0 || s.rv == "" {
		return nil
	}
	now := s.observedNow()
	if now.Sub(s.lastAt) < iv/2 {
		return nil
	}
	rec := s.progressRecord(s.rv, bookmark, now)
	if err := s.c.committer.submit(ctx, writeItem{stream: s, recs: []event.Record{rec}}, false); err != nil {
		return err
	}
	s.lastAt = now
	return nil
}

// maxStopDrain bounds the events a clean stop still records from a watch.
const maxStopDrain = 1024

// stopCheckpoint runs at a clean stop (ctx ended) while the watch w is
// open. It records the events w already delivered, then, when the watch
// is healthy — the stream is covered and the server vouched for it (an
// event, a bookmark, a timeout, the end of its baseline) within the last
// progress interval — a checkpoint at the stop's time, after them. An
// unhealthy watch (such as a half-open connection that stopped delivering
// more than an interval ago) gets none: its evidence ends where the
// server's did.
func (s *stream) stopCheckpoint(ctx context.Context, w apiwatch.Interface) {
	iv := s.c.cfg.progressInterval
	if iv <= 0 || !s.covered || s.rv == "" {
		return
	}
	// The committer runs until every stream returned: hand it the records
	// on a context the stop does not end (submit gives up if the
	// committer stopped, after a store failure).
	final := context.WithoutCancel(ctx)
drain:
	for range maxStopDrain {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			if _, err := s.onEvent(final, ev); err != nil {
				s.log.Info("no checkpoint at the stop: the watch failed", "error", err.Error())
				return
			}
		default:
			break drain
		}
	}
	now := s.observedNow()
	if age := now.Sub(s.lastAt); age > iv {
		s.log.Info("no checkpoint at the stop: the server vouched for nothing within the progress interval", "lastEvidence", s.lastAt, "interval", iv)
		return
	}
	rec := s.progressRecord(s.rv, false, now)
	if err := s.c.committer.submit(final, writeItem{stream: s, recs: []event.Record{rec}}, false); err != nil {
		s.log.Info("no checkpoint at the stop", "error", err.Error())
		return
	}
	s.lastAt = now
	s.log.V(1).Info("checkpoint at the stop", "resourceVersion", s.rv, "at", now)
}
