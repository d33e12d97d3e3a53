package storagetest

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// testOpenBaselines checks that the items of a baseline without an end
// record are invisible to every object query, while Records returns them
// as stored (told apart by the stream's Timeline); that a restart's
// baseline supersedes a killed one; and that the end of a running
// baseline makes its items visible at once.
func testOpenBaselines(t *testing.T, s storage.Store) {
	ctx := context.Background()
	// The initial baseline shows a and b; the watch sees a change.
	b1 := Baseline(cmShop, "b1", at(1), "12", []Item{cmItem(cmShop, "shop", "a", "ua", "10"), cmItem(cmShop, "shop", "b", "ub", "11")})
	a12 := cm(cmShop, event.Modified, "shop", "a", "ua", "12", at(2))
	aAll := cm(cmAll, event.Modified, "shop", "a", "ua", "12", at(2))
	mustAppend(t, s, append(b1, a12, aAll)...)
	// A gap; the relist is killed after it wrote a (changed during the
	// gap) and c (created during it).
	mustAppend(t, s, Gap(cmShop, at(2), at(5), "410 Gone", "12"))
	killed := BaselineBegin(cmShop, "killed", at(6), []Item{cmItem(cmShop, "shop", "a", "ua", "13"), cmItem(cmShop, "shop", "c", "uc", "14")})
	mustAppend(t, s, killed...)
	objA, objB, objC := objectID(a12), objectID(b1[2]), objectID(killed[2])

	history := func(obj storage.ObjectID) []string {
		t.Helper()
		recs, err := s.ObjectHistory(ctx, obj, storage.HistoryQuery{})
		if err != nil {
			t.Fatalf("ObjectHistory: %v", err)
		}
		return eventIDs(recs)
	}
	latest := func(obj storage.ObjectID) string {
		t.Helper()
		rec, err := s.LatestAt(ctx, obj, at(1000))
		if errors.Is(err, storage.ErrNotFound) {
			return "not found"
		}
		if err != nil {
			t.Fatalf("LatestAt: %v", err)
		}
		return rec.EventID
	}
	alive := func(q storage.AliveQuery) []string {
		t.Helper()
		q.At = at(1000)
		recs, err := s.AliveAt(ctx, q)
		if err != nil {
			t.Fatalf("AliveAt(%+v): %v", q, err)
		}
		return versions(recs)
	}
	check := func(what string, got, want []string) {
		t.Helper()
		if !slices.Equal(got, want) {
			t.Fatalf("%s:\n got %v\nwant %v", what, got, want)
		}
	}
	notFoundByRV := func(obj storage.ObjectID, rv string) {
		t.Helper()
		if rec, err := s.EventByResourceVersion(ctx, obj, "", rv); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("EventByResourceVersion(%s, %s) = %s (baseline %q), %v; want ErrNotFound", obj.Name, rv, rec.EventID, rec.BaselineID, err)
		}
	}

	// While the baseline is open (killed, not yet restarted).
	check("history of a with a killed relist", history(objA), eventIDs([]event.Record{b1[1], a12, aAll}))
	check("history of c, only in the killed relist", history(objC), nil)
	if got := latest(objA); got != aAll.EventID {
		t.Fatalf("LatestAt(a) = %s, want the watch event of rv 12", got)
	}
	if got := latest(objC); got != "not found" {
		t.Fatalf("LatestAt(c) = %s, want not found", got)
	}
	check("AliveAt of the stream", alive(storage.AliveQuery{StreamID: cmShop.ID()}), []string{"c1//configmaps/shop/a@12", "c1//configmaps/shop/b@11"})
	check("AliveAt of the cluster", alive(storage.AliveQuery{ClusterID: "c1"}), []string{"c1//configmaps/shop/a@12", "c1//configmaps/shop/b@11"})
	check("AliveAt of the stream including the open baseline",
		alive(storage.AliveQuery{StreamID: cmShop.ID(), IncludeBaseline: "killed"}),
		[]string{"c1//configmaps/shop/a@13", "c1//configmaps/shop/b@11", "c1//configmaps/shop/c@14"})
	check("AliveAt including an unknown baseline", alive(storage.AliveQuery{StreamID: cmShop.ID(), IncludeBaseline: "b1"}),
		[]string{"c1//configmaps/shop/a@12", "c1//configmaps/shop/b@11"})
	notFoundByRV(objA, "13")
	notFoundByRV(objC, "14")
	// Records is the journal as stored; the Timeline tells the items apart.
	raw := allRecords(t, s, storage.Query{StreamID: cmShop.ID()})
	check("Records of the stream", eventIDs(raw), eventIDs(slices.Concat(b1, []event.Record{a12, raw[5]}, killed)))
	tl, err := storage.StreamTimeline(ctx, s, cmShop.ID())
	if err != nil {
		t.Fatal(err)
	}
	var open []string
	for i := range raw {
		if tl.InOpenBaseline(&raw[i]) {
			open = append(open, raw[i].EventID)
		}
	}
	check("records the Timeline says are open", open, eventIDs(killed[1:]))
	if ob := tl.OpenBaselines(); len(ob) != 1 || ob["killed"] != raw[6].IngestSeq {
		t.Fatalf("OpenBaselines = %v, want killed at seq %d", ob, raw[6].IngestSeq)
	}

	// The restart lists again: the new baseline supersedes the killed one,
	// and b, absent from it, is deleted by inference.
	restart := Baseline(cmShop, "restart", at(8), "15", []Item{cmItem(cmShop, "shop", "a", "ua", "13"), cmItem(cmShop, "shop", "c", "uc", "14")})
	bGone := InferredDelete(cmShop, b1[2], at(2), at(8), "restart")
	mustAppend(t, s, append(restart, bGone)...)
	check("history of a after the restart", history(objA), eventIDs([]event.Record{b1[1], a12, aAll, restart[1]}))
	check("history of c after the restart", history(objC), eventIDs(restart[2:3]))
	check("history of b after the restart", history(objB), eventIDs([]event.Record{b1[2], bGone}))
	check("AliveAt after the restart", alive(storage.AliveQuery{StreamID: cmShop.ID()}), []string{"c1//configmaps/shop/a@13", "c1//configmaps/shop/c@14"})
	if got, err := s.EventByResourceVersion(ctx, objC, "uc", "14"); err != nil || got.EventID != restart[2].EventID {
		t.Fatalf("EventByResourceVersion(c, 14) = %s (baseline %q), %v; want the restart's item", got.EventID, got.BaselineID, err)
	}
	if got := latest(objC); got != restart[2].EventID {
		t.Fatalf("LatestAt(c) after the restart = %s, want the restart's item", got)
	}

	// A running baseline of another stream: invisible until its end is
	// appended, then visible in every query at once.
	running := BaselineBegin(deployShop, "running", at(20), []Item{
		{Ref: Ref(deployShop, "Deployment", "shop", "web", "uw", "50"), Object: Deployment("shop", "web", "uw", "50", 1, "app:1")},
	})
	mustAppend(t, s, running...)
	objW := objectID(running[1])
	check("history of a running baseline's item", history(objW), nil)
	notFoundByRV(objW, "50")
	mustAppend(t, s, BaselineEnd(deployShop, "running", at(21), "51", 1))
	check("history once the baseline ended", history(objW), eventIDs(running[1:]))
	if got := latest(objW); got != running[1].EventID {
		t.Fatalf("LatestAt once the baseline ended = %s", got)
	}
	check("AliveAt once the baseline ended", alive(storage.AliveQuery{ClusterID: "c1", Group: "apps", Resource: "deployments"}), []string{"c1/apps/deployments/shop/web@50"})
	if got, err := s.EventByResourceVersion(ctx, objW, "", "50"); err != nil || got.EventID != running[1].EventID {
		t.Fatalf("EventByResourceVersion once the baseline ended = %s, %v", got.EventID, err)
	}
	// The killed baseline stays invisible.
	check("history of a at the end", history(objA), eventIDs([]event.Record{b1[1], a12, aAll, restart[1]}))

	// Many open baselines in one stream (a recorder killed again and
	// again), each with an item of its own object; the last one ends.
	var items []event.Record
	for i, name := range []string{"k1", "k2", "k3", "k4", "k5", "k6"} {
		recs := BaselineBegin(cmAll, "open-"+name, at(30+i), []Item{cmItem(cmAll, "web", name, "u"+name, "6"+name[1:])})
		mustAppend(t, s, recs...)
		items = append(items, recs[1])
	}
	check("AliveAt with six open baselines", alive(storage.AliveQuery{ClusterID: "c1", Namespace: "web"}), nil)
	check("AliveAt including one of six", alive(storage.AliveQuery{StreamID: cmAll.ID(), IncludeBaseline: "open-k3"}),
		[]string{"c1//configmaps/shop/a@12", "c1//configmaps/web/k3@63"})
	mustAppend(t, s, BaselineEnd(cmAll, "open-k6", at(40), "70", 1))
	check("AliveAt once the last of six ended", alive(storage.AliveQuery{ClusterID: "c1", Namespace: "web"}), []string{"c1//configmaps/web/k6@66"})
	for _, item := range items[:5] {
		check("history of an item of one of five open baselines", history(objectID(item)), nil)
	}
	check("history of the item of the ended one", history(objectID(items[5])), eventIDs(items[5:]))
}
