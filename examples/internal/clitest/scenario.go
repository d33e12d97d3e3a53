package clitest

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/krply/krply/krplytest"
)

// Object builds an object of the fake cluster.
func Object(apiVersion, kind, namespace, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetUID(types.UID("uid-" + kind + "-" + name))
	return u
}

// Shop records the examples' scenario: namespace shop with ConfigMap
// settings (color blue), Deployment web (1 replica) and Pod debug; at
// Before, settings becomes green, web is scaled to 3, ConfigMap extra is
// created and Pod debug deleted; After follows. The file is closed when
// Shop returns.
func Shop(t TB) (r *Recording, before, after time.Time) {
	t.Helper()
	r = Record(t, krplytest.WithObjects([]runtime.Object{
		Object("v1", "Namespace", "", "shop", nil),
		Object("v1", "ConfigMap", "shop", "settings", map[string]any{"data": map[string]any{"color": "blue"}}),
		Object("apps/v1", "Deployment", "shop", "web", map[string]any{"spec": map[string]any{"replicas": int64(1)}}),
		Object("v1", "Pod", "shop", "debug", map[string]any{"spec": map[string]any{}}),
	}...))
	before = r.Mark()
	r.Modify("cm", "shop", "settings", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "green", "data", "color")
	})
	r.Modify("deploy", "shop", "web", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(3), "spec", "replicas")
	})
	r.Create(Object("v1", "ConfigMap", "shop", "extra", map[string]any{"data": map[string]any{"k": "v"}}))
	r.Delete("pods", "shop", "debug")
	after = r.Mark()
	if err := r.Close(); err != nil {
		t.Fatalf("clitest: %v", err)
	}
	return r, before, after
}
