package materialize_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/watch"
)

var (
	cmGVR     = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deployGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// TestRecordedByCollector records real changes with the Collector on the
// local control plane and reads them back: snapshot, object at T, history
// and diff.
func TestRecordedByCollector(t *testing.T) {
	env := testenv.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	ns := env.CreateNamespace(t)
	create := func(gvr schema.GroupVersionResource, manifest map[string]any) {
		t.Helper()
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: manifest}, metav1.CreateOptions{FieldManager: "test"}); err != nil {
			t.Fatal(err)
		}
	}
	create(cmGVR, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "settings"}, "data": map[string]any{"color": "blue"}})
	create(cmGVR, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "old"}, "data": map[string]any{"k": "v"}})
	create(deployGVR, map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web"},
		"spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec": map[string]any{"containers": []any{
					map[string]any{"name": "app", "image": "registry.example/shop:1.0"},
					map[string]any{"name": "proxy", "image": "registry.example/envoy:1.30"},
				}}}}})

	store := memory.New()
	t.Cleanup(func() { store.Close() })
	col, err := watch.NewCollectorForConfig(env.Config(), store, watch.WithResources("cm", "deploy"), watch.WithNamespaces(ns),
		watch.WithProgressInterval(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	krplytest.StartCollector(t, col, 3*time.Minute)
	cluster := col.ClusterID()
	t1 := time.Now()

	// Changes: scale and roll the Deployment (reordering its containers,
	// which is not a change), edit, add and delete ConfigMaps.
	if _, err := dyn.Resource(deployGVR).Namespace(ns).Patch(ctx, "web", types.JSONPatchType, []byte(`[
		{"op":"replace","path":"/spec/replicas","value":3},
		{"op":"replace","path":"/spec/template/spec/containers","value":[
			{"name":"proxy","image":"registry.example/envoy:1.30"},
			{"name":"app","image":"registry.example/shop:1.1"}]}]`), metav1.PatchOptions{FieldManager: "test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(cmGVR).Namespace(ns).Patch(ctx, "settings", types.MergePatchType, []byte(`{"data":{"color":"green"}}`), metav1.PatchOptions{FieldManager: "test"}); err != nil {
		t.Fatal(err)
	}
	if err := dyn.Resource(cmGVR).Namespace(ns).Delete(ctx, "old", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	created, err := dyn.Resource(cmGVR).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "new"}, "data": map[string]any{"k": "v"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The last change is in the journal: everything before it is too (one
	// stream, in order).
	newID := storage.ObjectID{ClusterID: cluster, Resource: "configmaps", Namespace: ns, Name: "new"}
	var t2 time.Time
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		rec, err := store.LatestAt(ctx, newID, time.Now())
		if err == nil && rec.Resource.ResourceVersion == created.GetResourceVersion() {
			t2 = rec.ObservedAt
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector did not record the new ConfigMap: %v", err)
		}
	}
	// Let the deployment stream catch up too.
	webID := storage.ObjectID{ClusterID: cluster, Group: "apps", Resource: "deployments", Namespace: ns, Name: "web"}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		h, err := store.ObjectHistory(ctx, webID, storage.HistoryQuery{WithoutBodies: true})
		if err == nil && len(h) >= 2 {
			if t2.Before(h[len(h)-1].ObservedAt) {
				t2 = h[len(h)-1].ObservedAt
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector did not record the Deployment change: %v", err)
		}
	}

	// Coverage at T2 needs every stream's evidence after it.
	if err := col.WaitForProgress(ctx, t2); err != nil {
		t.Fatal(err)
	}
	m, err := materialize.New(store)
	if err != nil {
		t.Fatal(err)
	}
	scope := materialize.Scope{ClusterID: cluster, Namespaces: []string{ns}}
	snap, err := m.Snapshot(ctx, scope, t1)
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Complete || len(snap.Watermarks) != 2 {
		t.Fatalf("snapshot at T1: complete=%v watermarks %+v missing %+v", snap.Complete, snap.Watermarks, snap.Missing)
	}
	// No controller-manager runs, so no kube-root-ca.crt either.
	var got []string
	for _, o := range snap.Objects {
		got = append(got, o.Ref.Resource+"/"+o.Ref.Name)
	}
	if want := []string{"configmaps/old", "configmaps/settings", "deployments/web"}; !slices.Equal(got, want) {
		t.Fatalf("snapshot at T1: %q, want %q", got, want)
	}

	old, err := m.ObjectAt(ctx, storage.ObjectID{ClusterID: cluster, Resource: "configmaps", Namespace: ns, Name: "old"}, t2)
	if err != nil {
		t.Fatal(err)
	}
	if old.Exists || !old.Covered || old.Record == nil || old.Record.Synthetic {
		t.Fatalf("old at T2: exists=%v covered=%v record %+v, want a real deletion", old.Exists, old.Covered, old.Record)
	}

	d, err := m.Diff(ctx, scope, t1, t2)
	if err != nil {
		t.Fatal(err)
	}
	if d.HasGaps {
		t.Fatalf("diff has gaps: %q", d.Warnings)
	}
	var table strings.Builder
	if err := d.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ConfigMap NS/new (added)",
		"ConfigMap NS/old (removed)",
		"ConfigMap NS/settings data.color blue → green",
		"Deployment NS/web spec.replicas 1 → 3",
		"Deployment NS/web spec.template.spec.containers[name=app].image registry.example/shop:1.0 → registry.example/shop:1.1",
	}
	var rows []string
	for _, line := range strings.Split(strings.TrimSuffix(strings.ReplaceAll(table.String(), ns, "NS"), "\n"), "\n") {
		rows = append(rows, strings.Join(strings.Fields(line), " "))
	}
	if !slices.Equal(rows, want) {
		t.Fatalf("diff table\n%s\nwant rows %q", table.String(), want)
	}

	h, err := m.History(ctx, webID)
	if err != nil {
		t.Fatal(err)
	}
	vs := h.Versions()
	if len(vs) < 2 || vs[0].Origin != materialize.OriginBaseline || vs[1].Origin != materialize.OriginWatch {
		t.Fatalf("history of web: %q", describe(h))
	}
	paths := map[string]bool{}
	for _, v := range vs[1:] {
		for _, c := range v.Changes {
			paths[c.Path] = true
		}
	}
	for _, p := range []string{"spec.replicas", "spec.template.spec.containers[name=app].image"} {
		if !paths[p] {
			t.Errorf("history of web lacks %s: %q", p, describe(h))
		}
	}
	if paths["spec.template.spec.containers[name=proxy].image"] || paths["metadata.resourceVersion"] {
		t.Errorf("history of web reports a reordering or server-owned metadata: %q", describe(h))
	}
}
