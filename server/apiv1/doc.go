// Package apiv1 holds the wire types of krply's query API, version v1 (the
// routes under /api/v1/ that package server serves): the answers' list and
// page envelopes, the request bodies, the change feed's events, the Error
// of every error answer with its stable codes, and ParseTime, the syntax
// of the time parameters. Package server answers with these types and
// package server/client decodes them; both import this package, and the
// client imports nothing else of the server.
//
// Answers also carry the library's own result types (a
// materialize.Snapshot in a SnapshotPage, the replay/replayapi types in a
// PlanSummary, a status.StreamStatus of package watch/status in a
// StreamInfo), so the package imports those packages, and no handler,
// Collector, audit webhook, web UI, nor replay's dry-run and apply path.
//
// The name follows Kubernetes' versioned API packages (k8s.io/api/core/v1,
// imported as corev1; metav1): the package is the v1 wire schema, and a v2
// of the routes would get a sibling package.
//
// # Guarantees
//
// The JSON form of every type is part of krply's wire schema
// (docs/wire-schema.md, pinned by golden files): a field is only ever
// added, omitted when zero, and never renamed; the codes are stable
// across versions.
// Package server declares its names for these types as aliases (type
// server.Error = apiv1.Error), so either name may be used.
//
// # Does not
//
// It does not make requests (package server/client does) nor answer them
// (package server).
//
// # Concurrency
//
// The types are plain values; ParseTime is safe for concurrent use.
//
// # Close
//
// Nothing in the package needs closing.
package apiv1
