package shop

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestObjects(t *testing.T) {
	d := Deployment("web", "nginx:1.27", 2)
	SetImage(d, "nginx:1.28")
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	if img := containers[0].(map[string]any)["image"]; img != "nginx:1.28" {
		t.Errorf("image %v after SetImage", img)
	}
	for _, c := range []struct {
		u         *unstructured.Unstructured
		resource  string
		namespace string
	}{
		{NamespaceObject("shop"), "namespaces", ""},
		{ConfigMap("settings", map[string]any{"color": "blue"}), "configmaps", Namespace},
		{ServiceAccount("deployer"), "serviceaccounts", Namespace},
		{d, "deployments", Namespace},
		{Service("web"), "services", Namespace},
		{Pod("debug", "deployer"), "pods", Namespace},
		{Event("web.1", "Deployment", "apps/v1", "web", "ScalingReplicaSet", "scaled", time.Unix(0, 0)), "events", Namespace},
	} {
		if got := GVR(c.u).Resource; got != c.resource || c.u.GetNamespace() != c.namespace {
			t.Errorf("%s %s: resource %s in %q, want %s in %q", c.u.GetKind(), c.u.GetName(), got, c.u.GetNamespace(), c.resource, c.namespace)
		}
	}
}
