// Package crutil runs krply's Collector inside a controller-runtime
// manager, so that a controller's main holds only what is its own: Add
// adds the Collector as a Runnable that records while this replica holds
// the leader lease, a leader-aware readiness check (Readiness) and, with
// WithMetrics, krply's metrics in controller-runtime's registry (package
// prom); the Recording it returns closes the journal only after the
// Collector stopped. StepDownLogger keeps the manager from logging a
// lease released at a requested stop as an error.
//
// It is its own module (github.com/krply/krply/crutil), so that
// controller-runtime and the Prometheus client library stay out of the
// core module: embedders who want neither import only the core. See
// docs/tutorials/embedding.md and examples/controller.
//
// Guarantees: the journal given to Add is closed by Recording.Close only
// after the Collector's Start returned, or when it never started; a
// Collector is started at most once.
//
// Does not: elect a leader itself (the manager does, with its
// LeaderElection options), nor serve probes or metrics (the manager's
// endpoints do).
//
// Concurrency: a Recording is safe for concurrent use; Close may be called
// while the manager runs or after it stopped.
//
// Close: the caller defers Recording.Close right after Add returned it.
package crutil
