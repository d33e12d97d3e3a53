// Package watch is krply's Collector: it lists and watches Kubernetes
// resources and appends what it sees to a journal (a storage.ReadWriter,
// such as any storage.Store) that never claims more than it saw.
//
//	c, err := watch.NewCollectorForConfig(cfg, store,
//		watch.WithResources("deploy", "cm", "widgets.example.com"),
//		watch.WithLogger(log))
//	…
//	go c.Start(ctx)          // blocks until ctx ends; a controller-runtime Runnable
//	err = c.WaitForSync(ctx) // every stream has a baseline or resumed
//	now := time.Now()
//	err = c.WaitForProgress(ctx, now) // every stream's evidence passed now
//
// # Recording everything
//
// WithAllResources records every resource the server serves that can be
// listed and watched, at its group's preferred version, and that the
// Collector may list and watch (it asks with SelfSubjectAccessReviews), but
// DefaultExclusions — Secrets (AllowSecrets), Events (WithInclude("events")),
// Leases and EndpointSlices and Endpoints (high churn) — each with its
// reason, adjusted by WithExclude and WithInclude. Rediscovery follows the
// server: a CRD installed later gets its streams (coverage change
// "discovered"); one deleted ends them with a coverage change saying it is
// no longer served (state StateRemoved, which Synced and WaitForProgress
// leave out), and they start again if it returns. A group whose discovery
// fails keeps its streams; a resource denied now is asked about again at
// the next rediscovery.
//
// # Streams and their state machine
//
// Each resource (resolved through discovery at its preferred version; see
// Resolve for the accepted names) is recorded as one stream per namespace
// given to WithNamespaces (one stream across all namespaces otherwise), with
// the label and field selector in the stream ID, and the recording rule
// (WithRecordRule) when there is one: a rule records only the objects it
// matches, and marks one that stops matching with an exclusion
// (event.Record.IsExclusion), never a deletion. Every stream runs this loop:
//
//	start ──▶ journal covered and has a checkpoint? ──yes──▶ WATCH from the checkpoint
//	             │ no                                         │
//	             ▼                                            │
//	        [GAP if the journal was covered]                  │
//	        BASELINE: begin, synthetic ADDED items, end ◀─────┤ 410 Gone: GAP, then relist
//	        (+ inferred DELETED for objects the journal       │
//	         believed alive that the list lacks)              │
//	             │                                            │
//	             └──────────▶ WATCH from the list's RV ───────┤ closed / cut / idle: reconnect
//	                                                          │   from the last RV, no gap
//	                                                          │ 403/404: [GAP] + coverage_change
//	                                                          │   unavailable; retry with backoff;
//	                                                          │   on success coverage_change
//	                                                          │   available + BASELINE
//	                                                          └ 429/5xx/network: backoff, reconnect
//
// A baseline is a paginated list with resourceVersion unset — a consistent
// read, never the watch cache's possibly stale "0" — or, with WatchList
// (auto by default, when the client supports it, with a fallback to lists),
// a watch with sendInitialEvents that ends at the k8s.io/initial-events-end
// bookmark. The end record carries the list's resourceVersion (never one
// taken from the items), and the watch starts from exactly that version, so
// no change between list and watch is missed (after a WatchList, a new
// watch from its initial-events-end bookmark). Watch events become event
// records; a BOOKMARK becomes a checkpoint record only, never an object
// change.
//
// # Evidence, progress checkpoints and healthy watches
//
// A time T is covered for a stream only when the stream has durable
// evidence of continuity after T (storage.Coverage): an event, a checkpoint
// or a baseline end observed after T. After the last evidence, time is
// "not yet observed". A quiet stream has no events, so the Collector writes
// progress checkpoints — checkpoint records at the stream's unchanged
// resourceVersion — at least every progress interval (WithProgressInterval,
// default 10s) while the stream's watch is healthy.
//
// Healthy means the API server vouches for it, never a timer of the
// Collector's own. Every watch asks for a server-side timeoutSeconds of the
// interval less a second (at least 1). When the server ends the watch at
// that timeout — a clean end, no sooner than the timeout after the request
// — it has streamed everything up to then without error: the Collector
// writes a progress checkpoint observed then, and reconnects from the same
// resourceVersion (no gap, no backoff). A BOOKMARK whose resourceVersion did
// not change is the server saying the same, and is one too (at most two per
// interval). An event or a new bookmark is evidence by itself. A half-open
// connection delivers nothing and never ends, so it vouches for nothing; once
// the server has ended a watch at its timeout (it honors them), a watch that
// outlives its timeout by max(2s, timeout/2) is abandoned and reconnected,
// like one idle for WithWatchIdleTimeout. A server or a fake that ignores
// timeoutSeconds gets no progress checkpoints: its streams' evidence comes
// from events and bookmarks only.
//
// A clean stop (Start's ctx ends) records the events the open watch already
// delivered (a stop between two watches has none) and then, when the
// stream is covered, keeps the last time the
// server vouched for it in a checkpoint. The stop vouches for nothing the
// server did not: an event in flight on the connection the stop cancels,
// or everything a half-open connection held back, is not known to the
// process. So it asks: when the server is known to end watches at their
// timeout, each stream watches once more from its resourceVersion with a
// timeout of a second, records the events that watch delivers (those in
// flight included), and, when the server ends it at its timeout, writes a
// checkpoint then — the time up to the stop is covered, and a clean stop
// takes about a second. Otherwise (a server or fake that ignores timeouts,
// a stop within the first watch's timeout, an error, no end within three
// seconds) the checkpoint is at the last evidence the server gave that
// was not yet written (an unchanged bookmark, a watch's end at its
// timeout), if any, and the time after it is not yet observed, as after a
// crash. A watch the stop itself ends (its canceled request closes it, or
// client-go reports a decode failure of the canceled request) is still
// healthy; an error the server sends, or a decode failure of what it
// sent, is not, even at the stop: no checkpoint then.
//
// WaitForProgress(ctx, t) waits until every stream's durable evidence
// (StreamStatus.LastDurableAt) is after t: then a snapshot of t is complete
// unless a stream lost continuity.
//
// # Bodies
//
// A Collector made by NewCollectorForConfig records every object's body as
// the API server sent it (JSON, byte for byte: the server's key order and
// escaping, unknown fields kept), reading only kind, apiVersion and the
// identifying metadata; the items of a built-in type's list, which the
// server sends without kind and apiVersion, get them inserted first, as a
// GET returns them. A body that is not valid JSON is an error of the list or
// watch, never a record. A Collector made by NewCollector from a
// dynamic.Interface (such as client-go's fake) records client-go's
// re-encoding of the decoded object: the same content with keys sorted.
// Redacted Secrets are re-encoded on both paths.
//
// # Guarantees
//
//   - Truthful gaps: when continuity is lost (410, a restart without a
//     usable checkpoint, a 403/404 after the stream was covered), a gap is
//     written before anything else, From the ObservedAt of the stream's last
//     durable evidence (progress checkpoints included) — not the moment the
//     loss was detected — so no time in the outage counts as covered.
//     Coverage (storage.CoverageAt) returns only with the next complete
//     baseline and evidence after it.
//   - Complete stays complete: a time covered once stays covered whatever
//     happens later, since a covered time has evidence after it and every
//     later gap starts at the last evidence.
//   - The relist after an outage starts at once: the 410 that greets the
//     Collector when the server answers again is an answer, so the backoff
//     the outage grew is dropped; only a 410 again before a watch delivered
//     anything (a 410 loop), and lists that keep failing, back off.
//   - Deletions during a gap are explicit: after a relist, every object the
//     journal held alive that the new baseline lacks gets a synthetic DELETED
//     record, marked Inferred ("absent from relist") with the gap as its time
//     bounds and the last known body, written right after the baseline's end.
//     Whether a baseline is a relist comes from the journal (the stream has
//     records), not from what the Collector remembers: an object known only
//     from watch events is inferred deleted too. An object whose version in
//     the journal is newer than the list (another recorder of the cluster,
//     appending to the same journal, recorded it after the list was taken)
//     was absent because it did not exist yet, and is not inferred deleted;
//     resourceVersions are compared as the API server documents them
//     (positive integers, KEP-5504), and one that is not such a number (an
//     extension API server's) is taken as no newer.
//   - Replacements during a gap are explicit: a relist item whose UID differs
//     from the object the journal held alive under the same name is preceded
//     (same batch, same ObservedAt) by an inferred DELETED of the old UID
//     (Reason "replaced by a new object with the same name during the gap"),
//     so the object's history shows the old object's end and the name is
//     alive as the new object.
//   - A relist's baseline end names the gap it closes in Baseline.ClosesGap.
//   - Restart resumes: a Collector started on a store that says the stream is
//     covered watches from the durable checkpoint. Changes made while it was
//     down arrive as real events and unchanged objects are not stored again.
//     If the server answers 410, the gap spans the downtime.
//   - A list killed midway is never half-trusted: its items stay invisible
//     to every query (storage.Reader: a baseline without an end), and the
//     restart's baseline supersedes it. When the killed list was the initial
//     one, the restart logs "initial baseline interrupted; relisting" and
//     takes the initial baseline again with that Reason — no gap is
//     recorded, because the journal never claimed coverage.
//   - At-least-once, stored once: watch events are delivered from the last
//     durable resourceVersion after any failure; EventIDs make a second
//     delivery a no-op in the store.
//   - Grouped commits: events are appended in batches bounded by
//     WithBatching (count, bytes, latency) through a single writer; each
//     Append advances the stream's checkpoint in the same transaction.
//   - Bounded memory: the Collector holds no copy of the cluster's objects
//     (no informer cache). A list page, the commit queue (WithQueueSize) and
//     one batch are the most it holds; when the store is slower than the
//     watches, the watches wait (backpressure). Inferred deletions come from
//     the store's alive-objects query, with bodies read only for the
//     missing or replaced objects (that query does hold the keys of the
//     stream's alive objects, without bodies, during a relist).
//   - Secrets are refused unless AllowSecrets is given; their values are
//     then redacted unless KeepSecretValues is given too.
//
// # What it does not do
//
// A gap is written when the loss is detected, before the relist, so that a
// crash during the relist still leaves it in the journal; the
// resourceVersion that closed it is on the next baseline's end record, which
// names the gap (Baseline.ClosesGap).
//
// It does not order events across streams. resourceVersions are opaque
// strings, stored as received and compared for equality, with one
// exception: a relist asks whether an object the journal holds is newer
// than the list (another recorder of the cluster may have recorded it
// after the list was taken), with apimachinery's
// resourceversion.CompareResourceVersion, which decides only for the API
// server's own form (a decimal integer without leading zeros); for any
// other the deletion is inferred as with one recorder. ObservedAt is when the Collector saw an
// event, not when the object changed. It does not follow a resource to a new
// preferred version while running (the stream keeps the version it was
// resolved at; a restart after an upgrade starts a new stream). An object
// deleted and re-created more than once during a gap shows one replacement:
// the intermediate objects were never seen. The cluster ID defaults to the kube-system namespace's UID, and to a hash of
// the API server URL when kube-system cannot be read (see WithClusterID).
//
// # Concurrency and Close
//
// Start may be called once; Status, Synced, WaitForSync and ClusterID are safe to
// call concurrently with it. The Collector owns no resource that needs
// closing: when Start returns, every goroutine it started has ended and
// every record it received is appended: a stop (the end of Start's ctx)
// never cancels an Append in flight, and the final commit has ten seconds
// from the stop before it is canceled and Start returns ErrStore. The caller
// owns the store and closes it after Start returned.
package watch
