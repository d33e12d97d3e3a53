package watch

import (
	"context"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
)

// backoff is an exponential delay with jitter: apimachinery's
// wait.Backoff, slept on the Collector's clock. Each wait doubles the next
// delay up to max; reset (after a success) brings it back to min, so an
// outage does not delay the recovery that follows it.
type backoff struct {
	initial, steps wait.Backoff
	clock          clock.Clock
}

func newBackoff(minDelay, maxDelay time.Duration, clk clock.Clock) *backoff {
	initial := wait.Backoff{Duration: minDelay, Factor: 2, Jitter: 1, Steps: math.MaxInt, Cap: maxDelay}
	return &backoff{initial: initial, steps: initial, clock: clk}
}

// next returns the delay of the next wait without jitter.
func (b *backoff) next() time.Duration { return b.steps.Duration }

// wait sleeps the next delay, jittered down by up to half, and grows it.
func (b *backoff) wait(ctx context.Context) error {
	// wait.Backoff jitters a step up, by up to Jitter (here all) of it:
	// half of that is the delay jittered down by up to half.
	t := b.clock.NewTimer(b.steps.Step() / 2)
	defer t.Stop()
	select {
	case <-t.C():
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// reset brings the delay back to min.
func (b *backoff) reset() { b.steps = b.initial }
