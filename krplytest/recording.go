package krplytest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
	memstore "github.com/krply/krply/storage/memory"
	"github.com/krply/krply/watch"
)

// Recording is a real watch.Collector recording a cluster into an
// in-memory journal for the duration of a test, with the helpers to wait
// for it (Sync, Mark) and to ask it what happened (History, ObjectAt,
// Snapshot, Diff, Records). Record and RecordClient return one for any
// cluster; NewCluster's Cluster embeds one for a fake cluster.
//
// Call its methods from the test's goroutine: they fail the test with
// Fatalf. The Collector sees the cluster's changes asynchronously; Sync
// waits until the journal has them, and the query methods call Sync first.
type Recording struct {
	// Store is the journal; Collector records into it; Materializer reads it.
	Store        *memstore.Store
	Collector    *watch.Collector
	Materializer *materialize.Materializer
	// ClusterID is the cluster ID of every record.
	ClusterID string

	t       TestingT
	timeout time.Duration
	disc    discovery.DiscoveryInterface
	// list returns what the cluster holds for a stream now.
	list func(ctx context.Context, st watch.StreamStatus) ([]unstructured.Unstructured, error)
	// fake is nil on a real cluster, whose progress checkpoints vouch for
	// a Mark.
	fake Bookmarker
	// pollMin and pollMax bound the pause between two looks at the cluster
	// while Sync waits.
	pollMin, pollMax time.Duration
	stop             func()

	mu        sync.Mutex
	resources map[string]watch.Resource // resolved specs
}

// Bookmarker is what a fake cluster's dynamic client implements so that a
// Recording can tell when the Collector's watches see writes and can
// vouch for a Mark. A fake, unlike an API server, does not replay the
// changes made between a list and the watch that follows it, never ends a
// watch at its timeout and never sends a bookmark. RecordClient uses it
// when its dynamic client implements it (krplytest/crtest's does); NewCluster
// has its own.
type Bookmarker interface {
	// Watching reports whether a watch of the resource in the namespace
	// ("" for all namespaces or a cluster-scoped resource) is open.
	Watching(gvr schema.GroupVersionResource, namespace string) bool
	// Bookmark sends every open watch a BOOKMARK event whose
	// resourceVersion is new each call.
	Bookmark()
}

// RealProgressInterval is the watch.WithProgressInterval of the Collector
// of Record and RecordClient on a real cluster: how long a quiet stream
// may wait for a progress checkpoint, so about the longest a Mark takes.
const RealProgressInterval = time.Second

// Record records a cluster — envtest's, a kind cluster's, any
// *rest.Config — into an in-memory journal until the test ends. It returns
// once every stream has its first baseline, so every write the test makes
// afterwards is recorded. It records watch.DefaultResources() unless
// WithResources says otherwise; WithObjects and WithAPIResources are for
// NewCluster's fake and fail the test here.
//
//	env := &envtest.Environment{}
//	cfg, _ := env.Start()
//	r := krplytest.Record(t, cfg, krplytest.WithResources("deploy", "cm"))
//	... run the reconciler against cfg ...
//	r.EventuallyHistory("deploy", ns, "web", krplytest.Version{Type: event.Added}, ...)
func Record(t TestingT, cfg *rest.Config, opts ...Option) *Recording {
	t.Helper()
	if cfg == nil {
		t.Fatalf("krplytest: Record: nil *rest.Config")
		return nil
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("krplytest: Record: dynamic client: %v", err)
		return nil
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatalf("krplytest: Record: discovery client: %v", err)
		return nil
	}
	return RecordClient(t, dyn, disc, opts...)
}

// RecordClient is Record for clients of your own: any dynamic client and
// the discovery that says what it serves. When dyn implements Bookmarker
// (a fake), the Recording waits until every watch is open before it
// returns and has the fake vouch for each Mark; otherwise, as on an API
// server, the Collector's progress checkpoints (RealProgressInterval)
// vouch for it.
func RecordClient(t TestingT, dyn dynamic.Interface, disc discovery.DiscoveryInterface, opts ...Option) *Recording {
	t.Helper()
	cfg, ok := newConfig(t, opts)
	if !ok {
		return nil
	}
	if len(cfg.objects) > 0 || len(cfg.apis) > 0 {
		t.Fatalf("krplytest: WithObjects and WithAPIResources set up NewCluster's fake cluster; create the objects with your own client (or give them to your fake's builder) before recording")
		return nil
	}
	r := &Recording{ClusterID: cfg.clusterID, t: t, timeout: cfg.timeout, disc: disc, pollMin: 5 * time.Millisecond, pollMax: 50 * time.Millisecond}
	r.list = func(ctx context.Context, st watch.StreamStatus) ([]unstructured.Unstructured, error) {
		lo := metav1.ListOptions{}
		lo.LabelSelector, lo.FieldSelector = splitSelector(st.Stream.Selector)
		var items []unstructured.Unstructured
		for {
			l, err := dyn.Resource(st.Stream.GVR()).Namespace(st.Stream.Namespace).List(ctx, lo)
			if err != nil {
				return nil, err
			}
			items = append(items, l.Items...)
			if lo.Continue = l.GetContinue(); lo.Continue == "" {
				return items, nil
			}
		}
	}
	copts := []watch.Option{watch.WithClusterID(cfg.clusterID)}
	if len(cfg.resources) > 0 {
		copts = append(copts, watch.WithResources(cfg.resources...))
	} else {
		copts = append(copts, watch.WithResources(watch.DefaultResources()...))
	}
	copts = append(copts, watch.WithBackoff(5*time.Millisecond, 100*time.Millisecond),
		watch.WithBatching(256, 4<<20, time.Millisecond), watch.WithRediscoveryInterval(0))
	if b, ok := dyn.(Bookmarker); ok {
		r.fake = b
		r.pollMin, r.pollMax = time.Millisecond, 5*time.Millisecond
		// A fake answers no WatchList.
		copts = append(copts, watch.WithWatchList(watch.WatchListOff))
	} else {
		copts = append(copts, watch.WithProgressInterval(RealProgressInterval))
	}
	if !r.start(dyn, append(copts, cfg.collector...)) {
		return nil
	}
	return r
}

// splitSelector reads a stream's canonical selector,
// "labels:<l>;fields:<f>" or "".
func splitSelector(sel string) (labelSel, fieldSel string) {
	sel = strings.TrimPrefix(sel, "labels:")
	labelSel, fieldSel, _ = strings.Cut(sel, ";fields:")
	return labelSel, fieldSel
}

// newConfig applies the options and checks them.
func newConfig(t TestingT, opts []Option) (config, bool) {
	t.Helper()
	cfg := config{clusterID: DefaultClusterID, timeout: DefaultTimeout}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if cfg.timeout <= 0 {
		t.Fatalf("krplytest: timeout %s must be positive", cfg.timeout)
		return cfg, false
	}
	return cfg, true
}

// start makes the store, Collector and Materializer, starts the Collector
// and waits until it is in sync and, on a fake, watching.
func (r *Recording) start(dyn dynamic.Interface, copts []watch.Option) bool {
	t := r.t
	t.Helper()
	r.resources = map[string]watch.Resource{}
	r.Store = NewStore(t)
	col, err := watch.NewCollector(dyn, r.disc, r.Store, copts...)
	if err != nil {
		t.Fatalf("krplytest: new collector: %v", err)
		return false
	}
	r.Collector = col
	if r.Materializer, err = materialize.New(r.Store); err != nil {
		t.Fatalf("krplytest: new materializer: %v", err)
		return false
	}
	stop, err := startCollector(t, col, r.timeout)
	r.stop = stop
	if err != nil {
		t.Fatalf("krplytest: %v\n%s", err, r.describeStreams())
		return false
	}
	if r.fake != nil && !r.poll(r.allWatching) {
		t.Fatalf("krplytest: streams not watching within %s\n%s", r.timeout, r.describeStreams())
		return false
	}
	return true
}

// StartCollector runs col.Start in a goroutine and waits, at most timeout,
// until it is in sync (WaitForSync). When the test ends it stops the
// Collector and fails the test if Start returned an error or did not return
// within timeout. The returned function stops it earlier; calling it again
// does nothing. Use it for a Collector of your own, e.g. with a SQLite
// journal; Record does all of it for an in-memory one.
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
func (r *Recording) Stop() {
	r.t.Helper()
	r.stop()
}

// allWatching reports whether every stream watches, with a watch the fake
// knows of.
func (r *Recording) allWatching() bool {
	for _, st := range r.Collector.Status() {
		if st.State == watch.StatePending {
			continue
		}
		if st.State != watch.StateWatching || !r.fake.Watching(st.Stream.GVR(), st.Stream.Namespace) {
			return false
		}
	}
	return true
}

// poll calls cond until it holds or the timeout passes, pausing between
// calls from pollMin, doubling up to pollMax.
func (r *Recording) poll(cond func() bool) bool {
	deadline := time.Now().Add(r.timeout)
	pause := r.pollMin
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(pause)
		pause = min(2*pause, r.pollMax)
	}
}

func (r *Recording) describeStreams() string {
	var b strings.Builder
	for _, st := range r.Collector.Status() {
		fmt.Fprintf(&b, "  %s: %s synced=%v covered=%v %s\n", st.StreamID, st.State, st.Synced, st.Covered, st.DegradedReason)
	}
	return b.String()
}

// Sync waits until the journal reflects every write made to the cluster
// so far: for each recorded stream, the objects alive in the journal now
// are exactly those the cluster lists, at the same resourceVersion (or,
// on a fake that sets none, with the same content). It fails the test
// after the timeout with the differences.
//
// On a real cluster where a controller keeps writing, Sync returns once
// the journal caught up with one listing; to wait for what a controller
// will do, use EventuallyHistory or Eventually.
func (r *Recording) Sync() {
	r.t.Helper()
	var diff string
	if !r.poll(func() bool { diff = r.unsynced(); return diff == "" }) {
		r.t.Fatalf("krplytest: journal did not catch up with the cluster within %s:\n%s%s", r.timeout, diff, r.describeStreams())
	}
}

// unsynced returns how the journal differs from the cluster, "" when it
// does not.
func (r *Recording) unsynced() string {
	ctx := context.Background()
	var b strings.Builder
	for _, st := range r.Collector.Status() {
		if st.State == watch.StatePending {
			continue
		}
		gvk := st.Stream.GVR().GroupVersion().WithKind(st.Resource.Kind)
		listed, err := r.list(ctx, st)
		if err != nil {
			fmt.Fprintf(&b, "  %s: list the cluster: %v\n", st.StreamID, err)
			continue
		}
		want := map[string]*unstructured.Unstructured{}
		for i := range listed {
			u := &listed[i]
			if u.GetKind() == "" {
				u.SetGroupVersionKind(gvk)
			}
			want[key(u)] = u
		}
		alive, err := r.Store.AliveAt(ctx, storage.AliveQuery{StreamID: st.StreamID, At: time.Now()})
		if err != nil {
			fmt.Fprintf(&b, "  %s: journal: %v\n", st.StreamID, err)
			continue
		}
		got := map[string]event.Record{}
		for _, rec := range alive {
			got[rec.Resource.ObjectKey()] = rec
		}
		secrets := st.Stream.Group == "" && st.Stream.Resource == "secrets"
		for _, k := range sortedKeys(want) {
			rec, ok := got[k]
			if !ok {
				fmt.Fprintf(&b, "  %s: %s not recorded yet\n", st.StreamID, k)
				continue
			}
			if problem := sameObject(want[k], rec, secrets); problem != "" {
				fmt.Fprintf(&b, "  %s: %s %s\n", st.StreamID, k, problem)
			}
		}
		for _, k := range sortedKeys(got) {
			if _, ok := want[k]; !ok {
				fmt.Fprintf(&b, "  %s: deletion of %s not recorded yet\n", st.StreamID, k)
			}
		}
	}
	return b.String()
}

// sameObject returns how the journal's record of an object differs from
// the cluster's object, "" when it does not: by resourceVersion when the
// cluster sets one, by content (metadata only for a Secret, whose values
// the Collector redacts) when it does not.
func sameObject(want *unstructured.Unstructured, rec event.Record, secret bool) string {
	if rv := want.GetResourceVersion(); rv != "" {
		if rec.Resource.ResourceVersion != rv {
			return fmt.Sprintf("recorded at resourceVersion %q, the cluster has %q", rec.Resource.ResourceVersion, rv)
		}
		return ""
	}
	var got map[string]any
	if err := json.Unmarshal(rec.Object, &got); err != nil {
		return fmt.Sprintf("decode the journal's body: %v", err)
	}
	w := normalize(want.Object)
	switch {
	case secret && !reflect.DeepEqual(got["metadata"], w["metadata"]) && !redactedOnly(got, w):
		return "recorded with other metadata"
	case !secret && !reflect.DeepEqual(got, w):
		return "recorded with other content"
	}
	return ""
}

// Mark waits for the journal (Sync) and returns the current time: every
// change made before Mark is observed at or before it, every change made
// after it later. Use it to name the times of a Snapshot or a Diff.
//
// The journal covers a time only up to each stream's last evidence of
// continuity (storage.Coverage), so Mark then waits until every stream
// has evidence after the mark (watch.Collector.WaitForProgress). On a
// real cluster that is the next progress checkpoint, within about
// RealProgressInterval. A fake never ends a watch at its timeout the way
// an API server does, so on a fake Mark makes it vouch for the time: it
// sends every open watch of the fake (other Collectors' too) a BOOKMARK
// at a new resourceVersion.
func (r *Recording) Mark() time.Time {
	r.t.Helper()
	r.Sync()
	at := time.Now().Round(0)
	for !time.Now().After(at) {
		time.Sleep(time.Microsecond)
	}
	if r.fake != nil {
		r.fake.Bookmark()
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout+2*RealProgressInterval)
	defer cancel()
	if err := r.Collector.WaitForProgress(ctx, at); err != nil {
		r.t.Fatalf("krplytest: %v\n%s", err, r.describeStreams())
	}
	return at
}

// resource resolves a resource name ("deploy", "configmaps",
// "apps/v1/deployments") through discovery.
func (r *Recording) resource(spec string) watch.Resource {
	r.t.Helper()
	r.mu.Lock()
	res, ok := r.resources[spec]
	r.mu.Unlock()
	if ok {
		return res
	}
	rs, err := watch.Resolve(context.Background(), r.disc, spec)
	if err != nil {
		r.t.Fatalf("krplytest: %v", err)
		return watch.Resource{}
	}
	r.mu.Lock()
	r.resources[spec] = rs[0]
	r.mu.Unlock()
	return rs[0]
}

// ObjectID names an object of the cluster for the storage and materialize
// APIs. resource is any name watch.WithResources accepts.
func (r *Recording) ObjectID(resource, namespace, name string) storage.ObjectID {
	r.t.Helper()
	res := r.resource(resource)
	return storage.ObjectID{ClusterID: r.ClusterID, Group: res.Group, Resource: res.Resource, Namespace: namespace, Name: name}
}

// History returns the history of one object, after Sync.
func (r *Recording) History(resource, namespace, name string, opts ...materialize.HistoryOption) *materialize.History {
	r.t.Helper()
	r.Sync()
	h, err := r.Materializer.History(context.Background(), r.ObjectID(resource, namespace, name), opts...)
	if err != nil {
		r.t.Fatalf("krplytest: history of %s %s/%s: %v", resource, namespace, name, err)
	}
	return h
}

// ObjectAt returns one object as it was at a time, after Sync.
func (r *Recording) ObjectAt(resource, namespace, name string, at time.Time) *materialize.ObjectState {
	r.t.Helper()
	r.Sync()
	st, err := r.Materializer.ObjectAt(context.Background(), r.ObjectID(resource, namespace, name), at)
	if err != nil {
		r.t.Fatalf("krplytest: %s %s/%s at %s: %v", resource, namespace, name, at, err)
	}
	return st
}

// Snapshot returns the state at a time of the given namespaces, or of the
// whole cluster when none is given, after Sync. It saves nothing.
func (r *Recording) Snapshot(at time.Time, namespaces ...string) *materialize.Snapshot {
	r.t.Helper()
	r.Sync()
	s, err := r.Materializer.Snapshot(context.Background(), r.scope(namespaces), at)
	if err != nil {
		r.t.Fatalf("krplytest: snapshot at %s: %v", at, err)
	}
	return s
}

// Diff returns what changed between two times in the given namespaces, or
// in the whole cluster when none is given, after Sync.
func (r *Recording) Diff(from, to time.Time, namespaces ...string) *materialize.Diff {
	r.t.Helper()
	r.Sync()
	d, err := r.Materializer.Diff(context.Background(), r.scope(namespaces), from, to)
	if err != nil {
		r.t.Fatalf("krplytest: diff %s..%s: %v", from, to, err)
	}
	return d
}

func (r *Recording) scope(namespaces []string) materialize.Scope {
	return materialize.Scope{ClusterID: r.ClusterID, Namespaces: append([]string(nil), namespaces...)}
}

// Records returns every record of the journal in append order; tests that
// check the journal itself use it.
func (r *Recording) Records() []event.Record {
	r.t.Helper()
	var out []event.Record
	q := storage.Query{Limit: 1000}
	for {
		page, err := r.Store.Records(context.Background(), q)
		if err != nil {
			r.t.Fatalf("krplytest: records: %v", err)
			return out
		}
		out = append(out, page.Records...)
		if page.Next == "" {
			return out
		}
		q.Cursor = page.Next
	}
}

// EventuallyHistory waits, up to the timeout (WithTimeout), until the
// history of an object is the expected one (AssertHistory), and returns
// whether it was. Use it when something else — a controller, a manager's
// goroutines — writes to the cluster while the test runs, instead of a
// sleep. When the time is up it fails the test with the last mismatch and
// the whole history.
func (r *Recording) EventuallyHistory(resource, namespace, name string, want ...Version) bool {
	r.t.Helper()
	return Eventually(r.t, r.timeout, func(t TestingT) bool {
		return AssertHistory(t, r.History(resource, namespace, name), want...)
	})
}
