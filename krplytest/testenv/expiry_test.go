package testenv_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/krply/krply/krplytest/testenv"
)

// updateN changes the ConfigMap n times and returns the resourceVersion of
// each change.
func updateN(t *testing.T, ctx context.Context, dyn dynamic.Interface, cm *unstructured.Unstructured, n int) []string {
	t.Helper()
	var rvs []string
	for i := range n {
		cm = cm.DeepCopy()
		if err := unstructured.SetNestedField(cm.Object, fmt.Sprint(i), "data", "step"); err != nil {
			t.Fatal(err)
		}
		updated, err := dyn.Resource(configMaps).Namespace(cm.GetNamespace()).Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("update %s: %v", cm.GetName(), err)
		}
		cm = updated
		rvs = append(rvs, updated.GetResourceVersion())
	}
	return rvs
}

// watchFrom watches the namespace's ConfigMaps from rv.
func watchFrom(t *testing.T, ctx context.Context, dyn dynamic.Interface, ns, rv string) watch.Interface {
	t.Helper()
	w, err := dyn.Resource(configMaps).Namespace(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		t.Fatalf("watch %s from %s: %v", ns, rv, err)
	}
	t.Cleanup(w.Stop)
	return w
}

// expectExpiredEvent asserts that the watch's first event is the form a real
// apiserver uses to report an expired resourceVersion: an ERROR event whose
// Status has code 410 and reason Expired, and that the stream then ends.
func expectExpiredEvent(t *testing.T, w watch.Interface) {
	t.Helper()
	ev, ok := nextEvent(t, w, 10*time.Second)
	if !ok {
		t.Fatal("watch ended without an event, want an ERROR event with 410")
	}
	if ev.Type != watch.Error {
		t.Fatalf("first event is %s %v, want ERROR with 410 Expired", ev.Type, ev.Object)
	}
	err := apierrors.FromObject(ev.Object)
	status, isStatus := err.(apierrors.APIStatus)
	if !isStatus || status.Status().Code != 410 || !apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		t.Fatalf("ERROR event carries %#v, want a Status with code 410 and reason Expired", ev.Object)
	}
	t.Logf("watch got ERROR: %v", err)
	if ev, ok := nextEvent(t, w, 10*time.Second); ok {
		t.Fatalf("watch continues after the 410 with %s %v", ev.Type, ev.Object)
	}
}

// After a compaction, an apiserver serving ConfigMaps from etcd (no watch
// cache) answers a watch from an older resourceVersion with 410 Expired — as
// an ERROR event — and an exact list from it with HTTP 410; the primary
// apiserver, whose watch cache still holds those changes, keeps serving the
// watch.
func TestCompactionExpiresOldResourceVersionWithoutWatchCache(t *testing.T) {
	t.Parallel()
	env := testenv.Shared(t)
	ctx := testContext(t, 2*time.Minute)
	uncached := env.StartAPIServer(t, "--watch-cache=false")
	ns := env.CreateNamespace(t)

	primary := client(t, env.Config())
	direct := client(t, uncached.Config())
	created := mustCreate(t, ctx, primary, configMap(ns, "compacted", map[string]any{"step": "created"}))
	oldRV := created.GetResourceVersion()
	updates := updateN(t, ctx, primary, created, 3)

	// Before the compaction the uncached apiserver replays the history.
	w := watchFrom(t, ctx, direct, ns, oldRV)
	for _, want := range updates {
		ev, _ := nextEvent(t, w, 10*time.Second)
		if ev.Type != watch.Modified || ev.Object.(*unstructured.Unstructured).GetResourceVersion() != want {
			t.Fatalf("before compaction: got %s %v, want MODIFIED at %s", ev.Type, ev.Object, want)
		}
	}
	w.Stop()

	rev, err := env.Compact(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compacted etcd at revision %d (ConfigMap created at %s)", rev, oldRV)

	expectExpiredEvent(t, watchFrom(t, ctx, direct, ns, oldRV))

	_, err = direct.Resource(configMaps).Namespace(ns).List(ctx, metav1.ListOptions{
		ResourceVersion: oldRV, ResourceVersionMatch: metav1.ResourceVersionMatchExact,
	})
	if !apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		t.Errorf("exact list from %s after compaction: got %v, want 410 with reason Expired (IsResourceExpired, not IsGone)", oldRV, err)
	}

	// The watch cache of the primary apiserver still has the changes.
	w = watchFrom(t, ctx, primary, ns, oldRV)
	for _, want := range updates {
		ev, _ := nextEvent(t, w, 10*time.Second)
		if ev.Type != watch.Modified || ev.Object.(*unstructured.Unstructured).GetResourceVersion() != want {
			t.Fatalf("cached watch after compaction: got %s %v, want MODIFIED at %s", ev.Type, ev.Object, want)
		}
	}
}

// After an apiserver restart its watch cache starts at etcd's current
// revision, so a watch from a resourceVersion handed out before the restart
// gets 410 Expired (as an ERROR event) although etcd still has that history,
// while a watch from a resourceVersion the restarted apiserver handed out
// works.
func TestRestartExpiresOldResourceVersion(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t)
	ctx := testContext(t, 2*time.Minute)
	ns := env.CreateNamespace(t)
	dyn := client(t, env.Config())

	created := mustCreate(t, ctx, dyn, configMap(ns, "restarted", map[string]any{"step": "created"}))
	oldRV := created.GetResourceVersion()
	// A later write, so that etcd's revision is past oldRV at the restart.
	mustCreate(t, ctx, dyn, configMap(ns, "later", nil))

	// Before the restart, the watch from oldRV works.
	w := watchFrom(t, ctx, dyn, ns, oldRV)
	if ev, _ := nextEvent(t, w, 10*time.Second); ev.Type != watch.Added || ev.Object.(*unstructured.Unstructured).GetName() != "later" {
		t.Fatalf("before restart: got %s %v, want ADDED later", ev.Type, ev.Object)
	}

	begin := time.Now()
	if err := env.APIServer.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("apiserver restarted in %v", time.Since(begin).Round(time.Millisecond))
	if _, ok := <-w.ResultChan(); ok {
		t.Error("the watch opened before the restart is still delivering events")
	}

	expectExpiredEvent(t, watchFrom(t, ctx, dyn, ns, oldRV))

	list, err := dyn.Resource(configMaps).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 2 {
		t.Fatalf("after restart: %d ConfigMaps, want 2", len(list.Items))
	}
	w = watchFrom(t, ctx, dyn, ns, list.GetResourceVersion())
	updates := updateN(t, ctx, dyn, &list.Items[0], 1)
	if ev, _ := nextEvent(t, w, 10*time.Second); ev.Type != watch.Modified || ev.Object.(*unstructured.Unstructured).GetResourceVersion() != updates[0] {
		t.Fatalf("watch from the post-restart list: got %s %v, want MODIFIED at %s", ev.Type, ev.Object, updates[0])
	}
}
