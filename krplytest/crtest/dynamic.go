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

	"github.com/krply/krply/krplytest/fakewatch"
)

// errReadOnly is what the Collector's client answers to a write: the
// recording only lists and watches.
var errReadOnly = errors.New("crtest: the recording's dynamic client only lists, gets and watches; write through Cluster.Client")

// dynamicClient is a dynamic.Interface over a controller-runtime client:
// what the Collector lists and watches. Its registry makes it a
// krplytest.Bookmarker, since the fake client's watches, like every
// fake's, replay nothing, never end and send no bookmarks.
type dynamicClient struct {
	*fakewatch.Registry
	c     client.WithWatch
	kinds map[schema.GroupVersionResource]string

	mu    sync.Mutex
	lists int
}

func newDynamic(c client.WithWatch, apis []*metav1.APIResourceList) *dynamicClient {
	d := &dynamicClient{Registry: fakewatch.NewRegistry("crtest"), c: c, kinds: map[schema.GroupVersionResource]string{}}
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
	// The fake's watch ignores the label selector: the registry applies
	// it, from the objects that match now.
	var matching []string
	if opts.LabelSelector != "" {
		now, err := r.List(ctx, metav1.ListOptions{LabelSelector: opts.LabelSelector})
		if err != nil {
			in.Stop()
			return nil, err
		}
		for _, u := range now.Items {
			matching = append(matching, fakewatch.Key(u.GetNamespace(), u.GetName()))
		}
	}
	w, err := r.d.Add(r.gvr, r.namespace, in, fakewatch.Options{LabelSelector: opts.LabelSelector, Matching: matching,
		Convert: func(o runtime.Object) (runtime.Object, error) { return toUnstructured(o, gvk) }})
	if err != nil {
		in.Stop()
		return nil, err
	}
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

// toUnstructured converts a watch event's object of the fake (typed, with
// managedFields, which the fake's List leaves out: so does the watch).
func toUnstructured(o runtime.Object, gvk schema.GroupVersionKind) (runtime.Object, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
	if err != nil {
		return nil, fmt.Errorf("crtest: convert %T: %w", o, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(gvk)
	u.SetManagedFields(nil)
	return u, nil
}
