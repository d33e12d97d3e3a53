package materialize_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/testing/wiretest"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/sqlite"
)

// pagedJournal records objects in several namespaces through overlapping
// streams — all namespaces and one namespace of configmaps, deployments of
// one namespace, cluster-scoped nodes — with changes, deletions, a change
// of server-owned metadata only, and a gap of the namespaced stream.
func pagedJournal(t *testing.T, store storage.Store) *journal {
	j := newJournalIn(t, store)
	all := j.stream("", "v1", "configmaps", "")
	shop := j.stream("", "v1", "configmaps", "shop")
	deploys := j.stream("apps", "v1", "deployments", "shop")
	nodes := j.stream("", "v1", "nodes", "")
	var cms, shopCMs []obj
	for i := range 24 {
		ns := []string{"shop", "web", "zoo"}[i%3]
		o := cm(ns, fmt.Sprintf("cm-%02d", i), fmt.Sprintf("u%02d", i), map[string]any{"v": "1"})
		cms = append(cms, o)
		if ns == "shop" {
			shopCMs = append(shopCMs, o)
		}
	}
	node := func(i int) obj {
		return obj{kind: "Node", name: fmt.Sprintf("node-%d", i), uid: fmt.Sprintf("un%d", i), body: map[string]any{"spec": map[string]any{"podCIDR": fmt.Sprintf("10.0.%d.0/24", i)}}}
	}
	deploy := func(name string, replicas int) obj {
		return obj{kind: "Deployment", namespace: "shop", name: name, uid: "ud-" + name, body: map[string]any{"spec": map[string]any{"replicas": replicas}}}
	}
	j.baseline(all, "ball", at(1), cms...)
	j.baseline(shop, "bshop", at(1), shopCMs...)
	j.baseline(deploys, "bd", at(1), deploy("api", 1), deploy("web", 1))
	j.baseline(nodes, "bn", at(1), node(1), node(2), node(3))
	for i, o := range cms {
		switch {
		case i%4 == 1:
			o.body["data"] = map[string]any{"v": "2"}
			j.watch(all, event.Modified, o, at(2+float64(i)/100))
			if o.namespace == "shop" {
				j.watch(shop, event.Modified, o, at(2+float64(i)/100))
			}
		case i%5 == 2:
			j.watch(all, event.Deleted, o, at(3+float64(i)/100))
		case i%7 == 3:
			// Touched, nothing but server-owned metadata changed.
			j.watch(all, event.Modified, o, at(3.5+float64(i)/100))
		}
	}
	for i := range 6 {
		o := cm([]string{"shop", "web"}[i%2], fmt.Sprintf("new-%d", i), fmt.Sprintf("un-%d", i), map[string]any{"v": "1"})
		j.watch(all, event.Added, o, at(4+float64(i)/100))
	}
	j.watch(deploys, event.Modified, deploy("web", 3), at(4.5))
	j.watch(deploys, event.Added, deploy("cart", 2), at(4.6))
	j.watch(nodes, event.Deleted, node(2), at(4.7))
	j.gap(shop, at(5), at(6))
	for _, st := range []event.Stream{all, deploys, nodes} {
		j.progress(st, at(60))
	}
	return j
}

// snapshotPages reads every page of a snapshot with limit objects a page.
func snapshotPages(t *testing.T, m *materialize.Materializer, scope materialize.Scope, when time.Time, limit int) (*materialize.Snapshot, int) {
	t.Helper()
	var whole *materialize.Snapshot
	page := materialize.Page{Limit: limit}
	pages := 0
	for {
		snap, err := m.SnapshotPage(context.Background(), scope, when, page)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if pages > 1000 {
			t.Fatalf("more than 1000 pages of %d: the pages do not move on", limit)
		}
		if len(snap.Objects) > limit {
			t.Fatalf("page %d: %d objects, more than the limit %d", pages, len(snap.Objects), limit)
		}
		if whole == nil {
			whole = snap
		} else {
			whole.Objects = append(whole.Objects, snap.Objects...)
			if !reflect.DeepEqual(snap.Watermarks, whole.Watermarks) || snap.Complete != whole.Complete || !reflect.DeepEqual(snap.Missing, whole.Missing) {
				t.Fatalf("page %d: header %v %+v %+v differs from the first page's %v %+v %+v", pages, snap.Complete, snap.Watermarks, snap.Missing, whole.Complete, whole.Watermarks, whole.Missing)
			}
		}
		if snap.Next == nil {
			whole.Next = nil
			return whole, pages
		}
		if last := snap.Objects[len(snap.Objects)-1]; storage.ObjectIDOf(event.Record{ClusterID: scope.ClusterID, Resource: last.Ref}) != *snap.Next {
			t.Fatalf("page %d: next %+v is not its last object %+v", pages, *snap.Next, last.Ref)
		}
		page.After = snap.Next
	}
}

// diffPages reads every page of a diff with limit objects a page.
func diffPages(t *testing.T, m *materialize.Materializer, scope materialize.Scope, from, to time.Time, limit int) *materialize.Diff {
	t.Helper()
	var whole *materialize.Diff
	page := materialize.Page{Limit: limit}
	for pages := 1; ; pages++ {
		if pages > 1000 {
			t.Fatalf("more than 1000 pages of %d: the pages do not move on", limit)
		}
		d, err := m.DiffPage(context.Background(), scope, from, to, page)
		if err != nil {
			t.Fatal(err)
		}
		if len(d.Objects) > limit {
			t.Fatalf("a page of %d objects, more than the limit %d", len(d.Objects), limit)
		}
		if whole == nil {
			whole = d
		} else {
			whole.Objects = append(whole.Objects, d.Objects...)
		}
		if d.Next == nil {
			return whole
		}
		if *d.Next != d.Objects[len(d.Objects)-1].ID {
			t.Fatalf("next %+v is not the page's last object %+v", *d.Next, d.Objects[len(d.Objects)-1].ID)
		}
		page.After = d.Next
	}
}

// sameJSON stops t unless got and want marshal to the same JSON.
func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	if !wiretest.SameJSON(t, what, got, want) {
		t.FailNow()
	}
}

// pageStores open the stores the page tests run on.
var pageStores = map[string]func(t *testing.T) storage.Store{
	"memory": func(t *testing.T) storage.Store { return newJournal(t).store },
	"sqlite": func(t *testing.T) storage.Store {
		s, err := sqlite.Open(context.Background(), t.TempDir()+"/journal.db")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	},
}

// The pages of a snapshot or a diff, read with any page size, put
// together are the snapshot or the diff, bodies and all, over scopes of
// one and of several overlapping streams, covered or not, in both stores
// that answer from memory and from SQLite (where pages read bodies by
// EventID).
func TestPagesAreTheWhole(t *testing.T) {
	scopes := map[string]materialize.Scope{
		"cluster":       {ClusterID: "c1"},
		"shop":          {ClusterID: "c1", Namespaces: []string{"shop"}},
		"shop and web":  {ClusterID: "c1", Namespaces: []string{"shop", "web"}},
		"configmaps":    {ClusterID: "c1", Resources: []schema.GroupResource{{Resource: "configmaps"}}},
		"nodes":         {ClusterID: "c1", Resources: []schema.GroupResource{{Resource: "nodes"}}},
		"not recorded":  {ClusterID: "c1", Namespaces: []string{"absent"}},
		"other cluster": {ClusterID: "c2"},
	}
	for storeName, open := range pageStores {
		t.Run(storeName, func(t *testing.T) {
			m := pagedJournal(t, open(t)).materializer()
			ctx := context.Background()
			for scopeName, scope := range scopes {
				for _, when := range []time.Time{at(0.5), at(1), at(3.2), at(5.5), at(60)} {
					want, err := m.Snapshot(ctx, scope, when)
					if err != nil {
						t.Fatal(err)
					}
					want.CreatedAt = time.Time{}
					for _, limit := range []int{1, 2, 7, 1000} {
						got, pages := snapshotPages(t, m, scope, when, limit)
						got.CreatedAt = time.Time{}
						sameJSON(t, fmt.Sprintf("%s at %v, pages of %d", scopeName, when, limit), got, want)
						if min := max(1, (len(want.Objects)+limit-1)/limit); pages != min {
							t.Errorf("%s at %v: %d objects in %d pages of %d, want %d", scopeName, when, len(want.Objects), pages, limit, min)
						}
					}
				}
				for _, w := range [][2]time.Time{{at(0.5), at(3)}, {at(1), at(4.8)}, {at(2), at(5.5)}, {at(1.5), at(60)}} {
					want, err := m.Diff(ctx, scope, w[0], w[1])
					if err != nil {
						t.Fatal(err)
					}
					for _, limit := range []int{1, 3, 1000} {
						got := diffPages(t, m, scope, w[0], w[1], limit)
						sameJSON(t, fmt.Sprintf("%s diff %v..%v, pages of %d", scopeName, w[0], w[1], limit), got, want)
					}
				}
			}
		})
	}
}

// A page that lacks some of a snapshot's objects is not saved; a page that
// holds all of them is; a page of no objects is an error naming the size.
func TestSnapshotPageSave(t *testing.T) {
	j := pagedJournal(t, newJournal(t).store)
	m := j.materializer()
	ctx := context.Background()
	scope := materialize.Scope{ClusterID: "c1", Namespaces: []string{"web"}}
	first, err := m.SnapshotPage(ctx, scope, at(60), materialize.Page{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if first.Next == nil || len(first.Objects) != 2 {
		t.Fatalf("first page: %d objects, next %v; want 2 and more to follow", len(first.Objects), first.Next)
	}
	if err := m.SaveSnapshot(ctx, first, "part"); !errors.Is(err, materialize.ErrInvalidArgument) {
		t.Fatalf("saving the first page: %v, want ErrInvalidArgument", err)
	}
	last, err := m.SnapshotPage(ctx, scope, at(60), materialize.Page{After: first.Next, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if last.Next != nil || len(last.Objects) == 0 {
		t.Fatalf("last page: %d objects, next %v", len(last.Objects), last.Next)
	}
	if err := m.SaveSnapshot(ctx, last, "rest"); !errors.Is(err, materialize.ErrInvalidArgument) {
		t.Fatalf("saving the last page: %v, want ErrInvalidArgument", err)
	}
	whole, err := m.SnapshotPage(ctx, scope, at(60), materialize.Page{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SaveSnapshot(ctx, whole, "whole"); err != nil {
		t.Fatalf("saving a page of every object: %v", err)
	}
	got, err := m.GetSnapshot(ctx, whole.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Objects) != len(first.Objects)+len(last.Objects) {
		t.Errorf("saved %d objects, want %d", len(got.Objects), len(first.Objects)+len(last.Objects))
	}
	for _, limit := range []int{0, -1} {
		if _, err := m.SnapshotPage(ctx, scope, at(60), materialize.Page{Limit: limit}); !errors.Is(err, materialize.ErrInvalidArgument) {
			t.Errorf("SnapshotPage of limit %d: %v, want ErrInvalidArgument", limit, err)
		}
		if _, err := m.DiffPage(ctx, scope, at(1), at(60), materialize.Page{Limit: limit}); !errors.Is(err, materialize.ErrInvalidArgument) {
			t.Errorf("DiffPage of limit %d: %v, want ErrInvalidArgument", limit, err)
		}
	}
}

// countingStore counts the AliveAt queries, each a pass over a stream's
// objects.
type countingStore struct {
	storage.Store
	alive atomic.Int64
}

func (s *countingStore) AliveAt(ctx context.Context, q storage.AliveQuery) ([]event.Record, error) {
	s.alive.Add(1)
	return s.Store.AliveAt(ctx, q)
}

// The pages after a first read only their own bodies, from the state the
// first page read, so they agree with it even when the journal learns
// more in between; a state forgotten (after pageStateTTL, or beyond the
// last few) is read again.
func TestPagesAfterTheFirst(t *testing.T) {
	store := &countingStore{Store: newJournal(t).store}
	j := pagedJournal(t, store)
	clk := clocktesting.NewFakePassiveClock(at(61))
	m := j.materializer(materialize.WithClock(clk))
	ctx := context.Background()
	scope := materialize.Scope{ClusterID: "c1"}
	when := at(70) // after every stream's evidence: not complete

	first, err := m.SnapshotPage(ctx, scope, when, materialize.Page{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if first.Complete || first.Next == nil {
		t.Fatalf("first page: complete %v, next %v; want incomplete, more pages", first.Complete, first.Next)
	}
	read := store.alive.Load()
	// The journal learns more before the next pages: a new object and
	// evidence that covers the time.
	nodes := j.stream("", "v1", "nodes", "")
	j.watch(nodes, event.Added, obj{kind: "Node", name: "node-9", uid: "un9"}, at(65))
	for _, st := range []event.Stream{j.stream("", "v1", "configmaps", ""), j.stream("apps", "v1", "deployments", "shop"), nodes} {
		j.progress(st, at(80))
	}
	page := materialize.Page{After: first.Next, Limit: 5}
	var names []string
	for page.After != nil {
		next, err := m.SnapshotPage(ctx, scope, when, page)
		if err != nil {
			t.Fatal(err)
		}
		if next.Complete != first.Complete || !reflect.DeepEqual(next.Watermarks, first.Watermarks) {
			t.Fatalf("a later page says complete %v, watermarks %+v: want the first page's %v %+v", next.Complete, next.Watermarks, first.Complete, first.Watermarks)
		}
		for _, o := range next.Objects {
			names = append(names, o.Ref.Name)
			if len(o.Object) == 0 {
				t.Fatalf("%s without its body", o.Ref.Name)
			}
		}
		page.After = next.Next
	}
	if n := store.alive.Load() - read; n != 0 {
		t.Errorf("the pages after the first read the objects alive %d times, want 0", n)
	}
	if slices.Contains(names, "node-9") {
		t.Error("a later page holds node-9, added after the first page was read")
	}

	// Forgotten after the TTL: read again, and now knowing node-9.
	clk.SetTime(at(61).Add(2 * time.Minute))
	again, err := m.SnapshotPage(ctx, scope, when, materialize.Page{After: first.Next, Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	if store.alive.Load() == read {
		t.Error("a page after the state's TTL did not read the journal again")
	}
	if !slices.ContainsFunc(again.Objects, func(o materialize.SnapshotObject) bool { return o.Ref.Name == "node-9" }) {
		t.Error("a page read again lacks node-9")
	}

	// Beyond the last few states remembered, the oldest is read again.
	clk.SetTime(at(90))
	var firsts []*materialize.Snapshot
	for i := range 5 {
		p, err := m.SnapshotPage(ctx, scope, at(60+float64(i)/10), materialize.Page{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		firsts = append(firsts, p)
	}
	for _, i := range []int{4, 3, 2, 1, 0} {
		want := i == 0
		before := store.alive.Load()
		if _, err := m.SnapshotPage(ctx, scope, at(60+float64(i)/10), materialize.Page{After: firsts[i].Next, Limit: 1}); err != nil {
			t.Fatal(err)
		}
		if got := store.alive.Load() != before; got != want {
			t.Errorf("snapshot %d of 5: read again %v, want %v", i, got, want)
		}
	}

	// A diff's pages, too.
	d, err := m.DiffPage(ctx, scope, at(1), at(4.8), materialize.Page{Limit: 2})
	if err != nil || d.Next == nil {
		t.Fatalf("first page of the diff: %v, next %v", err, d.Next)
	}
	before := store.alive.Load()
	if _, err := m.DiffPage(ctx, scope, at(1), at(4.8), materialize.Page{After: d.Next, Limit: 2}); err != nil {
		t.Fatal(err)
	}
	if n := store.alive.Load() - before; n != 0 {
		t.Errorf("the diff's second page read the objects alive %d times, want 0", n)
	}
}

// Retention compacting the journal between two pages removes versions a
// remembered state holds: the later page reads the state again, and tells
// what the journal knows now (here: the time is no longer covered),
// instead of failing on a body that is gone.
func TestPagesAfterCompaction(t *testing.T) {
	for _, kind := range []string{"snapshot/memory", "snapshot/sqlite", "diff/memory", "diff/sqlite"} {
		t.Run(kind, func(t *testing.T) {
			kind, storeName, _ := strings.Cut(kind, "/")
			j := pagedJournal(t, pageStores[storeName](t))
			m := j.materializer()
			ctx := context.Background()
			// web's objects at 3.2: cm-01, cm-04, cm-07, cm-10, …; cm-10
			// is touched at 3.6, so compaction at 60 removes its version
			// of 3.2 (the baseline's), which the second page returns.
			scope := materialize.Scope{ClusterID: "c1", Namespaces: []string{"web"}}
			var next *storage.ObjectID
			if kind == "snapshot" {
				first, err := m.SnapshotPage(ctx, scope, at(3.2), materialize.Page{Limit: 2})
				if err != nil || first.Next == nil || !first.Complete {
					t.Fatalf("first page: %v, next %v, complete %v", err, first.Next, first.Complete)
				}
				next = first.Next
			} else {
				first, err := m.DiffPage(ctx, scope, at(1), at(3.2), materialize.Page{Limit: 1})
				if err != nil || first.Next == nil {
					t.Fatalf("first page: %v, next %v", err, first.Next)
				}
				next = first.Next
			}
			if _, err := j.store.Compact(ctx, at(60)); err != nil {
				t.Fatal(err)
			}
			if kind == "snapshot" {
				got, err := m.SnapshotPage(ctx, scope, at(3.2), materialize.Page{After: next, Limit: 2})
				if err != nil {
					t.Fatalf("the page after compaction: %v", err)
				}
				if got.Complete {
					t.Errorf("the page after compaction says complete; the time is no longer covered: %+v", got.Missing)
				}
				return
			}
			got, err := m.DiffPage(ctx, scope, at(1), at(3.2), materialize.Page{After: next, Limit: 1})
			if err != nil {
				t.Fatalf("the page after compaction: %v", err)
			}
			if !got.HasGaps {
				t.Errorf("the diff's page after compaction says no gaps; its ends are no longer covered")
			}
		})
	}
}

// Pages read at once by several callers — the query API's requests — share
// the remembered states without changing them: each caller's pages put
// together are the whole answer (run under the race detector by make
// test).
func TestPagesConcurrently(t *testing.T) {
	m := pagedJournal(t, newJournal(t).store).materializer()
	ctx := context.Background()
	scope := materialize.Scope{ClusterID: "c1"}
	want, err := m.Snapshot(ctx, scope, at(3.2))
	if err != nil {
		t.Fatal(err)
	}
	want.CreatedAt = time.Time{}
	wantDiff, err := m.Diff(ctx, scope, at(1), at(4.8))
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for c := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if c%2 == 0 {
				got, _ := snapshotPages(t, m, scope, at(3.2), 2+c)
				got.CreatedAt = time.Time{}
				sameJSON(t, fmt.Sprintf("caller %d's snapshot", c), got, want)
				return
			}
			sameJSON(t, fmt.Sprintf("caller %d's diff", c), diffPages(t, m, scope, at(1), at(4.8), c), wantDiff)
		}()
	}
	wg.Wait()
}
