// Package incident provides incidents for the tests, examples and
// benchmarks of package why and of what serves it (the query API, the
// kubectl plugin, the web UI), in two forms:
//
//   - Journal builds the journal of one incident, as a Collector would
//     have recorded it, with fixed times: a Deployment "web" whose Pods
//     read the key "color" of the ConfigMap "settings"; a person changes
//     that key, a controller scales the Deployment, and Pod web-1-0
//     crashes.
//   - Play plays four incidents on a real control plane (krplytest/testenv)
//     and records them with a Collector, and PlayGap a fifth whose
//     culprit's stream has a gap; each Case says which change a why answer
//     must rank first, and Check and CheckGap check an answer, so that
//     every layer that serves why is held to the same expectations.
package incident

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/storagetest"
)

// Journal is the journal of the incident in one namespace of a cluster,
// recorded with complete coverage from T0 to T0+30m: at T0+1m the
// objects are created, at T0+10m a person (field manager kubectl-edit)
// changes the key the Pods read, at T0+11m a controller
// (kube-controller-manager) scales the Deployment, at T0+12m Pod web-1-0
// crashes (CrashLoopBackOff) and, when Events are recorded, an Event says
// so. Its streams record Deployments, ReplicaSets, Pods, ConfigMaps,
// Secrets, ServiceAccounts, Services, NetworkPolicies,
// PodDisruptionBudgets and HorizontalPodAutoscalers in the namespace, and
// Nodes.
type Journal struct {
	Cluster, Namespace string
	// Pods is the number of the Deployment's Pods (web-1-0, web-1-1, …).
	Pods int
	// Events records an Event stream too.
	Events bool
	// GapOverChange makes the ConfigMaps stream lose continuity from
	// GapFrom to GapTo, around the key's change: the journal then sees the
	// change only through the relist that ends at Relisted.
	GapOverChange bool

	rv   int
	recs []event.Record
}

// T0 is when the journal's baselines end.
var T0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// The times of the incident.
var (
	Changed = T0.Add(10 * time.Minute) // the key changed
	Scaled  = T0.Add(11 * time.Minute) // the Deployment scaled
	Crashed = T0.Add(12 * time.Minute) // Pod web-1-0 crashed
	End     = T0.Add(30 * time.Minute) // the streams' last evidence

	// With GapOverChange: the ConfigMaps stream's last evidence before the
	// gap, the gap's detection, and the end of the relist after it.
	GapFrom  = T0.Add(9 * time.Minute)
	GapTo    = T0.Add(10*time.Minute + 20*time.Second)
	Relisted = T0.Add(10*time.Minute + 30*time.Second)
)

func (s *Journal) stream(group, resource string, namespaced bool) event.Stream {
	st := event.Stream{ClusterID: s.Cluster, Group: group, Version: "v1", Resource: resource}
	if namespaced {
		st.Namespace = s.Namespace
	}
	return st
}

// streams are the journal's streams.
func (s *Journal) streams() []event.Stream {
	out := []event.Stream{
		s.stream("apps", "deployments", true), s.stream("apps", "replicasets", true), s.stream("", "pods", true),
		s.stream("", "configmaps", true), s.stream("", "secrets", true), s.stream("", "serviceaccounts", true),
		s.stream("", "services", true), s.stream("networking.k8s.io", "networkpolicies", true),
		s.stream("policy", "poddisruptionbudgets", true), s.stream("autoscaling", "horizontalpodautoscalers", true),
		s.stream("", "nodes", false),
	}
	if s.Events {
		out = append(out, s.stream("", "events", true))
	}
	return out
}

// object adds an event of an object observed at at.
func (s *Journal) object(group, resource, kind string, wt event.WatchType, obj map[string]any, at time.Time) event.Record {
	s.rv++
	md := obj["metadata"].(map[string]any)
	md["resourceVersion"] = strconv.Itoa(s.rv)
	name := md["name"].(string)
	ns := s.Namespace
	if resource == "nodes" {
		ns = ""
	} else {
		md["namespace"] = ns
	}
	if _, ok := md["uid"]; !ok {
		md["uid"] = "uid-" + resource + "-" + name
	}
	body, _ := json.Marshal(obj)
	st := s.stream(group, resource, resource != "nodes")
	rec := storagetest.Event(st, wt, storagetest.Ref(st, kind, ns, name, md["uid"].(string), strconv.Itoa(s.rv)), body, at)
	s.recs = append(s.recs, rec)
	return rec
}

func managed(manager string, at time.Time, fields map[string]any) []any {
	return []any{map[string]any{"manager": manager, "operation": "Update", "apiVersion": "v1", "time": at.Format(time.RFC3339),
		"fieldsType": "FieldsV1", "fieldsV1": fields}}
}

func (s *Journal) deployment(replicas int, at time.Time, manager string) map[string]any {
	return map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "managedFields": managed(manager, at, map[string]any{"f:spec": map[string]any{"f:replicas": map[string]any{}}})},
		"spec":     map[string]any{"replicas": replicas, "template": s.template()}}
}

func (s *Journal) template() map[string]any {
	return map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "shop:1.0",
			"env": []any{map[string]any{"name": "COLOR", "valueFrom": map[string]any{"configMapKeyRef": map[string]any{"name": "settings", "key": "color"}}}}}}}}
}

func (s *Journal) settings(color string, at time.Time, manager string) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "managedFields": managed(manager, at, map[string]any{"f:data": map[string]any{"f:color": map[string]any{}}})},
		"data":     map[string]any{"color": color, "size": "L"}}
}

func (s *Journal) pod(i int, waiting string) map[string]any {
	state := map[string]any{"running": map[string]any{}}
	if waiting != "" {
		state = map[string]any{"waiting": map[string]any{"reason": waiting}}
	}
	return map[string]any{"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": fmt.Sprintf("web-1-%d", i), "labels": map[string]any{"app": "web"},
			"ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-1", "uid": "uid-replicasets-web-1", "controller": true}}},
		"spec":   map[string]any{"nodeName": "node-1", "containers": s.template()["spec"].(map[string]any)["containers"]},
		"status": map[string]any{"phase": "Running", "containerStatuses": []any{map[string]any{"name": "app", "restartCount": 0, "state": state}}}}
}

// Records returns the journal's records, in order. Call it once.
func (s *Journal) Records() []event.Record {
	var out []event.Record
	for i, st := range s.streams() {
		out = append(out, storagetest.Baseline(st, "b-"+strconv.Itoa(i), T0, "1", nil)...)
	}
	t := T0.Add(time.Minute)
	s.object("", "nodes", "Node", event.Added, map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": "node-1"}}, t)
	s.object("", "serviceaccounts", "ServiceAccount", event.Added, map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default"}}, t)
	s.object("", "configmaps", "ConfigMap", event.Added, s.settings("blue", t, "kubectl-create"), t)
	s.object("apps", "deployments", "Deployment", event.Added, s.deployment(s.Pods, t, "kubectl-create"), t)
	s.object("apps", "replicasets", "ReplicaSet", event.Added, map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet",
		"metadata": map[string]any{"name": "web-1", "ownerReferences": []any{map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "uid-deployments-web", "controller": true}}},
		"spec":     map[string]any{"replicas": s.Pods, "template": s.template()}}, t)
	for i := range s.Pods {
		s.object("", "pods", "Pod", event.Added, s.pod(i, ""), t)
	}
	t = Changed
	if s.GapOverChange {
		s.relistedChange()
	} else {
		s.object("", "configmaps", "ConfigMap", event.Modified, s.settings("chartreuse", t, "kubectl-edit"), t)
	}
	t = Scaled
	s.object("apps", "deployments", "Deployment", event.Modified, s.deployment(s.Pods+1, t, "kube-controller-manager"), t)
	t = Crashed
	s.object("", "pods", "Pod", event.Modified, s.pod(0, "CrashLoopBackOff"), t)
	if s.Events {
		s.object("", "events", "Event", event.Added, map[string]any{"apiVersion": "v1", "kind": "Event", "metadata": map[string]any{"name": "web-1-0.1"},
			"involvedObject": map[string]any{"apiVersion": "v1", "kind": "Pod", "namespace": s.Namespace, "name": "web-1-0"},
			"reason":         "BackOff", "message": "Back-off restarting failed container app", "type": "Warning", "count": 3,
			"firstTimestamp": t.Format(time.RFC3339), "lastTimestamp": t.Format(time.RFC3339)}, t)
	}
	out = append(out, s.recs...)
	for _, st := range s.streams() {
		out = append(out, storagetest.Checkpoint(st, strconv.Itoa(s.rv), true, End))
	}
	return out
}

// relistedChange writes the gap of the ConfigMaps stream and the relist
// that shows the changed key.
func (s *Journal) relistedChange() {
	st := s.stream("", "configmaps", true)
	s.rv++
	s.recs = append(s.recs, storagetest.Checkpoint(st, strconv.Itoa(s.rv), true, GapFrom),
		storagetest.Gap(st, GapFrom, GapTo, "410 Gone: too old resource version", strconv.Itoa(s.rv)))
	s.rv++
	obj := s.settings("chartreuse", Changed, "kubectl-edit")
	md := obj["metadata"].(map[string]any)
	md["namespace"], md["uid"], md["resourceVersion"] = s.Namespace, "uid-configmaps-settings", strconv.Itoa(s.rv)
	body, _ := json.Marshal(obj)
	item := storagetest.Item{Ref: storagetest.Ref(st, "ConfigMap", s.Namespace, "settings", "uid-configmaps-settings", strconv.Itoa(s.rv)), Object: body}
	relist := storagetest.Baseline(st, "b-relist", Relisted, strconv.Itoa(s.rv), []storagetest.Item{item})
	relist[len(relist)-1].Baseline.Reason = "relist after gap"
	relist[len(relist)-1].Baseline.ClosesGap = s.recs[len(s.recs)-1].EventID
	s.recs = append(s.recs, relist...)
}

// Write appends the journal's records to a store.
func (s *Journal) Write(ctx context.Context, w storage.Writer) error {
	_, err := w.Append(ctx, s.Records())
	return err
}
