package materialize_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
)

// exampleJournal records what a Collector would have written for one
// Deployment in namespace shop: a baseline at 10:00, a scale-up and an
// image change at 10:30, and a bookmark at 11:30 (a stream is covered only
// up to its last evidence of continuity: an event, a bookmark, a progress
// checkpoint).
func exampleJournal() (*memory.Store, event.Stream) {
	ctx := context.Background()
	store := memory.New()
	s := event.Stream{ClusterID: "prod", Group: "apps", Version: "v1", Resource: "deployments", Namespace: "shop"}
	t := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	body := func(rv string, replicas int, image string) []byte {
		return []byte(fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop","uid":"u1","resourceVersion":%q},"spec":{"replicas":%d,"template":{"spec":{"containers":[{"name":"app","image":%q}]}}}}`, rv, replicas, image))
	}
	item := func(rv string, wt event.WatchType, at time.Time, obj []byte, baselineID string) event.Record {
		ref := event.ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: "shop", Name: "web", UID: "u1", ResourceVersion: rv}
		return event.Record{Type: event.TypeEvent, EventID: event.EventID(s.ID(), event.TypeEvent, ref, wt, baselineID),
			ClusterID: "prod", StreamID: s.ID(), ObservedAt: at, WatchType: wt, Synthetic: baselineID != "",
			BaselineID: baselineID, Resource: ref, Object: obj, ObjectHash: event.ObjectHash(obj)}
	}
	marker := func(phase event.BaselinePhase) event.Record {
		b := &event.Baseline{ID: "b1", Phase: phase}
		if phase == event.BaselineEnd {
			b.ResourceVersion, b.ItemCount = "100", 1
		}
		return event.Record{Type: event.TypeBaseline, EventID: "b1-" + string(phase), ClusterID: "prod", StreamID: s.ID(),
			ObservedAt: t, BaselineID: "b1", Baseline: b}
	}
	_, err := store.Append(ctx, []event.Record{
		marker(event.BaselineBegin),
		item("100", event.Added, t, body("100", 2, "shop:1.0"), "b1"),
		marker(event.BaselineEnd),
		item("120", event.Modified, t.Add(30*time.Minute), body("120", 5, "shop:1.1"), ""),
		{Type: event.TypeCheckpoint, EventID: "bookmark-130", ClusterID: "prod", StreamID: s.ID(), ObservedAt: t.Add(90 * time.Minute),
			Checkpoint: &event.Checkpoint{ResourceVersion: "130", Bookmark: true}},
	})
	if err != nil {
		panic(err)
	}
	return store, s
}

func ExampleMaterializer_ObjectAt() {
	store, _ := exampleJournal()
	defer store.Close()
	m, err := materialize.New(store)
	if err != nil {
		panic(err)
	}
	web := storage.ObjectID{ClusterID: "prod", Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web"}
	for _, at := range []string{"09:00", "10:15", "11:00"} {
		t, _ := time.Parse("2006-01-02 15:04", "2025-03-01 "+at)
		st, err := m.ObjectAt(context.Background(), web, t)
		if err != nil {
			panic(err)
		}
		rv := ""
		if st.Record != nil {
			rv = st.Record.Resource.ResourceVersion
		}
		fmt.Printf("%s exists=%v covered=%v rv=%q\n", at, st.Exists, st.Covered, rv)
	}
	// Output:
	// 09:00 exists=false covered=false rv=""
	// 10:15 exists=true covered=true rv="100"
	// 11:00 exists=true covered=true rv="120"
}

func ExampleMaterializer_Snapshot() {
	store, _ := exampleJournal()
	defer store.Close()
	m, err := materialize.New(store)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	at := time.Date(2025, 3, 1, 10, 15, 0, 0, time.UTC)
	snap, err := m.Snapshot(ctx, materialize.Scope{ClusterID: "prod", Namespaces: []string{"shop"}}, at)
	if err != nil {
		panic(err)
	}
	fmt.Println("complete:", snap.Complete)
	for _, w := range snap.Watermarks {
		fmt.Printf("watermark %s rv=%s covered=%v\n", w.StreamID, w.ResourceVersion, w.Covered)
	}
	for _, o := range snap.Objects {
		fmt.Println("object", o.Ref.Kind, o.Ref.ObjectKey(), "synthetic:", o.Synthetic)
	}
	// Computing a snapshot saves nothing; saving it is a separate act.
	if err := m.SaveSnapshot(ctx, snap, "before the rollout"); err != nil {
		panic(err)
	}
	saved, err := m.GetSnapshot(ctx, snap.ID)
	if err != nil {
		panic(err)
	}
	fmt.Println("saved:", saved.Name, len(saved.Objects), "object(s)")
	// Output:
	// complete: true
	// watermark prod/apps/v1/deployments/shop rv=100 covered=true
	// object Deployment shop/web synthetic: true
	// saved: before the rollout 1 object(s)
}

// A snapshot read a page at a time: memory holds one page of bodies,
// whatever the size of the scope.
func ExampleMaterializer_SnapshotPage() {
	store, _ := exampleJournal()
	defer store.Close()
	m, err := materialize.New(store)
	if err != nil {
		panic(err)
	}
	at := time.Date(2025, 3, 1, 11, 0, 0, 0, time.UTC)
	page := materialize.Page{Limit: 500}
	for {
		snap, err := m.SnapshotPage(context.Background(), materialize.Scope{ClusterID: "prod"}, at, page)
		if err != nil {
			panic(err)
		}
		for _, o := range snap.Objects {
			fmt.Println(o.Ref.Kind, o.Ref.ObjectKey(), o.Ref.ResourceVersion, len(o.Object) > 0)
		}
		if snap.Next == nil {
			fmt.Println("complete:", snap.Complete)
			break
		}
		page.After = snap.Next
	}
	// Output:
	// Deployment shop/web 120 true
	// complete: true
}

func ExampleMaterializer_History() {
	store, _ := exampleJournal()
	defer store.Close()
	m, err := materialize.New(store)
	if err != nil {
		panic(err)
	}
	web := storage.ObjectID{ClusterID: "prod", Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web"}
	h, err := m.History(context.Background(), web)
	if err != nil {
		panic(err)
	}
	for _, v := range h.Versions() {
		fmt.Println(v.ObservedAt.Format("15:04"), v.WatchType, v.Origin, "rv", v.ResourceVersion)
		for _, c := range v.Changes {
			fmt.Printf("  %s: %v → %v\n", c.Path, c.Before, c.After)
		}
	}
	// Output:
	// 10:00 ADDED baseline rv 100
	// 10:30 MODIFIED watch rv 120
	//   spec.replicas: 2 → 5
	//   spec.template.spec.containers[name=app].image: shop:1.0 → shop:1.1
}

func ExampleDiff_WriteTable() {
	store, _ := exampleJournal()
	defer store.Close()
	m, err := materialize.New(store)
	if err != nil {
		panic(err)
	}
	from := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	d, err := m.Diff(context.Background(), materialize.Scope{ClusterID: "prod", Namespaces: []string{"shop"}}, from, from.Add(time.Hour))
	if err != nil {
		panic(err)
	}
	fmt.Println("has gaps:", d.HasGaps)
	if err := d.WriteTable(os.Stdout); err != nil {
		panic(err)
	}
	// Output:
	// has gaps: false
	// Deployment  shop/web  spec.replicas                                  2 → 5
	// Deployment  shop/web  spec.template.spec.containers[name=app].image  shop:1.0 → shop:1.1
}

// Find answers when a condition held: here, when web ran with fewer than
// three replicas. The journal begins with a baseline, so the journal
// cannot tell since when before it the condition held.
func ExampleMaterializer_Find() {
	store, _ := exampleJournal()
	defer store.Close()
	m, err := materialize.New(store)
	if err != nil {
		panic(err)
	}
	fewReplicas := materialize.PredicateFunc(func(_ context.Context, object json.RawMessage) (bool, error) {
		var d struct {
			Spec struct{ Replicas int } `json:"spec"`
		}
		err := json.Unmarshal(object, &d)
		return d.Spec.Replicas < 3, err
	})
	found, err := m.Find(context.Background(), materialize.FindQuery{Scope: materialize.Scope{ClusterID: "prod"}}, fewReplicas)
	if err != nil {
		panic(err)
	}
	for _, o := range found.Objects {
		for _, iv := range o.Intervals {
			fmt.Printf("%s: from %s (rv %s) to %s (rv %s)\n", o.Object.Name, iv.From.Format("15:04"), iv.Opened.ResourceVersion,
				iv.To.Format("15:04"), iv.Closed.ResourceVersion)
			fmt.Println("true before that?", iv.StartUnknown)
		}
	}
	// Output:
	// web: from 10:00 (rv 100) to 10:30 (rv 120)
	// true before that? no complete baseline at or before this time
}

// A find's answer is computed whole; Page cuts it into pages, as the
// query API does for GET /api/v1/find?limit=.
func ExampleFound_Page() {
	store, _ := exampleJournal()
	defer store.Close()
	m, err := materialize.New(store)
	if err != nil {
		panic(err)
	}
	always := materialize.PredicateFunc(func(context.Context, json.RawMessage) (bool, error) { return true, nil })
	found, err := m.Find(context.Background(), materialize.FindQuery{Scope: materialize.Scope{ClusterID: "prod"}}, always)
	if err != nil {
		panic(err)
	}
	page := materialize.Page{Limit: 100}
	for {
		p, err := found.Page(page)
		if err != nil {
			panic(err)
		}
		for _, o := range p.Objects {
			fmt.Println(o.Object.Namespace+"/"+o.Object.Name, len(o.Intervals), "interval(s)")
		}
		if p.Next == nil {
			break
		}
		page.After = p.Next
	}
	// Output:
	// shop/web 1 interval(s)
}
