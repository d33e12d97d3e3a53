package materialize_test

import (
	"encoding/json"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/testing/wiretest"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
)

// wireManager is a field manager that sets every field.
var wireManager = materialize.FieldManager{Manager: "kubectl-client-side-apply", Operation: "Update",
	Subresource: "scale", APIVersion: "apps/v1", Time: wiretest.At(2).Truncate(time.Second)}

// wireExamples are the values the materialize wire tests share: one
// object, its stream, a gap of that stream and two versions of the body.
type wireExamples struct {
	stream        event.Stream
	id            storage.ObjectID
	ref           event.ResourceRef
	gap           event.Record
	before, after json.RawMessage
	changes       []materialize.FieldChange
	scope         materialize.Scope
	missing       materialize.MissingStream
}

func newWireExamples() wireExamples {
	stream := event.Stream{ClusterID: "c1", Group: "apps", Version: "v1", Resource: "deployments", Namespace: "shop"}
	return wireExamples{
		stream: stream,
		id:     storage.ObjectID{ClusterID: "c1", Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web"},
		ref: event.ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments",
			Namespace: "shop", Name: "web", UID: "u-web", ResourceVersion: "42"},
		gap: event.Record{Type: event.TypeGap, EventID: "3a1b2c3d4e5f60718293a4b5c6d7e8f9", IngestSeq: 7, ClusterID: "c1",
			StreamID: stream.ID(), ObservedAt: wiretest.At(7),
			Gap: &event.Gap{From: wiretest.At(5), To: wiretest.At(7), Reason: "410 Gone: too old resource version", LastResourceVersion: "39"}},
		before: json.RawMessage(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"},"spec":{"replicas":2}}`),
		after:  json.RawMessage(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"labels":{"tier":"front"},"name":"web","namespace":"shop"},"spec":{"replicas":3}}`),
		changes: []materialize.FieldChange{
			{Path: "metadata.labels", Op: materialize.OpAdd, After: map[string]any{"tier": "front"}},
			{Path: "spec.paused", Op: materialize.OpRemove, Before: true},
			{Path: "spec.replicas", Op: materialize.OpReplace, Before: json.Number("2"), After: json.Number("3"),
				FieldManager: &wireManager},
		},
		scope: materialize.Scope{ClusterID: "c1", Namespaces: []string{"shop"},
			Resources: []schema.GroupResource{{Group: "apps", Resource: "deployments"}}},
		missing: materialize.MissingStream{StreamID: "c1/core/v1/configmaps/shop", Reason: "gap from 2025-01-02T03:04:10.123456789Z: 410 Gone",
			Resource: schema.GroupResource{Resource: "configmaps"}, Namespace: "shop"},
	}
}

func (w wireExamples) snapshotObject(at int, body json.RawMessage) *materialize.SnapshotObject {
	return &materialize.SnapshotObject{Ref: w.ref, StreamID: w.stream.ID(), EventID: "0a1b2c3d4e5f60718293a4b5c6d7e8f9",
		ObservedAt: wiretest.At(at), Synthetic: true, Object: body}
}

// TestWireObjectState pins the JSON form of ObjectAt's answer
// (testdata/wire/object.json).
func TestWireObjectState(t *testing.T) {
	w := newWireExamples()
	deleted := event.Record{Type: event.TypeEvent, EventID: "7a1b2c3d4e5f60718293a4b5c6d7e8f9", IngestSeq: 9, ClusterID: "c1",
		StreamID: w.stream.ID(), ObservedAt: wiretest.At(9), WatchType: event.Deleted, Synthetic: true, Resource: w.ref,
		Inferred: &event.InferredDeletion{From: wiretest.At(5), To: wiretest.At(8), BaselineID: "bl-2", Reason: "absent from relist"}}
	alive := deleted
	alive.WatchType, alive.Synthetic, alive.Inferred, alive.Object = event.Modified, false, nil, w.after
	coverage := storage.Coverage{StreamID: w.stream.ID(), At: wiretest.At(10), Covered: true,
		BaselineID: "bl-2", BaselineEndAt: wiretest.At(8), Watermark: "45", WatermarkAt: wiretest.At(9)}
	wiretest.Check(t, "object", map[string]any{
		"object state alive": materialize.ObjectState{ID: w.id, At: wiretest.At(10), Exists: true, Object: w.after,
			Record: &alive, Covered: true, Coverage: []storage.Coverage{coverage}, NearbyGaps: []event.Record{w.gap}},
		"object state deleted (inferred)": materialize.ObjectState{ID: w.id, At: wiretest.At(10), Record: &deleted,
			Inferred: deleted.Inferred, Covered: true, Coverage: []storage.Coverage{coverage},
			Warnings: []string{"absent from baseline bl-2 of c1/apps/v1/deployments/shop, which ended at 2025-01-02T03:04:13.123456789Z"}},
		"object state excluded by rule": materialize.ObjectState{ID: w.id, At: wiretest.At(10), Coverage: []storage.Coverage{coverage},
			ExcludedByRule: "excluded by rule: stream c1/apps/v1/deployments/shop?labels:;fields:;rule:object.spec.replicas > 1 records only the objects for which its rule `object.spec.replicas > 1` holds, and has no version of this object that matched"},
	})
}

// TestWireHistory pins the JSON form of History
// (testdata/wire/history.json).
func TestWireHistory(t *testing.T) {
	w := newWireExamples()
	first := &materialize.Version{Ref: w.ref, WatchType: event.Added, ResourceVersion: "40", ObservedAt: wiretest.At(1),
		Origin: materialize.OriginBaseline, BaselineID: "bl-1", Object: w.before}
	second := &materialize.Version{Ref: w.ref, WatchType: event.Modified, ResourceVersion: "42", ObservedAt: wiretest.At(2),
		Origin: materialize.OriginWatch, Recreated: true, Object: w.after, Changes: w.changes,
		FieldManagers: []materialize.FieldManager{wireManager},
		Provenance: []event.AuditCorrelation{{TargetEventID: "0b1b2c3d4e5f60718293a4b5c6d7e8f9", AuditID: "a-1", User: "alice",
			Verb: "patch", RequestReceivedAt: wiretest.At(2), Confidence: 1, Rule: "exact-resource-version"}}}
	gone := &materialize.Version{Ref: w.ref, WatchType: event.Deleted, ResourceVersion: "42", ObservedAt: wiretest.At(9),
		Origin: materialize.OriginInferred, BaselineID: "bl-2", Object: w.after,
		Inferred: &event.InferredDeletion{From: wiretest.At(5), To: wiretest.At(8), BaselineID: "bl-2", Reason: "absent from relist"}}
	entry := func(v *materialize.Version, id string) materialize.Entry {
		return materialize.Entry{Kind: materialize.EntryVersion, StreamID: w.stream.ID(), EventID: id, ObservedAt: v.ObservedAt, Version: v}
	}
	history := materialize.History{Object: w.id, Entries: []materialize.Entry{
		entry(first, "0a1b2c3d4e5f60718293a4b5c6d7e8f9"),
		entry(second, "0b1b2c3d4e5f60718293a4b5c6d7e8f9"),
		{Kind: materialize.EntryConfirmed, StreamID: w.stream.ID(), EventID: "2a1b2c3d4e5f60718293a4b5c6d7e8f9", ObservedAt: wiretest.At(3),
			Confirmation: &materialize.Confirmation{ResourceVersion: "42", VersionEventID: "0b1b2c3d4e5f60718293a4b5c6d7e8f9", BaselineID: "bl-1b"}},
		{Kind: materialize.EntryUnavailable, StreamID: w.stream.ID(), EventID: "4a1b2c3d4e5f60718293a4b5c6d7e8f9", ObservedAt: wiretest.At(4),
			Coverage: &event.CoverageChange{Reason: "403 Forbidden: deployments is forbidden", Code: 403}},
		{Kind: materialize.EntryGap, StreamID: w.stream.ID(), EventID: w.gap.EventID, ObservedAt: w.gap.ObservedAt, Gap: w.gap.Gap},
		entry(gone, "7a1b2c3d4e5f60718293a4b5c6d7e8f9"),
	}, Warnings: []string{"no stream records apps/deployments in namespace other"}, Next: "7a1b2c3d4e5f60718293a4b5c6d7e8f9"}
	// History's own MarshalJSON writes what encoding/json writes of it.
	sameAsEncodingJSON(t, "the wire example", &history)
	unknown := materialize.UnknownSpan{From: wiretest.At(5), To: wiretest.At(8), Reason: "gap from 2025-01-02T03:04:10.123456789Z: 410 Gone: too old resource version"}
	found := materialize.Found{
		Query: materialize.FindQuery{Scope: w.scope, ExcludeResources: []schema.GroupResource{{Resource: "secrets"}}, LabelSelector: "tier=front",
			Since: wiretest.At(1), Until: wiretest.At(10), First: true, Now: true},
		Objects: []materialize.FoundObject{{Object: w.id, StreamID: w.stream.ID(), Intervals: []materialize.Interval{
			{From: wiretest.At(1), Opened: first, StartUnknown: "no complete baseline at or before this time", To: wiretest.At(2), Closed: second},
			{From: wiretest.At(8), Opened: gone, StartUnknown: unknown.Reason, To: wiretest.At(9), EndUnknown: "stream unavailable since 2025-01-02T03:04:14.123456789Z: 403 Forbidden"},
		}}},
		Streams:  []materialize.FindStream{{StreamID: w.stream.ID(), Unknown: []materialize.UnknownSpan{{To: wiretest.At(1), Reason: "no complete baseline at or before this time"}, unknown}, EvidenceUntil: wiretest.At(10)}},
		Missing:  []materialize.MissingStream{w.missing},
		Versions: 12, Evaluated: 10,
		Warnings: []string{"the condition could not be evaluated on 2 versions, counted as not true; the first: deployments.apps shop/web version 41: no such key: paused"},
	}
	wiretest.Check(t, "history", map[string]any{
		"history": history,
		// Find's answer: its intervals are bounded by versions.
		"found": found,
		"enums": wiretest.Enums(t, materialize.EntryKind(""), materialize.Origin(""), materialize.ChangeOp("")),
	})
}

// TestWireSnapshot pins the JSON form of a Snapshot
// (testdata/wire/snapshot.json). It is also the document a saved snapshot
// keeps in the journal: a change here is a change of the file format.
func TestWireSnapshot(t *testing.T) {
	w := newWireExamples()
	wiretest.Check(t, "snapshot", map[string]any{
		"snapshot": materialize.Snapshot{ID: "snap-1", Name: "before-upgrade", Scope: w.scope,
			At: wiretest.At(10), CreatedAt: wiretest.At(11), Complete: true,
			Watermarks: []materialize.Watermark{{StreamID: w.stream.ID(), ResourceVersion: "45", ObservedAt: wiretest.At(9), Covered: true}},
			Missing:    []materialize.MissingStream{w.missing},
			Warnings:   []string{"a warning"},
			Objects:    []materialize.SnapshotObject{*w.snapshotObject(2, w.after)},
		},
	})
}

// TestWireDiff pins the JSON form of a Diff (testdata/wire/diff.json).
func TestWireDiff(t *testing.T) {
	w := newWireExamples()
	wiretest.Check(t, "diff", map[string]any{
		"diff": materialize.Diff{Scope: w.scope, From: wiretest.At(1), To: wiretest.At(10),
			Objects: []materialize.ObjectDiff{
				{ID: w.id, Type: materialize.ObjectChanged, Kind: "Deployment",
					Before: w.snapshotObject(1, w.before), After: w.snapshotObject(2, w.after), Changes: w.changes, Recreated: true},
				{ID: storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: "settings"}, Type: materialize.ObjectUnknown,
					Kind: "ConfigMap", UnknownAt: materialize.DiffTo, Reason: "no stream that records it is covered at the end"},
			},
			HasGaps: true, Gaps: []event.Record{w.gap}, Missing: []materialize.MissingStream{w.missing},
			Warnings: []string{"a gap intersects the window"}},
		"enums": wiretest.Enums(t, materialize.ObjectChangeType(""), materialize.DiffEnd("")),
	})
}

// TestWirePersisted decodes the snapshot document a journal of schema v1
// keeps (testdata/wire/persisted/v1): every field survives.
func TestWirePersisted(t *testing.T) {
	snap, _ := wiretest.Persisted[materialize.Snapshot](t, "v1", "snapshot")
	if snap.ID != "snap-1" || !snap.Complete || len(snap.Objects) != 1 || len(snap.Scope.Resources) != 1 || snap.Scope.Resources[0].Group != "apps" {
		t.Errorf("persisted v1 snapshot decodes as %+v", snap)
	}
}
