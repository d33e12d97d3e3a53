package krplytest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	fakediscovery "k8s.io/client-go/discovery/fake"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/krply/krply/krplytest/fakewatch"
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
// Hand Dynamic to the code under test, then ask the journal what happened
// with the methods of the embedded Recording (History, Diff, Mark, …).
//
// Call its methods from the test's goroutine: they fail the test with
// Fatalf. Writes through Dynamic are seen by the Collector asynchronously;
// Sync waits until the journal has them, and the query methods call Sync
// first.
type Cluster struct {
	// Recording is the Collector recording the fake, its journal and the
	// helpers that read it.
	*Recording
	// Dynamic is the fake cluster. Its action log (Actions) also holds the
	// Collector's list and watch calls.
	Dynamic *dynamicfake.FakeDynamicClient
	// Discovery serves BuiltinResources and those of WithAPIResources.
	Discovery *fakediscovery.FakeDiscovery

	apis    []*metav1.APIResourceList
	watches *fakewatch.Registry
}

// NewCluster starts a fake cluster holding the objects of WithObjects, and
// a Collector recording it, and waits until every stream has its first
// baseline and an open watch. Everything stops when the test ends; an error
// of the Collector then fails the test.
func NewCluster(t TestingT, opts ...Option) *Cluster {
	t.Helper()
	cfg, ok := newConfig(t, opts)
	if !ok {
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
		apis:      apis,
		watches:   fakewatch.NewRegistry("krplytest"),
	}
	c.Discovery.Resources = apis
	kinds := listKinds(apis)
	c.Dynamic = dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), kinds, objs...)
	tracker := c.Dynamic.Tracker()
	// list returns what the fake's List would, through the tracker, so
	// that Sync adds nothing to the fake's action log.
	list := func(gvr schema.GroupVersionResource, namespace, labelSelector string) ([]unstructured.Unstructured, error) {
		sel, err := labels.Parse(labelSelector)
		if err != nil {
			return nil, err
		}
		gvk := gvr.GroupVersion().WithKind(strings.TrimSuffix(kinds[gvr], "List"))
		listed, err := tracker.List(gvr, gvk, namespace)
		if err != nil {
			return nil, err
		}
		ul, ok := listed.(*unstructured.UnstructuredList)
		if !ok {
			return nil, fmt.Errorf("the fake returned a %T, not an unstructured list", listed)
		}
		var out []unstructured.Unstructured
		for _, u := range ul.Items {
			if sel.Matches(labels.Set(u.GetLabels())) {
				out = append(out, *u.DeepCopy())
			}
		}
		return out, nil
	}
	// Register every watch with the tracker here, as the fake's default
	// reactor does, and keep it: a stream counts as ready only once its
	// watch can see the test's writes, and Mark sends bookmarks on it. The
	// fake's watch ignores label selectors; the registry's applies them.
	c.Dynamic.PrependWatchReactor("*", func(a clienttesting.Action) (bool, apiwatch.Interface, error) {
		var lo metav1.ListOptions
		if wa, ok := a.(clienttesting.WatchActionImpl); ok {
			lo = wa.ListOptions
		}
		w, err := tracker.Watch(a.GetResource(), a.GetNamespace(), lo)
		if err != nil {
			return true, nil, err
		}
		var matching []string
		if lo.LabelSelector != "" {
			items, err := list(a.GetResource(), a.GetNamespace(), lo.LabelSelector)
			if err != nil {
				w.Stop()
				return true, nil, err
			}
			for i := range items {
				matching = append(matching, fakewatch.Key(items[i].GetNamespace(), items[i].GetName()))
			}
		}
		p, err := c.watches.Add(a.GetResource(), a.GetNamespace(), w, fakewatch.Options{LabelSelector: lo.LabelSelector, Matching: matching})
		if err != nil {
			w.Stop()
			return true, nil, err
		}
		return true, p, nil
	})

	c.Recording = &Recording{
		ClusterID: cfg.clusterID, t: t, timeout: cfg.timeout, disc: c.Discovery, fake: c.watches,
		pollMin: 2 * time.Millisecond, pollMax: 2 * time.Millisecond,
		list: func(_ context.Context, st watch.StreamStatus) ([]unstructured.Unstructured, error) {
			labelSel, _ := splitSelector(st.Stream.Selector)
			return list(st.Stream.GVR(), st.Stream.Namespace, labelSel)
		},
	}
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
	if !c.start(c.Dynamic, copts) {
		return nil
	}
	return c
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
