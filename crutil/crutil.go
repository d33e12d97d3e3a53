package crutil

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/krply/krply/crutil/prom"
	"github.com/krply/krply/metrics"
	"github.com/krply/krply/watch"
)

// ReadyzCheck is the name of the readiness check Add adds.
const ReadyzCheck = "krply-synced"

// Option configures Add.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	metrics *metrics.Handler
}

// WithMetrics registers the metrics h gathers in controller-runtime's
// registry (sigs.k8s.io/controller-runtime/pkg/metrics.Registry), which
// the manager serves on its /metrics endpoint.
func WithMetrics(h *metrics.Handler) Option {
	return optionFunc(func(c *config) { c.metrics = h })
}

// Recording is a Collector added to a manager: it records only while this
// replica holds the leader lease (the Collector does not implement
// LeaderElectionRunnable), and Close closes the journal only after the
// Collector's Start returned.
type Recording struct {
	// collector is the Collector (an interface for the tests).
	collector interface{ Start(context.Context) error }
	journal   io.Closer

	mu      sync.Mutex
	done    chan struct{} // closed when Start returned; nil until Start
	closing bool          // Close was called: Start must not begin
}

// Add adds rec to mgr as a Runnable, with the readiness check
// ReadyzCheck (Readiness) and, with WithMetrics, krply's metrics in
// controller-runtime's registry. journal (a *krply.Journal, or the
// store rec writes to) is closed by the Recording's Close, which the
// caller defers right after Add succeeded: the manager does not wait for
// its Runnables when it loses the lease, and a journal closed under a
// running Collector fails its last commit.
func Add(mgr manager.Manager, rec *watch.Collector, journal io.Closer, opts ...Option) (*Recording, error) {
	if mgr == nil || rec == nil || journal == nil {
		return nil, fmt.Errorf("crutil: %w: Add needs a manager, a Collector and the journal to close", watch.ErrInvalidArgument)
	}
	var cfg config
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("crutil: %w: a nil Option", watch.ErrInvalidArgument)
		}
		o.apply(&cfg)
	}
	if cfg.metrics != nil {
		if err := prom.Register(ctrlmetrics.Registry, cfg.metrics); err != nil {
			return nil, fmt.Errorf("crutil: metrics: %w", err)
		}
	}
	r := &Recording{collector: rec, journal: journal}
	if err := mgr.Add(r); err != nil {
		return nil, fmt.Errorf("crutil: add the Collector: %w", err)
	}
	if err := mgr.AddReadyzCheck(ReadyzCheck, Readiness(mgr, rec)); err != nil {
		return nil, fmt.Errorf("crutil: readiness check: %w", err)
	}
	return r, nil
}

// Start runs the Collector until ctx ends (manager.Runnable). After Close
// it returns at once without recording.
func (r *Recording) Start(ctx context.Context) error {
	r.mu.Lock()
	if r.closing {
		r.mu.Unlock()
		return nil
	}
	done := make(chan struct{})
	r.done = done
	r.mu.Unlock()
	defer close(done)
	return r.collector.Start(ctx)
}

// Close keeps the Collector from starting from now on, waits for a Start
// in progress to return (its context ends with the manager's), then
// closes the journal.
func (r *Recording) Close() error {
	r.mu.Lock()
	r.closing = true
	done := r.done
	r.mu.Unlock()
	if done != nil {
		<-done
	}
	if err := r.journal.Close(); err != nil {
		return fmt.Errorf("crutil: close the journal: %w", err)
	}
	return nil
}

// Readiness is a leader-aware readiness check: on the elected leader
// (every replica when leader election is off) it is rec.Synced — ready
// once every stream records, not ready while one does not; a standby
// replica is ready as a standby, so that a rolling update, which waits for
// the new pod to be ready before it stops the old leader, can complete.
func Readiness(mgr manager.Manager, rec *watch.Collector) healthz.Checker {
	return func(*http.Request) error {
		select {
		case <-mgr.Elected():
			return rec.Synced()
		default:
			return nil
		}
	}
}

// stepDownMessage and stepDownError are what controller-runtime's manager
// logs, as an error with a stack trace, when it releases the lease at a
// stop it was asked for (LeaderElectionReleaseOnCancel): the leader
// elector's OnStoppedLeading reports "leader election lost" once the stop
// is under way, and the manager logs every error it receives then.
const (
	stepDownMessage = "error received after stop sequence was engaged"
	stepDownError   = "leader election lost"
)

// StepDownLogger returns log for the manager's options (Options.Logger),
// except that once stopping (the program's context) has ended, the
// manager's report of the lease it released is an info line, not an
// error: a rollout is no failure. A lease lost while running is still an
// error.
func StepDownLogger(stopping context.Context, log logr.Logger) logr.Logger {
	return logr.New(&stepDownSink{LogSink: log.GetSink(), stopping: stopping})
}

type stepDownSink struct {
	logr.LogSink
	stopping context.Context
}

func (s *stepDownSink) Error(err error, msg string, kv ...any) {
	if msg == stepDownMessage && err != nil && err.Error() == stepDownError && s.stopping.Err() != nil {
		s.LogSink.Info(0, "leader lease released at the stop", kv...)
		return
	}
	s.LogSink.Error(err, msg, kv...)
}

func (s *stepDownSink) WithValues(kv ...any) logr.LogSink {
	return &stepDownSink{LogSink: s.LogSink.WithValues(kv...), stopping: s.stopping}
}

func (s *stepDownSink) WithName(name string) logr.LogSink {
	return &stepDownSink{LogSink: s.LogSink.WithName(name), stopping: s.stopping}
}
