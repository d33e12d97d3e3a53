package krplytest

import (
	"fmt"
	"strings"
	"sync"
	"time"
)

// Eventually calls check until it passes or timeout passes, and returns
// whether it passed. check gets a TestingT that keeps its failures
// (Errorf, and Fatalf, which also ends that call of check) instead of
// failing the test; only when the time is up are the last call's failures
// reported to t, as one failure. Between calls it pauses 5ms, doubling up
// to 100ms.
//
// It is how a test waits for something a controller or another goroutine
// will do, without a sleep:
//
//	krplytest.Eventually(t, 10*time.Second, func(t krplytest.TestingT) bool {
//		return krplytest.AssertDiff(t, r.Diff(before, r.Mark()), want...)
//	})
//
// Cleanups check registers run when the test ends. Methods of a Recording
// or Cluster called inside check still fail the test itself when they
// fail (a Sync that times out), since they hold the test's TestingT.
func Eventually(t TestingT, timeout time.Duration, check func(t TestingT) bool) bool {
	t.Helper()
	deadline := time.Now().Add(timeout)
	pause := 5 * time.Millisecond
	for attempt := 1; ; attempt++ {
		ct := &attemptT{outer: t}
		if ct.run(check) {
			return true
		}
		if time.Now().After(deadline) {
			t.Errorf("krplytest: not so after %d attempts in %s; the last one said:\n%s", attempt, timeout, ct.String())
			return false
		}
		time.Sleep(pause)
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// attemptT is the TestingT of one call of an Eventually check.
type attemptT struct {
	outer    TestingT
	mu       sync.Mutex
	failures []string
}

// fatal ends a check's call from Fatalf.
type fatal struct{}

func (a *attemptT) run(check func(TestingT) bool) (ok bool) {
	defer func() {
		if v := recover(); v != nil {
			if _, isFatal := v.(fatal); !isFatal {
				panic(v)
			}
			ok = false
		}
	}()
	ok = check(a)
	a.mu.Lock()
	defer a.mu.Unlock()
	if ok && len(a.failures) > 0 {
		// A check that reported failures did not pass, whatever it returned.
		ok = false
	}
	if !ok && len(a.failures) == 0 {
		a.failures = append(a.failures, "the check returned false")
	}
	return ok
}

func (a *attemptT) Helper()          {}
func (a *attemptT) Cleanup(f func()) { a.outer.Cleanup(f) }
func (a *attemptT) Errorf(format string, args ...any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failures = append(a.failures, fmt.Sprintf(format, args...))
}
func (a *attemptT) Fatalf(format string, args ...any) {
	a.Errorf(format, args...)
	panic(fatal{})
}

func (a *attemptT) String() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return strings.Join(a.failures, "\n")
}
