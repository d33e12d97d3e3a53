// Package truth tests krply's central promise — inside covered time nothing
// is lost, and every span not covered is reported as a gap — by checking a
// journal against the oracle of the workload that produced it.
//
// An Oracle holds every object version the server returned for each write,
// in write order, and the quiescent points at which the journal had caught
// up with the server; each version also says who wrote it and the ID of its
// request in the API server's audit log. Check compares a journal (any
// storage.ReadWriter; it only reads) with an oracle and returns a Report: counts, and a
// Mismatch for every way the journal breaks the promise. The checker is a
// plain function over the two, so its unit tests corrupt journals the way
// broken Collectors would write them (a dropped event, a redelivered one
// stored twice, a missing gap, a skipped relist, a missing inferred
// deletion, a gap stamped when the loss was detected) and the way broken
// stores, correlators and materializers would answer (an exact audit link
// to a baseline item, a write linked twice or to the wrong user, the items
// of a killed baseline shown, a Complete snapshot that later flips or that
// claims time after the evidence, a lost save or a preview stored), and
// expect it to notice.
//
// # The soak test
//
// Run is the soak test, for any store: a Backend says how a journal is
// made, opened to record and query, opened to read while others write, and
// kept when a run fails. TestTruth in this package runs it on a SQLite
// journal, and TestTruth in storage/postgres/internal/pgtruth on a
// database of a real PostgreSQL server (both in `make test`, without the
// race detector, which would make the long run much longer); each must find
// no mismatch. The children a run starts are the calling test binary
// re-executed: its TestMain calls ChildMain first. A failed run keeps its
// journal (PostgreSQL: an export, storage/transfer), oracle and logs in a
// folder, and each package's TestRecheck checks them again (Recheck) with
// KRPLY_TRUTH_RECHECK naming the folder; the SQLite one then breaks the
// journal and its seams as TestTruth does, so that a failure of those
// checks reproduces too.
//
// Run starts a real control plane (krplytest/testenv) with a second
// kube-apiserver whose ConfigMaps are served from etcd (no watch cache), puts
// the fault proxy in front of it, and records four namespaces of
// ConfigMaps, Secrets, headless Services and Deployments with a Collector on
// the backend's journal; one namespace holds 60 ConfigMaps more, so its
// baseline takes several pages. A seeded random workload creates, updates
// (data, labels, annotations, spec, replicas, images), deletes and
// re-creates objects under the same names, one write at a time, straight to
// the primary apiserver, as one of three users (admin, alice, bob) with an
// audit ID of its own; seeded faults interrupt the recording: cut watches,
// outages ended by a forced 410, outages of ConfigMaps ended by an etcd
// compaction (a real 410), a 403 flap, 500s, a restart of the Collector's
// apiserver (its watch cache is rebuilt: real 410s), clean Collector
// restarts on the same journal, and a child process recording until it is
// killed with SIGKILL.
//
// The seams, where a user combines the pieces:
//
//   - The first recorder is a child process killed with SIGKILL in the
//     middle of its initial baseline of the big namespace (its list
//     requests are slowed down, and it is killed once the first page is
//     committed); the next recorder starts on the same journal.
//   - While the journal is recorded, two other processes (-truth.queries)
//     open it and, over and over, save snapshots of times around now, make
//     replay plans (saving two in three, leaving the rest previews), ask
//     ObjectAt about the objects of the latest changes at now or a moment
//     before (keeping the answers) and ingest the primary apiserver's
//     audit log (RequestResponse level), through every relist. The
//     recorder must never fail, nor must they. Every answer they got
//     covered must be the same when asked again at the end.
//   - After every clean stop and every kill, and after the last stop, the
//     test saves snapshots of the whole scope: of now, after every record,
//     and of moments before the recorder stopped.
//   - After the workload the audit log is ingested twice; the second
//     ingest must store nothing.
//
// It prints one line:
//
//	truth (sqlite): seed 712378543, operations 4169, faults 12 {…}, oracle versions 4169, recorded 3454, inside gaps 703, …, mismatches 0 map[]
//
// The short form (at least 2,000 operations and 12 faults) runs with every
// `go test ./...`; the long form (at least 10,000 operations and 24
// faults) runs with -truth.long or KRPLY_TRUTH_LONG=1, or `make
// truth-soak` (SQLite). -truth.seed=N or KRPLY_TRUTH_SEED=N repeats a
// run's workload and fault schedule; timing on a real control plane still
// varies between runs.
//
// The harness's waits (the journal catching up with the server, a sync, a
// baseline, the audit log) last as long as what they wait for makes
// progress: a wait gives up only after a minute without progress, or ten
// minutes in all, and then says what it waited for and how far it got, so
// that a busy machine slows a run without failing it.
// KRPLY_TRUTH_PATIENCE=<factor> scales both bounds for slower machines
// still. A failed run prints its seed, its mismatches (the first five of
// each kind, with the count of the others), where its journal and oracle
// were kept and the command that checks them again.
//
// # The rules
//
// Writes are sequential, so write order is commit order; the checker never
// compares resourceVersions, which stay opaque. For each stream:
//
//   - The journal is cut into segments of continuity: a complete baseline,
//     the watch events after it, and the gap or loss of availability that
//     ended it. A version is expected in the segment whose baseline ended
//     before the write was issued; inside a segment the recorded versions
//     must be contiguous in write order. A missing version is excused only
//     when it comes after the last one its segment recorded and the segment
//     ended with a loss: it lies inside that gap. A gap must start no later
//     than the stream's last durable record before it.
//   - Every watch event is an oracle version — same object, UID,
//     resourceVersion, watch type and body — recorded once, and committed
//     after the list its segment started from.
//   - Every baseline item is an oracle version not superseded before the
//     list began; every object settled from before the list began until
//     after it ended is in the baseline, as it was.
//   - Every inferred deletion is a real deletion inside the gap its
//     baseline closed, bounded by that gap's start (or earlier) and the
//     baseline's end; every deletion inside a gap of an object the journal
//     held alive is inferred (except when the name was re-created in the
//     same gap: the relist then shows the new UID, as the watch package
//     documents).
//   - At each quiescent point every stream is covered, ObjectAt of every
//     object ever written — deleted and re-created ones included — equals
//     the oracle's last version, and a snapshot of the whole scope is
//     Complete and holds exactly the oracle's live objects, bodies included.
//   - A snapshot at a time inside a gap is not Complete and names the
//     stream.
//   - At random times, for every stream covered then, ObjectAt equals the
//     last version, in write order, that the journal had observed by then.
//
// The rules of the seams, over the whole journal:
//
//   - Never-flips: every snapshot saved Complete (by any process, at any
//     time) is Complete when computed again at the end for the same scope
//     and time, and holds the same objects (UID and resourceVersion); every
//     replay plan saved Complete still is, and each object it rebuilds is
//     still in the snapshot of its source time.
//   - Not yet observed: a snapshot or plan saved Complete had, for every
//     stream of its scope, durable evidence of continuity (an event, a
//     checkpoint or a baseline end) observed after its time and before it
//     was made. A snapshot of now taken after a recorder stopped or was
//     killed is therefore never Complete.
//   - Saved once: every snapshot and plan a process reported saving is in
//     the journal as it was saved (time, Complete, objects; a plan's hash);
//     no plan preview is; and the journal holds no snapshot or plan that
//     nobody saved (a query that wrote).
//   - A baseline that never ended (its recorder was killed mid-list) is
//     invisible: none of its items shows in an object's history, in
//     LatestAt, AliveAt or EventByResourceVersion, in ObjectAt or a
//     snapshot, or as the target of an audit correlation; and no history
//     shows a version twice as a baseline item of one stream without a loss
//     of continuity in between.
//   - Attribution: every audit correlation of a workload write links it to
//     a record of the very version it made (object, UID, resourceVersion;
//     its deletion for a delete) and names the user who made it; an exact
//     link (confidence 1) is only to a real watch event, never to a
//     baseline item or an inferred deletion; an audit event is linked at
//     most once, and a watch event exactly to at most one audit event; and
//     once the whole log was ingested, every version recorded as a watch
//     event is linked exactly to it. A version the journal shows only
//     through a relist may be linked to that record, labelled, or to
//     nothing; a version lost in a gap is linked to nothing.
//
// ObservedAt is when the Collector saw a change, not when the server made
// it, so the server's state at an arbitrary time is not what a correct
// journal shows then. The checker therefore compares exact state only at
// quiescent points, where the workload paused until the journal had caught
// up; at random times it checks the materializer's reading of the journal
// against write order (no resurrected, stale or out-of-order version).
//
// # What it does not prove
//
// A version that the Collector dropped just before a gap, with no later
// version of its stream recorded in between, is indistinguishable from one
// lost in the gap without comparing resourceVersions; so is one committed
// while the relist's list ran. Deleted objects are matched to DELETED
// events by UID: the server answers most deletes with a Status, so the
// deleted state is the version the delete was preconditioned on, and its
// resourceVersion is the deletion's, known only from the watch. Objects
// have no finalizers, and Services are headless, so deletes are immediate
// and re-creates never exhaust the service IP range.
//
// Never-flips is checked for the snapshots and plans that were saved, at
// the times the workload, the faults and the querying processes happened
// to save them, not for every time. Attribution is checked at the
// RequestResponse level only, where every write's response names its
// version; the best-effort rule for logs without bodies is the audit
// package's own tests' business. A baseline killed mid-list is checked
// for the stream it was killed on, the big namespace's ConfigMaps, and
// wherever else a recorder happened to be killed or a relist abandoned.
//
// # Concurrency and Close
//
// An Oracle is safe for concurrent use. Check only reads the store; it
// starts no goroutines and does not close the store, which its caller owns.
package truth
