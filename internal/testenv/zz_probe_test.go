package testenv_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/krply/krply/internal/testenv"
)

func TestZZProbeTimeoutBookmarks(t *testing.T) {
	env := testenv.Shared(t)
	ctx := testContext(t, 3*time.Minute)
	ns := env.CreateNamespace(t)
	dyn := client(t, env.Config())
	created := mustCreate(t, ctx, dyn, configMap(ns, "idle", nil))
	rv := created.GetResourceVersion()
	for _, timeout := range []int64{1, 2, 3, 5, 8} {
		for round := 0; round < 2; round++ {
			begin := time.Now()
			w, err := dyn.Resource(configMaps).Namespace(ns).Watch(ctx, metav1.ListOptions{
				ResourceVersion: rv, AllowWatchBookmarks: true, TimeoutSeconds: &timeout,
			})
			if err != nil {
				t.Fatal(err)
			}
			accepted := time.Since(begin)
			for ev := range w.ResultChan() {
				o, _ := ev.Object.(*unstructured.Unstructured)
				orv := ""
				if o != nil {
					orv = o.GetResourceVersion()
				}
				t.Logf("timeout %d round %d: %s rv=%s (from %s) after %v", timeout, round, ev.Type, orv, rv, time.Since(begin).Round(time.Millisecond))
			}
			t.Logf("timeout %d round %d: accepted after %v, closed after %v", timeout, round, accepted.Round(time.Millisecond), time.Since(begin).Round(time.Millisecond))
		}
	}
}
