package why_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/krply/krply/internal/testing/wiretest"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/why"
)

// TestWireWhy pins the JSON form of Query and Answer
// (testdata/wire/why.json): the query API serves them as they are.
func TestWireWhy(t *testing.T) {
	pod := storage.ObjectID{ClusterID: "c1", Resource: "pods", Namespace: "shop", Name: "web-1-0"}
	cm := storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: "settings"}
	bad := why.Transition{Object: pod, ObservedAt: wiretest.At(9), What: "container app", From: "running", To: "waiting",
		Reason: "CrashLoopBackOff", Message: "back-off 40s restarting failed container", Bad: true}
	stream := "c1/core/v1/configmaps/shop"
	wiretest.Check(t, "why", map[string]any{
		"query": why.Query{Object: pod, At: wiretest.At(9), Before: 30 * time.Minute, After: time.Minute, From: wiretest.At(1),
			MaxObjects: 100, SecretValues: true},
		"answer": why.Answer{Object: pod, Kind: "Pod", At: wiretest.At(9), AtSource: why.AtFirstBad, From: wiretest.At(1), To: wiretest.At(10),
			Bad: &bad,
			Candidates: []why.Candidate{{Change: 0, Summary: `configmaps shop/settings: data.color "blue" → "green" by alice (audit)`, Score: 95,
				Reasons: []string{`+40 changed key "color", which is read (spec.containers[name=app].env[name=COLOR].valueFrom.configMapKeyRef)`},
				Caveats: []string{"seen only by a relist after a loss of continuity: it happened between 2025-01-02T03:04:05Z and 2025-01-02T03:04:07Z, not when observed"}}},
			Nodes: []why.Node{{ID: pod, Kind: "Pod", Exists: true}, {ID: cm, Kind: "ConfigMap", Distance: 1, Exists: true, Keys: []string{"color"}}},
			Edges: []why.Edge{{From: pod, To: cm, Type: why.EdgeReferences, Reason: "spec.containers[name=app].env[name=COLOR].valueFrom.configMapKeyRef"}},
			Changes: []why.Change{{Object: cm, Kind: "ConfigMap", Type: why.ChangeModified, ObservedAt: wiretest.At(7), EventID: "0a1b2c3d", StreamID: stream,
				Origin: materialize.OriginBaseline, Between: &why.Interval{From: wiretest.At(5), To: wiretest.At(7)},
				Fields:      []materialize.FieldChange{{Path: "data.color", Op: materialize.OpReplace, Before: "blue", After: "green"}},
				Transitions: []why.Transition{bad},
				Who:         &why.Who{User: "alice", Manager: "kubectl-edit", Actor: why.ActorPerson}}},
			Events: []why.KubeEvent{{Regarding: pod, Name: "web-1-0.1", API: "core/v1", Type: "Warning", Reason: "BackOff",
				Message: "Back-off restarting failed container app", Count: 3, FirstSeen: wiretest.At(8), LastSeen: wiretest.At(9), ObservedAt: wiretest.At(9)}},
			EventsRecorded: true,
			Coverage: []why.StreamCoverage{{StreamID: stream, Resource: "configmaps", Namespace: "shop", Reason: "gap: 410 Gone 2025-01-02T03:04:05Z–2025-01-02T03:04:07Z: a change in it may be missing",
				Gaps: []why.Gap{{From: wiretest.At(5), To: wiretest.At(7), Reason: "gap: 410 Gone"}}, EvidenceUntil: wiretest.At(11)}},
			NotRecorded: []string{"networkpolicies.networking.k8s.io"},
			Cut:         []string{"nodes node-7 (spec.nodeName of pods shop/web-1-7)"},
			Warnings:    []string{"the dependency graph reached MaxObjects (100): what it left out is in cut"},
		},
		"answer complete": why.Answer{Object: pod, At: wiretest.At(9), AtSource: why.AtGiven, From: wiretest.At(1), To: wiretest.At(10), Complete: true,
			Candidates: []why.Candidate{{Change: 1, Summary: "deployments.apps shop/web: spec.replicas 2 → 3 by kube-controller-manager (field manager)", Score: 52,
				Reasons: []string{"+15 changed spec.replicas"}}},
			Nodes:          []why.Node{{ID: pod, Kind: "Pod", Exists: true}},
			EventsRecorded: true,
			Coverage:       []why.StreamCoverage{{StreamID: stream, Resource: "configmaps", Namespace: "shop", Covered: true, EvidenceUntil: wiretest.At(11)}}},
		"enums": []string{why.AtGiven, why.AtFirstBad, why.AtLatestChange, why.EdgeOwner, why.EdgeReferences, why.EdgeSelects, why.EdgeSchedule,
			string(why.ChangeCreated), string(why.ChangeModified), string(why.ChangeDeleted), why.ActorPerson, why.ActorController, why.ActorUnknown},
	})
	var q why.Query
	if err := json.Unmarshal([]byte(`{"object":{"clusterID":"c1","resource":"pods","name":"x"},"before":60000000000}`), &q); err != nil || q.Before != time.Minute {
		t.Errorf("a query's durations are nanoseconds: %+v %v", q, err)
	}
}
