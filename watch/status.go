package watch

import (
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/krply/krply/watch/status"
)

// StreamState is what a stream is doing (see package watch/status, which
// declares it so that a program reading statuses need not link the
// Collector).
type StreamState = status.StreamState

// The states of a stream.
const (
	// StateStarting: reading the stream's durable state from the store.
	StateStarting = status.StateStarting
	// StateListing: taking a baseline.
	StateListing = status.StateListing
	// StateWatching: a watch is open.
	StateWatching = status.StateWatching
	// StateBackoff: waiting to retry after a failure.
	StateBackoff = status.StateBackoff
	// StateUnavailable: the server denies or does not serve the resource
	// (403, 404); retrying with backoff.
	StateUnavailable = status.StateUnavailable
	// StatePending: a configured resource the server does not serve yet.
	StatePending = status.StatePending
	// StateStopped: the stream ended (Start returned).
	StateStopped = status.StateStopped
	// StateRemoved: the stream ended because the API server no longer
	// serves its resource (WithAllResources: a CRD was deleted); its
	// journal says so with a coverage change. It starts again if the
	// resource comes back.
	StateRemoved = status.StateRemoved
)

// StreamStatus is the state of one stream as the Collector sees it (see
// package watch/status for its fields).
type StreamStatus = status.StreamStatus

func canonicalLabels(s string) string {
	sel, err := labels.Parse(s)
	if err != nil {
		return s
	}
	return sel.String()
}

func canonicalFields(s string) string {
	sel, err := fields.ParseSelector(s)
	if err != nil {
		return s
	}
	return sel.String()
}
