package materialize_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/readonly"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
)

func names(snap *materialize.Snapshot) []string {
	var out []string
	for _, o := range snap.Objects {
		out = append(out, o.Ref.Resource+":"+o.Ref.ObjectKey())
	}
	return out
}

func TestSnapshotBoundaries(t *testing.T) {
	j := newOutageJournal(t)
	m := j.materializer()
	scope := materialize.Scope{ClusterID: "c1", Namespaces: []string{"shop"}}
	tests := []struct {
		name     string
		at       time.Time
		complete bool
		objects  []string
		reason   string
	}{
		{name: "before the first baseline", at: at(0.5), reason: "no complete baseline"},
		{name: "exactly at the baseline", at: at(1), complete: true, objects: []string{"configmaps:shop/a", "configmaps:shop/b"}},
		{name: "between changes", at: at(4.5), complete: true, objects: []string{"configmaps:shop/a", "configmaps:shop/c"}},
		// The outage: detected at 8, but continuity was lost at 5.
		{name: "inside the outage before detection", at: at(6), objects: []string{"configmaps:shop/a", "configmaps:shop/c"}, reason: "gap from"},
		{name: "after the relist", at: at(9), complete: true, objects: []string{"configmaps:shop/a"}},
		// The last evidence (the progress checkpoint at 60) and after it:
		// not yet observed, whatever the journal holds.
		{name: "at the last evidence", at: at(60), objects: []string{"configmaps:shop/a"}, reason: "not yet observed: evidence reaches to 2025-03-01T13:00:00Z"},
		{name: "an hour after the last evidence", at: at(120), objects: []string{"configmaps:shop/a"}, reason: "not yet observed: evidence reaches to 2025-03-01T13:00:00Z"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			snap, err := m.Snapshot(context.Background(), scope, tc.at)
			if err != nil {
				t.Fatal(err)
			}
			if snap.Complete != tc.complete {
				t.Fatalf("complete = %v, want %v (missing %+v)", snap.Complete, tc.complete, snap.Missing)
			}
			if got := names(snap); !slices.Equal(got, tc.objects) {
				t.Errorf("objects %v, want %v", got, tc.objects)
			}
			if len(snap.Watermarks) != 1 || snap.Watermarks[0].StreamID != j.cms.ID() || snap.Watermarks[0].Covered != tc.complete {
				t.Errorf("watermarks %+v", snap.Watermarks)
			}
			if tc.reason != "" && (len(snap.Missing) != 1 || !strings.Contains(snap.Missing[0].Reason, tc.reason) || snap.Missing[0].StreamID != j.cms.ID()) {
				t.Errorf("missing %+v, want the stream with reason %q", snap.Missing, tc.reason)
			}
			if tc.reason == "" && len(snap.Missing) != 0 {
				t.Errorf("missing %+v, want none", snap.Missing)
			}
		})
	}
}

func TestSnapshotWatermarkIsLastProgressAtOrBeforeT(t *testing.T) {
	j := newOutageJournal(t)
	m := j.materializer()
	snap, err := m.Snapshot(context.Background(), materialize.Scope{ClusterID: "c1"}, at(3.5))
	if err != nil {
		t.Fatal(err)
	}
	// Minute 3 was the ADDED of c, the journal's 3rd resourceVersion after
	// the baseline list (101) and the modification of a (102).
	want := materialize.Watermark{StreamID: j.cms.ID(), ResourceVersion: "103", ObservedAt: at(3), Covered: true}
	if len(snap.Watermarks) != 1 || snap.Watermarks[0] != want {
		t.Fatalf("watermarks %+v, want %+v", snap.Watermarks, want)
	}
}

func TestSnapshotTwoStreamsWithDifferentCoverage(t *testing.T) {
	j := newOutageJournal(t)
	secrets := j.stream("", "v1", "secrets", "shop")
	s1 := obj{kind: "Secret", namespace: "shop", name: "s1", uid: "us1", body: map[string]any{"type": "Opaque"}}
	j.baseline(secrets, "bs", at(1), s1)
	j.progress(secrets, at(60))
	m := j.materializer()
	snap, err := m.Snapshot(context.Background(), materialize.Scope{ClusterID: "c1", Namespaces: []string{"shop"}}, at(6))
	if err != nil {
		t.Fatal(err)
	}
	if snap.Complete {
		t.Fatal("complete while the configmaps stream is in a gap")
	}
	if len(snap.Missing) != 1 || snap.Missing[0].StreamID != j.cms.ID() {
		t.Fatalf("missing %+v, want only the configmaps stream", snap.Missing)
	}
	covered := map[string]bool{}
	for _, w := range snap.Watermarks {
		covered[w.StreamID] = w.Covered
	}
	if len(covered) != 2 || !covered[secrets.ID()] || covered[j.cms.ID()] {
		t.Fatalf("watermarks %+v", snap.Watermarks)
	}
	if got, want := names(snap), []string{"configmaps:shop/a", "configmaps:shop/c", "secrets:shop/s1"}; !slices.Equal(got, want) {
		t.Errorf("objects %v, want %v", got, want)
	}

	// Restricted to secrets, the same time is complete.
	snap, err = m.Snapshot(context.Background(), materialize.Scope{ClusterID: "c1", Resources: []schema.GroupResource{{Resource: "secrets"}}}, at(6))
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Complete || !slices.Equal(names(snap), []string{"secrets:shop/s1"}) {
		t.Fatalf("secrets only: complete=%v objects %v", snap.Complete, names(snap))
	}
}

func TestSnapshotMissingResourceAndNamespace(t *testing.T) {
	j := newOutageJournal(t)
	m := j.materializer()
	scope := materialize.Scope{ClusterID: "c1", Namespaces: []string{"shop", "web"},
		Resources: []schema.GroupResource{{Resource: "configmaps"}, {Group: "apps", Resource: "deployments"}}}
	snap, err := m.Snapshot(context.Background(), scope, at(4.5))
	if err != nil {
		t.Fatal(err)
	}
	if snap.Complete {
		t.Fatal("complete though deployments and namespace web are not recorded")
	}
	var got []string
	for _, ms := range snap.Missing {
		got = append(got, fmt.Sprintf("%s|%s|%s", ms.StreamID, ms.Resource, ms.Namespace))
	}
	want := []string{"|configmaps|web", "|deployments.apps|"}
	if !slices.Equal(got, want) {
		t.Fatalf("missing %v, want %v", got, want)
	}
}

// An object recorded by a namespaced stream and an all-namespaces stream
// appears once; when the namespaced stream is in a gap and the covered
// stream saw the deletion, the object is gone.
func TestSnapshotObjectInTwoStreams(t *testing.T) {
	j := newJournal(t)
	shop := j.stream("", "v1", "configmaps", "shop")
	all := j.stream("", "v1", "configmaps", "")
	a := cm("shop", "a", "ua", map[string]any{"v": "1"})
	c := cm("shop", "c", "uc", map[string]any{"v": "1"})
	other := cm("other", "o", "uo", map[string]any{"v": "1"})
	j.baseline(shop, "s1", at(1), a, c)
	j.baseline(all, "a1", at(1), a, c, other)
	j.gap(shop, at(1), at(3))             // the namespaced stream loses continuity
	j.watch(all, event.Deleted, c, at(2)) // only the all-namespaces stream sees the deletion
	j.progress(all, at(60))
	m := j.materializer()

	snap, err := m.Snapshot(context.Background(), materialize.Scope{ClusterID: "c1", Namespaces: []string{"shop"}}, at(2.5))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := names(snap), []string{"configmaps:shop/a"}; !slices.Equal(got, want) {
		t.Fatalf("objects %v, want %v", got, want)
	}
	if snap.Objects[0].StreamID != all.ID() {
		t.Errorf("a from %s, want the covered stream %s", snap.Objects[0].StreamID, all.ID())
	}
	if snap.Complete || len(snap.Watermarks) != 2 {
		t.Errorf("complete=%v watermarks %+v: every contributing stream must be covered", snap.Complete, snap.Watermarks)
	}
	st, err := m.ObjectAt(context.Background(), idOf(shop, "c", "shop"), at(2.5))
	if err != nil {
		t.Fatal(err)
	}
	if st.Exists || !st.Covered {
		t.Fatalf("ObjectAt c: exists=%v covered=%v, want deleted and covered", st.Exists, st.Covered)
	}
}

func TestSnapshotSavedGetList(t *testing.T) {
	j := newOutageJournal(t)
	clk := clocktesting.NewFakePassiveClock(at(100))
	n := 0
	m := j.materializer(materialize.WithClock(clk), materialize.WithIDGenerator(func() string { n++; return fmt.Sprintf("snap-%d", n) }))
	ctx := context.Background()
	s1, err := m.Snapshot(ctx, materialize.Scope{ClusterID: "c1"}, at(4.5))
	if err != nil {
		t.Fatal(err)
	}
	if s1.ID != "" || s1.Name != "" {
		t.Fatalf("a computed snapshot has ID %q and name %q before it is saved", s1.ID, s1.Name)
	}
	if list, err := m.ListSnapshots(ctx, "c1"); err != nil || len(list) != 0 {
		t.Fatalf("computing a snapshot saved it: %+v, %v", list, err)
	}
	if err := m.SaveSnapshot(ctx, s1, "before outage"); err != nil {
		t.Fatal(err)
	}
	if s1.ID != "snap-1" || s1.Name != "before outage" {
		t.Fatalf("saved snapshot has ID %q and name %q", s1.ID, s1.Name)
	}
	if err := m.SaveSnapshot(ctx, s1, "again"); !errors.Is(err, materialize.ErrInvalidArgument) || s1.Name != "before outage" {
		t.Fatalf("saving a saved snapshot again: %v, name %q", err, s1.Name)
	}
	s2, err := m.Snapshot(ctx, materialize.Scope{ClusterID: "c1"}, at(6))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SaveSnapshot(ctx, s2, "during outage"); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []*materialize.Snapshot{nil, {At: at(1)}, {Scope: materialize.Scope{ClusterID: "c1"}}} {
		if err := m.SaveSnapshot(ctx, bad, "bad"); !errors.Is(err, materialize.ErrInvalidArgument) {
			t.Errorf("SaveSnapshot(%+v) = %v, want ErrInvalidArgument", bad, err)
		}
	}
	got, err := m.GetSnapshot(ctx, s1.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != "snap-1" || got.Name != "before outage" || !got.At.Equal(at(4.5)) || !got.CreatedAt.Equal(at(100)) ||
		!got.Complete || !slices.Equal(names(got), names(s1)) || string(got.Objects[0].Object) != string(s1.Objects[0].Object) {
		t.Fatalf("GetSnapshot = %+v, want %+v", got, s1)
	}
	rec, err := j.store.Get(ctx, "snap-1")
	if err != nil || rec.Type != event.TypeSnapshot || rec.Saved == nil || rec.Saved.Name != "before outage" || !rec.Saved.Complete {
		t.Fatalf("record %+v, %v", rec, err)
	}
	list, err := m.ListSnapshots(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 2 || list[0].ID != "snap-1" || list[1].ID != "snap-2" || list[1].Complete || len(list[1].Missing) != 1 ||
		list[0].Objects != nil || list[1].Objects != nil {
		t.Fatalf("list %+v", list)
	}
	if other, err := m.ListSnapshots(ctx, "c2"); err != nil || len(other) != 0 {
		t.Fatalf("other cluster: %v, %v", other, err)
	}
	if _, err := m.GetSnapshot(ctx, "nope"); !errors.Is(err, materialize.ErrNotFound) {
		t.Fatalf("GetSnapshot(nope) err %v", err)
	}
	// An event is not a snapshot.
	if _, err := m.GetSnapshot(ctx, s1.Objects[0].EventID); !errors.Is(err, materialize.ErrNotFound) {
		t.Fatalf("GetSnapshot(event) err %v", err)
	}
}

func TestSnapshotFutureIsWarned(t *testing.T) {
	j := newOutageJournal(t)
	m := j.materializer(materialize.WithClock(clocktesting.NewFakePassiveClock(at(10))))
	snap, err := m.Snapshot(context.Background(), materialize.Scope{ClusterID: "c1"}, at(20))
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Warnings) != 1 || !strings.Contains(snap.Warnings[0], "after now") {
		t.Fatalf("warnings %v", snap.Warnings)
	}
}

// Every query answers from a journal opened read-only; saving a snapshot
// fails with storage.ErrReadOnly (materialize.ErrReadOnly is that value).
func TestQueriesOnAReadOnlyStore(t *testing.T) {
	ctx := context.Background()
	w, ro := readonly.Journal(t)
	j := newOutageJournalIn(newJournalIn(t, w))
	m, err := materialize.New(ro)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := m.Snapshot(ctx, materialize.Scope{ClusterID: "c1"}, at(2))
	if err != nil || !snap.Complete || !slices.Equal(names(snap), []string{"configmaps:shop/a", "configmaps:shop/b"}) {
		t.Fatalf("snapshot on a read-only store: %v, %+v", err, snap)
	}
	if err := m.SaveSnapshot(ctx, snap, "x"); !errors.Is(err, storage.ErrReadOnly) || !errors.Is(err, materialize.ErrReadOnly) || snap.ID != "" {
		t.Fatalf("SaveSnapshot on a read-only store: %v, ID %q; want storage.ErrReadOnly and no ID", err, snap.ID)
	}
	if st, err := m.ObjectAt(ctx, idOf(j.cms, "a", "shop"), at(2)); err != nil || !st.Exists {
		t.Fatalf("ObjectAt on a read-only store: %v, %+v", err, st)
	}
	if h, err := m.History(ctx, idOf(j.cms, "c", "shop")); err != nil || len(h.Versions()) != 3 {
		t.Fatalf("History on a read-only store: %v, %+v", err, h)
	}
	if d, err := m.Diff(ctx, materialize.Scope{ClusterID: "c1"}, at(1), at(4.5)); err != nil || len(d.Objects) != 3 {
		t.Fatalf("Diff on a read-only store: %v, %+v", err, d)
	}
	if list, err := m.ListSnapshots(ctx, "c1"); err != nil || len(list) != 0 {
		t.Fatalf("ListSnapshots on a read-only store: %v, %+v", err, list)
	}
	if _, err := m.Snapshot(ctx, materialize.Scope{}, at(2)); !errors.Is(err, materialize.ErrInvalidArgument) {
		t.Fatalf("no ErrInvalidArgument for a scope without cluster: %v", err)
	}
}

// A stream that became unavailable (403) is not covered until a baseline
// follows its return.
func TestSnapshotUnavailableStream(t *testing.T) {
	j := newJournal(t)
	cms := j.stream("", "v1", "configmaps", "shop")
	a := cm("shop", "a", "ua", map[string]any{"v": "1"})
	j.baseline(cms, "b1", at(1), a)
	j.coverage(cms, false, at(3))
	j.coverage(cms, true, at(4))
	j.baseline(cms, "b2", at(5), a)
	j.progress(cms, at(60))
	m := j.materializer()
	for _, tc := range []struct {
		at       time.Time
		complete bool
		reason   string
	}{
		{at(2), true, ""},
		{at(3), false, "stream unavailable since"},
		{at(4.5), false, "stream unavailable since"},
		{at(5), true, ""},
	} {
		snap, err := m.Snapshot(context.Background(), materialize.Scope{ClusterID: "c1"}, tc.at)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Complete != tc.complete || len(snap.Objects) != 1 {
			t.Fatalf("at %v: complete=%v objects=%d, want %v and 1", tc.at.Sub(t0), snap.Complete, len(snap.Objects), tc.complete)
		}
		if tc.reason != "" && (len(snap.Missing) != 1 || !strings.Contains(snap.Missing[0].Reason, tc.reason)) {
			t.Fatalf("at %v: missing %+v, want %q", tc.at.Sub(t0), snap.Missing, tc.reason)
		}
	}
	d, err := m.Diff(context.Background(), materialize.Scope{ClusterID: "c1"}, at(2), at(6))
	if err != nil {
		t.Fatal(err)
	}
	if !d.HasGaps || len(d.Gaps) != 1 || d.Gaps[0].Coverage == nil || len(d.Objects) != 0 {
		t.Fatalf("diff across the outage: hasGaps=%v gaps %+v objects %d", d.HasGaps, d.Gaps, len(d.Objects))
	}
}
