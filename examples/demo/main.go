// Command demo is krply's quickstart: it starts a local control plane
// (etcd and kube-apiserver, see krplytest/testenv), records a small workload
// through an outage that loses history for real, and prints what krply
// makes of it: coverage with the gap, one object's timeline with who changed
// what, a diff, snapshots with their completeness, and a replay into a
// sandbox namespace — plan, dry run, apply. It keeps its journal and ends by
// serving the web UI and the query API on it (-listen), until Ctrl-C.
//
// Run it with `make demo`, which builds the control plane binaries first
// when they are missing. By hand:
//
//	KUBEBUILDER_ASSETS=$(hack/testbin.sh | tail -n 1) go run ./examples/demo
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/krply/krply/cel"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/server"
)

func main() {
	verbose := flag.Bool("v", false, "log what the recorder does (gaps, 410s, relists) to stderr")
	journal := flag.String("journal", "krply-demo.db", "where to keep the demo's journal (replaced on each run; empty: a temporary file, removed at the end)")
	listen := flag.String("listen", "127.0.0.1:8080", `serve the web UI and the query API on the journal at this address when the demo is done, until Ctrl-C ("" to end at once)`)
	flag.Parse()
	log := logr.Discard()
	if *verbose {
		log = funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{Verbosity: 4})
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tb := &mainTB{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		res, err := run(ctx, tb, os.Stdout, log, *journal)
		if err != nil {
			tb.Fatalf("demo: %v", err)
		}
		if *listen != "" {
			ln, err := net.Listen("tcp", *listen)
			if err != nil {
				tb.Fatalf("demo: serve the web UI: %v (choose another address with -listen, or -listen '' to skip it)", err)
			}
			fmt.Printf("\n== The web UI of this journal: http://%s/ (the recorder is still recording; Ctrl-C ends the demo)\n", ln.Addr())
			if err := serveUI(ctx, res, ln); err != nil {
				tb.Fatalf("demo: %v", err)
			}
		}
	}()
	<-done
	tb.cleanup()
	if tb.Failed() {
		os.Exit(1)
	}
}

// serveUI serves the web UI and the query API on the demo's journal, with
// its recorder still recording, until ctx ends (Ctrl-C).
func serveUI(ctx context.Context, res *result, ln net.Listener) error {
	srv := &http.Server{Handler: server.NewHandler(res.Journal.Store(), server.WithUI(), server.WithRecorder(res.Collector), server.WithConditions(cel.Conditions())), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// mainTB is the testenv.TB of a program: Fatalf and Skipf end the demo's
// goroutine (as they end a test), and cleanup runs what was registered.
type mainTB struct {
	mu       sync.Mutex
	failed   bool
	cleanups []func()
}

var _ testenv.TB = (*mainTB)(nil)

func (t *mainTB) Helper()      {}
func (t *mainTB) Name() string { return "demo" }
func (t *mainTB) Cleanup(f func()) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cleanups = append(t.cleanups, f)
}
func (t *mainTB) Failed() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.failed
}
func (t *mainTB) Logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
func (t *mainTB) Fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	t.mu.Lock()
	t.failed = true
	t.mu.Unlock()
	runtime.Goexit()
}
func (t *mainTB) Skipf(format string, args ...any) { t.Fatalf(format, args...) }

func (t *mainTB) cleanup() {
	t.mu.Lock()
	fs := t.cleanups
	t.cleanups = nil
	t.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}
