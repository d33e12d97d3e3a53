package status

import (
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/event"
)

// StreamState is what a stream is doing.
type StreamState string

// The states of a stream.
const (
	// StateStarting: reading the stream's durable state from the store.
	StateStarting StreamState = "starting"
	// StateListing: taking a baseline.
	StateListing StreamState = "listing"
	// StateWatching: a watch is open.
	StateWatching StreamState = "watching"
	// StateBackoff: waiting to retry after a failure.
	StateBackoff StreamState = "backoff"
	// StateUnavailable: the server denies or does not serve the resource
	// (403, 404); retrying with backoff.
	StateUnavailable StreamState = "unavailable"
	// StatePending: a configured resource the server does not serve yet.
	StatePending StreamState = "pending"
	// StateStopped: the stream ended (Start returned).
	StateStopped StreamState = "stopped"
	// StateRemoved: the stream ended because the API server no longer
	// serves its resource (watch.WithAllResources: a CRD was deleted); its
	// journal says so with a coverage change. It starts again if the
	// resource comes back.
	StateRemoved StreamState = "removed"
)

// StreamStatus is the state of one stream as the Collector (package watch)
// sees it.
type StreamStatus struct {
	StreamID string       `json:"streamID"`
	Stream   event.Stream `json:"stream"`
	Resource Resource     `json:"resource"`
	State    StreamState  `json:"state"`
	// Synced is true once the stream had a complete baseline or resumed its
	// watch from the durable checkpoint.
	Synced bool `json:"synced"`
	// Covered is true while the journal is continuous for the stream, and
	// CoveredSince is the end of the baseline coverage rests on (zero when
	// not covered). A time is covered (storage.Coverage) only once the
	// stream also has evidence after it: see LastDurableAt.
	Covered      bool      `json:"covered"`
	CoveredSince time.Time `json:"coveredSince,omitzero"`
	// LastResourceVersion is the last durable resourceVersion and
	// LastDurableAt the ObservedAt of the record that carried it: how far
	// the stream's durable evidence of continuity reaches (an event, a
	// bookmark, a progress checkpoint or a baseline end; see
	// storage.Coverage and watch.Collector.WaitForProgress).
	LastResourceVersion string    `json:"lastResourceVersion,omitempty"`
	LastDurableAt       time.Time `json:"lastDurableAt,omitzero"`
	// Gaps counts the stream's gap records in the journal.
	Gaps int `json:"gaps"`
	// Degraded is true when the stream is not recording right now
	// (unavailable, failing, pending), with the reason.
	Degraded       bool   `json:"degraded"`
	DegradedReason string `json:"degradedReason,omitempty"`
	// Events and Bytes count the object-change records and body bytes made
	// durable since Start; Baselines the baselines completed since Start,
	// and Relists those of them taken over an earlier history (after a
	// gap, an outage, or a restart that could not resume).
	Events    int64 `json:"events"`
	Bytes     int64 `json:"bytes"`
	Baselines int   `json:"baselines"`
	Relists   int   `json:"relists"`
}

// Resource is a resolved API resource: what one or more streams record.
type Resource struct {
	Group      string `json:"group,omitempty"`
	Version    string `json:"version"`
	Resource   string `json:"resource"`
	Kind       string `json:"kind"`
	Namespaced bool   `json:"namespaced"`
}

// GVR returns the resource's group, version and resource.
func (r Resource) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
}

// GroupResource returns the resource's group and resource.
func (r Resource) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.Group, Resource: r.Resource}
}

// String returns "resource.group" ("configmaps" for the core group).
func (r Resource) String() string { return r.GroupResource().String() }
