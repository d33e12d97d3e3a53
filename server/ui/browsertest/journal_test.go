package browsertest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/krply/krply"
	"github.com/krply/krply/audit"
	"github.com/krply/krply/event"
	workload "github.com/krply/krply/krplytest/shop"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/replay"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/watch"
)

// The namespaces of the recorded workload.
const (
	shop    = workload.Namespace
	sandbox = "shop-sandbox"
)

var (
	configMapsGVR = workload.ConfigMapsGVR
	deployGVR     = workload.DeploymentsGVR
)

// recording is a journal recorded from a real control plane: a small shop
// set up by alice, changed by alice and bob, an outage in which bob deletes
// the ConfigMap cache (the relist infers its deletion), a saved replay
// plan whose dry run conflicts with another field manager ("helm").
type recording struct {
	env       *testenv.Env
	j         *krply.Journal
	rec       *watch.Collector
	clusterID string
	target    *replay.Cluster // the cluster of the dry run and apply
	admin     dynamic.Interface

	setUp     time.Time // after alice set the shop up
	inOutage  time.Time // while the recorder was down
	end       time.Time // after the last write, covered
	gapStream string    // the stream of ConfigMaps in shop, which has a gap
	plan      *replay.Plan
}

// record runs the workload; the recorder keeps running until the test ends.
func record(t *testing.T) *recording {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env := testenv.Start(t, testenv.WithAudit(""))
	// The recorder watches through an apiserver without watch cache, so a
	// watch from a compacted resourceVersion really fails with 410 Gone.
	source := env.StartAPIServer(t, "--watch-cache=false").Config()
	users := map[string]dynamic.Interface{}
	for _, u := range []string{testenv.UserAdmin, testenv.UserAlice, testenv.UserBob} {
		dyn, err := dynamic.NewForConfig(env.ConfigFor(u))
		if err != nil {
			t.Fatal(err)
		}
		users[u] = dyn
	}
	j, err := krply.Open(ctx, filepath.Join(t.TempDir(), "journal.db"),
		krply.WithResources("ns", "deploy", "cm", "svc", "sa", "events"), krply.WithNamespaces(shop),
		krply.WithPolicy(replay.Policy{AllowSourceCluster: true}),
		krply.WithCollectorOptions(watch.WithBackoff(100*time.Millisecond, 2*time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = j.Close() })
	r := &recording{env: env, j: j, admin: users[testenv.UserAdmin]}
	stop := r.startRecorder(t, source)
	r.clusterID = r.rec.ClusterID()
	r.gapStream = r.clusterID + "/core/v1/configmaps/" + shop

	w := &writer{t: t, ctx: ctx, users: users, r: r, recording: true}
	w.create(testenv.UserAdmin, workload.NamespaceObject(shop))
	w.create(testenv.UserAlice, workload.ConfigMap("settings", map[string]any{"color": "blue"}))
	w.create(testenv.UserAlice, workload.ConfigMap("cache", map[string]any{"size": "1Gi"}))
	w.create(testenv.UserAlice, workload.ConfigMap("legacy", map[string]any{"unused": "yes"}))
	w.create(testenv.UserAlice, workload.Deployment("web", "nginx:1.27", 1))
	w.create(testenv.UserAlice, workload.Service("web"))
	w.create(testenv.UserAlice, workload.ServiceAccount("deployer"))
	w.create(testenv.UserAdmin, workload.Event("web.1", "Deployment", "apps/v1", "web", "ScalingReplicaSet", "Scaled up replica set web-6d4b to 1", time.Now()))
	r.setUp = r.mark(t, ctx)

	w.update(testenv.UserBob, configMapsGVR, "settings", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "green", "data", "color")
	})
	w.update(testenv.UserAlice, deployGVR, "web", func(u *unstructured.Unstructured) { workload.SetImage(u, "nginx:1.28") })
	w.patch(testenv.UserBob, deployGVR, "web", `{"spec":{"replicas":3}}`)
	w.delete(testenv.UserAlice, configMapsGVR, "legacy")

	// The outage: the recorder stops; bob deletes cache and scales web; etcd
	// forgets that history.
	if err := stop(); err != nil {
		t.Fatalf("stop the recorder: %v", err)
	}
	w.recording = false
	w.delete(testenv.UserBob, configMapsGVR, "cache")
	w.patch(testenv.UserBob, deployGVR, "web", `{"spec":{"replicas":2}}`)
	r.inOutage = time.Now()
	if _, err := env.Compact(ctx); err != nil {
		t.Fatalf("compact etcd: %v", err)
	}
	time.Sleep(200 * time.Millisecond)
	stop = r.startRecorder(t, source)
	t.Cleanup(func() { _ = stop() })
	w.recording = true
	w.update(testenv.UserAlice, configMapsGVR, "settings", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "red", "data", "color")
	})
	w.create(testenv.UserAdmin, workload.Event("web.2", "Deployment", "apps/v1", "web", "ScalingReplicaSet", "Scaled down replica set web-6d4b to 2", time.Now()))
	r.end = r.mark(t, ctx)

	// Who: the apiserver's audit log, correlated with the journal.
	time.Sleep(500 * time.Millisecond) // the audit backend writes moments after the response
	c, err := audit.NewCorrelator(j.Store(), r.clusterID)
	if err != nil {
		t.Fatal(err)
	}
	files, err := audit.OpenFiles([]string{env.AuditLogPath()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Ingest(ctx, files); err != nil {
		t.Fatalf("audit correlation: %v", err)
	}
	_ = files.Close()

	// A replay into a sandbox where "helm" already owns settings' color: the
	// dry run conflicts with that field manager.
	w.recording = false
	w.create(testenv.UserAdmin, workload.NamespaceObject(sandbox))
	helm := workload.ConfigMap("settings", map[string]any{"color": "purple"})
	helm.SetNamespace(sandbox)
	body, err := helm.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := users[testenv.UserAdmin].Resource(configMapsGVR).Namespace(sandbox).Patch(ctx, "settings", types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "helm"}); err != nil {
		t.Fatalf("helm applies settings in %s: %v", sandbox, err)
	}
	plan, err := j.Plan(ctx, krply.Source{ClusterID: r.clusterID, Namespaces: []string{shop}, At: r.end},
		krply.Target{Namespaces: map[string]string{shop: sandbox}})
	if err != nil {
		t.Fatalf("plan: %v", err)
	}
	if err := j.SavePlan(ctx, plan); err != nil {
		t.Fatal(err)
	}
	r.target, err = replay.NewClusterForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	report, err := j.DryRun(ctx, plan, r.target)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if !strings.Contains(fmt.Sprint(report.Results), "helm") {
		t.Fatalf("the dry run did not conflict with helm: %+v", report.Results)
	}
	r.plan = plan
	return r
}

// startRecorder starts a Collector on the journal and waits for its sync;
// the function it returns stops it.
func (r *recording) startRecorder(t *testing.T, source *rest.Config) func() error {
	t.Helper()
	// A progress checkpoint every 2s (instead of 10s) keeps the marks quick.
	rec, err := r.j.NewCollectorForConfig(source, watch.WithProgressInterval(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- rec.Start(ctx) }()
	r.rec = rec
	var stopped bool
	stop := func() error {
		if stopped {
			return nil
		}
		stopped = true
		cancel()
		return <-done
	}
	sctx, scancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer scancel()
	if err := rec.WaitForSync(sctx); err != nil {
		_ = stop()
		t.Fatalf("the recorder did not sync: %v", err)
	}
	return stop
}

// mark returns a time between the writes before it and those after, once
// every stream has evidence past it.
func (r *recording) mark(t *testing.T, ctx context.Context) time.Time {
	t.Helper()
	at := time.Now()
	time.Sleep(50 * time.Millisecond)
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := r.rec.WaitForProgress(wctx, at); err != nil {
		t.Fatalf("mark: %v", err)
	}
	return at
}

// writer makes the workload's writes as a user, each awaited until the
// journal holds it while the recorder runs.
type writer struct {
	t         *testing.T
	ctx       context.Context
	users     map[string]dynamic.Interface
	r         *recording
	recording bool
}

func (w *writer) objectID(gvr schema.GroupVersionResource, namespace, name string) storage.ObjectID {
	return storage.ObjectID{ClusterID: w.r.clusterID, Group: gvr.Group, Resource: gvr.Resource, Namespace: namespace, Name: name}
}

// await waits until the journal holds the object at resourceVersion rv (or,
// with rv "", its deletion).
func (w *writer) await(gvr schema.GroupVersionResource, namespace, name, rv string) {
	w.t.Helper()
	if !w.recording {
		return
	}
	obj := w.objectID(gvr, namespace, name)
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if rv != "" {
			if _, err := w.r.j.Store().EventByResourceVersion(w.ctx, obj, "", rv); err == nil {
				return
			}
		} else if rec, err := w.r.j.Store().LatestAt(w.ctx, obj, time.Now()); err == nil && rec.WatchType == event.Deleted {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	w.t.Fatalf("the recorder did not record %s %s/%s at %q within 30s", gvr.Resource, namespace, name, rv)
}

func (w *writer) create(user string, u *unstructured.Unstructured) {
	w.t.Helper()
	gvr := workload.GVR(u)
	out, err := w.users[user].Resource(gvr).Namespace(u.GetNamespace()).Create(w.ctx, u, metav1.CreateOptions{})
	if err != nil {
		w.t.Fatalf("%s creates %s %s: %v", user, u.GetKind(), u.GetName(), err)
	}
	w.await(gvr, u.GetNamespace(), u.GetName(), out.GetResourceVersion())
}

func (w *writer) update(user string, gvr schema.GroupVersionResource, name string, mutate func(*unstructured.Unstructured)) {
	w.t.Helper()
	ri := w.users[user].Resource(gvr).Namespace(shop)
	u, err := ri.Get(w.ctx, name, metav1.GetOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	mutate(u)
	out, err := ri.Update(w.ctx, u, metav1.UpdateOptions{})
	if err != nil {
		w.t.Fatalf("%s updates %s: %v", user, name, err)
	}
	w.await(gvr, shop, name, out.GetResourceVersion())
}

func (w *writer) patch(user string, gvr schema.GroupVersionResource, name, patch string) {
	w.t.Helper()
	out, err := w.users[user].Resource(gvr).Namespace(shop).Patch(w.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		w.t.Fatalf("%s patches %s: %v", user, name, err)
	}
	w.await(gvr, shop, name, out.GetResourceVersion())
}

func (w *writer) delete(user string, gvr schema.GroupVersionResource, name string) {
	w.t.Helper()
	if err := w.users[user].Resource(gvr).Namespace(shop).Delete(w.ctx, name, metav1.DeleteOptions{}); err != nil {
		w.t.Fatalf("%s deletes %s: %v", user, name, err)
	}
	w.await(gvr, shop, name, "")
}
