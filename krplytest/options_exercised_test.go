package krplytest_test

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/watch"
)

// Tests of the options no other test exercises, each asserting its effect.

// WithAPIResources serves a custom resource, which the Collector records
// like any other; WithClusterID names the cluster of every record.
func TestWithAPIResourcesAndClusterID(t *testing.T) {
	widget := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"namespace": "shop", "name": "w1", "uid": "uid-w1"},
		"spec":     map[string]any{"size": int64(1), "unknownField": "kept"},
	}}
	c := krplytest.NewCluster(t,
		krplytest.WithClusterID("prod-eu"),
		krplytest.WithResources("widgets.example.com", "cm"),
		krplytest.WithObjects(widget),
		krplytest.WithAPIResources(&metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
			{Name: "widgets", SingularName: "widget", Kind: "Widget", Namespaced: true, Verbs: metav1.Verbs{"get", "list", "watch", "create", "update", "delete"}},
		}}))
	if c.ClusterID != "prod-eu" {
		t.Errorf("ClusterID %q, want prod-eu", c.ClusterID)
	}
	c.Modify("widgets.example.com", "shop", "w1", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(2), "spec", "size")
	})

	krplytest.AssertHistory(t, c.History("widgets.example.com", "shop", "w1"),
		krplytest.Version{Type: event.Added, Origin: materialize.OriginBaseline},
		krplytest.Version{Type: event.Modified, Origin: materialize.OriginWatch, Changes: map[string]any{"spec.size": 2}},
	)
	var widgets int
	for _, r := range c.Records() {
		if r.ClusterID != "prod-eu" || !strings.HasPrefix(r.StreamID, "prod-eu/") {
			t.Errorf("record %s of cluster %q in stream %s, want cluster prod-eu", r.EventID, r.ClusterID, r.StreamID)
		}
		if r.Type == event.TypeEvent && r.Resource.Group == "example.com" && r.Resource.Resource == "widgets" && r.Resource.Kind == "Widget" {
			widgets++
			if !strings.Contains(string(r.Object), `"unknownField":"kept"`) {
				t.Errorf("widget body %s lost its unknown field", r.Object)
			}
		}
	}
	if widgets != 2 {
		t.Errorf("%d widget events recorded, want 2 (baseline item and the change)", widgets)
	}
}

// WithCollectorOptions passes watch options to the Collector: with a label
// selector, only the ConfigMaps it selects are recorded.
func TestWithCollectorOptions(t *testing.T) {
	cm := func(name, app string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"namespace": "shop", "name": name, "uid": "uid-" + name, "labels": map[string]any{"app": app}}}}
	}
	c := krplytest.NewCluster(t, krplytest.WithResources("cm"), krplytest.WithObjects(cm("web", "web"), cm("db", "db")),
		krplytest.WithCollectorOptions(watch.WithLabelSelector("app=web")))
	var names []string
	for _, r := range c.Records() {
		if r.Type == event.TypeEvent {
			names = append(names, r.Resource.Name)
		}
	}
	if strings.Join(names, ",") != "web" {
		t.Fatalf("recorded %v, want only the ConfigMap the selector selects", names)
	}
}
