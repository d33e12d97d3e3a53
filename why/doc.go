// Package why answers "what changed before this broke": given an object
// and a time T, it returns one causal timeline across the object's
// dependencies — the dependency graph as it was at T, every change to it
// in a window around T with who made it, the status transitions, the
// Kubernetes Events about it, the changes ranked as candidate causes with
// their reasons in words, and, for every stream it read, whether the
// journal was complete over the window and which gaps limit the answer.
//
//	ex, err := why.New(store)
//	a, err := ex.Explain(ctx, why.Query{Object: storage.ObjectID{
//		ClusterID: "prod", Resource: "pods", Namespace: "shop", Name: "web-7d4b9-x2x8k"}})
//	// a.Candidates[0] is the likeliest cause; a.Complete says whether a
//	// change may be missing, a.Coverage where.
//
// Query and Answer are plain data with JSON tags: the query API, the
// kubectl plugin and other callers send and show them as they are.
//
// # T and the window
//
// T is Query.At, or else the object's first bad transition in the journal
// (Answer.Bad), or else — when the journal holds none — its latest change,
// with a warning saying so. The window runs from T − Before (default one
// hour) or Query.From to T + After (default five minutes). Changes after T
// are in the timeline, never candidates.
//
// A transition is bad when a container turns waiting with CrashLoopBackOff,
// ImagePullBackOff, ErrImagePull, CreateContainerConfigError,
// CreateContainerError, InvalidImageName, RunContainerError, or terminated
// with OOMKilled, Error, ContainerCannotRun, DeadlineExceeded (its state or
// its last termination); a Pod's phase turns Failed; PodScheduled turns
// False with Unschedulable; Progressing turns False with
// ProgressDeadlineExceeded; ReplicaFailure, MemoryPressure, DiskPressure,
// PIDPressure or NetworkUnavailable turn True; any other condition (Ready,
// Available, ContainersReady, …) leaves True. A condition first reported
// False (a Pod starting) is not a bad transition.
//
// # The dependency graph
//
// The graph is walked from the object through the versions alive at T (not
// now), and each Edge says why it exists:
//
//   - owner: metadata.ownerReferences, up from the object (Pod → ReplicaSet
//     → Deployment, Job → CronJob, any owner kind) and down from it to the
//     ReplicaSets, Pods and Jobs it owns at T;
//   - references: from a Pod or a workload's pod template, the ConfigMaps
//     and Secrets of volumes, projected volumes, envFrom and env valueFrom
//     (with the keys read one by one), imagePullSecrets, the
//     ServiceAccount (a Pod's "default" when none is named), PVCs (then
//     their PersistentVolume and StorageClass), the Node of spec.nodeName,
//     the PriorityClass and the RuntimeClass;
//   - selects: the Services, NetworkPolicies and PodDisruptionBudgets of
//     the namespace whose selector matches the pod labels, and the
//     HorizontalPodAutoscalers whose scaleTargetRef names a workload;
//   - schedulable-on: for a Pod not yet on a Node, the Nodes its
//     nodeSelector allows.
//
// Limits: affinity, tolerations, topology spread and the NetworkPolicies
// that select a Pod as a peer are not followed; objects of custom kinds are
// followed only as owners (their resource guessed as the lower-case plural
// of the kind); a resource no stream records cannot be seen
// (Answer.NotRecorded, and the answer is not Complete); the walk stops at
// Query.MaxObjects objects (default 300) and Answer.Cut says what it left
// out.
//
// # Changes, who and Events
//
// Every version of a graph object in the window is a Change, with its
// field changes and status transitions (conditions, container states and
// restart counts, phase). Who made it is the audited user where an audit
// log was correlated (package audit), else the field manager the object's
// managedFields name — a client name, never a user. A user "system:…"
// (except system:admin) or a manager named kube-…, kubelet or …controller
// counts as a controller; a user otherwise, or a manager kubectl…, helm or
// k9s, as a person. A change the journal saw only through a relist after a
// gap (Origin baseline or inferred) happened somewhere in Change.Between,
// not at ObservedAt. A Secret's data, stringData and last-applied
// annotation show as a hash of each value (sha256:…), with their key
// names, unless Query.SecretValues asks for the values — which a journal
// has only when recorded with watch.KeepSecretValues. Events (core/v1 and
// events.k8s.io/v1) whose involved object is in the graph are listed once
// per Event object; Answer.EventsRecorded is false when no stream records
// Events in the namespace.
//
// # Ranking
//
// A change before T is a candidate unless it is a symptom: a status-only
// change of the object, its owners or what it owns, or a controller
// creating one of them. Its score is the sum of four rules, each stated in
// the candidate's Reasons:
//
//   - what changed (0–40): 40 when the changed field can affect the object
//     — a key it reads of a ConfigMap or Secret (any key when it reads the
//     whole object), a referenced object deleted, the pod template or an
//     image of a workload in its owner chain, the taints or schedulability
//     of its Node, a status transition of a dependency turning bad; 30 for
//     a write to a Secret whose values the journal redacted (which key
//     changed is unknown); 15 for another change of spec or data, or a
//     creation or deletion; 5 for a change of metadata only or of keys it
//     does not read;
//   - when (0–30): 30 × (1 − time before T ÷ window before T);
//   - where (5–20): 20 for the object itself or one edge away, 10 for two,
//     5 for more;
//   - who (0–10): 10 for a person, 5 when unknown, 0 for a controller.
//
// Ties go to the later change. At most 50 candidates are returned.
//
// # Coverage
//
// Each stream the answer read (those that record a graph object's
// resource in its namespace, and the Event streams) has a StreamCoverage:
// covered over [From, T] when it was covered at From (storage.CoverageAt),
// no gap or loss of availability began between From and T, and its
// evidence reaches past T; its Gaps are every loss that intersects the
// window. Answer.Complete is true only when every such stream is covered,
// every resource the walk needed is recorded and Events are recorded. When
// it is false every candidate carries a caveat: a change the journal does
// not hold could rank above it.
//
// # Guarantees and limits
//
//   - Reads never write: Explain only reads the journal, and a journal
//     opened read-only serves it.
//   - Evidence is read before timelines and timelines before records, as
//     materialize does, so an answer reported Complete stays so.
//   - ObservedAt is when the collector saw a change, not when the server
//     made it; Events carry their own times besides.
//   - The ranking is a heuristic stated in words; it orders what the
//     journal holds and never invents a cause it did not see.
//
// # Concurrency and Close
//
// An Explainer is safe for concurrent use and starts no goroutines. It
// does not own the store: the caller that opened it closes it.
package why
