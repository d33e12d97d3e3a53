package event

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestRecordTypeValid(t *testing.T) {
	for _, typ := range []RecordType{TypeEvent, TypeBaseline, TypeGap, TypeCoverageChange, TypeAuditCorrelation, TypeSnapshot, TypeCheckpoint, TypePlan} {
		if !typ.Valid() {
			t.Errorf("%q.Valid() = false", typ)
		}
	}
	for _, typ := range []RecordType{"", "Event", "events", "bookmark", "plan"} {
		if typ.Valid() {
			t.Errorf("%q.Valid() = true", typ)
		}
	}
}

func TestIsObjectChange(t *testing.T) {
	cases := []struct {
		typ  RecordType
		wt   WatchType
		want bool
	}{
		{TypeEvent, Added, true}, {TypeEvent, Modified, true}, {TypeEvent, Deleted, true},
		{TypeEvent, Bookmark, false}, {TypeEvent, Error, false}, {TypeEvent, "", false},
		{TypeBaseline, Added, false}, {TypeCheckpoint, Modified, false}, {TypeGap, Deleted, false},
	}
	for _, tc := range cases {
		r := Record{Type: tc.typ, WatchType: tc.wt}
		if got := r.IsObjectChange(); got != tc.want {
			t.Errorf("%s/%s IsObjectChange() = %v, want %v", tc.typ, tc.wt, got, tc.want)
		}
	}
}

// A record survives JSON with every payload and its body kept byte for
// byte, so backends and files may store records as JSON.
func TestRecordJSONRoundTrip(t *testing.T) {
	at := time.Date(2025, 3, 1, 12, 0, 0, 123456789, time.UTC)
	body := json.RawMessage(`{"kind":"ConfigMap","metadata":{"name":"a"},"x-unknown-field":{"kept":true}}`)
	recs := []Record{
		{Type: TypeEvent, EventID: "e1", IngestSeq: 7, ClusterID: "c1", StreamID: "c1/core/v1/configmaps", ObservedAt: at,
			WatchType: Deleted, Synthetic: true, Resource: ResourceRef{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "shop", Name: "a", UID: "u", ResourceVersion: "5"},
			ObjectHash: ObjectHash(body), Object: body, BaselineID: "b2",
			Inferred: &InferredDeletion{From: at.Add(-time.Minute), To: at, BaselineID: "b2", Reason: "absent from relist"}},
		{Type: TypeGap, EventID: "g1", ClusterID: "c1", StreamID: "s", ObservedAt: at,
			Gap: &Gap{From: at.Add(-time.Hour), To: at, Reason: "410 Gone", LastResourceVersion: "4"}},
		{Type: TypeBaseline, EventID: "b1", ClusterID: "c1", StreamID: "s", ObservedAt: at, BaselineID: "b",
			Baseline: &Baseline{ID: "b", Phase: BaselineEnd, ResourceVersion: "9", ItemCount: 3, Reason: "relist after gap", ClosesGap: "g1"}},
		{Type: TypeCoverageChange, EventID: "c", ClusterID: "c1", StreamID: "s", ObservedAt: at,
			Coverage: &CoverageChange{Available: false, Reason: "403 Forbidden", Code: 403}},
		{Type: TypeCheckpoint, EventID: "k", ClusterID: "c1", StreamID: "s", ObservedAt: at,
			Checkpoint: &Checkpoint{ResourceVersion: "10", Bookmark: true, InitialEventsEnd: true}},
		{Type: TypeSnapshot, EventID: "s1", ClusterID: "c1", ObservedAt: at, Object: json.RawMessage(`{"items":[]}`),
			Saved: &SavedRef{ID: "snap", Name: "n", At: at, Complete: true}},
		{Type: TypeAuditCorrelation, EventID: "a1", ClusterID: "c1", ObservedAt: at,
			Audit: &AuditCorrelation{TargetEventID: "e1", AuditID: "x", User: "alice", Groups: []string{"g"}, UserAgent: "kubectl",
				SourceIPs: []string{"192.0.2.1"}, Verb: "patch", RequestURI: "/api/v1/namespaces/shop/configmaps/a",
				RequestReceivedAt: at, Confidence: 0.5, Rule: "name-and-time"}},
	}
	for _, rec := range recs {
		data, err := json.Marshal(rec)
		if err != nil {
			t.Fatalf("%s: marshal: %v", rec.Type, err)
		}
		var back Record
		if err := json.Unmarshal(data, &back); err != nil {
			t.Fatalf("%s: unmarshal: %v", rec.Type, err)
		}
		if !reflect.DeepEqual(back, rec) {
			t.Fatalf("%s: round trip changed the record:\n got %+v\nwant %+v", rec.Type, back, rec)
		}
	}
	var back Record
	data, _ := json.Marshal(recs[0])
	_ = json.Unmarshal(data, &back)
	if string(back.Object) != string(body) {
		t.Fatalf("body changed: %s", back.Object)
	}
}

// The JSON names of a record are part of the journal's answers and of the
// wire schema: Saved, the payload of snapshot and plan records, is
// "snapshot" as it always was.
func TestRecordSavedKeepsItsJSONName(t *testing.T) {
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	data, err := json.Marshal(Record{Type: TypePlan, EventID: "p1", ClusterID: "c1", ObservedAt: at,
		Saved: &SavedRef{ID: "p1", Name: "replay plan", At: at, Complete: true}})
	if err != nil {
		t.Fatal(err)
	}
	want := `"snapshot":{"id":"p1","name":"replay plan","at":"2025-03-01T12:00:00Z","complete":true}`
	if !strings.Contains(string(data), want) {
		t.Errorf("a plan record marshals to %s, want it to hold %s", data, want)
	}
}
