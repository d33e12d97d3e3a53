package watch

// Tests against a real kube-apiserver and etcd (krplytest/testenv), with the
// fault proxy between the Collector and the apiserver where faults are
// needed. They skip when KUBEBUILDER_ASSETS is missing (and fail under
// `make test`, which sets KRPLY_REQUIRE_TESTENV).

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/krplytest/testenv/faultproxy"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(rssChildEnv); role != "" {
		os.Exit(runRSSChild(role))
	}
	if spec := os.Getenv(killedListChildEnv); spec != "" {
		os.Exit(killedListChild(spec))
	}
	os.Exit(testenv.RunMain(m))
}

// nsTest is where most integration tests start: a namespace of their own
// on the package's shared control plane, holding the ConfigMaps named at
// its start (each with the value "0"), the admin's client, and a memory
// journal for a Collector of the namespace's ConfigMaps (stream id).
type nsTest struct {
	env *testenv.Env
	ns  string
	dyn dynamic.Interface
	st  *memory.Store
	id  string
}

func newNSTest(t *testing.T, configMaps ...string) nsTest {
	t.Helper()
	env := testenv.Shared(t)
	ns := env.CreateNamespace(t)
	n := nsTest{env: env, ns: ns, dyn: dynFor(t, env.Config()), st: newMemory(t), id: nsStreamID("it", ns)}
	for _, name := range configMaps {
		mustCreateCM(t, n.dyn, ns, name, "0")
	}
	return n
}

// record runs a Collector of the namespace's ConfigMaps into the journal,
// through cfg with realOpts and extra, until the test ends, and returns it
// synced.
func (n nsTest) record(t *testing.T, cfg *rest.Config, extra ...Option) *Collector {
	t.Helper()
	c := newReal(t, cfg, n.st, realOpts(t, n.ns, extra...)...)
	run(t, c)
	waitSync(t, c)
	return c
}

func realOpts(t *testing.T, ns string, extra ...Option) []Option {
	return append([]Option{
		WithClusterID("it"), WithResources("cm"), WithNamespaces(ns), WithLogger(testr.New(t)),
		WithBackoff(20*time.Millisecond, 400*time.Millisecond), WithRediscoveryInterval(0),
		WithBatching(128, 1<<20, 5*time.Millisecond), WithProgressInterval(2 * time.Second),
	}, extra...)
}

// observedNow returns the time now once every stream of c has evidence
// after it (WaitForProgress): a time whose coverage is settled.
func observedNow(t *testing.T, c *Collector) time.Time {
	t.Helper()
	now := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitForProgress(ctx, now); err != nil {
		t.Fatal(err)
	}
	return now
}

func nsStreamID(cluster, ns string) string {
	return event.Stream{ClusterID: cluster, Version: "v1", Resource: "configmaps", Namespace: ns}.ID()
}

func dynFor(t *testing.T, cfg *rest.Config) dynamic.Interface {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

func newReal(t *testing.T, cfg *rest.Config, st storage.Store, opts ...Option) *Collector {
	t.Helper()
	c, err := NewCollectorForConfig(cfg, st, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func mustCreateCM(t *testing.T, dyn dynamic.Interface, ns, name, value string) *unstructured.Unstructured {
	t.Helper()
	cm := configMap(ns, name, value)
	unstructured.RemoveNestedField(cm.Object, "metadata", "uid")
	out, err := dyn.Resource(cmGVR).Namespace(ns).Create(context.Background(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create %s/%s: %v", ns, name, err)
	}
	return out
}

func mustUpdateCM(t *testing.T, dyn dynamic.Interface, ns, name, value string) *unstructured.Unstructured {
	t.Helper()
	cur, err := dyn.Resource(cmGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(cur.Object, value, "data", "key")
	out, err := dyn.Resource(cmGVR).Namespace(ns).Update(context.Background(), cur, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update %s/%s: %v", ns, name, err)
	}
	return out
}

func mustDeleteCM(t *testing.T, dyn dynamic.Interface, ns, name string) {
	t.Helper()
	if err := dyn.Resource(cmGVR).Namespace(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete %s/%s: %v", ns, name, err)
	}
}

// serverState returns name → resourceVersion of the configmaps of ns.
func serverState(t *testing.T, dyn dynamic.Interface, ns string) map[string]string {
	t.Helper()
	list, err := dyn.Resource(cmGVR).Namespace(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, it := range list.Items {
		out[it.GetName()] = it.GetResourceVersion()
	}
	return out
}

// journalState returns name → resourceVersion of the objects the journal
// holds alive for a stream now.
func journalState(t *testing.T, st storage.Reader, streamID string) map[string]string {
	t.Helper()
	alive, err := st.AliveAt(context.Background(), storage.AliveQuery{At: time.Now(), StreamID: streamID, WithoutBodies: true})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range alive {
		out[r.Resource.Name] = r.Resource.ResourceVersion
	}
	return out
}

func sameState(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func diffState(a, b map[string]string) string {
	var out []string
	for k, v := range a {
		if b[k] != v {
			out = append(out, fmt.Sprintf("%s: server %q journal %q", k, v, b[k]))
		}
	}
	for k, v := range b {
		if _, ok := a[k]; !ok {
			out = append(out, fmt.Sprintf("%s: journal only %q", k, v))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

func waitJournalMatchesServer(t *testing.T, dyn dynamic.Interface, st storage.Reader, ns string) {
	t.Helper()
	id := nsStreamID("it", ns)
	deadline := time.Now().Add(20 * time.Second)
	for {
		server, journal := serverState(t, dyn, ns), journalState(t, st, id)
		if sameState(server, journal) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("journal does not match the server: %s", diffState(server, journal))
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// realEvents returns the non-synthetic object changes of a stream.
func realEvents(recs []event.Record) []event.Record {
	var out []event.Record
	for _, r := range ofType(recs, event.TypeEvent) {
		if !r.Synthetic {
			out = append(out, r)
		}
	}
	return out
}

// TestIntegrationNoEventMissedBetweenListAndWatch writes objects while the
// Collector takes its (paginated or streaming) baseline and starts
// watching, then compares the journal with the server, object by object.
func TestIntegrationNoEventMissedBetweenListAndWatch(t *testing.T) {
	for _, mode := range []WatchListMode{WatchListOff, WatchListOn} {
		t.Run(string(mode), func(t *testing.T) {
			var pre []string
			for i := 0; i < 40; i++ {
				pre = append(pre, fmt.Sprintf("pre-%02d", i))
			}
			n := newNSTest(t, pre...)
			ns, dyn := n.ns, n.dyn
			p := faultproxy.Start(t, n.env.Config())
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Add(1)
			writes := 0
			go func() {
				defer wg.Done()
				for i := 0; ctx.Err() == nil; i++ {
					name := fmt.Sprintf("pre-%02d", i%40)
					switch i % 3 {
					case 0:
						mustUpdateCM(t, dyn, ns, name, fmt.Sprint(i))
					case 1:
						mustCreateCM(t, dyn, ns, fmt.Sprintf("new-%03d", i), "x")
					case 2:
						_ = dyn.Resource(cmGVR).Namespace(ns).Delete(context.Background(), fmt.Sprintf("new-%03d", i-1), metav1.DeleteOptions{})
					}
					writes++
				}
			}()
			n.record(t, p.Config(), WithPageSize(7), WithWatchList(mode))
			st := n.st
			time.Sleep(300 * time.Millisecond)
			cancel()
			wg.Wait()
			waitJournalMatchesServer(t, dyn, st, ns)

			recs := streamRecords(t, st, nsStreamID("it", ns))
			if n := len(ofType(recs, event.TypeGap)); n != 0 {
				t.Fatalf("%d gaps", n)
			}
			end := ofType(recs, event.TypeBaseline)[1]
			if end.Baseline.Phase != event.BaselineEnd || end.Baseline.ResourceVersion == "" {
				t.Fatalf("baseline end %+v", end.Baseline)
			}
			if len(realEvents(recs)) == 0 {
				t.Fatalf("no real events although %d writes ran during the start", writes)
			}
			lists := p.Requests(faultproxy.Match{Verb: "list", Resource: "configmaps"})
			watches := p.Requests(faultproxy.Match{Verb: "watch", Resource: "configmaps"})
			switch mode {
			case WatchListOff:
				if len(lists) < 6 {
					t.Fatalf("%d list pages, want a paginated list (40+ objects, page 7)", len(lists))
				}
				for _, l := range lists {
					if rv := l.Query.Get("resourceVersion"); rv != "" {
						t.Fatalf("list with resourceVersion=%q; a baseline must be a consistent read", rv)
					}
				}
				if got := watches[0].Query.Get("resourceVersion"); got != end.Baseline.ResourceVersion {
					t.Fatalf("watch from %q, want the list's resourceVersion %q", got, end.Baseline.ResourceVersion)
				}
			case WatchListOn:
				if len(lists) != 0 || watches[0].Query.Get("sendInitialEvents") != "true" {
					t.Fatalf("lists %v, watches %v: want one WatchList", lists, watches)
				}
				cps := ofType(recs, event.TypeCheckpoint)
				if len(cps) == 0 || !cps[0].Checkpoint.InitialEventsEnd || cps[0].Checkpoint.ResourceVersion != end.Baseline.ResourceVersion {
					t.Fatalf("checkpoints %+v: want the initial-events-end bookmark as a checkpoint at the baseline's RV", cps)
				}
			}
			t.Logf("%d writes during start; %d real events; %d records", writes, len(realEvents(recs)), len(recs))
		})
	}
}

// TestIntegrationCutWatchesNoGapNoDuplicate cuts the watch again and again
// while objects change: every change is recorded once, with no gap and no
// relist.
func TestIntegrationCutWatchesNoGapNoDuplicate(t *testing.T) {
	n := newNSTest(t, "a")
	ns, dyn, st := n.ns, n.dyn, n.st
	p := faultproxy.Start(t, n.env.Config())
	n.record(t, p.Config())
	watchCM := faultproxy.Match{Verb: "watch", Resource: "configmaps", Namespace: ns}
	var rvs []string
	for i := 1; i <= 10; i++ {
		rvs = append(rvs, mustUpdateCM(t, dyn, ns, "a", fmt.Sprint(i)).GetResourceVersion())
		if i%2 == 0 {
			p.CutWatches(watchCM)
		}
		if i%3 == 0 {
			p.EndWatches(watchCM)
		}
	}
	waitJournalMatchesServer(t, dyn, st, ns)
	recs := streamRecords(t, st, n.id)
	ev := realEvents(recs)
	var got []string
	for _, r := range ev {
		got = append(got, r.Resource.ResourceVersion)
	}
	if strings.Join(got, ",") != strings.Join(rvs, ",") {
		t.Fatalf("recorded resourceVersions %v, want each update once, in order: %v", got, rvs)
	}
	if n := len(ofType(recs, event.TypeGap)); n != 0 {
		t.Fatalf("%d gaps after cut watches", n)
	}
	if n := len(ofType(recs, event.TypeBaseline)); n != 2 {
		t.Fatalf("%d baseline markers; a cut watch must resume, not relist", n)
	}
	if n := p.Count(watchCM); n < 3 {
		t.Fatalf("only %d watches; the cuts did not take", n)
	}
}

// TestIntegrationForced410 breaks the stream (watches fail), deletes an
// object during the outage, then answers 410: the gap starts at the last
// durable record, the relist infers the deletion, and a time inside the
// outage is not covered.
func TestIntegrationForced410(t *testing.T) {
	n := newNSTest(t, "keep", "doomed")
	ns, dyn, st, id := n.ns, n.dyn, n.st, n.id
	p := faultproxy.Start(t, n.env.Config())
	c := n.record(t, p.Config())
	mustUpdateCM(t, dyn, ns, "keep", "1")
	waitJournalMatchesServer(t, dyn, st, ns)
	lastDurable := realEvents(streamRecords(t, st, id))[0].ObservedAt

	watchCM := faultproxy.Match{Verb: "watch", Resource: "configmaps", Namespace: ns}
	p.FailNext(1000, watchCM, faultproxy.Status(503))
	p.CutWatches(watchCM)
	time.Sleep(100 * time.Millisecond)
	mustDeleteCM(t, dyn, ns, "doomed")
	insideOutage := time.Now()
	time.Sleep(100 * time.Millisecond)
	p.ClearFaults()
	p.FailNext(1, watchCM, faultproxy.WatchError(410))
	waitJournalMatchesServer(t, dyn, st, ns)

	recs := streamRecords(t, st, id)
	gaps := ofType(recs, event.TypeGap)
	if len(gaps) != 1 || !gaps[0].Gap.From.Equal(lastDurable) || !gaps[0].Gap.To.After(insideOutage) {
		t.Fatalf("gaps %+v, want one from the last durable record %s past %s", gaps, lastDurable, insideOutage)
	}
	var inferred []event.Record
	for _, r := range ofType(recs, event.TypeEvent) {
		if r.Inferred != nil {
			inferred = append(inferred, r)
		}
	}
	if len(inferred) != 1 || inferred[0].Resource.Name != "doomed" || len(inferred[0].Object) == 0 || !inferred[0].Inferred.From.Equal(lastDurable) {
		t.Fatalf("inferred deletions %+v, want doomed with its body, from the gap's start", inferred)
	}
	cov, err := storage.CoverageAt(context.Background(), st, id, insideOutage)
	if err != nil || cov.Covered {
		t.Fatalf("coverage inside the outage = %+v, %v; want not covered", cov, err)
	}
	cov, err = storage.CoverageAt(context.Background(), st, id, observedNow(t, c))
	if err != nil || !cov.Covered {
		t.Fatalf("coverage after the relist = %+v, %v", cov, err)
	}
	// The stream marks itself covered once the committer has reported the
	// relist's end durable, a moment after readers can see the records.
	eventually(t, 20*time.Second, "the status covered", func() bool { return c.Status()[0].Covered })
	if s := c.Status()[0]; s.Gaps != 1 || !s.Covered {
		t.Fatalf("status %+v", s)
	}
}

// TestIntegrationRestart: a new Collector on the same store resumes from the
// checkpoint (no list, no gap, real events for changes made while down, no
// second copy of unchanged objects); after etcd compaction on an apiserver
// without watch cache, the resume gets a real 410: a gap spanning the
// downtime, a relist and the inferred deletion.
func TestIntegrationRestart(t *testing.T) {
	env := testenv.Start(t)
	direct := env.StartAPIServer(t, "--watch-cache=false")
	ns := env.CreateNamespace(t)
	dyn := dynFor(t, env.Config())
	for _, n := range []string{"same", "changed", "removed"} {
		mustCreateCM(t, dyn, ns, n, "0")
	}
	st := newMemory(t)
	id := nsStreamID("it", ns)

	p1 := faultproxy.Start(t, direct.Config())
	c1 := newReal(t, p1.Config(), st, realOpts(t, ns)...)
	stop1 := run(t, c1)
	waitSync(t, c1)
	if err := stop1(); err != nil {
		t.Fatal(err)
	}
	before, err := st.StreamStatus(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	mustUpdateCM(t, dyn, ns, "changed", "1")
	mustDeleteCM(t, dyn, ns, "removed")
	mustCreateCM(t, dyn, ns, "added", "1")

	p2 := faultproxy.Start(t, direct.Config())
	c2 := newReal(t, p2.Config(), st, realOpts(t, ns)...)
	stop2 := run(t, c2)
	waitSync(t, c2)
	waitJournalMatchesServer(t, dyn, st, ns)
	if err := stop2(); err != nil {
		t.Fatal(err)
	}
	if n := p2.Count(faultproxy.Match{Verb: "list", Resource: "configmaps"}); n != 0 {
		t.Fatalf("the restarted collector listed %d times, want a resume", n)
	}
	if w := p2.Requests(faultproxy.Match{Verb: "watch", Resource: "configmaps"}); len(w) == 0 || w[0].Query.Get("resourceVersion") != before.CheckpointRV {
		t.Fatalf("watches %v, want the first from the checkpoint %s", w, before.CheckpointRV)
	}
	recs := streamRecords(t, st, id)
	if n := len(ofType(recs, event.TypeGap)); n != 0 {
		t.Fatalf("%d gaps after a clean restart", n)
	}
	var kinds []string
	for _, r := range realEvents(recs) {
		kinds = append(kinds, string(r.WatchType)+" "+r.Resource.Name)
	}
	if strings.Join(kinds, ",") != "MODIFIED changed,DELETED removed,ADDED added" {
		t.Fatalf("changes made while down were recorded as %v", kinds)
	}
	hist, err := st.ObjectHistory(context.Background(), storage.ObjectID{ClusterID: "it", Resource: "configmaps", Namespace: ns, Name: "same"}, storage.HistoryQuery{WithoutBodies: true})
	if err != nil || len(hist) != 1 {
		t.Fatalf("unchanged object has %d records (%v), want 1", len(hist), err)
	}

	// Down again; meanwhile changes and a compaction remove the history.
	mustDeleteCM(t, dyn, ns, "changed")
	mustUpdateCM(t, dyn, ns, "same", "2")
	if _, err := env.Compact(context.Background()); err != nil {
		t.Fatal(err)
	}
	checkpoint, err := st.StreamStatus(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	p3 := faultproxy.Start(t, direct.Config())
	c3 := newReal(t, p3.Config(), st, realOpts(t, ns)...)
	run(t, c3)
	waitSync(t, c3)
	waitJournalMatchesServer(t, dyn, st, ns)
	recs = streamRecords(t, st, id)
	gaps := ofType(recs, event.TypeGap)
	if len(gaps) != 1 || !gaps[0].Gap.From.Equal(checkpoint.CheckpointAt) || gaps[0].Gap.LastResourceVersion != checkpoint.CheckpointRV ||
		!strings.Contains(gaps[0].Gap.Reason, "410") {
		t.Fatalf("gaps %+v, want one 410 gap from the checkpoint %s (%s)", gaps, checkpoint.CheckpointAt, checkpoint.CheckpointRV)
	}
	var inferred []string
	for _, r := range ofType(recs, event.TypeEvent) {
		if r.Inferred != nil {
			inferred = append(inferred, r.Resource.Name)
		}
	}
	if strings.Join(inferred, ",") != "changed" {
		t.Fatalf("inferred deletions %v, want changed", inferred)
	}
}

// TestIntegrationRBACFlap uses real RBAC: a user granted configmaps through
// a RoleBinding loses it (403 → gap + unavailable) and gets it back
// (available + baseline). The user cannot read kube-system, so the cluster
// ID falls back to the server URL's hash.
func TestIntegrationRBACFlap(t *testing.T) {
	env := testenv.Shared(t)
	ns := env.CreateNamespace(t)
	admin := dynFor(t, env.Config())
	rbac := func(kind string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: kind}
	}
	role := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
		"metadata": map[string]any{"name": "cm-reader", "namespace": ns},
		"rules":    []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps"}, "verbs": []any{"get", "list", "watch"}}},
	}}
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
		"metadata": map[string]any{"name": "cm-reader", "namespace": ns},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm-reader"},
		"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": testenv.UserNobody}},
	}}
	ctx := context.Background()
	if _, err := admin.Resource(rbac("roles")).Namespace(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	grant := func() {
		t.Helper()
		if _, err := admin.Resource(rbac("rolebindings")).Namespace(ns).Create(ctx, binding.DeepCopy(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	grant()
	mustCreateCM(t, admin, ns, "a", "0")

	p := faultproxy.Start(t, env.Config())
	st := newMemory(t)
	opts := realOpts(t, ns)
	c := newReal(t, p.Wrap(env.ConfigFor(testenv.UserNobody)), st, append(opts, WithClusterID(""))...)
	run(t, c)
	waitSync(t, c)
	cluster := c.ClusterID()
	if !strings.HasPrefix(cluster, "url-") {
		t.Fatalf("cluster ID %q, want the URL-hash fallback", cluster)
	}
	id := nsStreamID(cluster, ns)

	if err := admin.Resource(rbac("rolebindings")).Namespace(ns).Delete(ctx, "cm-reader", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// An open watch survives the revocation; end it so the reconnect meets
	// the authorizer.
	deadline := time.Now().Add(20 * time.Second)
	for len(ofType(streamRecords(t, st, id), event.TypeCoverageChange)) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("no coverage change after the RoleBinding was deleted")
		}
		p.EndWatches(faultproxy.Match{Verb: "watch", Resource: "configmaps"})
		time.Sleep(100 * time.Millisecond)
	}
	cc := ofType(streamRecords(t, st, id), event.TypeCoverageChange)
	if cc[0].Coverage.Available || cc[0].Coverage.Code != 403 {
		t.Fatalf("coverage change %+v, want unavailable 403", cc[0].Coverage)
	}
	if g := ofType(streamRecords(t, st, id), event.TypeGap); len(g) != 1 {
		t.Fatalf("%d gaps, want one from the last durable record", len(g))
	}
	mustCreateCM(t, admin, ns, "b", "0") // made while denied
	grant()
	eventually(t, 20*time.Second, "coverage back", func() bool { return c.Status()[0].Covered })
	if cov, err := storage.CoverageAt(ctx, st, id, observedNow(t, c)); err != nil || !cov.Covered {
		t.Fatalf("coverage after access returned = %+v, %v", cov, err)
	}
	recs := streamRecords(t, st, id)
	cc = ofType(recs, event.TypeCoverageChange)
	if len(cc) != 2 || !cc[1].Coverage.Available {
		t.Fatalf("coverage changes %+v, want unavailable then available", cc)
	}
	if b := ofType(recs, event.TypeBaseline); len(b) != 4 || b[3].Baseline.Reason != "coverage restored" || b[3].Baseline.ItemCount != 2 {
		t.Fatalf("baselines %+v", b)
	}
}

// testCRD returns the resource of a cluster-scoped CRD of group with
// objects of kind, and a function that creates the CRD and waits until it
// is served.
func testCRD(t *testing.T, admin dynamic.Interface, group, singular, kind string) (schema.GroupVersionResource, func()) {
	ctx := context.Background()
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: singular + "s"}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": gvr.Resource + "." + group},
		"spec": map[string]any{
			"group": group, "scope": "Cluster",
			"names": map[string]any{"plural": gvr.Resource, "singular": singular, "kind": kind, "listKind": kind + "List"},
			"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
		},
	}}
	return gvr, func() {
		t.Helper()
		if _, err := admin.Resource(crdGVR).Create(ctx, crd.DeepCopy(), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 30*time.Second, "the CRD to be served", func() bool {
			_, err := admin.Resource(gvr).List(ctx, metav1.ListOptions{})
			return err == nil
		})
	}
}

// TestIntegrationCRDRemovedAndReadded: a CRD that does not exist at Start is
// found by rediscovery; its removal makes the stream unavailable (404), its
// return available with a baseline that infers the old object's deletion.
func TestIntegrationCRDRemovedAndReadded(t *testing.T) {
	env := testenv.Shared(t)
	admin := dynFor(t, env.Config())
	ctx := context.Background()
	group := fmt.Sprintf("t%d.example.com", time.Now().UnixNano()%1e9)
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	widgets, createCRD := testCRD(t, admin, group, "widget", "Widget")
	widget := func(name string) {
		t.Helper()
		w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v1", "kind": "Widget",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"size": int64(3), "unknownField": "kept"}}}
		if _, err := admin.Resource(widgets).Create(ctx, w, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	st := newMemory(t)
	c := newReal(t, env.Config(), st, WithClusterID("it"), WithResources("widgets."+group, "ns"), WithLogger(testr.New(t)),
		WithBackoff(20*time.Millisecond, 300*time.Millisecond), WithRediscoveryInterval(100*time.Millisecond))
	run(t, c)
	waitSync(t, c) // namespaces only; widgets are pending
	if s := c.Status(); s[len(s)-1].State != StatePending {
		t.Fatalf("status %+v, want the widgets pending", s)
	}
	createCRD()
	widget("w1")
	id := event.Stream{ClusterID: "it", Group: group, Version: "v1", Resource: "widgets"}.ID()
	eventually(t, 20*time.Second, "w1 recorded", func() bool { return len(journalState(t, st, id)) == 1 })
	recs := streamRecords(t, st, id)
	if cc := ofType(recs, event.TypeCoverageChange); len(cc) != 1 || !cc[0].Coverage.Available || cc[0].Coverage.Reason != "discovered" {
		t.Fatalf("coverage changes %+v, want discovered", cc)
	}
	var body map[string]any
	if alive, _ := st.AliveAt(ctx, storage.AliveQuery{At: time.Now(), StreamID: id}); len(alive) == 1 {
		_ = json.Unmarshal(alive[0].Object, &body)
	}
	if spec, _ := body["spec"].(map[string]any); spec["unknownField"] != "kept" {
		t.Fatalf("unknown CRD field lost: %v", body)
	}

	if err := admin.Resource(crdGVR).Delete(ctx, "widgets."+group, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "unavailable", func() bool {
		for _, r := range ofType(streamRecords(t, st, id), event.TypeCoverageChange) {
			if !r.Coverage.Available && r.Coverage.Code == 404 {
				return true
			}
		}
		return false
	})
	eventually(t, 30*time.Second, "the CRD gone", func() bool {
		_, err := admin.Resource(crdGVR).Get(ctx, "widgets."+group, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	createCRD()
	widget("w2")
	eventually(t, 30*time.Second, "w2 only", func() bool {
		s := journalState(t, st, id)
		_, ok := s["w2"]
		return len(s) == 1 && ok
	})
	// Deleting a CRD deletes its objects first, so w1's deletion arrives
	// as a real event (or, had the watch missed it, an inferred one).
	last, err := st.LatestAt(ctx, storage.ObjectID{ClusterID: "it", Group: group, Resource: "widgets", Name: "w1"}, time.Now())
	if err != nil || last.WatchType != event.Deleted {
		t.Fatalf("w1's last record %+v, %v; want a deletion", last, err)
	}
	cc := ofType(streamRecords(t, st, id), event.TypeCoverageChange)
	if len(cc) != 3 || !cc[2].Coverage.Available || cc[2].Coverage.Reason != "access restored" {
		t.Fatalf("coverage changes %+v, want discovered, unavailable 404, available", cc)
	}
}

// TestIntegrationPeriodicBookmark waits for the apiserver's periodic
// BOOKMARK (about once a minute with the watch cache on): it becomes a
// checkpoint record that moves the durable resourceVersion, never an object
// change. It runs in parallel with the other tests. Progress checkpoints are
// off: the apiserver sends its periodic bookmark to long watches, and one
// that asks for a 1s timeout gets a bookmark only when the watch cache's
// resourceVersion moved. The apiserver sends a periodic bookmark too only
// with a resourceVersion newer than the watch's, so ConfigMaps are written
// in another namespace meanwhile (testenv's TouchConfigMaps). Its
// Collector starts before the test pauses for the sequential tests
// (t.Parallel), so that they run during the minute it waits; the wait's
// bound counts from that start.
func TestIntegrationPeriodicBookmark(t *testing.T) {
	n := newNSTest(t, "idle")
	st, id := n.st, n.id
	started := time.Now()
	n.record(t, n.env.Config(), WithWatchList(WatchListOff), WithProgressInterval(0))
	n.env.TouchConfigMaps(t, 5*time.Second)
	t.Parallel()
	eventually(t, time.Until(started.Add(150*time.Second)), "a periodic bookmark", func() bool {
		for _, r := range ofType(streamRecords(t, st, id), event.TypeCheckpoint) {
			if r.Checkpoint.Bookmark && !r.Checkpoint.InitialEventsEnd {
				return true
			}
		}
		return false
	})
	recs := streamRecords(t, st, id)
	if n := len(ofType(recs, event.TypeEvent)); n != 1 {
		t.Fatalf("%d event records, want only the baseline item", n)
	}
	cps := ofType(recs, event.TypeCheckpoint)
	ss, err := st.StreamStatus(context.Background(), id)
	if err != nil || ss.CheckpointRV != cps[len(cps)-1].Checkpoint.ResourceVersion {
		t.Fatalf("stream checkpoint %+v, %v; want the bookmark's %s", ss, err, cps[len(cps)-1].Checkpoint.ResourceVersion)
	}
}
