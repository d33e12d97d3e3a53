package storage_test

import (
	"testing"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/testing/wiretest"
	"github.com/krply/krply/storage"
)

// TestWireCoverage pins the JSON form of the store's answers: stream
// status, coverage, timelines, pages of records, sizes and the results of
// Append and Compact (testdata/wire/coverage.json).
func TestWireCoverage(t *testing.T) {
	stream := event.Stream{ClusterID: "c1", Group: "apps", Version: "v1", Resource: "deployments", Namespace: "shop"}
	gap := event.Record{Type: event.TypeGap, EventID: "3a1b2c3d4e5f60718293a4b5c6d7e8f9", IngestSeq: 7, ClusterID: "c1",
		StreamID: stream.ID(), ObservedAt: wiretest.At(7),
		Gap: &event.Gap{From: wiretest.At(5), To: wiretest.At(7), Reason: "410 Gone: too old resource version", LastResourceVersion: "39"}}
	end := event.Record{Type: event.TypeBaseline, EventID: "2a1b2c3d4e5f60718293a4b5c6d7e8f9", IngestSeq: 3, ClusterID: "c1",
		StreamID: stream.ID(), ObservedAt: wiretest.At(3), Synthetic: true, BaselineID: "bl-1",
		Baseline: &event.Baseline{ID: "bl-1", Phase: event.BaselineEnd, ResourceVersion: "30", ItemCount: 2, Reason: "initial"}}

	wiretest.Check(t, "coverage", map[string]any{
		"coverage not covered": storage.Coverage{
			StreamID: stream.ID(), At: wiretest.At(8), Covered: false,
			Reason:     "gap from 2025-01-02T03:04:10.123456789Z: 410 Gone: too old resource version",
			BaselineID: "bl-1", BaselineEndAt: wiretest.At(3),
			Watermark: "41", WatermarkAt: wiretest.At(6),
			Gaps:          []event.Record{gap},
			EvidenceUntil: wiretest.At(9),
		},
		"coverage covered": storage.Coverage{StreamID: stream.ID(), At: wiretest.At(4), Covered: true,
			BaselineID: "bl-1", BaselineEndAt: wiretest.At(3), Watermark: "31", WatermarkAt: wiretest.At(4), EvidenceUntil: wiretest.At(6)},
		"stream status": storage.StreamStatus{
			StreamID: stream.ID(), Stream: stream,
			CheckpointRV: "41", CheckpointAt: wiretest.At(6),
			Available: true, AvailabilityReason: "access restored",
			LastBaselineID: "bl-1", LastBaselineEndAt: wiretest.At(3), OpenBaselineID: "bl-2",
			Gaps: 1, LastGapAt: wiretest.At(7),
			FirstObservedAt: wiretest.At(1), LastObservedAt: wiretest.At(7),
			Records: 7, LastSeq: 7,
		},
		"timeline":       storage.Timeline{StreamID: stream.ID(), Stream: stream, Records: []event.Record{end, gap}},
		"page":           storage.Page{Records: []event.Record{end}, Next: "opaque-cursor"},
		"stats":          storage.Stats{Records: 7, Events: 4, Bodies: 3, BodyBytes: 512, RawBodyBytes: 2048, FileBytes: 65536, UsedBytes: 49152},
		"append result":  storage.AppendResult{Seqs: []int64{8, 3}, Inserted: 1, Duplicates: 1},
		"compact result": storage.CompactResult{RecordsRemoved: 12, BodiesRemoved: 4, Streams: 2},
		"object id":      storage.ObjectID{ClusterID: "c1", Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web"},
	})
}
