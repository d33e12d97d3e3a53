package watch

// The watch loop: one watch from the stream's resourceVersion, its
// events, its timeout and the idle limit that abandons a half-open watch.

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/krply/krply/event"
)

// watch records the events of a watch from s.rv until it ends.
func (s *stream) watch(ctx context.Context) error {
	opts := metav1.ListOptions{
		ResourceVersion:     s.rv,
		AllowWatchBookmarks: s.c.cfg.bookmarks,
		LabelSelector:       s.c.cfg.labelSelector,
		FieldSelector:       s.c.cfg.fieldSelector,
	}
	timeout := s.watchTimeout()
	if timeout > 0 {
		opts.TimeoutSeconds = ptr.To(int64(timeout / time.Second))
	}
	openedAt := s.clock.Now()
	w, err := s.src.watch(ctx, opts)
	if err != nil {
		return fmt.Errorf("watch %s from %q: %w", s.res, s.rv, err)
	}
	defer w.Stop()
	s.setState(StateWatching, "")
	s.productive = false
	idle := s.newIdleTimer(s.idleLimit(timeout))
	defer idle.stop()
	var syncC <-chan time.Time
	if !s.isSynced() {
		t := s.clock.NewTimer(resumeSyncDelay)
		defer t.Stop()
		syncC = t.C()
	}
	for {
		select {
		case <-ctx.Done():
			return s.recordAtStop(ctx, w)
		case <-syncC:
			syncC = nil
			s.markSynced()
		case <-idle.c():
			s.noteOutlived(timeout, openedAt)
			return errWatchIdle
		case ev, ok := <-w.ResultChan():
			if endedByStop(ctx, ev, ok) {
				// The stop canceled the watch's request, and the
				// watch reports that before ctx.Done is seen.
				return s.recordAtStop(ctx, w)
			}
			if !ok {
				if timeout > 0 && s.clock.Since(openedAt) >= timeout-timeoutSlack {
					// The server ended the watch at its timeout: it
					// streamed everything up to now, without error.
					s.serverTimeouts, s.ignoresTimeouts = true, false
					if err := s.progress(ctx, false); err != nil {
						return err
					}
					s.markProductive()
				}
				return errWatchClosed
			}
			idle.reset()
			s.noteOutlived(timeout, openedAt)
			delivered, err := s.onEvent(ctx, ev)
			if err != nil {
				return err
			}
			if delivered && !s.productive {
				s.markProductive()
				syncC = nil
			}
		}
	}
}

// timeoutSlack is how much earlier than its timeoutSeconds a watch may end
// and still count as ended by the server's timeout (the server's timer
// starts after the Collector's, so the Collector measures more, not less).
const timeoutSlack = 50 * time.Millisecond

// watchTimeout returns the timeout every watch asks the server for: the
// progress interval less a second, in whole seconds, at least one; 0 when
// progress checkpoints are off.
func (s *stream) watchTimeout() time.Duration {
	iv := s.c.cfg.progressInterval
	if iv <= 0 {
		return 0
	}
	return max(iv.Truncate(time.Second)-time.Second, time.Second)
}

// idleLimit returns how long a watch with the given server timeout may
// stay silent: the configured idle timeout, shortened to the timeout plus
// max(2s, half of it) once the server is known to end watches at their
// timeout, so that a half-open connection (which neither delivers nor
// ends) is abandoned soon.
func (s *stream) idleLimit(timeout time.Duration) time.Duration {
	d := s.c.cfg.watchIdleTimeout
	if timeout > 0 && s.serverTimeouts {
		limit := outlivedAfter(timeout)
		if d <= 0 || limit < d {
			d = limit
		}
	}
	return d
}

// outlivedAfter is how long a watch with the given server timeout stays
// open before it has outlived it: the timeout plus max(2s, half of it).
func outlivedAfter(timeout time.Duration) time.Duration {
	return timeout + max(2*time.Second, timeout/2)
}

// noteOutlived notes that the server ignores watch timeouts when the
// watch opened at openedAt with the given timeout is still open, or just
// went idle, past outlivedAfter(timeout).
func (s *stream) noteOutlived(timeout time.Duration, openedAt time.Time) {
	if timeout > 0 && s.clock.Since(openedAt) > outlivedAfter(timeout) {
		s.serverTimeouts, s.ignoresTimeouts = false, true
	}
}

// onEvent records one watch event. delivered is true when the server said
// something (an object change or a bookmark).
func (s *stream) onEvent(ctx context.Context, ev apiwatch.Event) (delivered bool, err error) {
	switch ev.Type {
	case apiwatch.Added, apiwatch.Modified, apiwatch.Deleted:
		now := s.observedNow()
		rec, err := s.objectRecord(ev.Object, event.WatchType(ev.Type), now, "")
		if err != nil {
			return false, err
		}
		if s.c.cfg.rule != nil {
			var keep bool
			if rec, keep, err = s.ruleOnEvent(ctx, rec); err != nil || !keep {
				// An event not recorded leaves the stream's state as
				// it was: a resumed watch sends it again, and it is
				// left out again.
				return err == nil, err
			}
		}
		if err := s.c.committer.submit(ctx, writeItem{stream: s, recs: []event.Record{rec}, bytes: len(rec.Object)}, false); err != nil {
			return false, err
		}
		if rv := rec.Resource.ResourceVersion; rv != "" {
			s.rv = rv
		}
		s.lastAt, s.vouchedAt = now, now
	case apiwatch.Bookmark:
		rv, initialEventsEnd, err := bookmarkOf(ev.Object)
		if err != nil {
			return false, fmt.Errorf("watch %s: bookmark: %w", s.res, err)
		}
		switch {
		case rv == "":
		case rv == s.rv:
			// Nothing changed, and the server says so now.
			if err := s.progress(ctx, true); err != nil {
				return false, err
			}
		default:
			now := s.observedNow()
			rec := s.checkpointRecord(rv, true, initialEventsEnd, now)
			if err := s.c.committer.submit(ctx, writeItem{stream: s, recs: []event.Record{rec}}, false); err != nil {
				return false, err
			}
			s.rv, s.lastAt, s.vouchedAt = rv, now, now
		}
	case apiwatch.Error:
		return false, apierrors.FromObject(ev.Object)
	default:
		return false, nil
	}
	return true, nil
}

// markProductive notes that the current watch delivered something: the
// backoff and the 410 loop guard start over, and the stream is synced.
func (s *stream) markProductive() {
	s.productive = true
	s.goneAgain = false
	s.backoff.reset()
	s.markSynced()
}

// idleTimer fires when a watch delivered nothing for the idle timeout.
type idleTimer struct {
	t clock.Timer
	d time.Duration
}

func (s *stream) newIdleTimer(d time.Duration) *idleTimer {
	if d <= 0 {
		return &idleTimer{}
	}
	return &idleTimer{t: s.clock.NewTimer(d), d: d}
}

func (t *idleTimer) c() <-chan time.Time {
	if t.t == nil {
		return nil
	}
	return t.t.C()
}

func (t *idleTimer) reset() {
	if t.t != nil {
		t.t.Reset(t.d)
	}
}

func (t *idleTimer) stop() {
	if t.t != nil {
		t.t.Stop()
	}
}
