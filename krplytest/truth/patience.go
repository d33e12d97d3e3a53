package truth

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/krply/krply/watch"
)

// The harness waits for things a busy machine makes slow: the journal to
// catch up with the server, a baseline, the audit log, a child to start.
// A fixed deadline fails a run on a loaded CI machine that is merely slow,
// and a failure of the harness can hide a lie of krply's. So a wait lasts
// as long as what it waits for makes progress, and gives up only when it
// made none for stallTimeout, or after maxWait in all; it then says what
// it waited for, how long, and how far it got. Both scale with
// KRPLY_TRUTH_PATIENCE, a factor (default 1) for machines slower still.
const patienceEnv = "KRPLY_TRUTH_PATIENCE"

// The waits' bounds before scaling (variables for the tests of poll).
var (
	stallTimeout = time.Minute
	maxWait      = 10 * time.Minute
)

// patience is the factor of KRPLY_TRUTH_PATIENCE, at least 1.
func patience() (float64, error) {
	v := os.Getenv(patienceEnv)
	if v == "" {
		return 1, nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 1 {
		return 0, fmt.Errorf("%s=%q: want a factor of 1 or more", patienceEnv, v)
	}
	return f, nil
}

// scaled is d times the patience factor (d when the factor is invalid:
// Run fails on it before waiting).
func scaled(d time.Duration) time.Duration {
	f, err := patience()
	if err != nil {
		return d
	}
	return time.Duration(float64(d) * f)
}

// waited is what a wait gave up on.
type waited struct {
	what        string
	for_, stall time.Duration
	last        string
	cause       error
}

func (w *waited) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "waited %v for %s", w.for_.Round(time.Millisecond), w.what)
	if w.cause != nil {
		fmt.Fprintf(&b, ": %v", w.cause)
	} else if w.stall > 0 {
		fmt.Fprintf(&b, ": no progress for %v (%s=<factor> scales the waits)", w.stall.Round(time.Millisecond), patienceEnv)
	} else {
		fmt.Fprintf(&b, ": not done after %v, though it made progress (%s=<factor> scales the waits)", w.for_.Round(time.Millisecond), patienceEnv)
	}
	if w.last != "" {
		fmt.Fprintf(&b, "; it got as far as: %s", w.last)
	}
	return b.String()
}

// progress tracks the state a wait reports: a change is progress.
type progress struct {
	what              string
	began, lastChange time.Time
	last              string
	stall, max        time.Duration
}

func newProgress(what string) *progress {
	now := time.Now()
	return &progress{what: what, began: now, lastChange: now, stall: scaled(stallTimeout), max: scaled(maxWait)}
}

// observe notes state and returns the error to give up with, or nil to
// wait on.
func (p *progress) observe(state string) error {
	now := time.Now()
	if state != p.last {
		p.last, p.lastChange = state, now
	}
	switch {
	case now.Sub(p.lastChange) >= p.stall:
		return &waited{what: p.what, for_: now.Sub(p.began), stall: now.Sub(p.lastChange), last: p.last}
	case now.Sub(p.began) >= p.max:
		return &waited{what: p.what, for_: now.Sub(p.began), last: p.last}
	}
	return nil
}

// poll calls check every interval until it reports done, an error, or
// the wait gives up (see progress). check returns how far things got: a
// change in it is progress.
func poll(ctx context.Context, what string, every time.Duration, check func() (done bool, state string, err error)) error {
	p := newProgress(what)
	for {
		done, state, err := check()
		if err != nil || done {
			return err
		}
		if err := p.observe(state); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return &waited{what: what, for_: time.Since(p.began), last: p.last, cause: ctx.Err()}
		case <-time.After(every):
		}
	}
}

// watchdog returns a context that ends, with a *waited as its cause, when
// state has not changed for the stall timeout or after the maximum wait:
// for waits inside a call that takes a context (WaitForSync,
// WaitForProgress). The caller reports context.Cause(ctx) on an error.
func watchdog(parent context.Context, what string, state func() string) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancelCause(parent)
	go func() {
		p := newProgress(what)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				if err := p.observe(state()); err != nil {
					cancel(err)
					return
				}
			}
		}
	}()
	return ctx, func() { cancel(context.Canceled) }
}

// causeOf is err with the watchdog's cause when ctx ended by it.
func causeOf(ctx context.Context, err error) error {
	var w *waited
	if cause := context.Cause(ctx); errors.As(cause, &w) {
		return fmt.Errorf("%w (%v)", cause, err)
	}
	return err
}

// collectorState is how far a Collector got, in counts that change as
// long as it records.
func collectorState(c *watch.Collector) string {
	var synced, baselines, relists, gaps int
	var events int64
	var evidence time.Time
	status := c.Status()
	for _, s := range status {
		if s.Synced {
			synced++
		}
		events += s.Events
		baselines += s.Baselines
		relists += s.Relists
		gaps += s.Gaps
		if s.LastDurableAt.After(evidence) {
			evidence = s.LastDurableAt
		}
	}
	return fmt.Sprintf("%d of %d streams synced, %d events, %d baselines, %d relists, %d gaps, durable until %s",
		synced, len(status), events, baselines, relists, gaps, stamp(evidence))
}
