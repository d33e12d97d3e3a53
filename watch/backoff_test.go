package watch

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// The backoff doubles from min to max, each wait lasting between half the
// delay and the delay, and reset brings it back to min.
func TestBackoff(t *testing.T) {
	const minDelay, maxDelay = 100 * time.Millisecond, 700 * time.Millisecond
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	b := newBackoff(minDelay, maxDelay, clk)
	// waitOne waits once and checks the wait was between d/2 and d.
	waitOne := func(d time.Duration) {
		t.Helper()
		done := make(chan error, 1)
		go func() { done <- b.wait(context.Background()) }()
		deadline := time.Now().Add(10 * time.Second)
		for !clk.HasWaiters() {
			if time.Now().After(deadline) {
				t.Fatal("the backoff does not wait on the clock")
			}
			time.Sleep(time.Millisecond)
		}
		clk.Step(d/2 - time.Nanosecond)
		select {
		case <-done:
			t.Fatalf("a delay of %s ended before half of it", d)
		case <-time.After(20 * time.Millisecond):
		}
		clk.Step(d/2 + time.Nanosecond)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	for _, want := range []time.Duration{100, 200, 400, 700, 700} {
		want *= time.Millisecond
		if got := b.next(); got != want {
			t.Fatalf("next delay %s, want %s", got, want)
		}
		waitOne(want)
	}
	b.reset()
	if got := b.next(); got != minDelay {
		t.Fatalf("after reset the next delay is %s, want %s", got, minDelay)
	}
	waitOne(minDelay)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := b.wait(ctx); err != context.Canceled {
		t.Fatalf("wait with a cancelled context: %v", err)
	}
}
