// Package failrec is a krplytest.TestingT that keeps failures instead of
// failing, for the tests of krplytest and krplytest/crtest that check
// what their helpers report.
package failrec

import (
	"fmt"
	"sync"
)

// T keeps the failures reported to it and the cleanups registered with it.
// Fatalf returns, unlike testing.T's: a helper under test must stop by
// itself after it.
type T struct {
	mu       sync.Mutex
	Errors   []string
	cleanups []func()
}

// Helper does nothing.
func (r *T) Helper() {}

// Cleanup registers f for Done.
func (r *T) Cleanup(f func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cleanups = append(r.cleanups, f)
}

// Errorf keeps a failure.
func (r *T) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Errors = append(r.Errors, fmt.Sprintf(format, args...))
}

// Fatalf keeps a failure, and returns.
func (r *T) Fatalf(format string, args ...any) { r.Errorf(format, args...) }

// Done runs the cleanups, last first, as the end of a test does.
func (r *T) Done() {
	r.mu.Lock()
	cs := r.cleanups
	r.cleanups = nil
	r.mu.Unlock()
	for i := len(cs) - 1; i >= 0; i-- {
		cs[i]()
	}
}
