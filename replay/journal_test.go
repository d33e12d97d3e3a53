package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// journal writes records into a store shaped exactly like the Collector's
// output (see the journal conventions): baselines with begin, synthetic ADDED
// items and end; watch events; gaps from the last durable record.
type journal struct {
	t       testing.TB
	store   storage.Store
	cluster string
	seq     int
	// lastRV maps each stream written to its last progress resourceVersion.
	lastRV map[string]string
}

// kindInfo is what the journal needs to know about a resource.
type kindInfo struct {
	gvr  schema.GroupVersionResource
	kind string
}

var (
	nsKind     = kindInfo{schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "Namespace"}
	cmKind     = kindInfo{schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "ConfigMap"}
	secretKind = kindInfo{schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, "Secret"}
	svcKind    = kindInfo{schema.GroupVersionResource{Version: "v1", Resource: "services"}, "Service"}
	podKind    = kindInfo{schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "Pod"}
	deployKind = kindInfo{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "Deployment"}
	rsKind     = kindInfo{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}, "ReplicaSet"}
	leaseKind  = kindInfo{schema.GroupVersionResource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}, "Lease"}
)

func (j *journal) stream(k kindInfo, namespace string) string {
	return event.Stream{ClusterID: j.cluster, Group: k.gvr.Group, Version: k.gvr.Version, Resource: k.gvr.Resource, Namespace: namespace}.ID()
}

// ref builds the ResourceRef of a body as the Collector does.
func (j *journal) ref(k kindInfo, body []byte) event.ResourceRef {
	j.t.Helper()
	var m struct {
		Metadata struct {
			Namespace, Name, UID, ResourceVersion string
		}
	}
	if err := json.Unmarshal(body, &m); err != nil {
		j.t.Fatalf("journal: %v", err)
	}
	return event.ResourceRef{Group: k.gvr.Group, Version: k.gvr.Version, Kind: k.kind, Resource: k.gvr.Resource,
		Namespace: m.Metadata.Namespace, Name: m.Metadata.Name, UID: m.Metadata.UID, ResourceVersion: m.Metadata.ResourceVersion}
}

func (j *journal) append(recs ...event.Record) {
	j.t.Helper()
	for _, rec := range recs {
		if rv, ok := storage.ProgressRV(rec); ok {
			if j.lastRV == nil {
				j.lastRV = map[string]string{}
			}
			j.lastRV[rec.StreamID] = rv
		}
	}
	if _, err := j.store.Append(context.Background(), recs); err != nil {
		j.t.Fatalf("journal: append: %v", err)
	}
}

// baseline records a complete list of one stream observed at at, with the
// list's resourceVersion listRV.
func (j *journal) baseline(k kindInfo, namespace string, at time.Time, listRV string, bodies ...[]byte) string {
	j.t.Helper()
	j.seq++
	streamID := j.stream(k, namespace)
	id := fmt.Sprintf("baseline-%d", j.seq)
	recs := []event.Record{{
		Type: event.TypeBaseline, EventID: event.StreamRecordID(streamID, event.TypeBaseline, event.ResourceRef{}, id, "begin"),
		ClusterID: j.cluster, StreamID: streamID, ObservedAt: at, BaselineID: id,
		Baseline: &event.Baseline{ID: id, Phase: event.BaselineBegin, Reason: "initial"},
	}}
	for _, body := range bodies {
		ref := j.ref(k, body)
		recs = append(recs, event.Record{
			Type: event.TypeEvent, EventID: event.EventID(streamID, event.TypeEvent, ref, event.Added, id),
			ClusterID: j.cluster, StreamID: streamID, ObservedAt: at, WatchType: event.Added, Synthetic: true,
			Resource: ref, ObjectHash: event.ObjectHash(body), Object: body, BaselineID: id,
		})
	}
	recs = append(recs, event.Record{
		Type: event.TypeBaseline, EventID: event.StreamRecordID(streamID, event.TypeBaseline, event.ResourceRef{}, id, "end"),
		ClusterID: j.cluster, StreamID: streamID, ObservedAt: at, BaselineID: id,
		Baseline: &event.Baseline{ID: id, Phase: event.BaselineEnd, ResourceVersion: listRV, ItemCount: len(bodies), Reason: "initial"},
	})
	j.append(recs...)
	return streamID
}

// watchEvent records one watch event of a stream.
func (j *journal) watchEvent(k kindInfo, namespace string, wt event.WatchType, at time.Time, body []byte) {
	j.t.Helper()
	streamID := j.stream(k, namespace)
	ref := j.ref(k, body)
	j.append(event.Record{
		Type: event.TypeEvent, EventID: event.EventID(streamID, event.TypeEvent, ref, wt),
		ClusterID: j.cluster, StreamID: streamID, ObservedAt: at, WatchType: wt,
		Resource: ref, ObjectHash: event.ObjectHash(body), Object: body,
	})
}

// gap records lost continuity of a stream from its last durable record
// (from) to detection (to).
func (j *journal) gap(k kindInfo, namespace string, from, to time.Time, lastRV string) {
	j.t.Helper()
	streamID := j.stream(k, namespace)
	j.seq++
	j.append(event.Record{
		Type: event.TypeGap, EventID: event.StreamRecordID(streamID, event.TypeGap, event.ResourceRef{}, fmt.Sprint(j.seq)),
		ClusterID: j.cluster, StreamID: streamID, ObservedAt: to,
		Gap: &event.Gap{From: from, To: to, Reason: "410 Gone: too old resource version", LastResourceVersion: lastRV},
	})
}

// healthyUntil records a progress checkpoint observed at until in every
// stream the journal wrote, as the Collector writes them while its watches
// are healthy: a stream is covered only up to its last evidence of
// continuity.
func (j *journal) healthyUntil(until time.Time) {
	j.t.Helper()
	for streamID, rv := range j.lastRV {
		j.append(event.Record{
			Type: event.TypeCheckpoint, EventID: event.EventID(streamID, event.TypeCheckpoint, event.ResourceRef{ResourceVersion: rv}, "", until.UTC().Format(time.RFC3339Nano)),
			ClusterID: j.cluster, StreamID: streamID, ObservedAt: until, Checkpoint: &event.Checkpoint{ResourceVersion: rv},
		})
	}
}

// healthyNow returns the time now and records evidence after it in every
// stream (healthyUntil), so that now is covered.
func (j *journal) healthyNow() time.Time {
	j.t.Helper()
	now := time.Now()
	later := time.Now()
	for !later.After(now) {
		later = time.Now()
	}
	j.healthyUntil(later)
	return now
}

// object returns a JSON body like the API server's, with server-owned
// metadata filled in. fields are extra top-level fields as JSON.
func object(apiVersion, kind, namespace, name, uid, rv string, fields string) []byte {
	ns := ""
	if namespace != "" {
		ns = fmt.Sprintf(`"namespace":%q,`, namespace)
	}
	extra := ""
	if strings.TrimSpace(fields) != "" {
		extra = "," + fields
	}
	return []byte(fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"metadata":{"name":%q,%s"uid":%q,"resourceVersion":%q,`+
		`"creationTimestamp":"2026-01-01T00:00:00Z","managedFields":[{"manager":"kubectl","operation":"Apply","apiVersion":%q}]}%s}`,
		apiVersion, kind, name, ns, uid, rv, apiVersion, extra))
}
