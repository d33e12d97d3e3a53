// Package replay rebuilds a recorded state of Kubernetes objects in a
// sandbox namespace or cluster, safely: it plans, dry-runs on the server,
// and applies only what was reviewed. It never re-sends old events; it
// rebuilds declarative state.
//
// # The flow
//
//	planner, _ := replay.NewPlanner(store, replay.WithPolicy(policy))
//	plan, _ := planner.Plan(ctx, replay.Source{ClusterID: id, Namespaces: []string{"shop"}, At: t},
//		replay.Target{Namespaces: map[string]string{"shop": "shop-sandbox"}})
//	yaml, _ := plan.YAML()                       // review it; kubectl accepts it too
//	err := planner.SavePlan(ctx, plan)           // keep the reviewed plan
//	target, _ := replay.NewClusterForConfig(cfg)
//	report, _ := planner.DryRun(ctx, plan, target)
//	applied, err := planner.Apply(ctx, plan, target,
//		replay.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash})
//
// Plan materializes the source (a snapshot at a time, or a saved snapshot;
// see the materialize package), refuses a snapshot that is not Complete
// unless Policy.AllowGaps (and then every object from an uncovered stream
// carries a warning), leaves out the kinds of DefaultExclusions with their
// reasons, sanitizes and maps every other object, and orders them (see
// TierOf). Plan only reads the journal: the plan is a preview. SavePlan
// saves it as a TypePlan record, an explicit act; LoadPlan reads it back in
// another process, with its hash checked.
//
// # Where the types live
//
// The data of a replay — Plan and what it holds, DryRunReport, ApplyReport,
// Confirmation, Identity, their enums and ErrInvalidPlan — is declared in
// the replay/replayapi package and re-exported here as aliases
// (replay.Plan is replayapi.Plan), so this package's callers need only
// replay. A program that only reads plans and reports, such as the
// server's Go client, imports replayapi and does not link this package's
// dry-run and apply path or the client-go clients it writes through.
//
// # Reads and acts
//
// Plan and LoadPlan are queries: they work on a journal opened read-only
// and change nothing. SavePlan, DryRun and Apply are acts that write to
// the journal — the plan, the dry-run reports Apply relies on, the apply
// reports — and on a journal opened read-only they return an error
// wrapping ErrReadOnly (storage.ErrReadOnly); Apply then writes nothing to
// the cluster. DryRun and Apply accept only a saved plan: the journal must hold a
// plan with the same ID and hash (*UnsavedPlanError otherwise), so the plan
// dry-run and applied is the plan reviewed.
//
// # Sanitizing
//
// Exactly these fields are removed, and nothing else, so fields of unknown
// CRDs survive: metadata uid, resourceVersion, creationTimestamp,
// generation, managedFields, deletionTimestamp and selfLink; status;
// metadata.ownerReferences (unless Policy.KeepOwnerReferences);
// metadata.finalizers not in Policy.AllowFinalizers; the annotation
// kubectl.kubernetes.io/last-applied-configuration and the annotations the
// target's own controllers write (deployment.kubernetes.io/revision,
// deprecated.daemonset.template.generation); a Service's
// spec.clusterIP and spec.clusterIPs (unless Policy.KeepClusterIPs; a
// headless Service's "None" stays) and its node ports, spec.ports[*].nodePort
// and spec.healthCheckNodePort (unless Policy.KeepNodePorts); and the
// caller's Policy.StripPaths. Object.Removed lists what was removed.
// Mapping then sets the target namespace (and, for a renamed Namespace, its
// kubernetes.io/metadata.name label) and names, and AnnotationSource: the
// recorded version the object comes from. Nothing of the plan's own (its
// ID, its time) goes into an object, so a later plan of state the target
// already holds dry-runs as "unchanged" and its apply writes nothing: the
// server keeps every resourceVersion.
//
// Replaying a controller's annotation would make krply co-own a field the
// target's controller keeps rewriting, and the next replay would conflict
// with it; that is why those are removed. Strip other controller-written
// fields with Policy.StripPaths.
//
// # Dry run, namespaces and apply
//
// DryRun sends each object as a server-side apply with dryRun=All and
// force=false, as a field manager that is stable per target
// (DefaultFieldManager, or FieldManager; WithPerPlanFieldManager makes it
// "krply-plan-<id>"), so replaying a later plan into the same sandbox
// updates krply's own fields instead of conflicting with its earlier
// replay. Per object it reports create, change (with field changes),
// unchanged, conflict (the other managers and fields, from the 409) or
// error. The plan is StatusDryRunOK only when the server validated every
// object and all are clean.
//
// An object whose target namespace does not exist cannot be validated and is
// never counted as OK. The plan always contains the namespaces it writes to
// (the recorded Namespace, or a bare one), ordered first; when nothing else
// is wrong the status is StatusDryRunNeedsNamespaces. Apply then creates
// those namespaces first, dry-runs every other object again, and stops —
// having written only the namespaces — unless that second dry run is clean.
// Mapping into a namespace that already exists applies the plan's Namespace
// to it too: krply then co-owns the labels and annotations that Namespace
// carries (and AnnotationSource).
//
// Apply refuses without a Confirmation naming the plan's ID and hash; a plan
// the journal does not hold with that ID and hash; unless the newest dry
// run of the same plan (same hash) against the same cluster with the same
// field manager was clean (or needed only the plan's namespaces) and is
// younger than the max dry-run age; and into the source cluster unless
// Policy.AllowSourceCluster. A cluster's identity is its
// kube-system namespace UID, the Collector's default cluster ID (name it
// with WithClusterID when the Collector was given another ID). Apply dry-runs
// again right before writing, never forces, never deletes, and stops at the
// first failed write with an *ApplyError whose report says per object what
// was written; applying again is safe. Refusals are typed errors matching
// ErrRefused: *ConfirmationRequiredError, *CoverageIncompleteError,
// *DryRunNotCleanError, *SourceClusterError, *StalePlanError,
// *UnsavedPlanError, *WrongTargetError. Every dry-run and apply report is
// saved in the journal.
//
// # What it does not do
//
// It does not wait for or claim convergence: an applied Deployment is
// accepted by the API server, not running. It does not rewrite references
// between objects when Target.Names renames them, does not replay
// subresources (status, scale), and does not delete objects in the target
// that the source lacks.
//
// # Concurrency and Close
//
// Planner and Cluster are safe for concurrent use and start no goroutines.
// Dry-running or applying the same plan from two goroutines at once is safe
// for the cluster (server-side apply is idempotent) but makes both reports
// describe interleaved writes. Neither needs Close; the caller that opened
// the store closes it.
package replay
