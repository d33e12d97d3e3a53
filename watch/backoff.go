package watch

import (
	"context"
	"math/rand/v2"
	"time"

	"k8s.io/utils/clock"
)

// backoff is an exponential delay with jitter. Each wait doubles the next
// delay up to max; reset (after a success) brings it back to min, so an
// outage does not delay the recovery that follows it.
type backoff struct {
	min, max time.Duration
	clock    clock.Clock
	failures int
}

func newBackoff(minDelay, maxDelay time.Duration, clk clock.Clock) *backoff {
	return &backoff{min: minDelay, max: maxDelay, clock: clk}
}

// next returns the delay of the next wait without jitter.
func (b *backoff) next() time.Duration {
	d := b.min
	for i := 0; i < b.failures && d < b.max; i++ {
		d *= 2
	}
	return min(d, b.max)
}

// wait sleeps the next delay, jittered down by up to half, and grows it.
func (b *backoff) wait(ctx context.Context) error {
	d := b.next()
	d -= time.Duration(rand.Int64N(int64(d)/2 + 1))
	b.failures++
	t := b.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reset brings the delay back to min.
func (b *backoff) reset() { b.failures = 0 }
