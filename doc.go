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
// # The consistency model in five lines
//
//   - Order holds within one stream (cluster, resource, namespace, selector),
//     not across streams; resourceVersions are opaque and never compared.
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
// Journal bundles a store with the Materializer's queries and the Planner,
// and Record makes a Collector writing to it, all configured by one set of
// Options:
//
//	j, err := krply.Open(ctx, "krply.db", krply.WithResources("deploy", "cm", "svc"), krply.WithNamespaces("shop"))
//	if err != nil {
//		return err
//	}
//	defer j.Close()
//	rec, err := j.Record(restConfig)
//	if err != nil {
//		return err
//	}
//	go rec.Start(ctx) // blocks until ctx ends; or mgr.Add(rec)
//	if err := rec.WaitForSync(ctx); err != nil {
//		return err
//	}
//	hist, err := j.History(ctx, krply.Object(rec.ClusterID(), "deployments.apps", "shop", "web"))
//	plan, err := j.Plan(ctx, krply.Source{ClusterID: rec.ClusterID(), Namespaces: []string{"shop"}, At: t},
//		krply.Target{Namespaces: map[string]string{"shop": "shop-restore"}})
//	err = j.SavePlan(ctx, plan) // a plan is a preview until saved; DryRun and Apply take saved plans
//
// The subpackages never import this one; use them directly for anything
// beyond these shortcuts.
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
// A Journal is safe for concurrent use. Close it after every Collector made
// by Record has returned from Start; it closes the store only when Open
// opened it — a store passed to NewJournal stays the caller's to close.
//
// # Where to go next
//
//   - examples/: record, snapshot, history, diff, replay, a controller-runtime
//     manager with Prometheus metrics, and a downstream unit test.
//   - krplytest: a fake cluster recorded by a real Collector, with assertions,
//     for the unit tests of projects that use krply.
//   - `make demo`: the whole story on a local kube-apiserver, gap included.
package krply
