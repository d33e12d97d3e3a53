package krply_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/krply/krply"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/watch"
)

// Record a namespace of a real cluster, then ask what a Deployment looked
// like, take a complete snapshot of now and plan a replay of the namespace
// as it is now. It needs a cluster, so it is compiled but not run;
// quickstart's body is the README's embedding example, byte for byte
// (TestReadmeEmbeddingIsTheExample).
func Example_quickstart() {
	if err := quickstart(context.Background()); err != nil {
		fmt.Println(err)
	}
}

// quickstart's deferred calls run in the order the Collector and the
// Journal need: the Collector is stopped and has returned from Start
// before the Journal closes its store, and Start's error is returned.
func quickstart(ctx context.Context) (err error) {
	// cfg is the cluster's *rest.Config: ctrl.GetConfigOrDie() in a
	// controller manager, or read from a kubeconfig file:
	cfg, err := clientcmd.BuildConfigFromFlags("", clientcmd.RecommendedHomeFile)
	if err != nil {
		return err
	}
	j, err := krply.Open(ctx, "krply.db", krply.WithResources("deploy", "cm", "svc"), krply.WithNamespaces("shop"))
	if err != nil {
		return err
	}
	defer j.Close() // runs last: after the Collector's Start returned, as Close requires
	rec, err := j.NewCollectorForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- rec.Start(ctx) }() // or mgr.Add(rec) in a controller manager
	// Stop the Collector and wait for Start, which returns after its last
	// commit: nil, or why it failed (err is this function's named result).
	defer func() { stop(); err = errors.Join(err, <-done) }()
	if err := rec.WaitForSync(ctx); err != nil {
		return err
	}
	hist, err := j.History(ctx, krply.Object(rec.ClusterID(), "deployments.apps", "shop", "web"))
	if err != nil {
		return err
	}

	// Answers about "now" are complete once every stream has evidence
	// after now (a time before the recording began never is):
	now := time.Now()
	if err := rec.WaitForProgress(ctx, now); err != nil { // about one progress interval (10s) at most
		return err
	}
	snap, err := j.Snapshot(ctx, krply.Namespaces(rec.ClusterID(), "shop"), now)
	if err != nil {
		return err
	}
	plan, err := j.Plan(ctx, krply.Source{ClusterID: rec.ClusterID(), Namespaces: []string{"shop"}, At: now},
		krply.Target{Namespaces: map[string]string{"shop": "shop-restore"}})
	if err != nil {
		return err
	}
	fmt.Println(len(hist.Versions()), "versions;", snap.Complete, len(plan.Objects), "objects to replay,", len(plan.Exclusions), "excluded")
	return nil
}

// Embed a Collector and query the journal with this package alone: record
// a cluster (here a client-go fake), wait for its baseline, and ask what an
// object and a namespace looked like. Every wait is bounded.
func Example() {
	dir, err := os.MkdirTemp("", "krply-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	dyn, disc := fakeCluster(
		object("v1", "ConfigMap", "shop", "settings", map[string]any{"data": map[string]any{"color": "blue"}}),
		object("v1", "Pod", "shop", "web-1", nil),
	)

	j, err := krply.Open(ctx, filepath.Join(dir, "krply.db"), krply.WithResources("cm", "pods"), krply.WithClusterID("demo"),
		krply.WithCollectorOptions(watch.WithProgressInterval(2*time.Second))) // the default is 10s; shorter to keep the example short
	if err != nil {
		panic(err)
	}
	defer j.Close()
	rec, err := j.NewCollector(dyn, disc) // krply.NewCollectorForConfig(restConfig) for a real cluster
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- rec.Start(ctx) }() // or mgr.Add(rec) in a controller manager
	if err := rec.WaitForSync(ctx); err != nil {
		fmt.Println("not in sync:", err)
		return
	}
	hist, err := j.History(ctx, krply.Object("demo", "configmaps", "shop", "settings"))
	if err != nil {
		panic(err)
	}
	// A time is covered once every stream has evidence after it, which the
	// API server gives each time it ends a watch at its timeout (this fake
	// does as it does): WaitForProgress waits for it.
	at := time.Now()
	if err := rec.WaitForProgress(ctx, at); err != nil {
		panic(err)
	}
	cancel() // stops the Collector; close the journal after Start returns
	if err := <-done; err != nil {
		panic(err)
	}
	snap, err := j.Snapshot(context.Background(), krply.Namespaces("demo", "shop"), at)
	if err != nil {
		panic(err)
	}

	fmt.Println("settings:", len(hist.Versions()), "version, from", hist.Versions()[0].Origin)
	fmt.Println("shop: complete", snap.Complete, "with", len(snap.Objects), "objects")
	// Output:
	// settings: 1 version, from baseline
	// shop: complete true with 2 objects
}

// Record a client-go fake into an in-memory journal, change it, and ask the
// journal what happened. Every wait is bounded: a regression fails the
// output check with what was awaited instead of hanging go test.
func Example_changes() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	dyn, disc := fakeCluster(
		object("v1", "ConfigMap", "shop", "settings", map[string]any{"data": map[string]any{"color": "blue"}}),
		object("v1", "Pod", "shop", "web-1", nil),
	)
	store := memory.New()
	defer store.Close()
	j, err := krply.NewJournal(store, krply.WithResources("cm", "pods"), krply.WithClusterID("demo"),
		krply.WithCollectorOptions(watch.WithProgressInterval(2*time.Second)))
	if err != nil {
		panic(err)
	}
	rec, err := j.NewCollector(dyn, disc)
	if err != nil {
		panic(err)
	}
	done := make(chan error, 1)
	go func() { done <- rec.Start(ctx) }()
	syncCtx, cancelSync := context.WithTimeout(ctx, waitLimit)
	defer cancelSync()
	if err := rec.WaitForSync(syncCtx); err != nil {
		fmt.Println("not in sync:", err)
		return
	}
	// The fake replays no history from the baseline's resourceVersion (a
	// real apiserver does): change it only once the watches are open.
	if !waitFor("the watches to open", func() bool { return watching(rec) }) {
		return
	}

	cmGVR := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	cm, _ := dyn.Resource(cmGVR).Namespace("shop").Get(ctx, "settings", metav1.GetOptions{})
	_ = unstructured.SetNestedField(cm.Object, "green", "data", "color")
	if _, err := dyn.Resource(cmGVR).Namespace("shop").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		panic(err)
	}

	settings := krply.Object("demo", "configmaps", "shop", "settings")
	var hist *krply.History
	if !waitFor("the update in the history", func() bool { // the Collector commits asynchronously
		hist, _ = j.History(ctx, settings)
		return hist != nil && len(hist.Versions()) >= 2
	}) {
		return
	}
	for _, v := range hist.Versions() {
		fmt.Print(v.WatchType, " from ", v.Origin)
		for _, c := range v.Changes {
			fmt.Printf(": %s %v -> %v", c.Path, c.Before, c.After)
		}
		fmt.Println()
	}

	// A time is covered once every stream has evidence after it:
	// WaitForProgress waits for it (a quiet stream gets some each progress
	// interval, when the server ends its watch at the timeout).
	at := time.Now()
	waitCtx, cancelWait := context.WithTimeout(ctx, waitLimit)
	defer cancelWait()
	if err := rec.WaitForProgress(waitCtx, at); err != nil {
		fmt.Println("no evidence after", at, ":", err)
		return
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			panic(err)
		}
	case <-time.After(waitLimit):
		fmt.Println("Start did not return within", waitLimit, "of the cancel")
	}
	ctx = context.Background()

	snap, _ := j.Snapshot(ctx, krply.Namespaces("demo", "shop"), at)
	fmt.Println("snapshot complete:", snap.Complete, "objects:", len(snap.Objects))

	plan, err := j.Plan(ctx, krply.Source{ClusterID: "demo", Namespaces: []string{"shop"}, At: at},
		krply.Target{Namespaces: map[string]string{"shop": "shop-copy"}})
	if err != nil {
		panic(err)
	}
	for _, o := range plan.Objects {
		fmt.Println("replay:", o.Ref.Kind, o.Ref.Namespace+"/"+o.Ref.Name)
	}
	for _, e := range plan.Exclusions {
		fmt.Println("excluded:", e.Ref.Resource, e.Ref.Name, "-", e.Rule)
	}
	// Output:
	// ADDED from baseline
	// MODIFIED from watch: data.color blue -> green
	// snapshot complete: true objects: 2
	// replay: Namespace /shop-copy
	// replay: ConfigMap shop-copy/settings
	// excluded: pods web-1 - pods
}

func object(apiVersion, kind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	for k, v := range fields {
		u.Object[k] = v
	}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	return u
}

// waitLimit bounds every wait of the examples.
const waitLimit = 10 * time.Second

// waitFor polls cond until it holds, at most waitLimit; then it prints what
// it was waiting for, which fails the example's output check.
func waitFor(what string, cond func() bool) bool {
	for deadline := time.Now().Add(waitLimit); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			fmt.Println("timed out after", waitLimit, "waiting for", what)
			return false
		}
	}
	return true
}

// watching reports whether every stream of c has its watch open.
func watching(c *watch.Collector) bool {
	for _, s := range c.Status() {
		if s.State != watch.StateWatching {
			return false
		}
	}
	return true
}

// fakeCluster returns client-go fakes serving ConfigMaps and Pods.
func fakeCluster(objs ...runtime.Object) (*dynamicfake.FakeDynamicClient, *fakediscovery.FakeDiscovery) {
	verbs := metav1.Verbs{"get", "list", "watch", "create", "update", "delete"}
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	disc.Resources = []*metav1.APIResourceList{{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "configmaps", Kind: "ConfigMap", Namespaced: true, Verbs: verbs},
		{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: verbs},
	}}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		{Version: "v1", Resource: "configmaps"}: "ConfigMapList",
		{Version: "v1", Resource: "pods"}:       "PodList",
	}, objs...)
	// Like an API server, end every watch at the timeout it asked for:
	// that end is the server's evidence that the stream is continuous.
	dyn.PrependWatchReactor("*", func(a clienttesting.Action) (bool, apiwatch.Interface, error) {
		w, err := dyn.Tracker().Watch(a.GetResource(), a.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		if wa, ok := a.(clienttesting.WatchActionImpl); ok && wa.ListOptions.TimeoutSeconds != nil {
			time.AfterFunc(time.Duration(*wa.ListOptions.TimeoutSeconds)*time.Second, w.Stop)
		}
		return true, w, nil
	})
	return dyn, disc
}
