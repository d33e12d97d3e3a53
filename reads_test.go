package krply_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/krply/krply"
	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
)

// noWrites is a journal whose writes fail the test: whatever runs on it
// must only read.
type noWrites struct {
	*memory.Store
	t *testing.T
}

func (s noWrites) Append(_ context.Context, recs []event.Record) (storage.AppendResult, error) {
	s.t.Helper()
	types := make([]string, len(recs))
	for i, r := range recs {
		types[i] = string(r.Type)
	}
	s.t.Errorf("a query appended %d record(s) (%s): reads never write", len(recs), strings.Join(types, ", "))
	return storage.AppendResult{}, errors.New("noWrites: append refused")
}

func (s noWrites) Compact(context.Context, time.Time) (storage.CompactResult, error) {
	s.t.Helper()
	s.t.Errorf("a query compacted the journal: reads never write")
	return storage.CompactResult{}, errors.New("noWrites: compact refused")
}

func configMapObject(ns, name, color string) *unstructured.Unstructured {
	return object("v1", "ConfigMap", ns, name, map[string]any{"data": map[string]any{"color": color}})
}

// Every query of the Journal — an object at a time, a history, a snapshot,
// a diff, a replay plan preview, the saved snapshots — leaves the journal
// as it was.
func TestQueriesNeverWrite(t *testing.T) {
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop"}}}
	c := krplytest.NewCluster(t, krplytest.WithResources("cm", "ns"), krplytest.WithObjects(ns, configMapObject("shop", "settings", "blue")))
	from := c.Mark()
	c.Modify("cm", "shop", "settings", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "green", "data", "color")
	})
	c.Create(configMapObject("shop", "extra", "red"))
	to := c.Mark()
	c.Stop()

	ctx := context.Background()
	statsBefore, err := c.Store.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	j, err := krply.NewJournal(noWrites{Store: c.Store, t: t})
	if err != nil {
		t.Fatal(err)
	}
	settings := c.ObjectID("cm", "shop", "settings")
	scope := krply.Namespaces(c.ClusterID, "shop")

	st, err := j.ObjectAt(ctx, settings, to)
	if err != nil || !st.Exists || !st.Covered {
		t.Errorf("ObjectAt: %v, %+v", err, st)
	}
	h, err := j.History(ctx, settings)
	if err != nil || len(h.Versions()) != 2 {
		t.Errorf("History: %v, %d versions, want 2", err, len(h.Versions()))
	}
	snap, err := j.Snapshot(ctx, scope, to)
	if err != nil || !snap.Complete || len(snap.Objects) != 2 || snap.ID != "" {
		t.Errorf("Snapshot: %v, %+v", err, snap)
	}
	d, err := j.Diff(ctx, scope, from, to)
	if err != nil || len(d.Objects) != 2 {
		t.Errorf("Diff: %v, %+v", err, d)
	}
	first, err := j.SnapshotPage(ctx, scope, to, krply.Page{Limit: 1})
	if err != nil || len(first.Objects) != 1 || first.Next == nil {
		t.Fatalf("SnapshotPage: %v, %+v", err, first)
	}
	if rest, err := j.SnapshotPage(ctx, scope, to, krply.Page{After: first.Next, Limit: 1}); err != nil || len(rest.Objects) != 1 || rest.Next != nil ||
		rest.Objects[0].EventID != snap.Objects[1].EventID {
		t.Errorf("SnapshotPage after %v: %v, %+v; want the snapshot's second object, the last", first.Next, err, rest)
	}
	if dp, err := j.DiffPage(ctx, scope, from, to, krply.Page{Limit: 1}); err != nil || len(dp.Objects) != 1 || dp.Next == nil {
		t.Errorf("DiffPage: %v, %+v", err, dp)
	}
	plan, err := j.Plan(ctx, krply.Source{ClusterID: c.ClusterID, Namespaces: []string{"shop"}, At: to},
		krply.Target{Namespaces: map[string]string{"shop": "shop-copy"}})
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	if len(plan.Objects) != 3 {
		t.Errorf("Plan: %d objects, want the namespace and two ConfigMaps", len(plan.Objects))
	}
	if list, err := j.ListSnapshots(ctx, c.ClusterID); err != nil || len(list) != 0 {
		t.Errorf("ListSnapshots: %v, %d snapshots, want none", err, len(list))
	}
	if _, err := j.LoadPlan(ctx, plan.ID); err == nil {
		t.Errorf("LoadPlan finds the plan preview %s: it was saved", plan.ID)
	}

	statsAfter, err := c.Store.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if statsAfter != statsBefore {
		t.Errorf("the journal changed under queries: %+v, then %+v", statsBefore, statsAfter)
	}
}
