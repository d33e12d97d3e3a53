package why

import (
	"time"

	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
)

// Query is one question: what changed before Object went bad. Its JSON
// form is what the query API and other callers send; zero fields take the
// defaults.
type Query struct {
	// Object is the object that broke. ClusterID, Resource and Name are
	// required; Group and Namespace as the object has them.
	Object storage.ObjectID `json:"object"`
	// At is the moment the object broke (T). Zero means the object's first
	// bad transition in the journal (see Answer.AtSource).
	At time.Time `json:"at,omitzero"`
	// Before is how far before T the window starts (default one hour);
	// After how far after T it ends (default five minutes). Changes after T
	// are shown but are never candidates.
	Before time.Duration `json:"before,omitempty"`
	After  time.Duration `json:"after,omitempty"`
	// From, when set, is the window's start instead of T − Before; it
	// must not be after T.
	From time.Time `json:"from,omitzero"`
	// MaxObjects bounds the dependency graph (default 300). When it is
	// reached the walk stops and Answer.Cut says what was left out.
	MaxObjects int `json:"maxObjects,omitempty"`
	// SecretValues shows the values of Secrets' data instead of their
	// hashes, when the journal kept them (the Collector redacts them
	// unless told to keep them). Off by default.
	SecretValues bool `json:"secretValues,omitempty"`
}

// The sources of Answer.At.
const (
	// AtGiven: the caller gave T.
	AtGiven = "given"
	// AtFirstBad: T is the object's first bad transition in the journal.
	AtFirstBad = "first-bad-transition"
	// AtLatestChange: the object has no bad transition and no T was given;
	// T is its latest change, and the answer shows the changes before it.
	AtLatestChange = "latest-change"
)

// Answer is a causal timeline: the dependency graph of an object at T,
// every change to it in the window, the Events about it, the changes
// ranked as candidate causes, and how complete the journal was for each
// input.
type Answer struct {
	Object storage.ObjectID `json:"object"`
	// Kind is the object's kind, e.g. "Pod".
	Kind string `json:"kind,omitempty"`
	// At is T, and AtSource where it came from (AtGiven, AtFirstBad,
	// AtLatestChange).
	At       time.Time `json:"at"`
	AtSource string    `json:"atSource"`
	// From and To bound the window.
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
	// Bad is the object's first bad transition when one was found in the
	// journal, whatever T is.
	Bad *Transition `json:"bad,omitempty"`
	// Complete is true when every stream the answer read was covered over
	// [From, At] and Events were recorded: then no change to the graph's
	// objects before T is missing from Changes. When false, Coverage and
	// Warnings say what may be missing, and no candidate is certain.
	Complete bool `json:"complete"`
	// Candidates are the changes before T ranked as possible causes, best
	// first, each with its score and the reasons for it in words.
	Candidates []Candidate `json:"candidates,omitempty"`
	// Nodes and Edges are the dependency graph as it was at T.
	Nodes []Node `json:"nodes"`
	Edges []Edge `json:"edges,omitempty"`
	// Changes are every change in the window to the graph's objects, in
	// time order.
	Changes []Change `json:"changes,omitempty"`
	// Events are the Kubernetes Events about the graph's objects in the
	// window, in time order, one per Event object (its latest version).
	Events []KubeEvent `json:"events,omitempty"`
	// EventsRecorded is false when no stream of the journal records Events
	// in the object's namespace.
	EventsRecorded bool `json:"eventsRecorded"`
	// Coverage has one entry per stream the answer read.
	Coverage []StreamCoverage `json:"coverage"`
	// NotRecorded names the resources the graph walk would have read but no
	// stream records: edges of those kinds cannot be seen.
	NotRecorded []string `json:"notRecorded,omitempty"`
	// Cut says what the graph walk left out when MaxObjects was reached.
	Cut []string `json:"cut,omitempty"`
	// Warnings are human-readable notes about the answer.
	Warnings []string `json:"warnings,omitempty"`
}

// Node is one object of the dependency graph.
type Node struct {
	ID   storage.ObjectID `json:"id"`
	Kind string           `json:"kind,omitempty"`
	// Distance is the number of edges from the object asked about (0).
	Distance int `json:"distance"`
	// Exists is false when the object did not exist at T (it is in the
	// graph because something at T names it, e.g. a missing ConfigMap).
	Exists bool `json:"exists"`
	// Keys are the keys of a ConfigMap or Secret that the workload reads
	// one by one (env valueFrom); empty when it reads all of them or none.
	Keys []string `json:"keys,omitempty"`
}

// Edge is one dependency, from the object that depends (or is owned) to
// the one it depends on, with why it exists.
type Edge struct {
	From storage.ObjectID `json:"from"`
	To   storage.ObjectID `json:"to"`
	// Type is one of the EdgeTypes.
	Type string `json:"type"`
	// Reason says where the edge comes from, e.g.
	// "spec.volumes[name=config].configMap" or "spec.nodeName".
	Reason string `json:"reason"`
}

// The types of Edge.
const (
	EdgeOwner      = "owner"      // From's ownerReferences name To
	EdgeReferences = "references" // From's spec names To
	EdgeSelects    = "selects"    // To selects or targets From (Service, NetworkPolicy, PDB, HPA)
	EdgeSchedule   = "schedulable-on"
)

// ChangeKind says what a Change is.
type ChangeKind string

// The kinds of change.
const (
	ChangeCreated  ChangeKind = "created"
	ChangeModified ChangeKind = "modified"
	ChangeDeleted  ChangeKind = "deleted"
)

// Change is one version of a graph object in the window.
type Change struct {
	Object storage.ObjectID `json:"object"`
	Kind   string           `json:"kind,omitempty"`
	Type   ChangeKind       `json:"type"`
	// ObservedAt is when the collector saw the change, not when the object
	// changed on the server.
	ObservedAt time.Time `json:"observedAt"`
	EventID    string    `json:"eventID"`
	StreamID   string    `json:"streamID"`
	// Origin is "watch" for a change the server reported, "baseline" for a
	// state a relist found and "inferred" for a deletion a relist revealed:
	// then the change happened somewhere in Between, not at ObservedAt.
	Origin  materialize.Origin `json:"origin"`
	Between *Interval          `json:"between,omitempty"`
	// Fields are the changed fields. A Secret's data values are shown as
	// hashes (sha256:…), never as values, unless Query.SecretValues.
	Fields []materialize.FieldChange `json:"fields,omitempty"`
	// Transitions are the status transitions of this change.
	Transitions []Transition `json:"transitions,omitempty"`
	// Who made the change, when the journal knows.
	Who *Who `json:"who,omitempty"`
}

// Interval is a span of time.
type Interval struct {
	From time.Time `json:"from"`
	To   time.Time `json:"to"`
}

// Transition is one status transition: a condition, a container state, a
// phase.
type Transition struct {
	Object     storage.ObjectID `json:"object"`
	ObservedAt time.Time        `json:"observedAt"`
	// What names what changed: "condition Ready", "container app",
	// "phase".
	What string `json:"what"`
	From string `json:"from,omitempty"`
	To   string `json:"to"`
	// Reason is the condition's or the container state's reason, Message
	// its message.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Bad is true when To is a bad state (see the package documentation).
	Bad bool `json:"bad,omitempty"`
}

// Who says who made a change.
type Who struct {
	// User is the user of the audited request (with an audit log
	// ingested); Manager the field manager that managedFields name (a
	// client such as "kubectl-edit" or a controller, never a user).
	User    string `json:"user,omitempty"`
	Manager string `json:"manager,omitempty"`
	// Actor is "person", "controller" or "unknown", guessed from User or
	// Manager (see the package documentation).
	Actor string `json:"actor"`
}

// The actors of Who.
const (
	ActorPerson     = "person"
	ActorController = "controller"
	ActorUnknown    = "unknown"
)

// Candidate is a change ranked as a possible cause.
type Candidate struct {
	// Change is the index of the change in Answer.Changes.
	Change int `json:"change"`
	// Summary says in one line what changed.
	Summary string `json:"summary"`
	// Score is the sum of the rules' points (see the package
	// documentation); Reasons say each rule's part in words.
	Score   int      `json:"score"`
	Reasons []string `json:"reasons"`
	// Caveats say why the candidate is not certain: a gap that may hide a
	// better one, a time known only within a gap.
	Caveats []string `json:"caveats,omitempty"`
}

// KubeEvent is one Kubernetes Event about a graph object.
type KubeEvent struct {
	// Regarding is the object the Event is about.
	Regarding storage.ObjectID `json:"regarding"`
	Name      string           `json:"name"`
	// API is "core/v1" or "events.k8s.io/v1".
	API     string `json:"api"`
	Type    string `json:"type,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	Count   int64  `json:"count,omitempty"`
	// FirstSeen and LastSeen are the Event's own times; ObservedAt when
	// the collector saw its latest version.
	FirstSeen  time.Time `json:"firstSeen,omitzero"`
	LastSeen   time.Time `json:"lastSeen,omitzero"`
	ObservedAt time.Time `json:"observedAt"`
}

// StreamCoverage is how complete one input stream was over the window.
type StreamCoverage struct {
	StreamID string `json:"streamID"`
	// Resource is "resource.group" of the stream, Namespace its namespace
	// ("" for all namespaces or cluster scope).
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	// Covered is true when the stream was covered over [From, At]: a
	// complete baseline before From, no gap since, evidence past At.
	Covered bool `json:"covered"`
	// Reason says why not.
	Reason string `json:"reason,omitempty"`
	// Gaps are the losses of continuity that intersect the window.
	Gaps []Gap `json:"gaps,omitempty"`
	// EvidenceUntil is how far the stream's evidence reached.
	EvidenceUntil time.Time `json:"evidenceUntil,omitzero"`
}

// Gap is a loss of continuity of a stream: a change between From and To may
// be missing. To is zero when the stream had not recovered.
type Gap struct {
	From   time.Time `json:"from"`
	To     time.Time `json:"to,omitzero"`
	Reason string    `json:"reason"`
}
