package truth

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func shortWaits(t *testing.T, stall, max time.Duration) {
	t.Helper()
	oldStall, oldMax := stallTimeout, maxWait
	stallTimeout, maxWait = stall, max
	t.Cleanup(func() { stallTimeout, maxWait = oldStall, oldMax })
}

// A wait that makes progress is waited for past the stall timeout; one
// that makes none gives up after it, saying what it waited for and how far
// it got; one that progresses forever gives up at the maximum wait.
func TestPoll(t *testing.T) {
	ctx := context.Background()

	// Progress every check: waited for past the stall timeout (even on a
	// busy machine, where a check may come late, well within it).
	shortWaits(t, time.Second, time.Minute)
	n := 0
	err := poll(ctx, "a slow thing", 40*time.Millisecond, func() (bool, string, error) {
		n++
		return n == 60, fmt.Sprintf("step %d", n), nil // 2.4 s or more: over two stall timeouts
	})
	if err != nil || n != 60 {
		t.Fatalf("poll of a progressing wait: %v after %d checks, want done after 60", err, n)
	}

	began := time.Now()
	err = poll(ctx, "a stuck thing", 10*time.Millisecond, func() (bool, string, error) { return false, "3 of 5 done", nil })
	var w *waited
	if !errors.As(err, &w) || w.stall < time.Second || time.Since(began) > 30*time.Second {
		t.Fatalf("poll of a stuck wait: %v after %v", err, time.Since(began))
	}
	for _, want := range []string{"a stuck thing", "no progress for", "3 of 5 done", patienceEnv} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}

	shortWaits(t, time.Minute, 600*time.Millisecond)
	n = 0
	err = poll(ctx, "an endless thing", 10*time.Millisecond, func() (bool, string, error) { n++; return false, fmt.Sprint(n), nil })
	if !errors.As(err, &w) || w.stall != 0 || w.for_ < 600*time.Millisecond || !strings.Contains(err.Error(), "though it made progress") {
		t.Fatalf("poll of an endless wait: %v", err)
	}

	boom := errors.New("boom")
	if err := poll(ctx, "x", time.Millisecond, func() (bool, string, error) { return false, "", boom }); err != boom {
		t.Fatalf("poll returned %v, want the check's error", err)
	}
}

// The watchdog ends its context when the state stops changing, with a
// cause that causeOf reports.
func TestWatchdog(t *testing.T) {
	shortWaits(t, 300*time.Millisecond, time.Minute)
	ctx, cancel := watchdog(context.Background(), "the sync", func() string { return "2 of 3 streams synced" })
	defer cancel()
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the watchdog did not end a stalled wait")
	}
	err := causeOf(ctx, ctx.Err())
	for _, want := range []string{"the sync", "no progress", "2 of 3 streams synced", "context canceled"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	if err := causeOf(context.Background(), context.DeadlineExceeded); err != context.DeadlineExceeded {
		t.Errorf("causeOf without a watchdog: %v", err)
	}
}

func TestPatience(t *testing.T) {
	t.Setenv(patienceEnv, "2.5")
	if f, err := patience(); err != nil || f != 2.5 || scaled(time.Minute) != 150*time.Second {
		t.Fatalf("patience %v %v, scaled %v", f, err, scaled(time.Minute))
	}
	t.Setenv(patienceEnv, "0.5")
	if _, err := patience(); err == nil || !strings.Contains(err.Error(), patienceEnv) {
		t.Fatalf("patience below 1: %v", err)
	}
}
