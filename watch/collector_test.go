package watch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
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

func TestResolve(t *testing.T) {
	disc := fakeDiscovery()
	tests := []struct {
		spec string
		want string // GVR string
	}{
		{"cm", "/v1, Resource=configmaps"},
		{"configmap", "/v1, Resource=configmaps"},
		{"ConfigMaps", "/v1, Resource=configmaps"},
		{"ns", "/v1, Resource=namespaces"},
		{"deploy", "apps/v1, Resource=deployments"},
		{"Deployment", "apps/v1, Resource=deployments"},
		{"deployments.apps", "apps/v1, Resource=deployments"},
		{"deployments.v1.apps", "apps/v1, Resource=deployments"},
		{"apps/v1/deployments", "apps/v1, Resource=deployments"},
		{"v1/configmaps", "/v1, Resource=configmaps"},
		{"sts", "apps/v1, Resource=statefulsets"},
	}
	for _, tt := range tests {
		got, err := Resolve(context.Background(), disc, tt.spec)
		if err != nil {
			t.Errorf("Resolve(%q): %v", tt.spec, err)
			continue
		}
		if len(got) != 1 || got[0].GVR().String() != tt.want {
			t.Errorf("Resolve(%q) = %v, want %s", tt.spec, got, tt.want)
		}
	}
	got, err := Resolve(context.Background(), disc, "pods")
	if err != nil || !got[0].Namespaced || got[0].Kind != "Pod" {
		t.Errorf("pods: %+v, %v; want namespaced kind Pod", got, err)
	}
	got, err = Resolve(context.Background(), disc, "ns")
	if err != nil || got[0].Namespaced {
		t.Errorf("namespaces: %+v, %v; want cluster-scoped", got, err)
	}

	for _, bad := range []string{"deploymnets", "pods/log", "bindings", "widgets.example.com"} {
		_, err := Resolve(context.Background(), disc, bad)
		var unknown *UnknownResourceError
		if !errors.As(err, &unknown) || !errors.Is(err, ErrUnknownResource) {
			t.Errorf("Resolve(%q) error = %v, want an UnknownResourceError", bad, err)
		}
	}
	_, err = Resolve(context.Background(), disc, "deploymnets")
	if !strings.Contains(err.Error(), "deployments") {
		t.Errorf("error %q does not suggest deployments", err)
	}
}

func TestNewCollectorValidates(t *testing.T) {
	dyn, disc, st := fakeDynamic(), fakeDiscovery(), newMemory(t)
	for name, opts := range map[string][]Option{
		"secrets without AllowSecrets": {WithResources("secrets")},
		"secret alias":                 {WithResources("secret")},
		"bad label selector":           {WithLabelSelector("a in (")},
		"bad watchlist mode":           {WithWatchList("sometimes")},
		"zero page size":               {WithPageSize(0)},
		"backoff max below min":        {WithBackoff(time.Second, time.Millisecond)},
		"keep values without allow":    {WithResources("cm"), KeepSecretValues()},
		"empty namespace":              {WithNamespaces("")},
	} {
		if _, err := NewCollector(dyn, disc, st, opts...); err == nil {
			t.Errorf("%s: NewCollector succeeded", name)
		}
	}
	if _, err := NewCollector(dyn, disc, st, WithResources("secrets")); !errors.Is(err, ErrSecretsNotAllowed) {
		t.Errorf("secrets: %v, want ErrSecretsNotAllowed", err)
	}
	if _, err := NewCollector(nil, disc, st); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("nil client: %v, want ErrInvalidArgument", err)
	}
}

func TestStartUnknownResourceFails(t *testing.T) {
	c, err := NewCollector(fakeDynamic(), fakeDiscovery(), newMemory(t), testOpts(t, WithResources("cm", "confgmaps"))...)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Start(context.Background())
	var unknown *UnknownResourceError
	if !errors.As(err, &unknown) || unknown.Spec != "confgmaps" || len(unknown.Suggestions) == 0 || unknown.Suggestions[0] != "configmaps" {
		t.Fatalf("Start = %v, want UnknownResourceError for confgmaps suggesting configmaps", err)
	}
	if err := c.WaitForSync(context.Background()); err == nil {
		t.Fatal("WaitForSync after a failed Start returned nil")
	}
}

// TestFakeBaselineThenWatch runs the Collector against client-go's dynamic
// fake, as a downstream user's unit test would: the existing objects become
// a baseline, later changes become real events.
func TestFakeBaselineThenWatch(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"), configMap("b", "two", "2"))
	st := newMemory(t)
	c, stop := startCollector(t, dyn, st)
	waitWatching(t, c)
	id := cmStreamID("c1")

	recs := streamRecords(t, st, id)
	baselines := ofType(recs, event.TypeBaseline)
	if len(baselines) != 2 || baselines[0].Baseline.Phase != event.BaselineBegin || baselines[1].Baseline.Phase != event.BaselineEnd {
		t.Fatalf("baseline markers = %+v, want begin and end", baselines)
	}
	end := baselines[1].Baseline
	if end.ItemCount != 2 || end.ResourceVersion == "" || end.Reason != "initial" {
		t.Fatalf("baseline end = %+v, want 2 items, the list's resourceVersion, reason initial", end)
	}
	items := ofType(recs, event.TypeEvent)
	if len(items) != 2 {
		t.Fatalf("%d baseline items, want 2", len(items))
	}
	for _, it := range items {
		// The fake sets no resourceVersion, so the body's hash joins the ID.
		want := event.EventID(id, event.TypeEvent, it.Resource, event.Added, end.ID, event.ObjectHash(it.Object))
		if !it.Synthetic || it.WatchType != event.Added || it.BaselineID != end.ID || it.EventID != want || !it.ObservedAt.Equal(baselines[0].ObservedAt) {
			t.Errorf("baseline item %+v: want synthetic ADDED in baseline %s with EventID %s at the list's observation time", it, end.ID, want)
		}
		var body map[string]any
		if err := json.Unmarshal(it.Object, &body); err != nil || body["kind"] != "ConfigMap" {
			t.Errorf("body %s: %v", it.Object, err)
		}
	}

	ctx := context.Background()
	if _, err := dyn.Resource(cmGVR).Namespace("a").Update(ctx, configMap("a", "one", "1b"), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := dyn.Resource(cmGVR).Namespace("b").Delete(ctx, "two", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := dyn.Resource(cmGVR).Namespace("a").Create(ctx, configMap("a", "three", "3"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "three watch events", func() bool {
		return len(ofType(streamRecords(t, st, id), event.TypeEvent)) == 5
	})
	beforeStop := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("Start returned %v", err)
	}
	stopped := time.Now()
	events := ofType(streamRecords(t, st, id), event.TypeEvent)[2:]
	wantTypes := []event.WatchType{event.Modified, event.Deleted, event.Added}
	for i, e := range events {
		if e.Synthetic || e.WatchType != wantTypes[i] {
			t.Errorf("event %d = %s synthetic=%v, want real %s", i, e.WatchType, e.Synthetic, wantTypes[i])
		}
	}
	// The fake never ends a watch at its timeout, so the stop cannot have
	// the server confirm it, and its events carry no resourceVersion, so
	// they move no checkpoint: the evidence ends at the baseline, and
	// time after it is not yet observed, the stop's included.
	for _, at := range []time.Time{beforeStop, stopped} {
		cov, err := storage.CoverageAt(ctx, st, id, at)
		want := "not yet observed: evidence reaches to " + baselines[1].ObservedAt.UTC().Format(time.RFC3339Nano)
		if err != nil || cov.Covered || cov.Reason != want {
			t.Fatalf("coverage at %s = %+v, %v; want %q", at, cov, err, want)
		}
	}
	status := c.Status()
	if len(status) != 1 || !status[0].Synced || status[0].Events != 5 || status[0].Baselines != 1 || status[0].CoveredSince.IsZero() {
		t.Fatalf("Status = %+v", status)
	}
}

// TestWatch410RecordsGapRelistsAndInfersDeletions drives the watch by hand:
// a 410 makes a gap from the last durable record, a relist, and an inferred
// deletion (with the last known body) for the object deleted meanwhile.
func TestWatch410RecordsGapRelistsAndInfersDeletions(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "keep", "1"), configMap("a", "gone", "2"))
	watches := controlWatches(dyn, "configmaps")
	st, _ := startSynced(t, dyn)
	id := cmStreamID("c1")
	w1 := watches.last(t, 1)

	// One real event, so the last durable moment is that event.
	modified := configMap("a", "keep", "1b")
	modified.SetResourceVersion("50")
	w1.Modify(modified)
	eventually(t, 30*time.Second, "the MODIFIED event", func() bool { return len(ofType(streamRecords(t, st, id), event.TypeEvent)) == 3 })
	lastDurable := ofType(streamRecords(t, st, id), event.TypeEvent)[2].ObservedAt

	// The object is deleted while the stream is broken.
	if err := dyn.Tracker().Delete(cmGVR, "a", "gone"); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	w1.Error(statusErrorObject(apierrors.NewResourceExpired("too old resource version: 50 (60)")))

	eventually(t, 30*time.Second, "the second baseline", func() bool {
		return len(ofType(streamRecords(t, st, id), event.TypeBaseline)) == 4
	})
	recs := streamRecords(t, st, id)
	gaps := ofType(recs, event.TypeGap)
	if len(gaps) != 1 {
		t.Fatalf("%d gaps, want 1", len(gaps))
	}
	g := gaps[0].Gap
	if !g.From.Equal(lastDurable) || !g.To.After(g.From) || g.LastResourceVersion != "50" || !strings.Contains(g.Reason, "410") {
		t.Fatalf("gap = %+v; want From = last durable record %s, To after it, last RV 50", g, lastDurable)
	}
	var deletions []event.Record
	for _, r := range ofType(recs, event.TypeEvent) {
		if r.Inferred != nil {
			deletions = append(deletions, r)
		}
	}
	if len(deletions) != 1 {
		t.Fatalf("%d inferred deletions, want 1", len(deletions))
	}
	d := deletions[0]
	end := ofType(recs, event.TypeBaseline)[3]
	if d.Resource.Name != "gone" || d.WatchType != event.Deleted || !d.Synthetic || !d.Inferred.From.Equal(g.From) ||
		d.Inferred.Reason != "absent from relist" || d.Inferred.BaselineID != end.BaselineID || len(d.Object) == 0 || d.IngestSeq != end.IngestSeq+1 {
		t.Fatalf("inferred deletion = %+v, want DELETED of gone from the gap's From, with its body, right after the end", d)
	}
	if end.Baseline.Reason != "relist after gap" || end.Baseline.ItemCount != 1 {
		t.Fatalf("relist end = %+v", end.Baseline)
	}
	cov, err := storage.CoverageAt(context.Background(), st, id, g.From.Add(time.Nanosecond))
	if err != nil || cov.Covered {
		t.Fatalf("coverage inside the gap = %+v, %v; want not covered", cov, err)
	}
	// The second watch opens after the relist's end is durable, so wait
	// for it rather than sampling the count once.
	w2 := watches.last(t, 2)
	if watches.rv(2) != end.Baseline.ResourceVersion {
		t.Fatalf("the second watch started from %q, want the relist's resourceVersion %q", watches.rv(2), end.Baseline.ResourceVersion)
	}
	// Covered after the relist once evidence follows its end (a bookmark).
	w2.Action(apiwatch.Bookmark, bookmark("61"))
	eventually(t, 30*time.Second, "the bookmark's checkpoint", func() bool { return len(ofType(streamRecords(t, st, id), event.TypeCheckpoint)) == 1 })
	cov, err = storage.CoverageAt(context.Background(), st, id, end.ObservedAt)
	if err != nil || !cov.Covered || cov.BaselineID != end.BaselineID {
		t.Fatalf("coverage after the relist = %+v, %v; want covered", cov, err)
	}
}

// bookmark returns the object of a BOOKMARK event at rv.
func bookmark(rv string) *unstructured.Unstructured {
	bm := &unstructured.Unstructured{}
	bm.SetAPIVersion("v1")
	bm.SetKind("ConfigMap")
	bm.SetResourceVersion(rv)
	return bm
}

func TestBookmarkIsCheckpointOnly(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"))
	watches := controlWatches(dyn, "configmaps")
	st, _ := startSynced(t, dyn)
	id := cmStreamID("c1")
	bm := &unstructured.Unstructured{}
	bm.SetAPIVersion("v1")
	bm.SetKind("ConfigMap")
	bm.SetResourceVersion("777")
	watches.last(t, 1).Action(apiwatch.Bookmark, bm)
	eventually(t, 30*time.Second, "the checkpoint", func() bool { return len(ofType(streamRecords(t, st, id), event.TypeCheckpoint)) == 1 })
	recs := streamRecords(t, st, id)
	cp := ofType(recs, event.TypeCheckpoint)[0]
	if cp.Checkpoint.ResourceVersion != "777" || !cp.Checkpoint.Bookmark || cp.Checkpoint.InitialEventsEnd {
		t.Fatalf("checkpoint = %+v", cp.Checkpoint)
	}
	if n := len(ofType(recs, event.TypeEvent)); n != 1 {
		t.Fatalf("%d event records, want only the baseline item", n)
	}
	ss, err := st.StreamStatus(context.Background(), id)
	if err != nil || ss.CheckpointRV != "777" {
		t.Fatalf("stream status = %+v, %v; want checkpoint 777", ss, err)
	}
	// The same bookmark again is not written twice.
	watches.last(t, 1).Action(apiwatch.Bookmark, bm)
	time.Sleep(50 * time.Millisecond)
	if n := len(ofType(streamRecords(t, st, id), event.TypeCheckpoint)); n != 1 {
		t.Fatalf("%d checkpoints after a repeated bookmark, want 1", n)
	}
}

// TestRestartResumesFromCheckpoint: a second Collector on the same store
// watches from the durable checkpoint, without a new baseline or gap, and
// the change made while it was down arrives as a real event.
func TestRestartResumesFromCheckpoint(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"), configMap("a", "two", "2"))
	st := newMemory(t)
	id := cmStreamID("c1")

	c1, err := NewCollector(dyn, fakeDiscovery(), st, testOpts(t)...)
	if err != nil {
		t.Fatal(err)
	}
	stop1 := run(t, c1)
	waitSync(t, c1)
	if err := stop1(); err != nil {
		t.Fatal(err)
	}
	before, err := st.StreamStatus(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}

	// Changed while no collector runs.
	if err := dyn.Tracker().Update(cmGVR, configMap("a", "two", "2b"), "a"); err != nil {
		t.Fatal(err)
	}

	dyn.ClearActions()
	c2, err := NewCollector(dyn, fakeDiscovery(), st, testOpts(t)...)
	if err != nil {
		t.Fatal(err)
	}
	stop2 := run(t, c2)
	waitSync(t, c2)
	eventually(t, 30*time.Second, "the change made while down", func() bool {
		return len(ofType(streamRecords(t, st, id), event.TypeEvent)) == 3
	})
	if err := stop2(); err != nil {
		t.Fatal(err)
	}
	for _, a := range dyn.Actions() {
		if a.GetVerb() == "list" && a.GetResource() == cmGVR {
			t.Errorf("the restarted collector listed configmaps: %v", a)
		}
		if w, ok := a.(clienttesting.WatchActionImpl); ok && w.GetResource() == cmGVR && w.WatchRestrictions.ResourceVersion != before.CheckpointRV {
			t.Errorf("watch from %q, want the checkpoint %q", w.WatchRestrictions.ResourceVersion, before.CheckpointRV)
		}
	}
	recs := streamRecords(t, st, id)
	if n := len(ofType(recs, event.TypeBaseline)); n != 2 {
		t.Errorf("%d baseline markers, want the first baseline's 2", n)
	}
	if n := len(ofType(recs, event.TypeGap)); n != 0 {
		t.Errorf("%d gaps, want 0", n)
	}
	last := ofType(recs, event.TypeEvent)[2]
	if last.Synthetic || last.Resource.Name != "two" {
		t.Errorf("change made while down = %+v, want a real event for two", last)
	}
}

// TestRestartWith410RecordsGapSpanningDowntime: when the server no longer
// has the checkpoint's history, the gap starts at the checkpoint.
func TestRestartWith410RecordsGapSpanningDowntime(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"))
	st := newMemory(t)
	id := cmStreamID("c1")
	c1, _ := NewCollector(dyn, fakeDiscovery(), st, testOpts(t)...)
	stop1 := run(t, c1)
	waitSync(t, c1)
	if err := stop1(); err != nil {
		t.Fatal(err)
	}
	before, _ := st.StreamStatus(context.Background(), id)
	time.Sleep(20 * time.Millisecond)

	watches := controlWatches(dyn, "configmaps")
	c2, _ := NewCollector(dyn, fakeDiscovery(), st, testOpts(t)...)
	run(t, c2)
	watches.last(t, 1).Error(statusErrorObject(apierrors.NewResourceExpired("too old resource version")))
	waitSync(t, c2)
	recs := streamRecords(t, st, id)
	gaps := ofType(recs, event.TypeGap)
	if len(gaps) != 1 || !gaps[0].Gap.From.Equal(before.CheckpointAt) || gaps[0].Gap.LastResourceVersion != before.CheckpointRV {
		t.Fatalf("gaps = %+v, want one from the checkpoint %s (%s)", gaps, before.CheckpointAt, before.CheckpointRV)
	}
	if !gaps[0].Gap.To.After(before.CheckpointAt.Add(20 * time.Millisecond)) {
		t.Fatalf("gap To %s does not span the downtime after %s", gaps[0].Gap.To, before.CheckpointAt)
	}
	if n := len(ofType(recs, event.TypeBaseline)); n != 4 {
		t.Fatalf("%d baseline markers, want two complete baselines", n)
	}
}

// TestForbiddenFlapsCoverage: 403 on the list makes the stream unavailable
// (once), access returning makes it available with a baseline; a 403 in a
// covered stream also records a gap from its last durable record.
func TestForbiddenFlapsCoverage(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"))
	deny := denyConfigMapLists(dyn)
	watches := controlWatches(dyn, "configmaps")
	st := newMemory(t)
	c, _ := NewCollector(dyn, fakeDiscovery(), st, testOpts(t)...)
	run(t, c)
	id := cmStreamID("c1")
	eventually(t, 30*time.Second, "unavailable", func() bool { return len(ofType(streamRecords(t, st, id), event.TypeCoverageChange)) == 1 })
	time.Sleep(100 * time.Millisecond) // several retries, still one record
	cc := ofType(streamRecords(t, st, id), event.TypeCoverageChange)
	if len(cc) != 1 || cc[0].Coverage.Available || cc[0].Coverage.Code != 403 {
		t.Fatalf("coverage changes = %+v, want one unavailable with code 403", cc)
	}
	if s := c.Status()[0]; s.State != StateUnavailable || !s.Degraded || !strings.Contains(s.DegradedReason, "403") {
		t.Fatalf("status = %+v", s)
	}
	deny.Store(false)
	waitSync(t, c)
	recs := streamRecords(t, st, id)
	cc = ofType(recs, event.TypeCoverageChange)
	if len(cc) != 2 || !cc[1].Coverage.Available {
		t.Fatalf("coverage changes = %+v, want available after unavailable", cc)
	}
	if b := ofType(recs, event.TypeBaseline); len(b) != 2 || b[1].Baseline.Reason != "coverage restored" || b[0].IngestSeq != cc[1].IngestSeq+1 {
		t.Fatalf("baseline after access returned = %+v", b)
	}

	// Now a 403 while watching (RBAC revoked): a gap from the last durable
	// record and an unavailable change.
	lastDurable := ofType(recs, event.TypeBaseline)[1].ObservedAt
	deny.Store(true)
	watches.last(t, 1).Error(statusErrorObject(forbidden))
	eventually(t, 30*time.Second, "second unavailable", func() bool { return len(ofType(streamRecords(t, st, id), event.TypeCoverageChange)) == 3 })
	recs = streamRecords(t, st, id)
	gaps := ofType(recs, event.TypeGap)
	if len(gaps) != 1 || !gaps[0].Gap.From.Equal(lastDurable) {
		t.Fatalf("gaps = %+v, want one from %s", gaps, lastDurable)
	}
	deny.Store(false)
	// Covered again from the end of the baseline that follows, once
	// evidence follows it (a bookmark on the watch after it).
	eventually(t, 30*time.Second, "the baseline after access returned", func() bool { return len(ofType(streamRecords(t, st, id), event.TypeBaseline)) == 4 })
	restored := ofType(streamRecords(t, st, id), event.TypeBaseline)[3]
	watches.last(t, 2).Action(apiwatch.Bookmark, bookmark("99"))
	eventually(t, 30*time.Second, "coverage back", func() bool {
		cov, err := storage.CoverageAt(context.Background(), st, id, restored.ObservedAt)
		return err == nil && cov.Covered
	})
}

func TestPersistentServerErrorBacksOff(t *testing.T) {
	dyn := fakeDynamic()
	var lists atomic.Int64
	dyn.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		lists.Add(1)
		return true, nil, apierrors.NewInternalError(errors.New("etcd is sad"))
	})
	st := newMemory(t)
	c, _ := NewCollector(dyn, fakeDiscovery(), st, testOpts(t, WithBackoff(10*time.Millisecond, 80*time.Millisecond))...)
	stop := run(t, c)
	time.Sleep(time.Second)
	if err := stop(); err != nil {
		t.Fatalf("Start = %v; server errors must not be fatal", err)
	}
	// Delays 10,20,40,80,80,… jittered down by up to half: about 5 in the
	// first 150ms, then at most 1000/40 more.
	if n := lists.Load(); n < 5 || n > 40 {
		t.Fatalf("%d list calls in 1s, want a bounded retry count (5..40)", n)
	}
	if n := len(streamRecords(t, st, cmStreamID("c1"))); n != 0 {
		t.Fatalf("%d records written for a stream that never listed", n)
	}
}

func TestStoreFailureStopsStart(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"))
	st := &countingStore{Store: newMemory(t)}
	st.fail.Store(true)
	c, _ := NewCollector(dyn, fakeDiscovery(), st, testOpts(t)...)
	done := make(chan error, 1)
	go func() { done <- c.Start(context.Background()) }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrStore) || !strings.Contains(err.Error(), "disk on fire") {
			t.Fatalf("Start = %v, want ErrStore wrapping the store's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Start did not return after the store failed")
	}
}

func TestContinueExpiredRestartsBaseline(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"), configMap("a", "two", "2"))
	var calls atomic.Int64
	dyn.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		n := calls.Add(1)
		switch {
		case n == 1 || n == 3: // first page of each attempt
			list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMapList"}}
			list.SetResourceVersion("10")
			list.SetContinue("page2")
			list.Items = []unstructured.Unstructured{*configMap("a", "one", "1")}
			return true, list, nil
		case n == 2:
			return true, nil, apierrors.NewResourceExpired("continue token expired")
		default:
			list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMapList"}}
			list.SetResourceVersion("10")
			list.Items = []unstructured.Unstructured{*configMap("a", "two", "2")}
			return true, list, nil
		}
	})
	st := newMemory(t)
	c, _ := NewCollector(dyn, fakeDiscovery(), st, testOpts(t, WithPageSize(1))...)
	run(t, c)
	waitSync(t, c)
	recs := ofType(streamRecords(t, st, cmStreamID("c1")), event.TypeBaseline)
	if len(recs) != 3 || recs[0].Baseline.Phase != event.BaselineBegin || recs[1].Baseline.Phase != event.BaselineBegin ||
		recs[2].Baseline.Phase != event.BaselineEnd || recs[2].BaselineID != recs[1].BaselineID || recs[2].Baseline.ItemCount != 2 {
		t.Fatalf("baseline markers = %+v; want an abandoned begin, then a complete baseline of 2 items", recs)
	}
	ss, _ := st.StreamStatus(context.Background(), cmStreamID("c1"))
	if ss.LastBaselineID != recs[1].BaselineID || ss.CheckpointRV != "10" {
		t.Fatalf("stream status = %+v", ss)
	}
}

func TestBatchingAndBackpressure(t *testing.T) {
	dyn := fakeDynamic()
	watches := controlWatches(dyn, "configmaps")
	st := &countingStore{Store: newMemory(t), gate: make(chan struct{})}
	c, _ := NewCollector(dyn, fakeDiscovery(), st, testOpts(t, WithBatching(10, 1<<20, 50*time.Millisecond), WithQueueSize(5))...)
	run(t, c)
	st.gate <- struct{}{} // the baseline
	st.gate <- struct{}{} // its end
	waitSync(t, c)
	w := watches.last(t, 1)

	// With the store blocked, the watch reader may take at most the queue
	// plus one batch before it stops reading.
	var sent atomic.Int64
	go func() {
		for i := 0; i < 100; i++ {
			cm := configMap("a", "cm", "v")
			cm.SetResourceVersion(string(rune('a'+i%26)) + strings.Repeat("x", i))
			w.Add(cm)
			sent.Add(1)
		}
	}()
	time.Sleep(300 * time.Millisecond)
	if n := sent.Load(); n > 5+10+2 {
		t.Fatalf("%d events read while the store was blocked; want backpressure (at most queue 5 + batch 10 + in flight)", n)
	}
	close(st.gate)
	id := cmStreamID("c1")
	eventually(t, 30*time.Second, "all events", func() bool { return len(ofType(streamRecords(t, st, id), event.TypeEvent)) == 100 })
	if a := st.appends.Load(); a > 2+100/5 {
		t.Fatalf("%d appends for 100 events; want them grouped", a)
	}
	ss, _ := st.StreamStatus(context.Background(), id)
	if want := strings.Repeat("x", 99); !strings.HasSuffix(ss.CheckpointRV, want) {
		t.Fatalf("checkpoint %q, want the last event's resourceVersion", ss.CheckpointRV)
	}
}

func TestSecretsRedactedUnlessKept(t *testing.T) {
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata": map[string]any{"namespace": "a", "name": "s", "uid": "u1",
			"annotations": map[string]any{lastAppliedAnnotation: `{"data":{"password":"aHVudGVyMg=="}}`}},
		"data":       map[string]any{"password": "aHVudGVyMg=="},
		"stringData": map[string]any{"token": "hunter2"},
	}}
	for _, keep := range []bool{false, true} {
		dyn := fakeDynamic(secret.DeepCopy())
		st := newMemory(t)
		opts := testOpts(t, WithResources("secrets"), AllowSecrets())
		if keep {
			opts = append(opts, KeepSecretValues())
		}
		c, err := NewCollector(dyn, fakeDiscovery(), st, opts...)
		if err != nil {
			t.Fatal(err)
		}
		stop := run(t, c)
		waitSync(t, c)
		_ = stop()
		id := event.Stream{ClusterID: "c1", Version: "v1", Resource: "secrets"}.ID()
		body := string(ofType(streamRecords(t, st, id), event.TypeEvent)[0].Object)
		leaked := strings.Contains(body, "aHVudGVyMg==") || strings.Contains(body, "hunter2")
		if keep != leaked {
			t.Errorf("keep=%v: body %s", keep, body)
		}
		if !keep && (!strings.Contains(body, `"password":"`+redactedData+`"`) || !strings.Contains(body, `"token":"`+RedactedValue+`"`)) {
			t.Errorf("redacted body %s lacks the placeholders", body)
		}
	}
}

func TestClusterIDFromKubeSystem(t *testing.T) {
	ks := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "kube-system", "uid": "1234-abcd"}}}
	dyn := fakeDynamic(ks)
	st := newMemory(t)
	opts := testOpts(t, WithResources("ns"))
	c, _ := NewCollector(dyn, fakeDiscovery(), st, append(opts, WithClusterID(""))...)
	run(t, c)
	waitSync(t, c)
	if c.ClusterID() != "1234-abcd" {
		t.Fatalf("cluster ID %q, want the kube-system UID", c.ClusterID())
	}
	streams, _ := st.Streams(context.Background(), "1234-abcd")
	if len(streams) != 1 || streams[0].Stream.Resource != "namespaces" {
		t.Fatalf("streams = %+v", streams)
	}
}

func TestNamespacesAndSelectorMakeStreams(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"), configMap("b", "two", "2"), configMap("c", "three", "3"))
	st := newMemory(t)
	c, _ := NewCollector(dyn, fakeDiscovery(), st, testOpts(t, WithResources("cm", "ns"), WithNamespaces("a", "b"), WithLabelSelector("app=web"))...)
	run(t, c)
	waitSync(t, c)
	var ids []string
	for _, s := range c.Status() {
		ids = append(ids, s.StreamID)
	}
	want := []string{
		"c1/core/v1/configmaps/a?labels:app%3Dweb%3Bfields:",
		"c1/core/v1/configmaps/b?labels:app%3Dweb%3Bfields:",
		"c1/core/v1/namespaces?labels:app%3Dweb%3Bfields:",
	}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Fatalf("streams %v, want %v", ids, want)
	}
}

// TestWatchListBaseline drives a WatchList by hand: initial ADDED events,
// the initial-events-end bookmark (baseline end + checkpoint), then real
// events on the same watch.
func TestWatchListBaseline(t *testing.T) {
	dyn := fakeDynamic()
	watches := controlWatches(dyn, "configmaps")
	st := newMemory(t)
	c, _ := NewCollector(dyn, fakeDiscovery(), st, testOpts(t, WithWatchList(WatchListOn))...)
	run(t, c)
	w := watches.last(t, 1)
	for i, name := range []string{"one", "two"} {
		cm := configMap("a", name, "v")
		cm.SetResourceVersion(fmt.Sprint(10 + i))
		w.Add(cm)
	}
	bm := &unstructured.Unstructured{}
	bm.SetResourceVersion("20")
	bm.SetAnnotations(map[string]string{initialEventsEndAnnotation: "true"})
	w.Action(apiwatch.Bookmark, bm)
	waitSync(t, c)
	// The WatchList ends at its initial-events-end bookmark; the next watch
	// starts from the bookmark's resourceVersion, with a server timeout.
	w2 := watches.last(t, 2)
	if rv := watches.rv(2); rv != "20" {
		t.Fatalf("the watch after the WatchList started from %q, want 20", rv)
	}
	mod := configMap("a", "one", "v2")
	mod.SetResourceVersion("21")
	w2.Modify(mod)
	id := cmStreamID("c1")
	eventually(t, 30*time.Second, "the MODIFIED event", func() bool { return len(ofType(streamRecords(t, st, id), event.TypeEvent)) == 3 })
	if n := dyn.Actions(); len(n) == 0 {
		t.Fatal("no actions")
	}
	for _, a := range dyn.Actions() {
		if a.GetVerb() == "list" {
			t.Fatalf("WatchList mode listed: %v", a)
		}
	}
	recs := streamRecords(t, st, id)
	b := ofType(recs, event.TypeBaseline)
	if len(b) != 2 || b[1].Baseline.ResourceVersion != "20" || b[1].Baseline.ItemCount != 2 {
		t.Fatalf("baseline markers %+v, want an end at the bookmark's RV 20 with 2 items", b)
	}
	cp := ofType(recs, event.TypeCheckpoint)
	if len(cp) != 1 || !cp[0].Checkpoint.InitialEventsEnd || cp[0].Checkpoint.ResourceVersion != "20" {
		t.Fatalf("checkpoints %+v", cp)
	}
	if !cp[0].ObservedAt.Equal(b[1].ObservedAt) || cp[0].IngestSeq != b[1].IngestSeq+1 {
		t.Fatalf("initial-events-end checkpoint observed at %s (seq %d), baseline end at %s (seq %d); want the end's time, right after it",
			cp[0].ObservedAt, cp[0].IngestSeq, b[1].ObservedAt, b[1].IngestSeq)
	}
	ev := ofType(recs, event.TypeEvent)
	if !ev[0].Synthetic || !ev[1].Synthetic || ev[2].Synthetic || ev[2].WatchType != event.Modified {
		t.Fatalf("events %+v: want two baseline items then a real MODIFIED", ev)
	}
	if got := watches.count(); got != 2 {
		t.Fatalf("%d watches, want the WatchList and one watch after it", got)
	}
}

// TestWatchListAutoFallsBackToList: a server that rejects WatchList (400)
// gets a paginated list instead, for the rest of the stream's life.
func TestWatchListAutoFallsBackToList(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"))
	var rejected atomic.Int64
	dyn.PrependWatchReactor("configmaps", func(a clienttesting.Action) (bool, apiwatch.Interface, error) {
		if a.(clienttesting.WatchActionImpl).WatchRestrictions.ResourceVersion == "" {
			rejected.Add(1)
			return true, nil, apierrors.NewBadRequest("resourceVersionMatch is forbidden for watch")
		}
		return false, nil, nil
	})
	st := newMemory(t)
	// The fake says it does not support WatchList; hide that, as a real
	// client would.
	c, _ := NewCollector(struct{ dynamic.Interface }{dyn}, fakeDiscovery(), st, testOpts(t)...)
	run(t, c)
	waitSync(t, c)
	if b := ofType(streamRecords(t, st, cmStreamID("c1")), event.TypeBaseline); len(b) != 2 || b[1].Baseline.ItemCount != 1 {
		t.Fatalf("baselines %+v, want one complete list baseline", b)
	}
	if rejected.Load() != 1 {
		t.Fatalf("%d WatchList attempts, want 1 then lists", rejected.Load())
	}
}

type mutableDiscovery struct {
	*fakediscovery.FakeDiscovery
	mu sync.Mutex
}

func (d *mutableDiscovery) ServerGroupsAndResources() ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.FakeDiscovery.ServerGroupsAndResources()
}

func (d *mutableDiscovery) ServerGroupsAndResourcesWithContext(ctx context.Context) ([]*metav1.APIGroup, []*metav1.APIResourceList, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.FakeDiscovery.ServerGroupsAndResourcesWithContext(ctx)
}

// TestRediscoveryFindsNewResource: a qualified name that is not served at
// Start is pending, and becomes a stream (announced as discovered) once
// discovery serves it.
func TestRediscoveryFindsNewResource(t *testing.T) {
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
		cmGVR: "ConfigMapList", widgets: "WidgetList",
	})
	disc := &mutableDiscovery{FakeDiscovery: fakeDiscovery()}
	st := newMemory(t)
	c, err := NewCollector(dyn, disc, st, testOpts(t, WithResources("cm", "widgets.example.com"), WithRediscoveryInterval(20*time.Millisecond))...)
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	waitSync(t, c)
	if s := c.Status(); len(s) != 2 || s[1].State != StatePending || !s[1].Degraded {
		t.Fatalf("status %+v, want the widgets pending", s)
	}
	disc.mu.Lock()
	disc.Resources = append(disc.Resources, &metav1.APIResourceList{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
		{Name: "widgets", SingularName: "widget", Kind: "Widget", Verbs: metav1.Verbs{"list", "watch"}},
	}})
	disc.mu.Unlock()
	id := event.Stream{ClusterID: "c1", Group: "example.com", Version: "v1", Resource: "widgets"}.ID()
	eventually(t, 30*time.Second, "the widgets baseline", func() bool { return len(ofType(streamRecords(t, st, id), event.TypeBaseline)) == 2 })
	cc := ofType(streamRecords(t, st, id), event.TypeCoverageChange)
	if len(cc) != 1 || !cc[0].Coverage.Available || cc[0].Coverage.Reason != "discovered" {
		t.Fatalf("coverage changes %+v, want one 'discovered'", cc)
	}
	for _, s := range c.Status() {
		if s.State == StatePending {
			t.Fatalf("still pending: %+v", c.Status())
		}
	}
}

// TestIdleWatchRestartsWithoutGap: a watch that delivers nothing for the
// idle timeout is replaced by one from the same resourceVersion.
func TestIdleWatchRestartsWithoutGap(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"))
	watches := controlWatches(dyn, "configmaps")
	st := newMemory(t)
	c, _ := NewCollector(dyn, fakeDiscovery(), st, testOpts(t, WithWatchIdleTimeout(50*time.Millisecond))...)
	run(t, c)
	waitSync(t, c)
	watches.last(t, 3)
	if watches.rv(2) != watches.rv(1) || watches.rv(3) != watches.rv(1) {
		t.Fatalf("watches from %q, %q, %q; want the same resourceVersion", watches.rv(1), watches.rv(2), watches.rv(3))
	}
	recs := streamRecords(t, st, cmStreamID("c1"))
	if len(ofType(recs, event.TypeGap)) != 0 || len(ofType(recs, event.TypeBaseline)) != 2 {
		t.Fatalf("records %+v: want no gap and one baseline", recs)
	}
}

type recordingMetrics struct {
	noopMetrics
	mu     sync.Mutex
	counts map[string]float64
}

type recordingCounter struct {
	m    *recordingMetrics
	name string
}

func (c recordingCounter) Inc() { c.Add(1) }
func (c recordingCounter) Add(v float64) {
	c.m.mu.Lock()
	c.m.counts[c.name] += v
	c.m.mu.Unlock()
}
func (c recordingCounter) Set(v float64) {
	c.m.mu.Lock()
	c.m.counts[c.name] = v
	c.m.mu.Unlock()
}

func (m *recordingMetrics) NewEventsCounter(string) Counter { return recordingCounter{m, "events"} }
func (m *recordingMetrics) NewBaselinesCounter(string) Counter {
	return recordingCounter{m, "baselines"}
}
func (m *recordingMetrics) NewCoveredGauge(string) Gauge { return recordingCounter{m, "covered"} }

func (m *recordingMetrics) get(name string) float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.counts[name]
}

func TestMetricsProvider(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"), configMap("a", "two", "2"))
	m := &recordingMetrics{counts: map[string]float64{}}
	c, _ := NewCollector(dyn, fakeDiscovery(), newMemory(t), testOpts(t, WithMetrics(m))...)
	run(t, c)
	waitSync(t, c)
	if m.get("events") != 2 || m.get("baselines") != 1 || m.get("covered") != 1 {
		t.Fatalf("metrics %v, want 2 events, 1 baseline, covered 1", m.counts)
	}
}

// WithAllResources leaves out the default exclusions and those of
// WithExclude; WithInclude and AllowSecrets take them off.
func TestExclusions(t *testing.T) {
	core := func(r string) Resource { return Resource{Version: "v1", Resource: r} }
	leases := Resource{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"}
	newEvents := Resource{Group: "events.k8s.io", Version: "v1", Resource: "events"}
	deploy := Resource{Group: "apps", Version: "v1", Resource: "deployments"}
	for _, tc := range []struct {
		opts     []Option
		excluded []Resource
		recorded []Resource
	}{
		{nil, []Resource{core("secrets"), core("events"), newEvents, leases, core("endpoints")}, []Resource{core("configmaps"), deploy, core("pods")}},
		{[]Option{WithInclude("events"), AllowSecrets()}, []Resource{leases}, []Resource{core("secrets"), core("events"), newEvents}},
		{[]Option{WithExclude("pods", "deploy")}, []Resource{core("pods"), deploy}, []Resource{core("configmaps")}},
	} {
		cfg := defaultConfig()
		for _, o := range append([]Option{WithAllResources()}, tc.opts...) {
			o.apply(&cfg)
		}
		if err := cfg.validate(); err != nil {
			t.Fatal(err)
		}
		for _, r := range tc.excluded {
			if cfg.exclusionOf(r) == "" {
				t.Errorf("%d options: %s recorded, want it excluded", len(tc.opts), r)
			}
		}
		for _, r := range tc.recorded {
			if reason := cfg.exclusionOf(r); reason != "" {
				t.Errorf("%d options: %s excluded (%s), want it recorded", len(tc.opts), r, reason)
			}
		}
	}
	for _, opts := range [][]Option{
		{WithAllResources(), WithResources("cm")},
		{WithExclude("pods")},
		{WithAllResources(), WithInclude("v1/events")},
		{WithAllResources(), WithInclude("secrets")},
		{WithResources("cm"), WithRecordRule(nil)},
		{WithResources("cm"), WithRecordRule(RecordRuleFunc("", func(context.Context, json.RawMessage) (bool, error) { return true, nil }))},
	} {
		if _, err := NewCollector(fakeDynamic(), fakeDiscovery(), newMemory(t), opts...); !errors.Is(err, ErrInvalidArgument) {
			t.Errorf("NewCollector(%d options) = %v, want ErrInvalidArgument", len(opts), err)
		}
	}
}

// Check refuses, before any store exists, what Start would refuse, and
// nothing else: a group-qualified name may be a CRD installed later.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	disc := fakeDiscovery()
	for _, tc := range []struct {
		opts []Option
		want error
	}{
		{[]Option{WithResources("cm", "deploy")}, nil},
		{[]Option{WithResources("widgets.example.com")}, nil},
		{[]Option{WithResources("cm", "deploymnets")}, ErrUnknownResource},
		{[]Option{WithResources("secret")}, ErrSecretsNotAllowed},
		{[]Option{WithResources("Secrets")}, ErrSecretsNotAllowed},
		{[]Option{WithResources("secrets"), AllowSecrets()}, nil},
		{[]Option{WithAllResources(), WithInclude("secrets")}, ErrSecretsNotAllowed},
		{[]Option{WithAllResources(), WithResources("cm")}, ErrInvalidArgument},
	} {
		err := Check(ctx, disc, tc.opts...)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("Check(%d options) = %v, want %v", len(tc.opts), err, tc.want)
		}
	}
	failing := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	failing.AddReactor("*", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("connection refused")
	})
	err := Check(ctx, failing, WithResources("cm"))
	if err == nil || errors.Is(err, ErrUnknownResource) || errors.Is(err, ErrInvalidArgument) || errors.Is(err, ErrSecretsNotAllowed) {
		t.Errorf("Check with a failing discovery = %v, want its error, no refusal", err)
	}
	if err := Check(ctx, failing, WithResources("secrets")); !errors.Is(err, ErrSecretsNotAllowed) {
		t.Errorf("Check of secrets with a failing discovery = %v, want ErrSecretsNotAllowed (it needs no server)", err)
	}
}
