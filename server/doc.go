// Package server serves a krply journal over HTTP: the query API.
//
// NewHandler returns an http.Handler over a journal (what
// krply.Journal.Store() returns, or any storage.ReadWriter) that a platform
// tool mounts under any prefix, and that examples/record serves with
// --listen from the recorder's own journal, so one process writes and
// every reader asks it. Package server/client is its Go client; it returns
// the library's own types.
//
// The request and answer types (the envelopes, Error and its codes,
// ParseTime) are declared in package server/apiv1, the wire types of the
// /api/v1/ routes; this package's names for them are aliases. The client
// imports server/apiv1 and not this package, so a program that only asks
// a server links neither the handler, the Collector, the audit webhook nor
// the embedded web UI.
//
//	mux.Handle("/krply/", http.StripPrefix("/krply", server.NewHandler(j.Store(),
//		server.WithRecorder(collector),
//		server.WithDelegatedAuth(cs.AuthenticationV1().TokenReviews(), cs.AuthorizationV1().SubjectAccessReviews()))))
//
// docs/query-api.md lists every route, its parameters, answers and errors;
// in short:
//
//	GET  /healthz, /readyz                 liveness; readiness = the recorder is synced
//	GET  /metrics                          Prometheus metrics (WithMetrics), authorized like the API
//	GET  /api/v1/clusters                  the clusters recorded
//	GET  /api/v1/streams                   streams: status, coverage at ?at, gaps
//	GET  /api/v1/records                   records of a scope over a time range
//	GET  /api/v1/object                    one object at ?at (materialize.ObjectState)
//	GET  /api/v1/history                   one object's versions, with who (paged by ?cursor)
//	GET  /api/v1/snapshot                  a scope at ?at, computed (paged by ?cursor)
//	GET  /api/v1/snapshots[/{id}]          saved snapshots; POST saves one
//	GET  /api/v1/diff                      a scope from ?from to ?to (paged by ?cursor)
//	GET  /api/v1/why                       what changed before an object broke (why.Answer)
//	GET  /api/v1/plans                     saved replay plans, oldest first (summaries)
//	POST /api/v1/plans                     plan a replay (saved; ?preview=true: not)
//	GET  /api/v1/plans/{id}                a saved plan, JSON or YAML
//	POST /api/v1/plans/{id}/dryrun         server-side dry run (WithDryRun, WithApply)
//	POST /api/v1/plans/{id}/apply          apply, ID and hash confirmed (WithApply)
//	POST /api/v1/audit                     the apiserver's audit webhook (WithAuditWebhook)
//	GET  /api/v1/watch                     the change feed (Server-Sent Events)
//
// # Answers
//
// Answers are JSON in krply's wire schema (docs/wire-schema.md): the
// library's types as json.Marshal writes them, so every historical answer
// carries its coverage, gaps and warnings, and is never more certain than
// the library's. Lists are pages ({"items": …, "next": cursor}); errors are
// an Error with a stable code and the parameter at fault. Times are read
// by ParseTime, the parser krply's command-line tools share: RFC 3339,
// "now", or a duration ago ("10m", "2h ago").
//
// # The change feed
//
// GET /api/v1/watch streams the records appended to the journal, with the
// scope filters of the records route, as Server-Sent Events whose id is
// the record's IngestSeq. A client resumes with Last-Event-ID (or
// ?cursor=) and gets every record after it exactly once. The handler
// polls the journal (WithPollInterval), so it follows a recorder in
// another process too; given an AppendNotifier (WithAppendNotifier, or a
// recorder that is one; AppendSignal for a writer to call), it reads new
// records as soon as they are appended. At most WithMaxFeeds feeds are
// served at once; one more is answered 429 too_many_requests. The cursor relies on the store appending records
// in IngestSeq order, one write transaction at a time, which the SQLite
// and memory stores do.
//
// # Security
//
// The handler is read-only by default: saving snapshots and plans
// (WithWrites), dry runs (WithDryRun), applying plans (WithApply, and then
// only a saved plan whose ID and hash the request confirms) and the audit
// webhook (WithAuditWebhook) are each enabled explicitly. A journal opened
// read-only serves every read.
//
// Without an authentication option every request is served: the
// embedding tool authenticates. WithTokenFile accepts the bearer tokens of
// a file. WithDelegatedAuth asks the cluster, as an aggregated API server
// does: a TokenReview says who the bearer is, and a SubjectAccessReview on
// the virtual resource "history" of API group "krply.io" in the namespace
// asked about says whether they may: verb get to read, create to save and
// dry-run; resource "replays", verb create, to apply; resource
// "auditevents", verb create, for the webhook. A question about every
// namespace or a cluster-scoped object needs the verb in cluster scope, so
// cluster RBAC decides who reads which namespace's history. Decisions are
// cached for WithAuthCacheTTL; a review that cannot be made refuses the
// request.
//
// WithMetrics serves GET /metrics behind the same authentication, as
// kube-apiserver serves its own: any token of the file, or a user whom a
// SubjectAccessReview allows get on the non-resource URL /metrics (a
// ClusterRole rule nonResourceURLs: ["/metrics"], verbs: ["get"]), since
// the metrics name the recorded namespaces.
//
// Secrets are never served: records, objects, histories, snapshots,
// diffs, plans and the feed leave them out, and saying so where it
// matters. Requests are bounded: page sizes (WithMaxPageSize; a snapshot
// or a diff asked with limit is answered a page of objects at a time,
// SnapshotPage and DiffPage, reading only that page's bodies; without,
// one larger than a page is refused, not cut), time ranges
// (WithMaxRange), bodies (WithMaxBodyBytes), time (WithRequestTimeout) and
// the requests answered at once (WithMaxInFlight). An answer is sent
// outside its turn, a chunk at a time within the timeout, so a client that
// stops reading neither holds a turn nor keeps its connection (or its
// change feed) open. A body must come whole within the timeout (408).
// Answers of 128 KiB or more go gzip-compressed to a client that accepts
// it. TLS is the serving program's (kubectl krply record
// --tls-cert-file).
//
// # Configuration errors
//
// NewHandler does not return an error: a configuration that cannot work (a
// nil journal, an option out of range) makes every request answer 500
// with the reason, /healthz included, so it shows at the first request.
package server
