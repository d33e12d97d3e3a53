package krplytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/watch"
)

// TestingT is the part of testing.TB the helpers use; *testing.T and
// *testing.B satisfy it.
type TestingT interface {
	Helper()
	Cleanup(func())
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// DefaultClusterID is the cluster ID a Cluster's records carry unless
// WithClusterID says otherwise.
const DefaultClusterID = "test-cluster"

// DefaultTimeout bounds how long NewCluster waits for the first sync and
// Sync for the journal to catch up, unless WithTimeout says otherwise.
const DefaultTimeout = 10 * time.Second

// NewStore returns an empty in-memory journal that is closed when the test
// ends.
func NewStore(t TestingT) *memory.Store {
	t.Helper()
	s := memory.New()
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("krplytest: close store: %v", err)
		}
	})
	return s
}

// Option configures a Cluster.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	clusterID string
	resources []string
	objects   []runtime.Object
	apis      []*metav1.APIResourceList
	collector []watch.Option
	timeout   time.Duration
}

// WithObjects puts objects in the fake cluster before recording starts, so
// they are part of the first baseline. Typed objects need their TypeMeta
// (apiVersion and kind) set.
func WithObjects(objs ...runtime.Object) Option {
	objs = append([]runtime.Object(nil), objs...)
	return optionFunc(func(c *config) { c.objects = append(c.objects, objs...) })
}

// WithResources sets what the Collector records, in the forms
// watch.WithResources accepts ("deploy", "configmaps", "apps/v1/deployments",
// "widgets.example.com"). The default is every resource the cluster serves
// except Secrets.
func WithResources(specs ...string) Option {
	specs = append([]string(nil), specs...)
	return optionFunc(func(c *config) { c.resources = specs })
}

// WithAPIResources serves more resources, for example a custom resource:
//
//	krplytest.WithAPIResources(&metav1.APIResourceList{GroupVersion: "example.com/v1",
//		APIResources: []metav1.APIResource{{Name: "widgets", Kind: "Widget", Namespaced: true,
//			Verbs: metav1.Verbs{"get", "list", "watch", "create", "update", "delete"}}}})
func WithAPIResources(lists ...*metav1.APIResourceList) Option {
	lists = append([]*metav1.APIResourceList(nil), lists...)
	return optionFunc(func(c *config) { c.apis = append(c.apis, lists...) })
}

// WithClusterID sets the cluster ID of the records (default
// DefaultClusterID).
func WithClusterID(id string) Option {
	return optionFunc(func(c *config) { c.clusterID = id })
}

// WithCollectorOptions passes options to watch.NewCollector, after the
// helper's own (a cluster ID, the resources, short backoff and batching
// latency, no rediscovery), so they can override them.
func WithCollectorOptions(opts ...watch.Option) Option {
	opts = append([]watch.Option(nil), opts...)
	return optionFunc(func(c *config) { c.collector = append(c.collector, opts...) })
}

// WithTimeout bounds the waits of NewCluster and Sync (default
// DefaultTimeout).
func WithTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.timeout = d })
}

// Cluster is a fake Kubernetes cluster (client-go's dynamic fake) whose
// every change a real watch.Collector records into an in-memory journal.
// Hand Dynamic to the code under test, then ask the journal what happened.
//
// Call its methods from the test's goroutine: they fail the test with
// Fatalf. Writes through Dynamic are seen by the Collector asynchronously;
// Sync waits until the journal has them, and the query methods call Sync
// first.
type Cluster struct {
	// Dynamic is the fake cluster. Its action log (Actions) also holds the
	// Collector's list and watch calls.
	Dynamic *dynamicfake.FakeDynamicClient
	// Discovery serves BuiltinResources and those of WithAPIResources.
	Discovery *fakediscovery.FakeDiscovery
	// Store is the journal; Collector records into it; Materializer reads it.
	Store        *memory.Store
	Collector    *watch.Collector
	Materializer *materialize.Materializer
	// ClusterID is the cluster ID of every record.
	ClusterID string

	t       TestingT
	timeout time.Duration
	apis    []*metav1.APIResourceList

	stop func()

	mu        sync.Mutex
	watched   map[streamKey]bool
	resources map[string]watch.Resource // resolved specs
}

type streamKey struct {
	gvr       schema.GroupVersionResource
	namespace string
}

// NewCluster starts a fake cluster holding the objects of WithObjects, and
// a Collector recording it, and waits until every stream has its first
// baseline and an open watch. Everything stops when the test ends; an error
// of the Collector then fails the test.
func NewCluster(t TestingT, opts ...Option) *Cluster {
	t.Helper()
	cfg := config{clusterID: DefaultClusterID, timeout: DefaultTimeout}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if cfg.timeout <= 0 {
		t.Fatalf("krplytest: timeout %s must be positive", cfg.timeout)
		return nil
	}
	apis := append(BuiltinResources(), cfg.apis...)
	objs := make([]runtime.Object, 0, len(cfg.objects))
	for _, o := range cfg.objects {
		u, err := toUnstructured(o)
		if err != nil {
			t.Fatalf("krplytest: WithObjects: %v", err)
			return nil
		}
		objs = append(objs, u)
	}

	c := &Cluster{
		Discovery: &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}},
		ClusterID: cfg.clusterID,
		t:         t,
		timeout:   cfg.timeout,
		apis:      apis,
		watched:   map[streamKey]bool{},
		resources: map[string]watch.Resource{},
	}
	c.Discovery.Resources = apis
	c.Dynamic = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds(apis), objs...)
	// Register every watch with the tracker here, as the fake's default
	// reactor does, and remember it: a stream counts as ready only once
	// its watch can see the test's writes.
	tracker := c.Dynamic.Tracker()
	c.Dynamic.PrependWatchReactor("*", func(a clienttesting.Action) (bool, apiwatch.Interface, error) {
		var lo metav1.ListOptions
		if wa, ok := a.(clienttesting.WatchActionImpl); ok {
			lo = wa.ListOptions
		}
		w, err := tracker.Watch(a.GetResource(), a.GetNamespace(), lo)
		if err != nil {
			return true, nil, err
		}
		c.mu.Lock()
		c.watched[streamKey{a.GetResource(), a.GetNamespace()}] = true
		c.mu.Unlock()
		return true, w, nil
	})

	c.Store = NewStore(t)
	specs := cfg.resources
	if len(specs) == 0 {
		specs = servedSpecs(apis)
	}
	copts := append([]watch.Option{
		watch.WithClusterID(cfg.clusterID),
		watch.WithResources(specs...),
		watch.WithBackoff(5*time.Millisecond, 100*time.Millisecond),
		watch.WithBatching(256, 4<<20, time.Millisecond),
		watch.WithRediscoveryInterval(0),
	}, cfg.collector...)
	col, err := watch.NewCollector(c.Dynamic, c.Discovery, c.Store, copts...)
	if err != nil {
		t.Fatalf("krplytest: new collector: %v", err)
		return nil
	}
	c.Collector = col
	if c.Materializer, err = materialize.New(c.Store); err != nil {
		t.Fatalf("krplytest: new materializer: %v", err)
		return nil
	}

	stop, err := startCollector(t, col, c.timeout)
	c.stop = stop
	if err != nil {
		t.Fatalf("krplytest: %v\n%s", err, c.describeStreams())
		return nil
	}
	if !c.poll(func() bool { return c.allWatching() }) {
		t.Fatalf("krplytest: streams not watching within %s\n%s", c.timeout, c.describeStreams())
		return nil
	}
	return c
}

// StartCollector runs col.Start in a goroutine and waits, at most timeout,
// until it is in sync (WaitForSync). When the test ends it stops the
// Collector and fails the test if Start returned an error or did not return
// within timeout. The returned function stops it earlier; calling it again
// does nothing. Use it for a Collector of your own, e.g. on a real cluster.
func StartCollector(t TestingT, col *watch.Collector, timeout time.Duration) (stop func()) {
	t.Helper()
	stop, err := startCollector(t, col, timeout)
	if err != nil {
		t.Fatalf("krplytest: %v", err)
	}
	return stop
}

func startCollector(t TestingT, col *watch.Collector, timeout time.Duration) (stop func(), err error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- col.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("krplytest: collector: %v", err)
				}
			case <-time.After(timeout):
				t.Errorf("krplytest: collector did not stop within %s", timeout)
			}
		})
	}
	t.Cleanup(stop)
	syncCtx, cancelSync := context.WithTimeout(ctx, timeout)
	defer cancelSync()
	if err := col.WaitForSync(syncCtx); err != nil {
		return stop, fmt.Errorf("collector did not sync within %s: %w", timeout, err)
	}
	return stop, nil
}

// Stop stops the Collector and waits until it returned; later writes are
// not recorded. The test's end calls it too; calling it again does nothing.
func (c *Cluster) Stop() {
	c.t.Helper()
	c.stop()
}

// servedSpecs names every served resource except Secrets, as
// "group/version/resource".
func servedSpecs(apis []*metav1.APIResourceList) []string {
	var specs []string
	seen := map[string]bool{}
	for _, l := range apis {
		for _, r := range l.APIResources {
			gv, err := schema.ParseGroupVersion(l.GroupVersion)
			if err != nil || strings.Contains(r.Name, "/") || (gv.Group == "" && r.Name == "secrets") {
				continue
			}
			spec := l.GroupVersion + "/" + r.Name
			if !seen[spec] {
				seen[spec] = true
				specs = append(specs, spec)
			}
		}
	}
	return specs
}

func (c *Cluster) allWatching() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, st := range c.Collector.Status() {
		if st.State == watch.StatePending {
			continue
		}
		if !c.watched[streamKey{st.Stream.GVR(), st.Stream.Namespace}] || st.State != watch.StateWatching {
			return false
		}
	}
	return true
}

// poll calls cond until it holds or the timeout passes.
func (c *Cluster) poll(cond func() bool) bool {
	deadline := time.Now().Add(c.timeout)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func (c *Cluster) describeStreams() string {
	var b strings.Builder
	for _, st := range c.Collector.Status() {
		fmt.Fprintf(&b, "  %s: %s synced=%v covered=%v %s\n", st.StreamID, st.State, st.Synced, st.Covered, st.DegradedReason)
	}
	return b.String()
}

// Sync waits until the journal reflects every write made to the fake so
// far: for each recorded stream, the objects alive in the journal now are
// exactly those in the fake, with the same content. It fails the test after
// the timeout with the differences.
func (c *Cluster) Sync() {
	c.t.Helper()
	var diff string
	if !c.poll(func() bool { diff = c.unsynced(); return diff == "" }) {
		c.t.Fatalf("krplytest: journal did not catch up with the fake cluster within %s:\n%s%s", c.timeout, diff, c.describeStreams())
	}
}

// unsynced returns how the journal differs from the fake, "" when it
// does not.
func (c *Cluster) unsynced() string {
	ctx := context.Background()
	tracker := c.Dynamic.Tracker()
	var b strings.Builder
	for _, st := range c.Collector.Status() {
		if st.State == watch.StatePending {
			continue
		}
		gvk := st.Stream.GVR().GroupVersion().WithKind(st.Resource.Kind)
		listed, err := tracker.List(st.Stream.GVR(), gvk, st.Stream.Namespace)
		if err != nil {
			fmt.Fprintf(&b, "  %s: list the fake: %v\n", st.StreamID, err)
			continue
		}
		want := map[string]map[string]any{}
		if err := meta(listed, func(u *unstructured.Unstructured) {
			if u.GetKind() == "" {
				u.SetGroupVersionKind(gvk)
			}
			want[key(u)] = normalize(u.Object)
		}); err != nil {
			fmt.Fprintf(&b, "  %s: %v\n", st.StreamID, err)
			continue
		}
		alive, err := c.Store.AliveAt(ctx, storage.AliveQuery{StreamID: st.StreamID, At: time.Now()})
		if err != nil {
			fmt.Fprintf(&b, "  %s: journal: %v\n", st.StreamID, err)
			continue
		}
		got := map[string]map[string]any{}
		for _, rec := range alive {
			var m map[string]any
			if err := json.Unmarshal(rec.Object, &m); err != nil {
				fmt.Fprintf(&b, "  %s: decode %s: %v\n", st.StreamID, rec.Resource, err)
				continue
			}
			got[rec.Resource.ObjectKey()] = normalize(m)
		}
		secrets := st.Stream.Group == "" && st.Stream.Resource == "secrets"
		for _, key := range sortedKeys(want) {
			g, ok := got[key]
			switch {
			case !ok:
				fmt.Fprintf(&b, "  %s: %s not recorded yet\n", st.StreamID, key)
			case secrets && !reflect.DeepEqual(g["metadata"], want[key]["metadata"]) && !redactedOnly(g, want[key]):
				fmt.Fprintf(&b, "  %s: %s recorded with other metadata\n", st.StreamID, key)
			case !secrets && !reflect.DeepEqual(g, want[key]):
				fmt.Fprintf(&b, "  %s: %s recorded with other content\n", st.StreamID, key)
			}
		}
		for _, key := range sortedKeys(got) {
			if _, ok := want[key]; !ok {
				fmt.Fprintf(&b, "  %s: deletion of %s not recorded yet\n", st.StreamID, key)
			}
		}
	}
	return b.String()
}

// redactedOnly reports whether two Secrets' metadata differ only in the
// annotation the Collector redacts.
func redactedOnly(got, want map[string]any) bool {
	strip := func(m map[string]any) any {
		md, _ := m["metadata"].(map[string]any)
		out := map[string]any{}
		for k, v := range md {
			if k != "annotations" {
				out[k] = v
			}
		}
		return out
	}
	return reflect.DeepEqual(strip(got), strip(want))
}

// meta calls fn on every item of a list the tracker returned.
func meta(list runtime.Object, fn func(*unstructured.Unstructured)) error {
	ul, ok := list.(*unstructured.UnstructuredList)
	if !ok {
		return fmt.Errorf("the fake returned a %T, not an unstructured list", list)
	}
	for i := range ul.Items {
		fn(ul.Items[i].DeepCopy())
	}
	return nil
}

// normalize round-trips an object through JSON, so values compare the same
// however they were built (int64 against float64, typed maps).
func normalize(m map[string]any) map[string]any {
	raw, err := json.Marshal(m)
	if err != nil {
		return m
	}
	var out map[string]any
	if err := json.Unmarshal(raw, &out); err != nil {
		return m
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Mark waits for the journal (Sync) and returns the current time: every
// change made before Mark is observed at or before it, every change made
// after it later. Use it to name the times of a Snapshot or a Diff.
func (c *Cluster) Mark() time.Time {
	c.t.Helper()
	c.Sync()
	at := time.Now().Round(0)
	for !time.Now().After(at) {
		time.Sleep(time.Microsecond)
	}
	return at
}

// resource resolves a resource name ("deploy", "configmaps",
// "apps/v1/deployments") through the fake discovery.
func (c *Cluster) resource(spec string) watch.Resource {
	c.t.Helper()
	c.mu.Lock()
	r, ok := c.resources[spec]
	c.mu.Unlock()
	if ok {
		return r
	}
	rs, err := watch.Resolve(context.Background(), c.Discovery, spec)
	if err != nil {
		c.t.Fatalf("krplytest: %v", err)
		return watch.Resource{}
	}
	c.mu.Lock()
	c.resources[spec] = rs[0]
	c.mu.Unlock()
	return rs[0]
}

// ObjectID names an object of the cluster for the storage and materialize
// APIs. resource is any name watch.WithResources accepts.
func (c *Cluster) ObjectID(resource, namespace, name string) storage.ObjectID {
	c.t.Helper()
	r := c.resource(resource)
	return storage.ObjectID{ClusterID: c.ClusterID, Group: r.Group, Resource: r.Resource, Namespace: namespace, Name: name}
}

// Create creates obj in the fake cluster and returns what it stored.
func (c *Cluster) Create(obj runtime.Object) *unstructured.Unstructured {
	c.t.Helper()
	u, ri := c.target(obj)
	out, err := ri.Create(context.Background(), u, metav1.CreateOptions{})
	if err != nil {
		c.t.Fatalf("krplytest: create %s %s: %v", u.GetKind(), key(u), err)
	}
	return out
}

// Update replaces obj in the fake cluster and returns what it stored.
func (c *Cluster) Update(obj runtime.Object) *unstructured.Unstructured {
	c.t.Helper()
	u, ri := c.target(obj)
	out, err := ri.Update(context.Background(), u, metav1.UpdateOptions{})
	if err != nil {
		c.t.Fatalf("krplytest: update %s %s: %v", u.GetKind(), key(u), err)
	}
	return out
}

// Modify reads an object, lets mutate change it, and writes it back.
func (c *Cluster) Modify(resource, namespace, name string, mutate func(*unstructured.Unstructured)) *unstructured.Unstructured {
	c.t.Helper()
	u := c.Get(resource, namespace, name)
	mutate(u)
	return c.Update(u)
}

// Get returns an object of the fake cluster; it fails the test when the
// object does not exist.
func (c *Cluster) Get(resource, namespace, name string) *unstructured.Unstructured {
	c.t.Helper()
	r := c.resource(resource)
	u, err := c.Dynamic.Resource(r.GVR()).Namespace(namespace).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		c.t.Fatalf("krplytest: get %s %s/%s: %v", r, namespace, name, err)
		return nil
	}
	if u.GetKind() == "" {
		u.SetGroupVersionKind(r.GVR().GroupVersion().WithKind(r.Kind))
	}
	return u
}

// Delete deletes an object of the fake cluster.
func (c *Cluster) Delete(resource, namespace, name string) {
	c.t.Helper()
	r := c.resource(resource)
	if err := c.Dynamic.Resource(r.GVR()).Namespace(namespace).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		c.t.Fatalf("krplytest: delete %s %s/%s: %v", r, namespace, name, err)
	}
}

func key(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetName()
	}
	return u.GetNamespace() + "/" + u.GetName()
}

// target converts obj and finds the client for its resource.
func (c *Cluster) target(obj runtime.Object) (*unstructured.Unstructured, dynamic.ResourceInterface) {
	c.t.Helper()
	u, err := toUnstructured(obj)
	if err != nil {
		c.t.Fatalf("krplytest: %v", err)
		return nil, nil
	}
	gvr, namespaced, ok := resourceFor(c.apis, u.GroupVersionKind())
	if !ok {
		c.t.Fatalf("krplytest: the fake cluster serves no %s (add it with WithAPIResources)", u.GroupVersionKind())
		return nil, nil
	}
	if !namespaced {
		return u, c.Dynamic.Resource(gvr)
	}
	return u, c.Dynamic.Resource(gvr).Namespace(u.GetNamespace())
}

// toUnstructured converts an object to a fresh *unstructured.Unstructured.
func toUnstructured(obj runtime.Object) (*unstructured.Unstructured, error) {
	if obj == nil {
		return nil, errors.New("nil object")
	}
	if u, ok := obj.(*unstructured.Unstructured); ok {
		u = u.DeepCopy()
		if u.GetAPIVersion() == "" || u.GetKind() == "" {
			return nil, fmt.Errorf("object %s has no apiVersion or kind", key(u))
		}
		return u, nil
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk.Kind == "" || gvk.Version == "" {
		return nil, fmt.Errorf("%T has no apiVersion or kind: set its TypeMeta", obj)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, fmt.Errorf("convert %T: %w", obj, err)
	}
	return &unstructured.Unstructured{Object: m}, nil
}

// History returns the history of one object, after Sync.
func (c *Cluster) History(resource, namespace, name string, opts ...materialize.QueryOption) *materialize.History {
	c.t.Helper()
	c.Sync()
	h, err := c.Materializer.History(context.Background(), c.ObjectID(resource, namespace, name), opts...)
	if err != nil {
		c.t.Fatalf("krplytest: history of %s %s/%s: %v", resource, namespace, name, err)
	}
	return h
}

// ObjectAt returns one object as it was at a time, after Sync.
func (c *Cluster) ObjectAt(resource, namespace, name string, at time.Time) *materialize.ObjectState {
	c.t.Helper()
	c.Sync()
	st, err := c.Materializer.ObjectAt(context.Background(), c.ObjectID(resource, namespace, name), at)
	if err != nil {
		c.t.Fatalf("krplytest: %s %s/%s at %s: %v", resource, namespace, name, at, err)
	}
	return st
}

// Snapshot returns the state at a time of the given namespaces, or of the
// whole cluster when none is given, after Sync. It saves nothing.
func (c *Cluster) Snapshot(at time.Time, namespaces ...string) *materialize.Snapshot {
	c.t.Helper()
	c.Sync()
	s, err := c.Materializer.Snapshot(context.Background(), c.scope(namespaces), at)
	if err != nil {
		c.t.Fatalf("krplytest: snapshot at %s: %v", at, err)
	}
	return s
}

// Diff returns what changed between two times in the given namespaces, or
// in the whole cluster when none is given, after Sync.
func (c *Cluster) Diff(from, to time.Time, namespaces ...string) *materialize.Diff {
	c.t.Helper()
	c.Sync()
	d, err := c.Materializer.Diff(context.Background(), c.scope(namespaces), from, to)
	if err != nil {
		c.t.Fatalf("krplytest: diff %s..%s: %v", from, to, err)
	}
	return d
}

func (c *Cluster) scope(namespaces []string) materialize.Scope {
	return materialize.Scope{ClusterID: c.ClusterID, Namespaces: append([]string(nil), namespaces...)}
}

// Records returns every record of the journal in append order; tests that
// check the journal itself use it.
func (c *Cluster) Records() []event.Record {
	c.t.Helper()
	var out []event.Record
	q := storage.Query{Limit: 1000}
	for {
		page, err := c.Store.Records(context.Background(), q)
		if err != nil {
			c.t.Fatalf("krplytest: records: %v", err)
			return out
		}
		out = append(out, page.Records...)
		if page.Next == "" {
			return out
		}
		q.Cursor = page.Next
	}
}
