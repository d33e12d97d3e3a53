package server_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/testing/wiretest"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/replay"
	"github.com/krply/krply/server"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/watch"
)

// TestWireServer pins the JSON form of the query API's own envelopes
// (testdata/wire/server.json): lists, errors, request bodies, change-feed
// events. What they hold is pinned by the library's families.
func TestWireServer(t *testing.T) {
	stream := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	gap := event.Record{Type: event.TypeGap, EventID: "3a1b2c3d4e5f60718293a4b5c6d7e8f9", IngestSeq: 7, ClusterID: "c1",
		StreamID: stream.ID(), ObservedAt: wiretest.At(7),
		Gap: &event.Gap{From: wiretest.At(5), To: wiretest.At(7), Reason: "410 Gone: too old resource version", LastResourceVersion: "39"}}
	rec := event.Record{Type: event.TypeEvent, EventID: "0a1b2c3d4e5f60718293a4b5c6d7e8f9", IngestSeq: 9, ClusterID: "c1",
		StreamID: stream.ID(), ObservedAt: wiretest.At(9), WatchType: event.Modified,
		Resource: event.ResourceRef{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "shop", Name: "settings", UID: "u1", ResourceVersion: "42"}}
	scope := materialize.Scope{ClusterID: "c1", Namespaces: []string{"shop"}, Resources: []schema.GroupResource{{Resource: "configmaps"}}}
	wiretest.Check(t, "server", map[string]any{
		"clusters": server.ClusterList{Items: []server.Cluster{{ClusterID: "c1", Streams: 3, Records: 1200,
			FirstObservedAt: wiretest.At(1), LastObservedAt: wiretest.At(9)}}, Next: "eyJrIjoiYzEiLCJwIjoxfQ"},
		"streams": server.StreamList{Items: []server.StreamInfo{{
			Status:    storage.StreamStatus{StreamID: stream.ID(), Stream: stream, CheckpointRV: "42", CheckpointAt: wiretest.At(9), Available: true, Records: 12, LastSeq: 9},
			Coverage:  storage.Coverage{StreamID: stream.ID(), At: wiretest.At(6), Reason: "gap from 2025-01-02T03:04:05Z", Gaps: []event.Record{gap}},
			Gaps:      []event.Record{gap},
			Collector: &watch.StreamStatus{StreamID: stream.ID(), Stream: stream, State: watch.StateWatching, Synced: true},
		}}, Next: "eyJzIjo5LCJwIjoxfQ"},
		"records":   server.RecordList{Items: []event.Record{rec}, Next: "eyJzIjo5LCJwIjoxfQ", Gaps: []event.Record{gap}},
		"snapshots": server.SnapshotList{Items: []materialize.Snapshot{{ID: "s1", Name: "before", Scope: scope, At: wiretest.At(4), CreatedAt: wiretest.At(5), Complete: true}}, Next: "eyJzIjoxLCJwIjoxfQ"},
		"plans": server.PlanList{Items: []server.PlanSummary{{ID: "plan-1", CreatedAt: wiretest.At(5),
			Source:   replay.Source{ClusterID: "c1", Namespaces: []string{"shop"}, At: wiretest.At(4)},
			Target:   replay.Target{ClusterID: "sandbox", Namespaces: map[string]string{"shop": "shop-copy"}},
			Coverage: replay.Coverage{Complete: true}, Objects: 3, Exclusions: 1, Hash: "sha256:0a1b", Status: replay.StatusPlanned}}, Next: "eyJzIjo3LCJwIjoxfQ"},
		"snapshot page": server.SnapshotPage{Snapshot: materialize.Snapshot{Scope: scope, At: wiretest.At(4), CreatedAt: wiretest.At(5), Complete: true,
			Watermarks: []materialize.Watermark{{StreamID: stream.ID(), ResourceVersion: "42", ObservedAt: wiretest.At(9), Covered: true}},
			Objects:    []materialize.SnapshotObject{{Ref: rec.Resource, StreamID: stream.ID(), EventID: rec.EventID, ObservedAt: wiretest.At(3), Object: []byte(`{"kind":"ConfigMap"}`)}}},
			Next: "eyJvIjp7ImNsdXN0ZXJJRCI6ImMxIn0sInAiOjF9"},
		"diff page": server.DiffPage{Diff: materialize.Diff{Scope: scope, From: wiretest.At(2), To: wiretest.At(4), HasGaps: true, Gaps: []event.Record{gap},
			Objects: []materialize.ObjectDiff{{ID: storage.ObjectIDOf(rec), Type: materialize.ObjectAdded, Kind: "ConfigMap",
				After: &materialize.SnapshotObject{Ref: rec.Resource, StreamID: stream.ID(), EventID: rec.EventID, ObservedAt: wiretest.At(3), Object: []byte(`{"kind":"ConfigMap"}`)}}}},
			Next: "eyJvIjp7ImNsdXN0ZXJJRCI6ImMxIn0sInAiOjF9"},
		"error":            server.Error{Status: 400, Code: server.CodeInvalidParameter, Message: `at: time "yesterday": want "now", RFC 3339 (2026-01-02T15:04:05Z), a duration ago ("10m", "2h ago")`, Param: "at"},
		"health":           server.Health{Status: "ok"},
		"snapshot request": server.SnapshotRequest{Name: "before-upgrade", At: "10m", Scope: scope},
		"plan request": server.PlanRequest{At: "2h ago", Source: replay.Source{ClusterID: "c1", Namespaces: []string{"shop"}},
			Target: replay.Target{ClusterID: "sandbox", Namespaces: map[string]string{"shop": "shop-copy"}}, Policy: &replay.Policy{AllowGaps: true}},
		"feed record": server.FeedEvent{ID: "9", Type: "record", Record: &rec},
		"feed error":  server.FeedEvent{Type: "error", Error: &server.Error{Status: 500, Code: server.CodeInternal, Message: "storage: closed"}},
		"codes": []string{server.CodeInvalidParameter, server.CodeInvalidCursor, server.CodeRangeTooLarge, server.CodeInvalidBody,
			server.CodeConfirmationRequired, server.CodeUnauthenticated, server.CodeForbidden, server.CodeReadOnly, server.CodeSecret,
			server.CodeNotFound, server.CodeMethodNotAllowed, server.CodeConflict, server.CodeCoverageIncomplete, server.CodeRefused,
			server.CodeBodyTooLarge, server.CodeInternal, server.CodeNotReady, server.CodeTimeout, server.CodeUnavailable, server.CodeTooManyRequests, server.CodeNotImplemented},
	})
}
