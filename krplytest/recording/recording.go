// Package recording records a journal from the real control plane for
// tests that need one with everything a recorder writes in it: writes by
// two users, an outage during which etcd is compacted (the restarted
// recorder gets 410 Gone, records a gap, relists and infers a deletion),
// audit correlations, a saved snapshot and a saved replay plan. The
// storage/transfer round-trip tests use it, and so can a backend's
// (storage/postgres, its own module, may import it: internal packages are
// reachable from everything under the module's path).
package recording

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/krply/krply/audit"
	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/replay"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/watch"
)

var (
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// recorder records namespace ns of the apiserver at cfg into store.
type recorder struct {
	t     *testing.T
	store storage.ReadWriter
	cfg   *rest.Config
	ns    string
	rec   *watch.Collector
	stop  func()
}

func (r *recorder) start(ctx context.Context) {
	r.t.Helper()
	rec, err := watch.NewCollectorForConfig(r.cfg, r.store, watch.WithResources("cm", "deploy"), watch.WithNamespaces(r.ns),
		watch.WithProgressInterval(time.Second), watch.WithBackoff(100*time.Millisecond, time.Second))
	if err != nil {
		r.t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rec.Start(rctx) }()
	r.rec = rec
	r.stop = func() {
		cancel()
		if err := <-done; err != nil {
			r.t.Errorf("collector: %v", err)
		}
	}
	sctx, scancel := context.WithTimeout(ctx, 2*time.Minute)
	defer scancel()
	if err := rec.WaitForSync(sctx); err != nil {
		r.t.Fatalf("collector did not sync: %v", err)
	}
}

// await waits until the journal holds the object's version rv ("" for
// its deletion).
func (r *recorder) await(ctx context.Context, gvr schema.GroupVersionResource, name, rv string) {
	r.t.Helper()
	obj := storage.ObjectID{ClusterID: r.rec.ClusterID(), Group: gvr.Group, Resource: gvr.Resource, Namespace: r.ns, Name: name}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if rv != "" {
			if _, err := r.store.EventByResourceVersion(ctx, obj, "", rv); err == nil {
				return
			}
		} else if rec, err := r.store.LatestAt(ctx, obj, time.Now()); err == nil && rec.WatchType == event.Deleted {
			return
		}
	}
	r.t.Fatalf("%s %s at %q was not recorded within 30s", gvr.Resource, name, rv)
}

// Outage records the scenario of the package documentation into store
// (empty at the start) from a control plane of its own, started with
// testenv.Start (so it needs KUBEBUILDER_ASSETS, see krplytest/testenv),
// and fails t unless the journal holds every kind of record: events real
// and synthetic, baselines, a gap, checkpoints, an inferred deletion,
// audit correlations with exact matches, a complete saved snapshot and a
// saved plan. It returns the counts of record types ("inferred" and
// "synthetic" too).
func Outage(t *testing.T, store storage.ReadWriter) map[string]int {
	t.Helper()
	return Record(t, store).Counts
}

// Recorded is what Record recorded and where.
type Recorded struct {
	// Env is the control plane recorded from; it runs until t ends, for
	// tests that ask it more (e.g. TokenReviews and SubjectAccessReviews
	// of its users).
	Env *testenv.Env
	// Namespace is the namespace recorded, ClusterID the journal's
	// cluster.
	Namespace, ClusterID string
	// Counts are the counts of record types ("inferred" and "synthetic"
	// too).
	Counts map[string]int
}

// Record records the scenario of Outage into store and returns what and
// where it recorded.
func Record(t *testing.T, store storage.ReadWriter) *Recorded {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env := testenv.Start(t, testenv.WithAudit(""))
	// Without watch cache, a watch from a compacted resourceVersion really
	// fails with 410 Gone.
	source := env.StartAPIServer(t, "--watch-cache=false").Config()
	ns := env.CreateNamespace(t)
	r := &recorder{t: t, store: store, cfg: source, ns: ns}
	r.start(ctx)
	users := map[string]dynamic.Interface{}
	for _, u := range []string{testenv.UserAlice, testenv.UserBob} {
		dyn, err := dynamic.NewForConfig(env.ConfigFor(u))
		if err != nil {
			t.Fatal(err)
		}
		users[u] = dyn
	}
	create := func(user string, u *unstructured.Unstructured, gvr schema.GroupVersionResource) {
		t.Helper()
		out, err := users[user].Resource(gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r.await(ctx, gvr, u.GetName(), out.GetResourceVersion())
	}
	patch := func(user string, gvr schema.GroupVersionResource, name, p string, recording bool) {
		t.Helper()
		out, err := users[user].Resource(gvr).Namespace(ns).Patch(ctx, name, types.MergePatchType, []byte(p), metav1.PatchOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if recording {
			r.await(ctx, gvr, name, out.GetResourceVersion())
		}
	}
	remove := func(user string, gvr schema.GroupVersionResource, name string, recording bool) {
		t.Helper()
		if err := users[user].Resource(gvr).Namespace(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		if recording {
			r.await(ctx, gvr, name, "")
		}
	}
	for _, name := range []string{"settings", "cache", "legacy"} {
		create(testenv.UserAlice, configMap(ns, name, map[string]any{"v": name}), configMaps)
	}
	create(testenv.UserAlice, deployment(ns, "web"), deployments)
	patch(testenv.UserBob, configMaps, "settings", `{"data":{"v":"green"}}`, true)
	patch(testenv.UserBob, deployments, "web", `{"spec":{"replicas":3}}`, true)
	remove(testenv.UserAlice, configMaps, "legacy", true)

	// The outage: the recorder stops, bob changes things, etcd forgets.
	r.stop()
	remove(testenv.UserBob, configMaps, "cache", false)
	patch(testenv.UserBob, deployments, "web", `{"spec":{"replicas":2}}`, false)
	if _, err := env.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	r.start(ctx)
	patch(testenv.UserAlice, configMaps, "settings", `{"data":{"v":"red"}}`, true)
	end := time.Now()
	if err := r.rec.WaitForProgress(ctx, end); err != nil {
		t.Fatal(err)
	}
	clusterID := r.rec.ClusterID()

	// Who did it, a saved snapshot and a saved plan.
	time.Sleep(500 * time.Millisecond) // the audit backend writes moments after the response
	corr, err := audit.NewCorrelator(store, clusterID)
	if err != nil {
		t.Fatal(err)
	}
	files, err := audit.OpenFiles([]string{env.AuditLogPath()})
	if err != nil {
		t.Fatal(err)
	}
	sum, err := corr.Ingest(ctx, files)
	_ = files.Close()
	if err != nil {
		t.Fatal(err)
	}
	m, err := materialize.New(store)
	if err != nil {
		t.Fatal(err)
	}
	scope := materialize.Scope{ClusterID: clusterID, Namespaces: []string{ns}}
	snap, err := m.Snapshot(ctx, scope, end)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SaveSnapshot(ctx, snap, "end"); err != nil {
		t.Fatal(err)
	}
	planner, err := replay.NewPlanner(store)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := planner.Plan(ctx, replay.Source{ClusterID: clusterID, Namespaces: []string{ns}, At: end},
		replay.Target{Namespaces: map[string]string{ns: ns + "-copy"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := planner.SavePlan(ctx, plan); err != nil {
		t.Fatal(err)
	}
	r.stop()

	counts := map[string]int{}
	page, err := store.Records(ctx, storage.Query{Limit: 100000, WithoutBodies: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, rec := range page.Records {
		counts[string(rec.Type)]++
		if rec.Inferred != nil {
			counts["inferred"]++
		}
		if rec.Synthetic {
			counts["synthetic"]++
		}
	}
	for _, what := range []string{"event", "baseline", "gap", "checkpoint", "audit_correlation", "snapshot", "replay_plan", "inferred", "synthetic"} {
		if counts[what] == 0 {
			t.Errorf("the recorded journal has no %s record: %v", what, counts)
		}
	}
	if !snap.Complete || sum.Exact == 0 {
		t.Errorf("snapshot at the end complete=%v, %d exact audit matches: want a complete snapshot and exact matches", snap.Complete, sum.Exact)
	}
	return &Recorded{Env: env, Namespace: ns, ClusterID: clusterID, Counts: counts}
}

// CompactAfterRelist compacts a journal that Outage recorded just after its
// last baseline record (the relist that closed the gap), and fails t
// unless the compaction removed records of some stream. It returns what
// the compaction did.
func CompactAfterRelist(t *testing.T, store storage.ReadWriter) storage.CompactResult {
	t.Helper()
	ctx := context.Background()
	page, err := store.Records(ctx, storage.Query{Types: []event.RecordType{event.TypeBaseline}, Descending: true, Limit: 1})
	if err != nil || len(page.Records) == 0 {
		t.Fatalf("the last baseline record: %v", err)
	}
	res, err := store.Compact(ctx, page.Records[0].ObservedAt.Add(1))
	if err != nil {
		t.Fatal(err)
	}
	if res.RecordsRemoved == 0 || res.Streams == 0 {
		t.Fatalf("the compaction did little: %+v", res)
	}
	return res
}

func configMap(ns, name string, data map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns}, "data": data,
	}}
}

func deployment(ns, name string) *unstructured.Unstructured {
	labels := map[string]any{"app": name}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"spec": map[string]any{
			"replicas": int64(1),
			"selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{
				"metadata": map[string]any{"labels": labels},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "web", "image": fmt.Sprintf("nginx:%s", "1.27")}}},
			},
		},
	}}
}
