package materialize

import (
	"encoding/json"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// Scope selects the objects of a snapshot or a diff: one cluster, optionally
// restricted to namespaces and resources.
type Scope struct {
	// ClusterID names the cluster. Required.
	ClusterID string `json:"clusterID"`
	// Namespaces restricts the scope to these namespaces. Empty means every
	// namespace and cluster-scoped objects; when set, cluster-scoped objects
	// are left out.
	Namespaces []string `json:"namespaces,omitempty"`
	// Resources restricts the scope to these group/resources. Empty means
	// every resource the journal recorded for the cluster.
	Resources []schema.GroupResource `json:"resources,omitempty"`
}

// SnapshotObject is one object alive at a snapshot's time: the body of its
// last version at or before that time.
type SnapshotObject struct {
	Ref        event.ResourceRef `json:"ref"`
	StreamID   string            `json:"streamID"`
	EventID    string            `json:"eventID"`
	ObservedAt time.Time         `json:"observedAt"`
	// Synthetic is true when the version came from a baseline (a list)
	// rather than a watch event.
	Synthetic bool `json:"synthetic,omitempty"`
	// Object is the body as received.
	Object json.RawMessage `json:"object"`
}

// Watermark is how far one stream's journal reached at a snapshot's time.
type Watermark struct {
	StreamID string `json:"streamID"`
	// ResourceVersion is the stream's last progress resourceVersion at or
	// before the snapshot's time (an event, a checkpoint or a baseline end).
	// It is opaque and comparable only within the stream.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// ObservedAt is when that progress was observed.
	ObservedAt time.Time `json:"observedAt"`
	// Covered is true when the stream's journal is complete at the time.
	Covered bool `json:"covered"`
}

// MissingStream is a part of a scope the journal cannot answer for at a
// time: a stream that is not covered, or a requested resource or namespace
// no stream records.
type MissingStream struct {
	// StreamID is empty when no stream records the resource at all.
	StreamID string `json:"streamID,omitempty"`
	// Reason says why, e.g. "gap from ...: 410 Gone".
	Reason string `json:"reason"`
	// Resource and Namespace say which part of the scope is missing when
	// no stream exists for it.
	Resource  schema.GroupResource `json:"resource,omitempty"`
	Namespace string               `json:"namespace,omitempty"`
}

// Snapshot is the state of a scope at a time, with how far it can be
// trusted. Materializer.Snapshot computes one; SaveSnapshot saves it in the
// journal as a TypeSnapshot record.
//
// Its JSON form (docs/reference/wire-schema.md) is the document a saved snapshot keeps
// in the journal: a field is added, omitted when zero, and never renamed.
type Snapshot struct {
	// ID is the snapshot's EventID in the journal, empty until it is
	// saved; Name is the caller's, given to SaveSnapshot.
	ID   string `json:"id,omitempty"`
	Name string `json:"name,omitempty"`
	// Scope is what was asked for.
	Scope Scope `json:"scope"`
	// At is the time the snapshot describes; CreatedAt when it was
	// computed.
	At        time.Time `json:"at"`
	CreatedAt time.Time `json:"createdAt"`
	// Complete is true only when every contributing stream is covered at At
	// and no requested part of the scope is missing.
	Complete bool `json:"complete"`
	// Watermarks has one entry per contributing stream, ordered by stream ID.
	Watermarks []Watermark `json:"watermarks"`
	// Missing lists what is not covered at At.
	Missing []MissingStream `json:"missing,omitempty"`
	// Warnings are human-readable notes about the answer.
	Warnings []string `json:"warnings,omitempty"`
	// Objects are the objects alive at At, sorted by group, resource,
	// namespace and name. ListSnapshots leaves it empty.
	Objects []SnapshotObject `json:"objects,omitempty"`
	// Next is set on a page of a snapshot (SnapshotPage) when more
	// objects may follow: the last object of the page, to give as the
	// next Page's After. It is no part of the JSON: the query API carries
	// it in its cursor.
	Next *storage.ObjectID `json:"-"`

	// partial: a page that lacks some objects of the snapshot (SnapshotPage
	// with an After or a Next); SaveSnapshot refuses it.
	partial bool
}

// ChangeOp says how a field changed.
type ChangeOp string

// The kinds of field change. Together with Before and After they tell an
// absent field from a null one: an added field has no Before, a removed one
// no After, and a replaced null has Op replace with a nil Before or After.
const (
	OpAdd     ChangeOp = "add"
	OpRemove  ChangeOp = "remove"
	OpReplace ChangeOp = "replace"
)

// FieldChange is one changed field between two versions of an object.
type FieldChange struct {
	// Path names the field, e.g. "spec.replicas",
	// `metadata.annotations["example.com/x"]` or
	// "spec.template.spec.containers[name=app].image". Items of lists with
	// a known merge key are named by that key, others by index.
	Path string `json:"path"`
	// Op is add (Before absent), remove (After absent) or replace.
	Op ChangeOp `json:"op"`
	// Before and After are decoded JSON values: nil (JSON null), bool,
	// string, json.Number, []any or map[string]any. They are nil when
	// absent; Op tells absent from null.
	Before any `json:"before,omitempty"`
	After  any `json:"after,omitempty"`
	// FieldManager is the field manager that the object's managedFields
	// say changed this field (History only; nil elsewhere and where
	// managedFields do not tell): a client name, not a user.
	FieldManager *FieldManager `json:"fieldManager,omitempty"`
}

// Coverage is re-exported so callers of this package need not import
// storage for the coverage of a stream at a time.
type Coverage = storage.Coverage
