// Package recordertest runs a recorder (recorder) in a test: in
// a goroutine, its output collected, stopped as Ctrl-C stops it.
package recordertest

import (
	"context"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/recorder"
)

// Recorder is a recorder.Run in progress.
type Recorder struct {
	// Out is what the recorder prints.
	Out    *testenv.Buffer
	t      testing.TB
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// Start runs recorder.Run with c until Stop or the end of the test.
func Start(t testing.TB, c recorder.Config) *Recorder {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	r := &Recorder{Out: &testenv.Buffer{}, t: t, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- recorder.Run(ctx, r.Out, c) }()
	t.Cleanup(func() { r.Stop(context.Background()) })
	return r
}

// Done reports Run's result, should it return before Stop.
func (r *Recorder) Done() <-chan error { return r.done }

// Stop ends the recorder's context, as Ctrl-C or SIGTERM do, and fails the
// test unless Run then returns nil before ctx ends.
func (r *Recorder) Stop(ctx context.Context) {
	r.t.Helper()
	r.once.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				r.t.Errorf("record after its context ended: %v\n%s", err, r.Out.String())
			}
		case <-ctx.Done():
			r.t.Errorf("record did not stop when its context ended:\n%s", r.Out.String())
		}
	})
}

// WaitFor waits until the output matches re and returns the match and its
// submatches; it fails the test if Run returns first or ctx ends.
func (r *Recorder) WaitFor(ctx context.Context, re *regexp.Regexp) []string {
	r.t.Helper()
	for {
		if m := re.FindStringSubmatch(r.Out.String()); m != nil {
			return m
		}
		select {
		case err := <-r.done:
			r.t.Fatalf("record returned before printing %s: %v\n%s", re, err, r.Out.String())
		case <-ctx.Done():
			r.t.Fatalf("record did not print %s:\n%s", re, r.Out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

var serving = regexp.MustCompile(`serving the query API on (https?://\S+)`)

// Serving waits until the recorder serves the query API and returns its
// base URL.
func (r *Recorder) Serving(ctx context.Context) string {
	r.t.Helper()
	return r.WaitFor(ctx, serving)[1]
}
