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

// TestIntegrationReplicaRelistKeepsNewerObjects: two replicas record one
// cluster into one journal. Replica A relists (a forced 410) while replica
// B keeps watching; A's list is paginated and its second page held back,
// and meanwhile an object is created and B records it. The object is not
// in A's list (taken before it existed) but is alive in the journal, with
// a resourceVersion newer than the list's: A must not infer its deletion.
// It failed before the relist compared the two: A recorded the object
// deleted at the end of its baseline, and, its watch resuming from the
// list's resourceVersion, found the creation already stored (same event
// ID) — so the journal held a live object deleted for good. It runs in
// parallel with the other tests: mostly it waits.
func TestIntegrationReplicaRelistKeepsNewerObjects(t *testing.T) {
	t.Parallel()
	n := newNSTest(t, "a0", "a1", "a2") // two pages of two
	ns, dyn, st, id := n.ns, n.dyn, n.st, n.id
	pa := faultproxy.Start(t, n.env.Config())
	n.record(t, n.env.Config()) // B
	a := n.record(t, pa.Config(), WithPageSize(2), WithWatchList(WatchListOff))
	relists := func() int {
		n := 0
		for _, r := range ofType(streamRecords(t, st, id), event.TypeBaseline) {
			if r.Baseline.Phase == event.BaselineEnd && r.Baseline.Reason == "relist after gap" {
				n++
			}
		}
		return n
	}
	if n := relists(); n != 0 {
		t.Fatalf("%d relists before the fault", n)
	}

	// A's next list: the first page at once, the second held back.
	const held = 5 * time.Second
	lists := faultproxy.Match{Verb: "list", Resource: "configmaps", Namespace: ns}
	watches := faultproxy.Match{Verb: "watch", Resource: "configmaps", Namespace: ns}
	pa.ResetCounts()
	pa.FailNext(1, lists, faultproxy.Delay(0))
	pa.FailNext(1, lists, faultproxy.Delay(held))
	pa.FailNext(1, watches, faultproxy.WatchError(410))
	pa.CutWatches(watches)
	eventually(t, 30*time.Second, "A's second list page is held", func() bool { return pa.Count(lists) >= 2 })
	heldFrom := time.Now()
	late := mustCreateCM(t, dyn, ns, "late", "v")
	ctx := context.Background()
	key := storage.ObjectID{ClusterID: "it", Resource: "configmaps", Namespace: ns, Name: "late"}
	eventually(t, held, "B records the new object while A's list is held", func() bool {
		r, err := st.LatestAt(ctx, key, time.Now())
		return err == nil && r.Resource.UID == string(late.GetUID())
	})
	if time.Since(heldFrom) >= held {
		t.Fatalf("B recorded the new object after A's list went on (%v): the test proves nothing; hold the list longer", time.Since(heldFrom))
	}
	eventually(t, 30*time.Second, "A's relist", func() bool { return relists() == 1 })

	for _, d := range inferredOf(streamRecords(t, st, id)) {
		t.Errorf("inferred deletion of %s (uid %s, resourceVersion %s); want none: nothing was deleted", d.Resource.ObjectKey(), d.Resource.UID, d.Resource.ResourceVersion)
	}
	waitJournalMatchesServer(t, dyn, st, ns)
	m, err := materialize.New(st)
	if err != nil {
		t.Fatal(err)
	}
	state, err := m.ObjectAt(ctx, key, observedNow(t, a))
	if err != nil {
		t.Fatal(err)
	}
	if !state.Exists || state.Record.Resource.UID != string(late.GetUID()) {
		t.Errorf("ObjectAt of the new object after A's relist: exists=%v record=%+v; want it alive", state.Exists, state.Record.Resource)
	}
}
