package testenv_test

import (
	"context"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/krply/krply/krplytest/testenv"
)

// userCarol is added with WithUser, in a group no role is bound to.
const userCarol = "carol"

// The tests of this package share one control plane, with the audit log on.
func TestMain(m *testing.M) {
	os.Exit(testenv.RunMain(m, testenv.WithAudit(""), testenv.WithUser(userCarol, "krply:testers")))
}

var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

func client(t *testing.T, cfg *rest.Config) *dynamic.DynamicClient {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

func configMap(ns, name string, data map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]any{"name": name, "namespace": ns},
		"data":       data,
	}}
}

func testContext(t *testing.T, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// nextEvent returns the next event of w, failing t after timeout.
func nextEvent(t *testing.T, w watch.Interface, timeout time.Duration) (watch.Event, bool) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		return ev, ok
	case <-time.After(timeout):
		t.Fatalf("no watch event within %v", timeout)
		return watch.Event{}, false
	}
}

func mustCreate(t *testing.T, ctx context.Context, dyn dynamic.Interface, obj *unstructured.Unstructured) *unstructured.Unstructured {
	t.Helper()
	got, err := dyn.Resource(configMaps).Namespace(obj.GetNamespace()).Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s/%s: %v", obj.GetNamespace(), obj.GetName(), err)
	}
	return got
}
