package crtest

import (
	"context"
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// errReadOnly is what the Collector's client answers to a write: the
// recording only lists and watches.
var errReadOnly = errors.New("crtest: the recording's dynamic client only lists, gets and watches; write through Cluster.Client")

// dynamicClient is a dynamic.Interface over a controller-runtime client:
// what the Collector lists and watches. It is a krplytest.Bookmarker,
// since the fake client's watches, like every fake's, replay nothing,
// never end and send no bookmarks.
type dynamicClient struct {
	c     client.WithWatch
	kinds map[schema.GroupVersionResource]string

	mu      sync.Mutex
	watches map[streamKey][]*proxyWatch
	marks   int
	lists   int
}

type streamKey struct {
	gvr       schema.GroupVersionResource
	namespace string
}

func newDynamic(c client.WithWatch, apis []*metav1.APIResourceList) *dynamicClient {
	d := &dynamicClient{c: c, kinds: map[schema.GroupVersionResource]string{}, watches: map[streamKey][]*proxyWatch{}}
	for _, l := range apis {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			d.kinds[gv.WithResource(r.Name)] = r.Kind
		}
	}
	return d
}

func (d *dynamicClient) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return &resourceClient{d: d, gvr: gvr}
}

// Watching reports whether a watch of the resource in the namespace is
// open.
func (d *dynamicClient) Watching(gvr schema.GroupVersionResource, namespace string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, w := range d.watches[streamKey{gvr, namespace}] {
		if !w.stopped() {
			return true
		}
	}
	return false
}

// Bookmark sends every open watch a BOOKMARK at a new resourceVersion.
func (d *dynamicClient) Bookmark() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.marks++
	rv := fmt.Sprintf("crtest-mark-%d", d.marks)
	for key, ws := range d.watches {
		for _, w := range ws {
			w.bookmark(key.gvr.GroupVersion().String(), rv)
		}
	}
}

type resourceClient struct {
	d         *dynamicClient
	gvr       schema.GroupVersionResource
	namespace string
}

func (r *resourceClient) Namespace(ns string) dynamic.ResourceInterface {
	return &resourceClient{d: r.d, gvr: r.gvr, namespace: ns}
}

// gvk returns the kind of the resource, or an error naming it.
func (r *resourceClient) gvk() (schema.GroupVersionKind, error) {
	kind, ok := r.d.kinds[r.gvr]
	if !ok {
		return schema.GroupVersionKind{}, fmt.Errorf("crtest: the fake client's scheme has no kind for %s", r.gvr)
	}
	return r.gvr.GroupVersion().WithKind(kind), nil
}

// listRequest returns the kind, an empty list of it and the client's list
// options for the Collector's list or watch options.
func (r *resourceClient) listRequest(opts metav1.ListOptions) (schema.GroupVersionKind, *unstructured.UnstructuredList, []client.ListOption, error) {
	gvk, err := r.gvk()
	if err != nil {
		return gvk, nil, nil, err
	}
	lo, err := r.listOptions(opts)
	if err != nil {
		return gvk, nil, nil, err
	}
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	return gvk, l, lo, nil
}

// listOptions turns the Collector's list options into the client's.
func (r *resourceClient) listOptions(opts metav1.ListOptions) ([]client.ListOption, error) {
	var out []client.ListOption
	if r.namespace != "" {
		out = append(out, client.InNamespace(r.namespace))
	}
	if opts.LabelSelector != "" {
		sel, err := labels.Parse(opts.LabelSelector)
		if err != nil {
			return nil, err
		}
		out = append(out, client.MatchingLabelsSelector{Selector: sel})
	}
	if opts.FieldSelector != "" {
		sel, err := fields.ParseSelector(opts.FieldSelector)
		if err != nil {
			return nil, err
		}
		out = append(out, client.MatchingFieldsSelector{Selector: sel})
	}
	return out, nil
}

func (r *resourceClient) List(ctx context.Context, opts metav1.ListOptions) (*unstructured.UnstructuredList, error) {
	gvk, l, lo, err := r.listRequest(opts)
	if err != nil {
		return nil, err
	}
	if err := r.d.c.List(ctx, l, lo...); err != nil {
		return nil, err
	}
	for i := range l.Items {
		l.Items[i].SetGroupVersionKind(gvk)
	}
	if l.GetResourceVersion() == "" {
		// The fake sets none; the Collector needs one to watch from, and
		// the fake's watch ignores it.
		r.d.mu.Lock()
		r.d.lists++
		l.SetResourceVersion(fmt.Sprintf("crtest-list-%d", r.d.lists))
		r.d.mu.Unlock()
	}
	return l, nil
}

func (r *resourceClient) Get(ctx context.Context, name string, _ metav1.GetOptions, subresources ...string) (*unstructured.Unstructured, error) {
	if len(subresources) > 0 {
		return nil, errReadOnly
	}
	gvk, err := r.gvk()
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := r.d.c.Get(ctx, client.ObjectKey{Namespace: r.namespace, Name: name}, u); err != nil {
		return nil, err
	}
	return u, nil
}

func (r *resourceClient) Watch(ctx context.Context, opts metav1.ListOptions) (apiwatch.Interface, error) {
	if opts.SendInitialEvents != nil {
		return nil, errors.New("crtest: the fake client serves no WatchList")
	}
	gvk, l, lo, err := r.listRequest(opts)
	if err != nil {
		return nil, err
	}
	in, err := r.d.c.Watch(ctx, l, lo...)
	if err != nil {
		return nil, err
	}
	w := newProxyWatch(in, gvk)
	r.d.mu.Lock()
	key := streamKey{r.gvr, r.namespace}
	// Forget the stopped watches of the stream.
	live := r.d.watches[key][:0]
	for _, old := range r.d.watches[key] {
		if !old.stopped() {
			live = append(live, old)
		}
	}
	r.d.watches[key] = append(live, w)
	r.d.mu.Unlock()
	return w, nil
}

func (r *resourceClient) Create(context.Context, *unstructured.Unstructured, metav1.CreateOptions, ...string) (*unstructured.Unstructured, error) {
	return nil, errReadOnly
}

func (r *resourceClient) Update(context.Context, *unstructured.Unstructured, metav1.UpdateOptions, ...string) (*unstructured.Unstructured, error) {
	return nil, errReadOnly
}

func (r *resourceClient) UpdateStatus(context.Context, *unstructured.Unstructured, metav1.UpdateOptions) (*unstructured.Unstructured, error) {
	return nil, errReadOnly
}

func (r *resourceClient) Delete(context.Context, string, metav1.DeleteOptions, ...string) error {
	return errReadOnly
}

func (r *resourceClient) DeleteCollection(context.Context, metav1.DeleteOptions, metav1.ListOptions) error {
	return errReadOnly
}

func (r *resourceClient) Patch(context.Context, string, types.PatchType, []byte, metav1.PatchOptions, ...string) (*unstructured.Unstructured, error) {
	return nil, errReadOnly
}

func (r *resourceClient) Apply(context.Context, string, *unstructured.Unstructured, metav1.ApplyOptions, ...string) (*unstructured.Unstructured, error) {
	return nil, errReadOnly
}

func (r *resourceClient) ApplyStatus(context.Context, string, *unstructured.Unstructured, metav1.ApplyOptions) (*unstructured.Unstructured, error) {
	return nil, errReadOnly
}

// proxyWatch forwards a fake client's watch as unstructured objects (the
// fake sends typed ones, with managedFields, which its List leaves out:
// the watch leaves them out too), and sends the bookmarks of Mark.
type proxyWatch struct {
	in   apiwatch.Interface
	gvk  schema.GroupVersionKind
	out  chan apiwatch.Event
	kick chan struct{}
	done chan struct{}
	once sync.Once

	mu         sync.Mutex
	apiVersion string
	rv         string
}

func newProxyWatch(in apiwatch.Interface, gvk schema.GroupVersionKind) *proxyWatch {
	w := &proxyWatch{in: in, gvk: gvk, out: make(chan apiwatch.Event), kick: make(chan struct{}, 1), done: make(chan struct{})}
	go w.run()
	return w
}

func (w *proxyWatch) run() {
	defer close(w.out)
	for {
		var ev apiwatch.Event
		select {
		case e, ok := <-w.in.ResultChan():
			if !ok {
				return
			}
			ev = w.convert(e)
		case <-w.kick:
			w.mu.Lock()
			bm := &unstructured.Unstructured{}
			bm.SetAPIVersion(w.apiVersion)
			bm.SetKind(w.gvk.Kind)
			bm.SetResourceVersion(w.rv)
			w.mu.Unlock()
			ev = apiwatch.Event{Type: apiwatch.Bookmark, Object: bm}
		case <-w.done:
			return
		}
		select {
		case w.out <- ev:
		case <-w.done:
			return
		}
	}
}

// convert makes an event's object unstructured, with its kind.
func (w *proxyWatch) convert(e apiwatch.Event) apiwatch.Event {
	if e.Type == apiwatch.Error || e.Object == nil {
		return e
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(e.Object)
	if err != nil {
		return apiwatch.Event{Type: apiwatch.Error, Object: &metav1.Status{
			Status: metav1.StatusFailure, Message: fmt.Sprintf("crtest: convert %T: %v", e.Object, err),
		}}
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(w.gvk)
	u.SetManagedFields(nil)
	return apiwatch.Event{Type: e.Type, Object: u}
}

func (w *proxyWatch) bookmark(apiVersion, rv string) {
	w.mu.Lock()
	w.apiVersion, w.rv = apiVersion, rv
	w.mu.Unlock()
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

func (w *proxyWatch) Stop() {
	w.once.Do(func() {
		close(w.done)
		w.in.Stop()
	})
}

func (w *proxyWatch) stopped() bool {
	select {
	case <-w.done:
		return true
	default:
		return false
	}
}

func (w *proxyWatch) ResultChan() <-chan apiwatch.Event { return w.out }
