package watch

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest/testenv/faultproxy"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
)

// TestIntegrationReplacedDuringGap: a ConfigMap deleted and re-created
// under the same name while the watches fail, then a forced 410: the relist
// writes the inferred deletion of the old UID before the new object, the
// name is alive as the new object, and the relist's end closes the gap.
// It runs in parallel with the other tests.
func TestIntegrationReplacedDuringGap(t *testing.T) {
	t.Parallel()
	n := newNSTest(t)
	ns, dyn, st, id := n.ns, n.dyn, n.st, n.id
	p := faultproxy.Start(t, n.env.Config())
	old := mustCreateCM(t, dyn, ns, "same", "old")
	c := n.record(t, p.Config())

	watchCM := faultproxy.Match{Verb: "watch", Resource: "configmaps", Namespace: ns}
	p.FailNext(1000, watchCM, faultproxy.Status(503))
	p.CutWatches(watchCM)
	time.Sleep(100 * time.Millisecond)
	mustDeleteCM(t, dyn, ns, "same")
	fresh := mustCreateCM(t, dyn, ns, "same", "new")
	p.ClearFaults()
	p.FailNext(1, watchCM, faultproxy.WatchError(410))
	eventually(t, 30*time.Second, "the relist", func() bool { return len(ofType(streamRecords(t, st, id), event.TypeBaseline)) == 4 })

	recs := streamRecords(t, st, id)
	gaps := ofType(recs, event.TypeGap)
	end := ofType(recs, event.TypeBaseline)[3]
	if len(gaps) != 1 || end.Baseline.ClosesGap != gaps[0].EventID || end.Baseline.Reason != "relist after gap" {
		t.Fatalf("gaps %d, relist end %+v; want it to close the one gap", len(gaps), end.Baseline)
	}
	dels := inferredOf(recs)
	if len(dels) != 1 || dels[0].Resource.UID != string(old.GetUID()) || dels[0].Inferred.Reason != replacedReason || len(dels[0].Object) == 0 {
		t.Fatalf("inferred deletions %+v; want the old UID %s, replaced", dels, old.GetUID())
	}
	ctx := context.Background()
	m, err := materialize.New(st)
	if err != nil {
		t.Fatal(err)
	}
	key := storage.ObjectIDOf(dels[0])
	state, err := m.ObjectAt(ctx, key, observedNow(t, c))
	if err != nil {
		t.Fatal(err)
	}
	if !state.Exists || !state.Covered || state.Record.Resource.UID != string(fresh.GetUID()) {
		t.Fatalf("ObjectAt after the relist: exists=%v covered=%v record=%+v; want the new UID %s", state.Exists, state.Covered, state.Record, fresh.GetUID())
	}
	assertVersions(t, m, key, false, "ADDED "+string(old.GetUID()), "DELETED "+string(old.GetUID()), "ADDED "+string(fresh.GetUID()))
}

// TestIntegrationRelistConfirmsUnchanged: a ConfigMap changed and seen by
// the watch, then a forced 410 and a relist while it stays as it was: the
// journal keeps the relist's item, and the object's history shows it as a
// confirmation of the watched version, not as a new version. It runs in
// parallel with the other tests.
func TestIntegrationRelistConfirmsUnchanged(t *testing.T) {
	t.Parallel()
	n := newNSTest(t, "steady")
	p := faultproxy.Start(t, n.env.Config())
	n.record(t, p.Config())
	updated := mustUpdateCM(t, n.dyn, n.ns, "steady", "1")
	key := storage.ObjectID{ClusterID: "it", Resource: "configmaps", Namespace: n.ns, Name: "steady"}
	var watched event.Record
	eventually(t, 30*time.Second, "the update in the journal", func() bool {
		rec, err := n.st.LatestAt(context.Background(), key, time.Now())
		watched = rec
		return err == nil && rec.Resource.ResourceVersion == updated.GetResourceVersion()
	})

	watchCM := faultproxy.Match{Verb: "watch", Resource: "configmaps", Namespace: n.ns}
	p.FailNext(1, watchCM, faultproxy.WatchError(410))
	p.CutWatches(watchCM)
	eventually(t, 30*time.Second, "the relist", func() bool { return len(ofType(streamRecords(t, n.st, n.id), event.TypeBaseline)) == 4 })
	item, err := n.st.LatestAt(context.Background(), key, time.Now())
	if err != nil || !item.Synthetic || item.Resource.ResourceVersion != updated.GetResourceVersion() {
		t.Fatalf("the journal's latest record of steady: %+v, %v; want the relist's item at resourceVersion %s", item, err, updated.GetResourceVersion())
	}

	m, err := materialize.New(n.st)
	if err != nil {
		t.Fatal(err)
	}
	h, err := m.History(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range h.Entries {
		kinds = append(kinds, string(e.Kind))
	}
	if want := []string{"version", "version", "gap", "confirmed"}; !slices.Equal(kinds, want) {
		t.Fatalf("history entries %q, want %q", kinds, want)
	}
	if v := h.Entries[1].Version; v.Origin != materialize.OriginWatch || v.ResourceVersion != updated.GetResourceVersion() {
		t.Errorf("second version %s %s at %s, want the watched update at %s", v.WatchType, v.Origin, v.ResourceVersion, updated.GetResourceVersion())
	}
	last := h.Entries[3]
	if c := last.Confirmation; last.EventID != item.EventID || c.ResourceVersion != updated.GetResourceVersion() ||
		c.VersionEventID != watched.EventID || c.BaselineID != item.BaselineID {
		t.Errorf("confirmation %s %+v, want item %s confirming %s", last.EventID, c, item.EventID, watched.EventID)
	}
}
