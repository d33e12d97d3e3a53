package event_test

import (
	"encoding/json"
	"testing"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/testing/wiretest"
)

// TestWireRecord pins the JSON form of journal records and their payloads
// (testdata/wire/record.json). The payloads are also the journal's file
// format: the SQLite store keeps them as this JSON.
func TestWireRecord(t *testing.T) {
	stream := event.Stream{ClusterID: "c1", Group: "apps", Version: "v1", Resource: "deployments", Namespace: "shop", Selector: "labels:app=web;fields:"}
	ref := event.ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments",
		Namespace: "shop", Name: "web", UID: "u-web", ResourceVersion: "42"}
	base := func(typ event.RecordType, seq int64, id string) event.Record {
		return event.Record{Type: typ, EventID: id, IngestSeq: seq, ClusterID: "c1", StreamID: stream.ID(), ObservedAt: wiretest.At(int(seq))}
	}
	body := json.RawMessage(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop"}}`)

	added := base(event.TypeEvent, 1, "0a1b2c3d4e5f60718293a4b5c6d7e8f9")
	added.WatchType, added.Resource, added.Object, added.ObjectHash = event.Modified, ref, body, event.ObjectHash(body)

	item := base(event.TypeEvent, 2, "1a1b2c3d4e5f60718293a4b5c6d7e8f9")
	item.WatchType, item.Synthetic, item.Resource, item.BaselineID = event.Added, true, ref, "bl-1"

	blEnd := base(event.TypeBaseline, 3, "2a1b2c3d4e5f60718293a4b5c6d7e8f9")
	blEnd.BaselineID, blEnd.Synthetic = "bl-2", true
	blEnd.Baseline = &event.Baseline{ID: "bl-2", Phase: event.BaselineEnd, ResourceVersion: "40", ItemCount: 3,
		Reason: "relist after gap", ClosesGap: "3a1b2c3d4e5f60718293a4b5c6d7e8f9"}

	gap := base(event.TypeGap, 4, "3a1b2c3d4e5f60718293a4b5c6d7e8f9")
	gap.Gap = &event.Gap{From: wiretest.At(0), To: wiretest.At(4), Reason: "410 Gone: too old resource version", LastResourceVersion: "39"}

	available := base(event.TypeCoverageChange, 5, "4a1b2c3d4e5f60718293a4b5c6d7e8f9")
	available.Coverage = &event.CoverageChange{Available: true, Reason: "access restored", Code: 200}

	checkpoint := base(event.TypeCheckpoint, 6, "5a1b2c3d4e5f60718293a4b5c6d7e8f9")
	checkpoint.Checkpoint = &event.Checkpoint{ResourceVersion: "43", Bookmark: true, InitialEventsEnd: true}

	snapshot := base(event.TypeSnapshot, 7, "snap-1")
	snapshot.StreamID = ""
	snapshot.Saved = &event.SavedRef{ID: "snap-1", Name: "before-upgrade", At: wiretest.At(6), Complete: true}

	correlation := base(event.TypeAuditCorrelation, 8, "6a1b2c3d4e5f60718293a4b5c6d7e8f9")
	correlation.Audit = &event.AuditCorrelation{TargetEventID: added.EventID, AuditID: "a-1", User: "alice",
		Groups: []string{"system:authenticated"}, UserAgent: "kubectl/v1.31", SourceIPs: []string{"10.0.0.1"},
		Verb: "patch", RequestURI: "/apis/apps/v1/namespaces/shop/deployments/web", RequestReceivedAt: wiretest.At(0),
		Confidence: 1, Rule: "exact-resource-version"}

	inferred := base(event.TypeEvent, 9, "7a1b2c3d4e5f60718293a4b5c6d7e8f9")
	inferred.WatchType, inferred.Synthetic, inferred.Resource = event.Deleted, true, ref
	inferred.Inferred = &event.InferredDeletion{From: wiretest.At(4), To: wiretest.At(8), BaselineID: "bl-2", Reason: "absent from relist"}

	wiretest.Check(t, "record", map[string]any{
		"record event":             added,
		"record baseline item":     item,
		"record baseline end":      blEnd,
		"record gap":               gap,
		"record coverage change":   available,
		"record checkpoint":        checkpoint,
		"record snapshot":          snapshot,
		"record audit correlation": correlation,
		"record inferred deletion": inferred,
		"stream":                   stream,
		"enums":                    wiretest.Enums(t, event.RecordType(""), event.WatchType(""), event.BaselinePhase("")),
	})
}
