// Package audit reads Kubernetes audit logs and links each write request to
// the journal event it caused, so a history can say who changed what: the
// user, groups, user agent, source IPs, verb, request URI and audit ID.
//
// # Reading
//
// Events are audit.k8s.io/v1 Events. NewReader reads the JSON lines of the
// API server's log backend (--audit-log-format=json), gzip-compressed or
// not; OpenFiles reads several files in order, and RotatedFiles lists a
// log's rotated backups ("audit-2006-01-02T15-04-05.000.log[.gz]") oldest
// first, then the live file. NewEventListReader reads the EventList body of
// the webhook backend, item by item, and WebhookHandler is an http.Handler
// an API server's --audit-webhook-config-file can point at.
//
// Readers stream: memory stays bounded by the maximum event size
// (WithMaxEventBytes, 4 MiB by default) whatever the input size. A line that
// is not a usable event — not JSON, truncated, another kind or apiVersion,
// no auditID, stage, verb or requestReceivedTimestamp — or that is longer
// than the maximum is returned as a *LineError with its file and line
// number, and reading goes on: malformed lines are never fatal and never
// silently dropped. Ingest counts them in Summary.Malformed and lists the
// first ones in Summary.Problems.
//
// # Matching rules
//
// Only a request that can have changed a stored object is matched: stage
// ResponseComplete, a write verb (create, update, patch, delete,
// deletecollection), a 2xx response status, an objectRef with a resource,
// no dryRun parameter, and not a connect subresource (exec, attach,
// portforward, proxy, log, token). Everything else is skipped and counted by
// reason. The object is named by the journal's cluster (the Correlator's),
// objectRef's apiGroup and resource, and the namespace and name of the
// response object (objectRef's for subresources and when the response has
// none). The rules, in order:
//
//  1. RuleExactUIDDeletion (confidence 1): a delete answered with a Status
//     naming the deleted uid (ConfigMaps, Deployments and most resources), or
//     with the deleted object itself without a deletionTimestamp (Pods,
//     Namespaces, ServiceAccounts, … — at the deletion's resourceVersion on
//     current API servers, at the last version before it on older ones),
//     matches the DELETED event of that uid observed at or after
//     requestReceivedTimestamp minus the clock skew: a uid is deleted once.
//     When that DELETED event was inferred after a gap (absent from a
//     relist), the rule is RuleInferredDeletion with confidence 0.9. A
//     deletecollection matches the DELETED event of every listed item.
//  2. RuleExactResourceVersion (confidence 1): any other response object
//     with a metadata.resourceVersion — a create, update or patch, a status
//     or scale subresource, a delete that left the object terminating
//     (finalizers, graceful deletion) — matches the journal event of that
//     object, uid and resourceVersion (storage.Reader's
//     EventByResourceVersion): only a real watch event. When the journal
//     has the version only as a synthetic record — a baseline item or an
//     inferred deletion, because the write happened while no watch
//     recorded the object (a gap, or before the recorder started) — the
//     rule is RuleSeenThroughRelist with confidence 0.9, linked to the
//     first such record (the relist that revealed the version, never a
//     later one repeating it). If the matched record was observed before
//     the request was received (minus the clock skew), or another request
//     was matched to it by its version before (earlier in the batch, or
//     stored), the request was a no-op write returning the object
//     unchanged: it is skipped as SkippedNoChange. A create whose response
//     has no resourceVersion stored nothing (token and access reviews) and
//     is skipped as SkippedNoObject.
//  3. RuleNearestFollowing (confidence 0.8, or 0.5 when ambiguous): when the
//     audit level carries no response body (Metadata, Request), the
//     candidates are the non-synthetic journal events of the object
//     observed between requestReceivedTimestamp minus the clock skew
//     (WithClockSkew, 1s by default) and stageTimestamp plus the match
//     window (WithMatchWindow, 30s by default), whose watch type fits the
//     verb (create: ADDED; update and patch: MODIFIED or ADDED; delete:
//     DELETED or MODIFIED; subresource writes: MODIFIED), whose uid is
//     objectRef's when the log has one, whose resourceVersion is not
//     objectRef's (an update's precondition: the version it started from),
//     and which no other request matched exactly (in the same Ingest batch
//     or stored before). The same change recorded by several streams counts
//     once. The match is the first candidate observed at or after
//     requestReceivedTimestamp — confidence 0.8 when it is the only one
//     there, 0.5 when more follow — or, when none is, the last one before
//     it (plausible only through clock skew), with confidence 0.5.
//
// A request that passes the filter but matches no rule is Unmatched: the
// journal does not record that object (no stream covers it, or a gap hid the
// change), or the best-effort rule found no candidate. Match reports it as
// ErrNoMatch and skipped requests as ErrNotAChange.
//
// Ingest appends one event.TypeAuditCorrelation record per match, with the
// cluster ID, the target's Resource and an event.AuditCorrelation payload
// (TargetEventID, user, groups, user agent, source IPs, verb, request URI,
// requestReceivedTimestamp, confidence, rule); its ObservedAt is the audit
// event's stageTimestamp. The record's EventID (CorrelationID) is derived
// from the audit ID and the target event, and every rule picks its target
// deterministically (the first record with the version or the uid's
// deletion, not the newest), so ingesting the same log twice — also after
// another relist repeated the versions — stores nothing new and counts the
// matches as Duplicates. Summary counts matches to synthetic records in
// Scored and SeenThroughRelist. storage.Reader's Correlations returns the
// records of given events; the materialize package shows them in History
// (on a baseline item or an inferred deletion, only links with a
// confidence below 1).
//
// # Guarantees
//
//   - An exact match (confidence 1) is never a guess: the response's
//     resourceVersion, or the deleted uid, names exactly one change, and
//     the journal recorded it as a real watch event. Baseline items and
//     inferred deletions say "the object was like this by then", never
//     "this write made it so": links to them are labelled and below 1.
//   - Re-ingesting is idempotent, so a log can be ingested whenever it
//     grows, and a webhook batch the API server retries is harmless.
//   - resourceVersions are compared for equality only, never ordered.
//
// # What it does not do
//
//   - It does not tail a growing log file: ingest it again (from the start
//     or from rotated files) to pick up new lines.
//   - It cannot tell which of several Metadata-level requests in the same
//     window caused a change; the confidence says so. A no-op write at
//     Metadata level can be matched to a change made by someone else.
//   - It records the authenticated user; an impersonated user (the
//     ImpersonatedUser of the event) is not part of the correlation record.
//   - It reads audit.k8s.io/v1 only (v1beta1 was removed in Kubernetes 1.24).
//
// # Types: why not k8s.io/apiserver
//
// The Event and EventList types here mirror k8s.io/apiserver's
// pkg/apis/audit/v1 field for field (with the request and response objects
// as raw JSON); tests decode real kube-apiserver output strictly and
// re-encode it unchanged. Importing the upstream package into a copy of
// krply's module: go.mod gains one requirement
// (k8s.io/apiserver) and go.sum two lines, and the two packages compile in
// about a second — but `go list -m all` grows from 98 to 157 modules,
// because k8s.io/apiserver's go.mod brings etcd, gRPC, OpenTelemetry, zap
// and cel-go into every downstream module graph, where minimal version
// selection can upgrade a user's own copies. k8s.io/apiserver is also not
// one of the core module's allowed dependencies. The minimal structs cost
// none of that.
//
// # Concurrency and Close
//
// A Correlator and a WebhookHandler are safe for concurrent use and hold
// nothing to close; concurrent Ingests of overlapping logs never store a
// correlation twice (the EventIDs are the same).
// Readers are not safe for concurrent use. The caller must Close a
// FileReader; the journal belongs to the caller, who closes it after the
// Correlator is no longer used.
package audit
