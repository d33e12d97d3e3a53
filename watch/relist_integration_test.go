package watch

import (
	"context"
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
