package watch_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/watch"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// Recording with client-go's fakes and the in-memory store, as a downstream
// project's unit test would: the existing ConfigMap becomes a baseline, a
// later update a real event. Every wait is bounded: a regression fails the
// output check with what was awaited instead of hanging go test.
func ExampleCollector() {
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	cm := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "shop", "name": "settings"},
		"data":     map[string]any{"color": "blue"},
	}}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(),
		map[schema.GroupVersionResource]string{cms: "ConfigMapList"}, cm)
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{{
		GroupVersion: "v1",
		APIResources: []metav1.APIResource{{Name: "configmaps", Namespaced: true, Kind: "ConfigMap",
			Verbs: metav1.Verbs{"list", "watch"}, ShortNames: []string{"cm"}}},
	}}}}
	store := memory.New()
	defer store.Close()

	c, err := watch.NewCollector(dyn, disc, store, watch.WithClusterID("dev"), watch.WithResources("cm"))
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	syncCtx, cancelSync := context.WithTimeout(ctx, waitLimit)
	defer cancelSync()
	if err := c.WaitForSync(syncCtx); err != nil {
		fmt.Println("not in sync:", err)
		return
	}
	// The fake replays no history from the baseline's resourceVersion (a
	// real apiserver does): change it only once the watch is open.
	if !waitFor("the watch to open", func() bool { return c.Status()[0].State == watch.StateWatching }) {
		return
	}

	cm.Object["data"] = map[string]any{"color": "green"}
	cm.SetResourceVersion("2") // the fake keeps the resourceVersion it is given
	if _, err := dyn.Resource(cms).Namespace("shop").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		fmt.Println(err)
		return
	}
	stream := event.Stream{ClusterID: "dev", Version: "v1", Resource: "configmaps"}.ID()
	if !waitFor("the update recorded", func() bool { return c.Status()[0].Events >= 2 }) {
		return
	}
	beforeStop := time.Now()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			fmt.Println(err)
			return
		}
	case <-time.After(waitLimit):
		fmt.Println("Start did not return within", waitLimit, "of the cancel")
		return
	}

	page, _ := store.Records(context.Background(), storage.Query{StreamID: stream})
	for _, r := range page.Records {
		switch {
		case r.Baseline != nil:
			fmt.Println(r.Type, r.Baseline.Phase, "items:", r.Baseline.ItemCount)
		case r.IsObjectChange():
			fmt.Println(r.Type, r.WatchType, r.Resource.ObjectKey(), "synthetic:", r.Synthetic)
		}
	}
	// Coverage reaches as far as the server vouched: here, the MODIFIED
	// event. A real apiserver ends watches at their timeout, and a clean
	// stop then has it confirm the stop, which covers the time up to the
	// stop; this fake never does, so the time after the event is not yet
	// observed. (To cover a moment for sure before stopping, wait for the
	// server's evidence after it: Collector.WaitForProgress.)
	updated := page.Records[len(page.Records)-1].ObservedAt
	cov, _ := storage.CoverageAt(context.Background(), store, stream, updated.Add(-time.Nanosecond))
	fmt.Println("covered before the update was seen:", cov.Covered)
	cov, _ = storage.CoverageAt(context.Background(), store, stream, beforeStop)
	fmt.Println("covered before the stop:", cov.Covered, strings.HasPrefix(cov.Reason, "not yet observed"))
	// Output:
	// baseline begin items: 0
	// event ADDED shop/settings synthetic: true
	// baseline end items: 1
	// event MODIFIED shop/settings synthetic: false
	// covered before the update was seen: true
	// covered before the stop: false true
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

// An unknown resource name is an error that lists close matches.
func ExampleResolve() {
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", SingularName: "deployment", Namespaced: true, Kind: "Deployment", Verbs: metav1.Verbs{"list", "watch"}},
		}},
	}}}
	rs, err := watch.Resolve(context.Background(), disc, "deploy")
	fmt.Println(rs[0].GVR(), rs[0].Namespaced, err)

	_, err = watch.Resolve(context.Background(), disc, "deploymens")
	fmt.Println(err, errors.Is(err, watch.ErrUnknownResource))
	// Output:
	// apps/v1, Resource=deployments true <nil>
	// watch: unknown resource "deploymens"; did you mean deployment? true
}
