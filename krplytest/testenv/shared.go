package testenv

import (
	"fmt"
	"os"
	"sync"
	"time"
)

// shared is the control plane of RunMain, started by the first Shared call.
var shared struct {
	mu      sync.Mutex
	active  bool // RunMain is running the tests
	opts    []Option
	started bool
	env     *Env
	err     error
}

// RunMain runs a package's tests (m is the *testing.M of TestMain) with one
// control plane shared by every test that calls Shared, and stops it when
// they are done. The control plane starts on the first Shared call, so a
// run that selects no such test starts nothing. It returns m.Run's exit code:
//
//	func TestMain(m *testing.M) { os.Exit(testenv.RunMain(m)) }
func RunMain(m interface{ Run() int }, opts ...Option) int {
	shared.mu.Lock()
	shared.active, shared.opts = true, opts
	shared.mu.Unlock()

	code := m.Run()

	shared.mu.Lock()
	env := shared.env
	shared.active, shared.opts, shared.started, shared.env, shared.err = false, nil, false, nil, nil
	shared.mu.Unlock()
	if env != nil {
		if kept := env.stop(code != 0); kept != "" {
			fmt.Fprintf(os.Stderr, "testenv: shared control plane logs kept in %s\n", kept)
		}
	}
	return code
}

// Shared returns the package's shared control plane (see RunMain), starting
// it on first use. Like Start, it skips or fails t when the binaries are
// missing; when the start failed for another reason, every caller fails with
// that error.
//
// Tests that share an environment must not disturb each other: create
// objects in a namespace of their own (CreateNamespace), and use Start for
// tests that restart the apiserver or need other flags.
func Shared(t TB) *Env {
	t.Helper()
	shared.mu.Lock()
	defer shared.mu.Unlock()
	if !shared.active {
		t.Fatalf("testenv: Shared needs TestMain to call testenv.RunMain")
		return nil
	}
	if !shared.started {
		shared.started = true
		begin := time.Now()
		shared.env, shared.err = start(shared.opts)
		if shared.err == nil {
			t.Logf("testenv: shared control plane up in %v at %s (logs in %s)",
				time.Since(begin).Round(time.Millisecond), shared.env.Host(), shared.env.dir)
		}
	}
	if shared.err != nil {
		report(t, shared.err)
		return nil
	}
	return shared.env
}
