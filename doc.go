// Package krply keeps a gap-aware history of Kubernetes objects and plans
// safe replays of it. Kubernetes itself keeps no history: an object shows
// only its current state, Events expire, and audit logs say who called the
// API but not what the object looked like. krply lists and watches the
// resources you choose, keeps every change in a journal, and answers — always
// together with how far the answer can be trusted:
//
//  1. What did object X look like at time T, what changed, when, by whom?
//  2. What did a namespace look like at T, and is that picture complete?
//  3. What changed between T1 and T2?
//  4. Can that past state be rebuilt in a sandbox, safely?
//
// # Record → reconstruct → replay
//
// Record: a Collector (package watch) lists each resource (a baseline) and
// watches it from the list's resourceVersion, appending every change to a
// journal (package storage; SQLite in storage/sqlite, in-memory in
// storage/memory). When continuity is lost — a 410 Gone, an outage, a 403 —
// it writes a gap, relists, and records objects that vanished meanwhile as
// inferred deletions. Audit logs (package audit) add who made each change.
//
// Reconstruct: a Materializer (package materialize) answers ObjectAt, History,
// Snapshot and Diff from the journal, each with its coverage: per-stream
// watermarks, gaps, and whether the answer is complete. An object whose state
// is unknown at an end of a diff's window is said to be unknown there, never
// added or removed.
//
// Replay: a Planner (package replay) turns a snapshot into a plan of
// sanitized objects — server-owned fields removed, Secrets, RBAC, Pods and
// other risky kinds excluded with a reason — mapped into a target namespace;
// once the plan is saved it dry-runs it server-side, and applies it only with
// an explicit confirmation of that saved plan, never forcing and never
// deleting.
//
// # The consistency model in six lines
//
//   - Order holds within one stream (cluster, resource, namespace, selector),
//     not across streams; resourceVersions are opaque (compared only, on a
//     relist, in the API server's own integer form).
//   - ObservedAt is when krply saw a change, not when it happened.
//   - Ingestion is at-least-once with de-duplication by EventID.
//   - A time is covered for a stream when a complete baseline precedes it and
//     no gap lies between; a snapshot is Complete only if every stream is.
//   - Nothing is claimed beyond coverage: gaps are recorded, never hidden.
//   - Reads never write: a query (ObjectAt, History, Snapshot, Diff, a plan)
//     leaves the journal as it was; SaveSnapshot, SavePlan, DryRun and Apply
//     are the explicit acts that write.
//
// # This package
//
// Journal bundles a store with the queries and the replay planner, and
// makes Collectors writing to it, all configured by one set of Options.
// Embedding a Collector and querying the journal takes this package alone:
//
//	j, err := krply.Open(ctx, "krply.db", krply.WithResources("deploy", "cm"), krply.WithNamespaces("shop"))
//	if err != nil {
//		return err
//	}
//	defer j.Close() // runs last: after the Collector has stopped
//	rec, err := j.NewCollectorForConfig(restConfig) // j.NewCollector(dyn, disc) for clients you made
//	if err != nil {
//		return err
//	}
//	ctx, stop := context.WithCancel(ctx)
//	done := make(chan error, 1)
//	go func() { done <- rec.Start(ctx) }() // blocks until ctx ends; or mgr.Add(rec)
//	defer func() { stop(); <-done }()      // stop the Collector and wait for its last commit
//	if err := rec.WaitForSync(ctx); err != nil {
//		return err
//	}
//	hist, err := j.History(ctx, krply.Object(rec.ClusterID(), "deployments.apps", "shop", "web"))
//	snap, err := j.Snapshot(ctx, krply.Namespaces(rec.ClusterID(), "shop"), time.Now())
//
// Example runs exactly this on a client-go fake. Replaying needs no other
// import either: the package has an alias for every type its API names
// (Cluster, Confirmation, DryRunReport, …):
//
//	plan, err := j.Plan(ctx, krply.Source{ClusterID: rec.ClusterID(), Namespaces: []string{"shop"}, At: t},
//		krply.Target{Namespaces: map[string]string{"shop": "shop-restore"}})
//	err = j.SavePlan(ctx, plan) // a plan is a preview until saved; DryRun and Apply take saved plans
//	sandbox, err := krply.NewClusterForConfig(sandboxConfig)
//	report, err := j.DryRun(ctx, plan, sandbox)
//	applied, err := j.Apply(ctx, plan, sandbox, krply.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash})
//
// The Journal's methods forward to a materialize.Materializer and a
// replay.Planner (Materializer and Planner return them). The subpackages
// never import this one; use them directly for anything beyond these
// shortcuts.
//
// # Guarantees and limits
//
// This package adds no behaviour of its own: every guarantee is the
// subpackages'. It does not run the Collector for you (Start blocks; run it
// in a goroutine or a controller manager) and it does not rotate or compact
// the journal (Store().Compact does).
//
// # Concurrency and Close
//
// A Journal is safe for concurrent use. Close it after every Collector it
// made has returned from Start; it closes the store only when Open
// opened it — a store passed to NewJournal stays the caller's to close.
//
// # Stability
//
// krply is at 0.x (Version). Until 1.0 a minor release may rename, remove or
// change exported identifiers, and a new version of the wire schema may
// rename JSON fields; a patch release changes neither, and additions may
// come in any release. Nothing changes by accident: make test checks the
// record of the exported API (api/krply.txt), the golden files of the JSON
// wire schema (docs/reference/wire-schema.md) and the journal file format fixtures
// (storage/sqlite/testdata/format), so a change fails until its record is
// updated in the same commit. The journal file is kept longest: every
// change to its format ships a new schema version and a migration, proven
// against the fixtures of every earlier version, and a journal written
// today opens in every later krply.
//
// # Where to go next
//
//   - examples/: record, snapshot, history, diff, replay, a controller-runtime
//     manager with Prometheus metrics, and a downstream unit test.
//   - krplytest: a fake cluster recorded by a real Collector, with assertions,
//     for the unit tests of projects that use krply.
//   - `make demo`: the whole story on a local kube-apiserver, gap included.
package krply
