package pgtruth

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/krplytest/testenv/faultproxy"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/postgres"
	"github.com/krply/krply/storage/postgres/internal/pgtest"
	"github.com/krply/krply/watch"
)

// TestReplicaRelistKeepsNewerObjects: two replicas record one cluster
// into one PostgreSQL database, each with a store of its own (as two
// processes have). Replica A relists after a 410 while B keeps watching;
// A's second list page is held back while an object is created and B
// records it. The object is alive in the database, absent from A's list
// (taken before it existed) and newer than it: A's relist must not infer
// its deletion, and the database must hold the server's state after it
// (watch's TestIntegrationReplicaRelistKeepsNewerObjects, on PostgreSQL).
func TestReplicaRelistKeepsNewerObjects(t *testing.T) {
	env := testenv.Start(t)
	ns := env.CreateNamespace(t)
	pa := faultproxy.Start(t, env.Config())
	cs := kubernetes.NewForConfigOrDie(env.Config())
	ctx := context.Background()
	create := func(name string) *corev1.ConfigMap {
		cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return cm
	}
	for _, name := range []string{"a0", "a1", "a2"} { // two pages of two
		create(name)
	}
	dsn := pgtest.NewDatabase(t)
	startReplica(t, env.Config(), dsn, ns) // B
	a := startReplica(t, pa.Config(), dsn, ns, watch.WithPageSize(2), watch.WithWatchList(watch.WatchListOff))
	st := openStore(t, dsn)
	stream := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: ns}.ID()

	const held = 5 * time.Second
	lists := faultproxy.Match{Verb: "list", Resource: "configmaps", Namespace: ns}
	watches := faultproxy.Match{Verb: "watch", Resource: "configmaps", Namespace: ns}
	pa.ResetCounts()
	pa.FailNext(1, lists, faultproxy.Delay(0))
	pa.FailNext(1, lists, faultproxy.Delay(held))
	pa.FailNext(1, watches, faultproxy.WatchError(410))
	pa.CutWatches(watches)
	waitFor(t, 30*time.Second, "A's second list page is held", func() bool { return pa.Count(lists) >= 2 })
	heldFrom := time.Now()
	late := create("late")
	key := storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: ns, Name: "late"}
	waitFor(t, held, "B records the new object while A's list is held", func() bool {
		r, err := st.LatestAt(ctx, key, time.Now())
		return err == nil && r.Resource.UID == string(late.UID)
	})
	if time.Since(heldFrom) >= held {
		t.Fatalf("B recorded the new object after A's list went on (%v): the test proves nothing; hold the list longer", time.Since(heldFrom))
	}
	waitFor(t, 30*time.Second, "A's relist", func() bool { return len(records(t, st, stream, isRelistEnd)) == 1 })

	for _, d := range records(t, st, stream, func(r event.Record) bool { return r.Inferred != nil }) {
		t.Errorf("inferred deletion of %s (resourceVersion %s); want none: nothing was deleted", d.Resource.ObjectKey(), d.Resource.ResourceVersion)
	}
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	now := time.Now()
	if err := a.WaitForProgress(wctx, now); err != nil {
		t.Fatal(err)
	}
	alive, err := st.AliveAt(ctx, storage.AliveQuery{At: now, StreamID: stream, WithoutBodies: true})
	if err != nil {
		t.Fatal(err)
	}
	server, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, cm := range server.Items {
		want[cm.Name] = string(cm.UID)
	}
	got := map[string]string{}
	for _, r := range alive {
		got[r.Resource.Name] = r.Resource.UID
	}
	if len(got) != len(want) || got["late"] != want["late"] {
		t.Errorf("alive in the database after A's relist: %v; the server has %v", got, want)
	}
}

func isRelistEnd(r event.Record) bool {
	return r.Baseline != nil && r.Baseline.Phase == event.BaselineEnd && r.Baseline.Reason == "relist after gap"
}

// startReplica records the ConfigMaps of ns into the database with a store
// of its own until the test ends, and returns once it synced.
func startReplica(t *testing.T, cfg *rest.Config, dsn, ns string, opts ...watch.Option) *watch.Collector {
	t.Helper()
	st := openStore(t, dsn)
	c, err := watch.NewCollectorForConfig(cfg, st, append([]watch.Option{watch.WithClusterID("c1"), watch.WithResources("configmaps"),
		watch.WithNamespaces(ns), watch.WithBackoff(20*time.Millisecond, 400*time.Millisecond), watch.WithRediscoveryInterval(0),
		watch.WithProgressInterval(2 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("replica: %v", err)
		}
	})
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	defer scancel()
	if err := c.WaitForSync(sctx); err != nil {
		t.Fatal(err)
	}
	return c
}

func openStore(t *testing.T, dsn string) *postgres.Store {
	t.Helper()
	st, err := postgres.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// records returns the stream's records that keep selects.
func records(t *testing.T, st storage.Reader, stream string, keep func(event.Record) bool) []event.Record {
	t.Helper()
	page, err := st.Records(context.Background(), storage.Query{StreamID: stream, WithoutBodies: true, Limit: 10000})
	if err != nil {
		t.Fatal(err)
	}
	var out []event.Record
	for _, r := range page.Records {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, timeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
