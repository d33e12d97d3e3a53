package krplytest_test

import (
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/krplytest"
)

// Eventually retries until the check passes; a Fatalf ends one attempt,
// not the test; failures of attempts before the last are not reported.
func TestEventuallyRetries(t *testing.T) {
	r := &recorder{}
	attempts := 0
	ok := krplytest.Eventually(r, 5*time.Second, func(t krplytest.TestingT) bool {
		attempts++
		switch attempts {
		case 1:
			t.Fatalf("first attempt: fatal")
			panic("Fatalf returned")
		case 2:
			t.Errorf("second attempt: error, yet returns true")
			return true
		case 3:
			return false
		}
		return true
	})
	if !ok || attempts != 4 || len(r.Errors) > 0 {
		t.Fatalf("Eventually = %v after %d attempts, failures %q; want true after 4, none", ok, attempts, r.Errors)
	}
}

// When the time is up, Eventually fails once, with the last attempt's
// failures.
func TestEventuallyFailsWithTheLastAttempt(t *testing.T) {
	r := &recorder{}
	attempts := 0
	ok := krplytest.Eventually(r, 50*time.Millisecond, func(t krplytest.TestingT) bool {
		attempts++
		t.Errorf("attempt %d: spec.replicas changed to 1, want 0", attempts)
		return false
	})
	if ok || len(r.Errors) != 1 {
		t.Fatalf("Eventually = %v, failures %q; want false and one failure", ok, r.Errors)
	}
	for _, want := range []string{"krplytest: not so after", "attempts in 50ms; the last one said:", "spec.replicas changed to 1, want 0"} {
		if !strings.Contains(r.Errors[0], want) {
			t.Errorf("failure %q does not say %q", r.Errors[0], want)
		}
	}
	if strings.Contains(r.Errors[0], "attempt 1:") && attempts > 1 {
		t.Errorf("failure reports an earlier attempt: %q", r.Errors[0])
	}

	r = &recorder{}
	krplytest.Eventually(r, 0, func(krplytest.TestingT) bool { return false })
	if len(r.Errors) != 1 || !strings.Contains(r.Errors[0], "the check returned false") {
		t.Fatalf("a silent false: failures %q", r.Errors)
	}
}
