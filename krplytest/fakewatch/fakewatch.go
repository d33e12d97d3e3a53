// Package fakewatch makes the watches of a fake cluster (client-go's
// dynamic fake, controller-runtime's fake client) behave as an API
// server's do in the ways krply's Collector relies on, for krplytest and
// krplytest/crtest:
//
//   - a label selector filters events, and an object that stops matching
//     it gets a DELETED event (the fakes send every event unfiltered);
//   - a BOOKMARK can be sent on every open watch, since a fake never ends a
//     watch at its timeout nor sends bookmarks, so it vouches for a time
//     only that way;
//   - the fake's typed objects can be converted (controller-runtime's).
//
// Registry keeps the watches of each stream and is a krplytest.Bookmarker.
package fakewatch

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwatch "k8s.io/apimachinery/pkg/watch"
)

// Registry keeps every watch of each stream.
type Registry struct {
	prefix string

	mu      sync.Mutex
	watches map[key][]*Proxy
	marks   int
}

type key struct {
	gvr       schema.GroupVersionResource
	namespace string
}

// NewRegistry returns an empty registry; its bookmarks have
// resourceVersions prefix-mark-1, prefix-mark-2, …
func NewRegistry(prefix string) *Registry {
	return &Registry{prefix: prefix, watches: map[key][]*Proxy{}}
}

// Options say how a Proxy treats the fake's events.
type Options struct {
	// LabelSelector is the watch's label selector ("" for none).
	LabelSelector string
	// Matching are the keys (Key) of the objects matching LabelSelector
	// when the watch started.
	Matching []string
	// Convert, if set, turns each event's object into the one to send.
	Convert func(runtime.Object) (runtime.Object, error)
}

// Add wraps a fake's watch of a stream and registers it.
func (r *Registry) Add(gvr schema.GroupVersionResource, namespace string, in apiwatch.Interface, opts Options) (*Proxy, error) {
	sel, err := labels.Parse(opts.LabelSelector)
	if err != nil {
		return nil, fmt.Errorf("label selector %q: %w", opts.LabelSelector, err)
	}
	p := &Proxy{in: in, sel: sel, convert: opts.Convert, apiVersion: gvr.GroupVersion().String(),
		out: make(chan apiwatch.Event), kick: make(chan struct{}, 1), done: make(chan struct{}), matching: map[string]bool{}}
	for _, k := range opts.Matching {
		p.matching[k] = true
	}
	r.mu.Lock()
	k := key{gvr, namespace}
	live := r.watches[k][:0]
	for _, old := range r.watches[k] {
		if !old.stopped() {
			live = append(live, old)
		}
	}
	r.watches[k] = append(live, p)
	r.mu.Unlock()
	go p.run()
	return p, nil
}

// Watching reports whether a watch of the resource in the namespace is
// open.
func (r *Registry) Watching(gvr schema.GroupVersionResource, namespace string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.watches[key{gvr, namespace}] {
		if !p.stopped() {
			return true
		}
	}
	return false
}

// Bookmark sends every open watch a BOOKMARK at a new resourceVersion.
func (r *Registry) Bookmark() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.marks++
	rv := fmt.Sprintf("%s-mark-%d", r.prefix, r.marks)
	for _, ps := range r.watches {
		for _, p := range ps {
			p.bookmark(rv)
		}
	}
}

// Proxy is a fake's watch as an API server would send it.
type Proxy struct {
	in         apiwatch.Interface
	sel        labels.Selector
	convert    func(runtime.Object) (runtime.Object, error)
	apiVersion string
	out        chan apiwatch.Event
	kick       chan struct{}
	done       chan struct{}
	once       sync.Once
	matching   map[string]bool // only run touches it

	mu sync.Mutex
	rv string
}

func (p *Proxy) run() {
	defer close(p.out)
	for {
		var ev apiwatch.Event
		select {
		case e, ok := <-p.in.ResultChan():
			if !ok {
				return
			}
			var send bool
			if ev, send = p.filter(p.convertEvent(e)); !send {
				continue
			}
		case <-p.kick:
			p.mu.Lock()
			bm := &unstructured.Unstructured{}
			bm.SetAPIVersion(p.apiVersion)
			bm.SetResourceVersion(p.rv)
			p.mu.Unlock()
			ev = apiwatch.Event{Type: apiwatch.Bookmark, Object: bm}
		case <-p.done:
			return
		}
		select {
		case p.out <- ev:
		case <-p.done:
			return
		}
	}
}

func (p *Proxy) convertEvent(e apiwatch.Event) apiwatch.Event {
	if p.convert == nil || e.Type == apiwatch.Error || e.Object == nil {
		return e
	}
	obj, err := p.convert(e.Object)
	if err != nil {
		return apiwatch.Event{Type: apiwatch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}}
	}
	return apiwatch.Event{Type: e.Type, Object: obj}
}

// filter applies the label selector: an object that stops matching is
// DELETED, one that starts matching ADDED, one that never matches left out.
func (p *Proxy) filter(e apiwatch.Event) (apiwatch.Event, bool) {
	if p.sel.Empty() || (e.Type != apiwatch.Added && e.Type != apiwatch.Modified && e.Type != apiwatch.Deleted) {
		return e, true
	}
	m, err := meta.Accessor(e.Object)
	if err != nil {
		return e, true
	}
	k := Key(m.GetNamespace(), m.GetName())
	was, now := p.matching[k], p.sel.Matches(labels.Set(m.GetLabels())) && e.Type != apiwatch.Deleted
	switch {
	case now:
		p.matching[k] = true
		if !was {
			e.Type = apiwatch.Added
		}
		return e, true
	case was:
		delete(p.matching, k)
		e.Type = apiwatch.Deleted
		return e, true
	}
	return e, false
}

func (p *Proxy) bookmark(rv string) {
	p.mu.Lock()
	p.rv = rv
	p.mu.Unlock()
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// Stop stops the watch and the fake's.
func (p *Proxy) Stop() {
	p.once.Do(func() {
		close(p.done)
		p.in.Stop()
	})
}

func (p *Proxy) stopped() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// ResultChan returns the events.
func (p *Proxy) ResultChan() <-chan apiwatch.Event { return p.out }

// Key names an object in Options.Matching: "namespace/name", or "name"
// for a cluster-scoped one.
func Key(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}
