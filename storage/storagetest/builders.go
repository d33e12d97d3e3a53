package storagetest

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/krply/krply/event"
)

// The builders below make realistic journal records the way the collector
// writes them (see the journal conventions in the storage package docs), so
// backend tests and benchmarks exercise real shapes: Kubernetes JSON bodies
// with managedFields, baselines with begin and end markers, gaps with their
// bounds, inferred deletions.

// ConfigMap returns the JSON of a ConfigMap as the API server sends it,
// with metadata (uid, resourceVersion, labels, managedFields) and data.
func ConfigMap(namespace, name, uid, resourceVersion string, data map[string]string) []byte {
	fields := map[string]any{}
	for k := range data {
		fields["f:"+k] = map[string]any{}
	}
	obj := map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   metadata(namespace, name, uid, resourceVersion, "v1", map[string]any{"f:data": fields}),
		"data":       data,
	}
	return mustJSON(obj)
}

// Deployment returns the JSON of an apps/v1 Deployment as the API server
// sends it, with metadata, spec (replicas, a container with an image) and
// status.
func Deployment(namespace, name, uid, resourceVersion string, replicas int, image string) []byte {
	labels := map[string]any{"app": name}
	obj := map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata": metadata(namespace, name, uid, resourceVersion, "apps/v1", map[string]any{
			"f:spec": map[string]any{
				"f:replicas": map[string]any{},
				"f:selector": map[string]any{},
				"f:template": map[string]any{
					"f:metadata": map[string]any{"f:labels": map[string]any{"f:app": map[string]any{}}},
					"f:spec": map[string]any{"f:containers": map[string]any{
						`k:{"name":"app"}`: map[string]any{".": map[string]any{}, "f:image": map[string]any{}, "f:name": map[string]any{}},
					}},
				},
			},
		}),
		"spec": map[string]any{
			"replicas": replicas,
			"selector": map[string]any{"matchLabels": labels},
			"strategy": map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": "25%", "maxUnavailable": "25%"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{
					"containers": []any{map[string]any{
						"name": "app", "image": image, "imagePullPolicy": "IfNotPresent",
						"ports":     []any{map[string]any{"containerPort": 8080, "protocol": "TCP"}},
						"resources": map[string]any{"requests": map[string]any{"cpu": "100m", "memory": "128Mi"}},
					}},
					"restartPolicy":                 "Always",
					"terminationGracePeriodSeconds": 30,
				},
			},
		},
		"status": map[string]any{
			"observedGeneration": 1, "replicas": replicas, "readyReplicas": replicas, "updatedReplicas": replicas,
			"conditions": []any{map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}},
		},
	}
	return mustJSON(obj)
}

func metadata(namespace, name, uid, resourceVersion, apiVersion string, ownFields map[string]any) map[string]any {
	ownFields["f:metadata"] = map[string]any{"f:labels": map[string]any{".": map[string]any{}, "f:app": map[string]any{}}}
	md := map[string]any{
		"name":              name,
		"uid":               uid,
		"resourceVersion":   resourceVersion,
		"creationTimestamp": "2025-01-01T00:00:00Z",
		"labels":            map[string]any{"app": name, "team": "platform"},
		"annotations":       map[string]any{"example.com/owner": "team-" + name},
		"managedFields": []any{map[string]any{
			"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": apiVersion,
			"time": "2025-01-01T00:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": ownFields,
		}},
	}
	if namespace != "" {
		md["namespace"] = namespace
	}
	return md
}

func mustJSON(v any) []byte {
	// Only maps, slices, strings and numbers reach here: Marshal cannot fail.
	b, _ := json.Marshal(v)
	return b
}

// Ref returns the ResourceRef of an object of stream s.
func Ref(s event.Stream, kind, namespace, name, uid, resourceVersion string) event.ResourceRef {
	return event.ResourceRef{Group: s.Group, Version: s.Version, Kind: kind, Resource: s.Resource,
		Namespace: namespace, Name: name, UID: uid, ResourceVersion: resourceVersion}
}

// Event returns a watch event record (ADDED, MODIFIED or DELETED) of stream
// s, with the EventID the collector gives it.
func Event(s event.Stream, wt event.WatchType, ref event.ResourceRef, body []byte, at time.Time) event.Record {
	id := s.ID()
	return event.Record{
		Type: event.TypeEvent, EventID: event.EventID(id, event.TypeEvent, ref, wt),
		ClusterID: s.ClusterID, StreamID: id, ObservedAt: at, WatchType: wt,
		Resource: ref, Object: body, ObjectHash: hashOf(body),
	}
}

// Item is one object of a list result.
type Item struct {
	Ref    event.ResourceRef
	Object []byte
}

// Baseline returns the records of a complete baseline of stream s: the
// begin marker, one synthetic ADDED record per item, and the end marker
// with the list's resourceVersion, all observed at at.
func Baseline(s event.Stream, baselineID string, at time.Time, listRV string, items []Item) []event.Record {
	recs := BaselineBegin(s, baselineID, at, items)
	return append(recs, BaselineEnd(s, baselineID, at, listRV, len(items)))
}

// BaselineBegin returns the begin marker and the items of a baseline
// without its end, as a list interrupted by a crash leaves them.
func BaselineBegin(s event.Stream, baselineID string, at time.Time, items []Item) []event.Record {
	id := s.ID()
	recs := []event.Record{{
		Type: event.TypeBaseline, EventID: event.StreamRecordID(id, event.TypeBaseline, event.ResourceRef{}, baselineID, string(event.BaselineBegin)),
		ClusterID: s.ClusterID, StreamID: id, ObservedAt: at, BaselineID: baselineID,
		Baseline: &event.Baseline{ID: baselineID, Phase: event.BaselineBegin, Reason: "initial"},
	}}
	for _, it := range items {
		recs = append(recs, event.Record{
			Type: event.TypeEvent, EventID: event.EventID(id, event.TypeEvent, it.Ref, event.Added, baselineID),
			ClusterID: s.ClusterID, StreamID: id, ObservedAt: at, WatchType: event.Added, Synthetic: true,
			BaselineID: baselineID, Resource: it.Ref, Object: it.Object, ObjectHash: hashOf(it.Object),
		})
	}
	return recs
}

// BaselineEnd returns the end marker of a baseline.
func BaselineEnd(s event.Stream, baselineID string, at time.Time, listRV string, itemCount int) event.Record {
	id := s.ID()
	return event.Record{
		Type: event.TypeBaseline, EventID: event.StreamRecordID(id, event.TypeBaseline, event.ResourceRef{}, baselineID, string(event.BaselineEnd)),
		ClusterID: s.ClusterID, StreamID: id, ObservedAt: at, BaselineID: baselineID,
		Baseline: &event.Baseline{ID: baselineID, Phase: event.BaselineEnd, ResourceVersion: listRV, ItemCount: itemCount, Reason: "initial"},
	}
}

// Gap returns a gap record of stream s: continuity lost from `from` (the
// ObservedAt of the stream's last durable record), detected at `to`.
func Gap(s event.Stream, from, to time.Time, reason, lastRV string) event.Record {
	id := s.ID()
	return event.Record{
		Type: event.TypeGap, EventID: event.StreamRecordID(id, event.TypeGap, event.ResourceRef{}, from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano)),
		ClusterID: s.ClusterID, StreamID: id, ObservedAt: to,
		Gap: &event.Gap{From: from, To: to, Reason: reason, LastResourceVersion: lastRV},
	}
}

// CoverageChange returns a coverage change of stream s observed at at.
func CoverageChange(s event.Stream, available bool, reason string, code int, at time.Time) event.Record {
	id := s.ID()
	return event.Record{
		Type: event.TypeCoverageChange, EventID: event.StreamRecordID(id, event.TypeCoverageChange, event.ResourceRef{}, at.UTC().Format(time.RFC3339Nano), fmt.Sprint(available)),
		ClusterID: s.ClusterID, StreamID: id, ObservedAt: at,
		Coverage: &event.CoverageChange{Available: available, Reason: reason, Code: code},
	}
}

// Checkpoint returns a checkpoint record of stream s.
func Checkpoint(s event.Stream, rv string, bookmark bool, at time.Time) event.Record {
	id := s.ID()
	return event.Record{
		Type: event.TypeCheckpoint, EventID: event.EventID(id, event.TypeCheckpoint, event.ResourceRef{ResourceVersion: rv}, event.Bookmark, at.UTC().Format(time.RFC3339Nano)),
		ClusterID: s.ClusterID, StreamID: id, ObservedAt: at,
		Checkpoint: &event.Checkpoint{ResourceVersion: rv, Bookmark: bookmark},
	}
}

// InferredDelete returns the synthetic DELETED record written after the
// baseline baselineID (ended at relistAt) no longer lists the object of
// last, which the journal believed alive since a gap that began at gapFrom.
// Object is last's body.
func InferredDelete(s event.Stream, last event.Record, gapFrom, relistAt time.Time, baselineID string) event.Record {
	id := s.ID()
	return event.Record{
		Type: event.TypeEvent, EventID: event.EventID(id, event.TypeEvent, last.Resource, event.Deleted, baselineID),
		ClusterID: s.ClusterID, StreamID: id, ObservedAt: relistAt, WatchType: event.Deleted, Synthetic: true,
		Resource: last.Resource, Object: last.Object, ObjectHash: hashOf(last.Object), BaselineID: baselineID,
		Inferred: &event.InferredDeletion{From: gapFrom, To: relistAt, BaselineID: baselineID, Reason: "absent from relist"},
	}
}

// Document returns a saved snapshot (typ event.TypeSnapshot) or replay plan
// (event.TypePlan) record holding doc.
func Document(typ event.RecordType, clusterID, id, name string, at time.Time, complete bool, doc []byte) event.Record {
	return event.Record{
		Type: typ, EventID: event.RecordID(typ, event.ResourceRef{}, id),
		ClusterID: clusterID, ObservedAt: at, Object: doc, ObjectHash: hashOf(doc),
		Saved: &event.SavedRef{ID: id, Name: name, At: at, Complete: complete},
	}
}

// Correlation returns an audit correlation pointing at target.
func Correlation(target event.Record, auditID, user string, at time.Time) event.Record {
	return event.Record{
		Type: event.TypeAuditCorrelation, EventID: event.RecordID(event.TypeAuditCorrelation, target.Resource, auditID, target.EventID),
		ClusterID: target.ClusterID, ObservedAt: at, Resource: target.Resource,
		Audit: &event.AuditCorrelation{
			TargetEventID: target.EventID, AuditID: auditID, User: user, Groups: []string{"system:authenticated"},
			UserAgent: "kubectl/v1.37.2", SourceIPs: []string{"192.0.2.10"}, Verb: "update",
			RequestReceivedAt: at.Add(-time.Second), Confidence: 1, Rule: "exact-resource-version",
		},
	}
}

func hashOf(body []byte) string {
	if len(body) == 0 {
		return ""
	}
	return event.ObjectHash(body)
}

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
