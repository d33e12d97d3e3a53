package watch

// Progress checkpoints: evidence, vouched for by the server, that the
// stream is still continuous, and the checkpoint of a clean stop.

import (
	"context"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

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
		s.vouchedAt = now // not written now; a stop writes it (stopCheckpoint)
		return nil
	}
	rec := s.progressRecord(s.rv, bookmark, now)
	if err := s.c.committer.submit(ctx, writeItem{stream: s, recs: []event.Record{rec}}, false); err != nil {
		return err
	}
	s.lastAt, s.vouchedAt = now, now
	return nil
}

// maxStopDrain bounds the events a clean stop still records from a watch.
const maxStopDrain = 1024

// checkpointsAtStop reports whether a clean stop writes the stream a
// checkpoint: progress checkpoints are on and the stream is covered.
func (s *stream) checkpointsAtStop() bool {
	return s.c.cfg.progressInterval > 0 && s.covered && s.rv != ""
}

// recordAtStop runs when the stop (ctx ended) found the watch w open, or
// just ended it (see endedByStop), and the stream gets a stop checkpoint:
// it records the events w already delivered, up to its end when the stop
// ended it, so that the checkpoint (stopCheckpoint, which the stream's run
// writes after the watch returns) comes after them. It returns ctx's
// error, or errStopRecording when an event could not be recorded.
func (s *stream) recordAtStop(ctx context.Context, w apiwatch.Interface) error {
	if !s.checkpointsAtStop() {
		return ctx.Err()
	}
	// The committer runs until every stream returned: hand it the records
	// on a context the stop does not end (submit gives up if the
	// committer stopped, after a store failure).
	final := context.WithoutCancel(ctx)
	for range maxStopDrain {
		select {
		case ev, ok := <-w.ResultChan():
			if endedByStop(ctx, ev, ok) {
				return ctx.Err()
			}
			if _, err := s.onEvent(final, ev); err != nil {
				s.log.Info("no checkpoint at the stop: the watch failed", "error", err.Error())
				return fmt.Errorf("%w: %w", errStopRecording, err)
			}
		default:
			return ctx.Err()
		}
	}
	return ctx.Err()
}

// stopCheckpoint runs at a clean stop (ctx ended), once the stream's last
// watch ended by the stop (recordAtStop recorded what it delivered) or by
// the server, or when the stop came between two watches. When the stream
// is covered, it writes a checkpoint of the last time the server vouched
// that the stream was continuous:
//
//   - the stop's own time, when the server confirms it: a short watch from
//     the stream's resourceVersion (stopConfirmTimeout), which the server
//     ends at its timeout after sending every event since — events the
//     canceled watch held in flight included, which the stop records
//     first. Asked unless the server has shown that it ignores timeouts
//     (mayConfirmStop), also of a stream stopped before its first watch
//     ended at its timeout: a short run is covered up to its stop.
//   - else, the last evidence the server gave that the Collector did not
//     write while it ran (an unchanged bookmark, or the end of a watch at
//     its timeout, too soon after the last durable record), if any.
//
// The stop vouches for nothing the server did not: it cannot know what the
// server sent after its last evidence and the process never read, so,
// unconfirmed, the time after that evidence is not yet observed, as after
// a crash. A resumed recorder watches from the checkpoint's
// resourceVersion and records what it missed then.
func (s *stream) stopCheckpoint(ctx context.Context) {
	if !s.checkpointsAtStop() {
		return
	}
	final := context.WithoutCancel(ctx)
	if s.mayConfirmStop() {
		if err := s.confirmStop(final); err != nil {
			s.log.Info("the server did not confirm the stop: its checkpoint is the last evidence", "error", err.Error(), "lastEvidence", s.vouchedAt)
		} else {
			s.vouchedAt = s.observedNow()
		}
	}
	if !s.vouchedAt.After(s.lastAt) {
		s.log.V(1).Info("no checkpoint at the stop: its last evidence is recorded", "resourceVersion", s.rv, "at", s.lastAt)
		return
	}
	rec := s.progressRecord(s.rv, false, s.vouchedAt)
	if err := s.c.committer.submit(final, writeItem{stream: s, recs: []event.Record{rec}}, false); err != nil {
		s.log.Info("no checkpoint at the stop", "error", err.Error())
		return
	}
	s.lastAt = s.vouchedAt
	s.log.V(1).Info("checkpoint at the stop", "resourceVersion", s.rv, "at", s.vouchedAt)
}

// mayConfirmStop reports whether a clean stop asks the server to confirm
// it (confirmStop): unless a watch of the stream outlived its timeout
// (the server ignores timeouts, and would hold the stop for
// stopConfirmLimit for nothing), and unless the Collector reads no HTTP
// server (client-go's fakes, whose discovery has no REST client, never
// end a watch).
func (s *stream) mayConfirmStop() bool {
	if s.serverTimeouts {
		return true
	}
	return !s.ignoresTimeouts && s.c.host != ""
}

const (
	// stopConfirmTimeout is the timeout of the watch that confirms a stop.
	stopConfirmTimeout = time.Second
	// stopConfirmLimit bounds the wait for that watch to end, its request
	// (client-go's rate limiter included) and its events.
	stopConfirmLimit = 3 * stopConfirmTimeout
)

// confirmStop watches the stream from its resourceVersion with a timeout
// of stopConfirmTimeout and records its events until the server ends it
// at that timeout, which vouches that the stream is continuous up to now.
// Any other end is an error, and nothing is vouched.
func (s *stream) confirmStop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, stopConfirmLimit)
	defer cancel()
	opened := s.clock.Now()
	w, err := s.src.watch(ctx, metav1.ListOptions{
		ResourceVersion:     s.rv,
		AllowWatchBookmarks: s.c.cfg.bookmarks,
		LabelSelector:       s.c.cfg.labelSelector,
		FieldSelector:       s.c.cfg.fieldSelector,
		TimeoutSeconds:      ptr.To(int64(stopConfirmTimeout / time.Second)),
	})
	if err != nil {
		return fmt.Errorf("watch %s from %q: %w", s.res, s.rv, err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("watch %s from %q: not ended by the server within %s", s.res, s.rv, stopConfirmLimit)
		case ev, ok := <-w.ResultChan():
			if !ok {
				if s.clock.Since(opened) < stopConfirmTimeout-timeoutSlack {
					return fmt.Errorf("watch %s from %q: ended before its timeout", s.res, s.rv)
				}
				return nil
			}
			if _, err := s.onEvent(ctx, ev); err != nil {
				return err
			}
		}
	}
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
