package watch

// Progress checkpoints: evidence, vouched for by the server, that the
// stream is still continuous, and the checkpoint of a clean stop.

import (
	"context"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
// open, or just ended by the stop (see endedByStop). It records the events
// w already delivered, up to its end when the stop ended it, then, when
// the watch is healthy — the stream is covered and the server vouched for
// it (an event, a bookmark, a timeout, the end of its baseline) within the
// last progress interval — a checkpoint at the stop's time, after them. An
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
			if endedByStop(ctx, ev, ok) {
				break drain
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

// endedByStop reports whether the watch event ev (or the close of the
// watch's result channel, when !ok) is the end the stop gave the watch:
// ctx ended, and the watch closed, or failed to decode its stream because
// its request was canceled (client-go then sends an error event). Such an
// end is no failure: the stream gets its stop checkpoint as when the stop
// finds the watch open. An error the server sent (a 410, a 500), or a
// failure to decode what it sent, is a real failure even at the stop:
// events may be missing, and no checkpoint vouches past them.
func endedByStop(ctx context.Context, ev apiwatch.Event, ok bool) bool {
	if ctx.Err() == nil {
		return false
	}
	if !ok {
		return true
	}
	if ev.Type != apiwatch.Error {
		return false
	}
	err := apierrors.FromObject(ev.Object)
	if !apierrors.HasStatusCause(err, clientWatchDecoding) {
		return false
	}
	msg := err.Error()
	for _, canceled := range canceledRequest {
		if strings.Contains(msg, canceled) {
			return true
		}
	}
	return false
}

// clientWatchDecoding is the cause client-go's watch gives the error event
// of a stream it could not decode (rest.Request.Watch).
const clientWatchDecoding = "ClientWatchDecoding"

// canceledRequest are the messages with which reading a watch's response
// fails once its request's context ended (context.Canceled,
// context.DeadlineExceeded, and net/http's own).
var canceledRequest = []string{
	context.Canceled.Error(),
	context.DeadlineExceeded.Error(),
	"net/http: request canceled",
}
