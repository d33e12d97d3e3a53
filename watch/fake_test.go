package watch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

var (
	cmGVR     = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secretGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	nsGVR     = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	deployGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// fakeDiscovery serves a few core and apps resources.
func fakeDiscovery() *fakediscovery.FakeDiscovery {
	d := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	lw := []string{"get", "list", "watch", "create", "update", "delete"}
	d.Resources = []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", SingularName: "configmap", Namespaced: true, Kind: "ConfigMap", Verbs: lw, ShortNames: []string{"cm"}},
			{Name: "secrets", SingularName: "secret", Namespaced: true, Kind: "Secret", Verbs: lw},
			{Name: "namespaces", SingularName: "namespace", Kind: "Namespace", Verbs: lw, ShortNames: []string{"ns"}},
			{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", Verbs: lw, ShortNames: []string{"po"}},
			{Name: "pods/log", Namespaced: true, Kind: "Pod", Verbs: []string{"get"}},
			{Name: "bindings", Namespaced: true, Kind: "Binding", Verbs: []string{"create"}},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", SingularName: "deployment", Namespaced: true, Kind: "Deployment", Verbs: lw, ShortNames: []string{"deploy"}},
			{Name: "statefulsets", SingularName: "statefulset", Namespaced: true, Kind: "StatefulSet", Verbs: lw, ShortNames: []string{"sts"}},
		}},
	}
	return d
}

func configMap(ns, name, value string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": ns, "name": name, "uid": "uid-" + ns + "-" + name},
		"data":     map[string]any{"key": value},
	}}
	return u
}

func fakeDynamic(objs ...runtime.Object) *dynamicfake.FakeDynamicClient {
	return dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		cmGVR: "ConfigMapList", secretGVR: "SecretList", nsGVR: "NamespaceList", deployGVR: "DeploymentList",
		{Version: "v1", Resource: "pods"}: "PodList", {Group: "apps", Version: "v1", Resource: "statefulsets"}: "StatefulSetList",
	}, objs...)
}

// run starts a collector and returns a stop function that ends it and
// returns Start's error.
func run(t *testing.T, c *Collector) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				err = errors.New("Start did not return within 20s of cancel")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

func waitSync(t *testing.T, c *Collector) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.WaitForSync(ctx); err != nil {
		t.Fatalf("WaitForSync: %v", err)
	}
}

// waitWatching waits until every stream of c has its watch open. The
// dynamic fake replays no history from the list's resourceVersion: a
// change made between WaitForSync and the watch's start would come as
// ADDED, and a deletion not at all (a real apiserver replays both).
func waitWatching(t *testing.T, c *Collector) {
	t.Helper()
	eventually(t, 20*time.Second, "every stream watching", func() bool {
		for _, s := range c.Status() {
			if s.State != StateWatching {
				return false
			}
		}
		return true
	})
}

// startSynced records dyn with testOpts (and extra) into a new memory
// store, runs the Collector until the test ends, and waits until it is in
// sync.
func startSynced(t *testing.T, dyn *dynamicfake.FakeDynamicClient, extra ...Option) (*memory.Store, *Collector) {
	t.Helper()
	st := newMemory(t)
	c, _ := startCollector(t, dyn, st, extra...)
	return st, c
}

// startCollector runs a Collector of dyn (with the fake's discovery) into
// st, with testOpts and extra, until the test ends, and returns it synced,
// with the function that stops it.
func startCollector(t *testing.T, dyn dynamic.Interface, st storage.Store, extra ...Option) (*Collector, func() error) {
	t.Helper()
	c, err := NewCollector(dyn, fakeDiscovery(), st, testOpts(t, extra...)...)
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, c)
	waitSync(t, c)
	return c, stop
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// streamRecords returns every record of a stream in append order.
func streamRecords(t *testing.T, st storage.Reader, streamID string) []event.Record {
	t.Helper()
	var out []event.Record
	q := storage.Query{StreamID: streamID, Limit: 1000}
	for {
		page, err := st.Records(context.Background(), q)
		if err != nil {
			t.Fatalf("Records: %v", err)
		}
		out = append(out, page.Records...)
		if page.Next == "" {
			return out
		}
		q.Cursor = page.Next
	}
}

func ofType(recs []event.Record, typ event.RecordType) []event.Record {
	var out []event.Record
	for _, r := range recs {
		if r.Type == typ {
			out = append(out, r)
		}
	}
	return out
}

func cmStreamID(cluster string) string {
	return event.Stream{ClusterID: cluster, Version: "v1", Resource: "configmaps"}.ID()
}

func testOpts(t *testing.T, extra ...Option) []Option {
	return append([]Option{
		WithClusterID("c1"), WithResources("cm"), WithLogger(testr.New(t)),
		WithBackoff(5*time.Millisecond, 50*time.Millisecond), WithRediscoveryInterval(0),
		WithBatching(64, 1<<20, 2*time.Millisecond),
	}, extra...)
}

// controlledWatches makes every watch of a resource on the fake return a
// FakeWatcher the test drives, and records the options of each call.
type controlledWatches struct {
	mu      sync.Mutex
	watches []*apiwatch.FakeWatcher
	rvs     []string
}

func controlWatches(dyn *dynamicfake.FakeDynamicClient, resource string) *controlledWatches {
	cw := &controlledWatches{}
	dyn.PrependWatchReactor(resource, func(a clienttesting.Action) (bool, apiwatch.Interface, error) {
		w := apiwatch.NewFakeWithChanSize(0, false)
		cw.mu.Lock()
		cw.watches = append(cw.watches, w)
		cw.rvs = append(cw.rvs, a.(clienttesting.WatchActionImpl).WatchRestrictions.ResourceVersion)
		cw.mu.Unlock()
		return true, w, nil
	})
	return cw
}

func (cw *controlledWatches) count() int {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	return len(cw.watches)
}

func (cw *controlledWatches) last(t *testing.T, n int) *apiwatch.FakeWatcher {
	t.Helper()
	eventually(t, 30*time.Second, fmt.Sprintf("watch #%d", n), func() bool { return cw.count() >= n })
	cw.mu.Lock()
	defer cw.mu.Unlock()
	return cw.watches[n-1]
}

func (cw *controlledWatches) rv(n int) string {
	cw.mu.Lock()
	defer cw.mu.Unlock()
	return cw.rvs[n-1]
}

func statusErrorObject(err *apierrors.StatusError) runtime.Object {
	s := err.ErrStatus
	return &s
}

// countingStore wraps a store and counts Append calls and records.
type countingStore struct {
	storage.Store
	appends atomic.Int64
	records atomic.Int64
	fail    atomic.Bool
	gate    chan struct{} // when set, each Append waits for a token
}

func (s *countingStore) Append(ctx context.Context, recs []event.Record) (storage.AppendResult, error) {
	if s.gate != nil {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return storage.AppendResult{}, ctx.Err()
		}
	}
	if s.fail.Load() {
		return storage.AppendResult{}, errors.New("disk on fire")
	}
	s.appends.Add(1)
	s.records.Add(int64(len(recs)))
	return s.Store.Append(ctx, recs)
}

func newMemory(t *testing.T) *memory.Store {
	st := memory.New()
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// forbidden is the 403 denyConfigMapLists answers with.
var forbidden = apierrors.NewForbidden(cmGVR.GroupResource(), "", errors.New("RBAC: denied"))

// denyConfigMapLists makes every list of ConfigMaps fail with 403 while
// the returned flag is set (it starts set).
func denyConfigMapLists(dyn *dynamicfake.FakeDynamicClient) *atomic.Bool {
	deny := new(atomic.Bool)
	deny.Store(true)
	dyn.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		if deny.Load() {
			return true, nil, forbidden
		}
		return false, nil, nil
	})
	return deny
}
