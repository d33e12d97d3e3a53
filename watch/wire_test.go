package watch_test

import (
	"testing"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/testing/wiretest"
	"github.com/krply/krply/watch"
)

// TestWireStreamStatus pins the JSON form of the Collector's per-stream
// status (testdata/wire/collector.json).
func TestWireStreamStatus(t *testing.T) {
	stream := event.Stream{ClusterID: "c1", Group: "apps", Version: "v1", Resource: "deployments", Namespace: "shop", Selector: "labels:app=web;fields:"}
	wiretest.Check(t, "collector", map[string]any{
		"stream status": watch.StreamStatus{
			StreamID: stream.ID(), Stream: stream,
			Resource: watch.Resource{Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true},
			State:    watch.StateBackoff, Synced: true,
			Covered: true, CoveredSince: wiretest.At(1),
			LastResourceVersion: "42", LastDurableAt: wiretest.At(2),
			Gaps: 1, Degraded: true, DegradedReason: "watch failed: connection refused; retrying in 2s",
			Events: 17, Bytes: 20480, Baselines: 2, Relists: 1,
		},
		"enums": wiretest.Enums(t, watch.StreamState("")),
	})
}
