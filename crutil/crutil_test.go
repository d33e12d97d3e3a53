package crutil

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
)

// blockingCollector runs until its context ends, then takes a while to stop.
type blockingCollector struct {
	started chan struct{}
	stopped atomic.Bool
}

func (b *blockingCollector) Start(ctx context.Context) error {
	close(b.started)
	<-ctx.Done()
	time.Sleep(200 * time.Millisecond)
	b.stopped.Store(true)
	return nil
}

// journal records when it was closed.
type journal struct {
	closed   atomic.Bool
	whenDone func() bool
	early    atomic.Bool
}

func (j *journal) Close() error {
	if j.whenDone != nil && !j.whenDone() {
		j.early.Store(true)
	}
	j.closed.Store(true)
	return nil
}

// Close closes the journal only once the Collector's Start returned, and
// keeps a Collector not started yet from starting.
func TestRecordingClosesAfterStart(t *testing.T) {
	b := &blockingCollector{started: make(chan struct{})}
	j := &journal{whenDone: b.stopped.Load}
	r := &Recording{collector: b, journal: j}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { _ = r.Start(ctx) }()
	<-b.started
	cancel()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if !j.closed.Load() || j.early.Load() {
		t.Fatalf("journal closed %v, before the Collector stopped %v", j.closed.Load(), j.early.Load())
	}

	never := &blockingCollector{started: make(chan struct{})}
	late := &Recording{collector: never, journal: &journal{}}
	if err := late.Close(); err != nil {
		t.Fatal(err)
	}
	if err := late.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-never.started:
		t.Fatal("a Collector started after Close")
	default:
	}
}

// Add refuses what it cannot use, naming it.
func TestAddChecksArguments(t *testing.T) {
	if _, err := Add(nil, nil, nil); err == nil || !strings.Contains(err.Error(), "Add needs a manager, a Collector and the journal") {
		t.Fatalf("Add(nil, nil, nil) = %v", err)
	}
}

// The manager's report of a lease released at a requested stop is an info
// line; the same report while running, or any other error, stays an error.
func TestStepDownLogger(t *testing.T) {
	var lines []string
	base := funcr.New(func(prefix, args string) { lines = append(lines, prefix+" "+args) }, funcr.Options{})
	stopping, stop := context.WithCancel(context.Background())
	log := StepDownLogger(stopping, base).WithName("manager").WithValues("k", "v")
	lost := errors.New(stepDownError)
	log.Error(lost, stepDownMessage)
	stop()
	log.Error(lost, stepDownMessage)
	log.Error(errors.New("other"), stepDownMessage)
	if len(lines) != 3 {
		t.Fatalf("lines: %q", lines)
	}
	for i, want := range []string{`"error"="leader election lost"`, `"msg"="leader lease released at the stop"`, `"error"="other"`} {
		if !strings.Contains(lines[i], want) || !strings.Contains(lines[i], `"k"="v"`) || !strings.HasPrefix(lines[i], "manager") {
			t.Errorf("line %d = %q, want %s with the name and values", i, lines[i], want)
		}
	}
	if strings.Contains(lines[1], `"error"`) {
		t.Errorf("the release at the stop logged as an error: %q", lines[1])
	}
}
