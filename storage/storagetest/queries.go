package storagetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/journal"
)

// mixedJournal appends a small journal over three streams and two clusters
// and returns its records in append order.
func mixedJournal(t *testing.T, s storage.Store) []event.Record {
	t.Helper()
	var recs []event.Record
	recs = append(recs, Baseline(cmShop, "b1", at(1), "100", []Item{cmItem(cmShop, "shop", "a", "ua", "90")})...)
	recs = append(recs, deploy(event.Added, "web", "ud", "101", 2, at(2)))
	recs = append(recs, cm(cmShop, event.Modified, "shop", "a", "ua", "102", at(3)))
	recs = append(recs, Checkpoint(cmShop, "103", true, at(4)))
	recs = append(recs, cm(cmOther, event.Added, "shop", "a", "uo", "7", at(4)))
	recs = append(recs, Gap(cmShop, at(4), at(6), "410 Gone", "103"))
	recs = append(recs, deploy(event.Modified, "web", "ud", "104", 3, at(7)))
	recs = append(recs, cm(cmShop, event.Added, "shop", "b", "ub", "105", at(8)))
	recs = append(recs, Document(event.TypeSnapshot, "c1", "snap-1", "before", at(9), false, []byte(`{"kind":"Snapshot"}`)))
	recs = append(recs, cm(cmShop, event.Deleted, "shop", "b", "ub", "106", at(10)))
	mustAppend(t, s, recs[:5]...)
	mustAppend(t, s, recs[5:]...)
	return recs
}

func testRecords(t *testing.T, s storage.Store) {
	ctx := context.Background()
	recs := mixedJournal(t, s)
	filter := func(keep func(event.Record) bool) []string {
		var out []string
		for _, r := range recs {
			if keep(r) {
				out = append(out, r.EventID)
			}
		}
		return out
	}
	reversed := func(ids []string) []string { ids = slices.Clone(ids); slices.Reverse(ids); return ids }
	cases := []struct {
		name string
		q    storage.Query
		want []string
	}{
		{"all", storage.Query{}, filter(func(event.Record) bool { return true })},
		{"cluster", storage.Query{ClusterID: "c2"}, filter(func(r event.Record) bool { return r.ClusterID == "c2" })},
		{"stream", storage.Query{StreamID: cmShop.ID()}, filter(func(r event.Record) bool { return r.StreamID == cmShop.ID() })},
		{"stream and types", storage.Query{StreamID: cmShop.ID(), Types: []event.RecordType{event.TypeGap, event.TypeBaseline}},
			filter(func(r event.Record) bool {
				return r.StreamID == cmShop.ID() && (r.Type == event.TypeGap || r.Type == event.TypeBaseline)
			})},
		{"types", storage.Query{Types: []event.RecordType{event.TypeSnapshot, event.TypeCheckpoint}},
			filter(func(r event.Record) bool { return r.Type == event.TypeSnapshot || r.Type == event.TypeCheckpoint })},
		{"cluster and types", storage.Query{ClusterID: "c1", Types: []event.RecordType{event.TypeEvent}},
			filter(func(r event.Record) bool { return r.ClusterID == "c1" && r.Type == event.TypeEvent })},
		{"since until inclusive", storage.Query{Since: at(4), Until: at(8)},
			filter(func(r event.Record) bool { return !r.ObservedAt.Before(at(4)) && !r.ObservedAt.After(at(8)) })},
		{"descending", storage.Query{StreamID: cmShop.ID(), Descending: true},
			reversed(filter(func(r event.Record) bool { return r.StreamID == cmShop.ID() }))},
		{"descending until", storage.Query{Until: at(4), Descending: true},
			reversed(filter(func(r event.Record) bool { return !r.ObservedAt.After(at(4)) }))},
		{"unknown stream", storage.Query{StreamID: deployShop.ID() + "x"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for _, limit := range []int{0, 1, 2, 3, 100} {
				q := tc.q
				q.Limit = limit
				got := eventIDs(allRecords(t, s, q))
				if len(got) == 0 {
					got = nil
				}
				if !slices.Equal(got, tc.want) {
					t.Fatalf("limit %d:\n got %v\nwant %v", limit, got, tc.want)
				}
			}
			// A page never exceeds its limit, and the last page has no cursor.
			q := tc.q
			q.Limit = 2
			p, err := s.Records(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Records) > 2 || (len(tc.want) <= 2) != (p.Next == "") {
				t.Fatalf("first page of limit 2: %d records, Next %q, %d matching in all", len(p.Records), p.Next, len(tc.want))
			}
		})
	}
	t.Run("seq bounds", func(t *testing.T) {
		all := allRecords(t, s, storage.Query{})
		lo, hi := all[2].IngestSeq, all[7].IngestSeq
		got := allRecords(t, s, storage.Query{AfterSeq: lo, BeforeSeq: hi, Limit: 2})
		if !slices.Equal(eventIDs(got), eventIDs(all[3:7])) {
			t.Fatalf("AfterSeq/BeforeSeq: got %v, want %v", eventIDs(got), eventIDs(all[3:7]))
		}
		got = allRecords(t, s, storage.Query{AfterSeq: lo, BeforeSeq: hi, Limit: 3, Descending: true})
		want := eventIDs(all[3:7])
		slices.Reverse(want)
		if !slices.Equal(eventIDs(got), want) {
			t.Fatalf("descending AfterSeq/BeforeSeq: got %v, want %v", eventIDs(got), want)
		}
	})
	t.Run("bad cursor", func(t *testing.T) {
		for _, c := range []string{"garbage", "seq:-1", "seq:x"} {
			if _, err := s.Records(ctx, storage.Query{Cursor: c}); err == nil {
				t.Errorf("Records with cursor %q: no error", c)
			}
		}
	})
	t.Run("bodies", func(t *testing.T) {
		p, err := s.Records(ctx, storage.Query{Types: []event.RecordType{event.TypeEvent}, Limit: 1})
		if err != nil || len(p.Records) != 1 {
			t.Fatalf("Records: %v, %d records", err, len(p.Records))
		}
		if string(p.Records[0].Object) != string(recs[1].Object) || p.Records[0].ObjectHash != event.ObjectHash(recs[1].Object) {
			t.Fatal("body not returned exactly as appended")
		}
		p, _ = s.Records(ctx, storage.Query{Types: []event.RecordType{event.TypeEvent}, Limit: 1, WithoutBodies: true})
		if len(p.Records[0].Object) != 0 || p.Records[0].ObjectHash == "" {
			t.Fatalf("WithoutBodies: Object %q, ObjectHash %q; want no body and the hash", p.Records[0].Object, p.Records[0].ObjectHash)
		}
	})
	t.Run("record fields", func(t *testing.T) {
		got := allRecords(t, s, storage.Query{})
		for i := range recs {
			if !sameRecord(got[i], recs[i]) {
				t.Fatalf("record %d changed on the way:\n got %+v\nwant %+v", i, got[i], recs[i])
			}
		}
	})
}

// sameRecord compares what a store must keep of a record (all but
// IngestSeq, and time zones).
func sameRecord(a, b event.Record) bool {
	a.IngestSeq, b.IngestSeq = 0, 0
	ja, jb := canonicalJSON(a), canonicalJSON(b)
	return ja == jb
}

func canonicalJSON(r event.Record) string {
	journal.InUTC(&r)
	return string(mustJSON(r))
}

func testObjectHistory(t *testing.T, s storage.Store) {
	ctx := context.Background()
	v1 := cm(cmShop, event.Added, "shop", "a", "uid-1", "10", at(1))
	v2 := cm(cmShop, event.Modified, "shop", "a", "uid-1", "11", at(2))
	del := cm(cmShop, event.Deleted, "shop", "a", "uid-1", "12", at(3))
	re := cm(cmShop, event.Added, "shop", "a", "uid-2", "20", at(4))
	other := cm(cmShop, event.Added, "shop", "b", "uid-3", "21", at(4))
	inAll := cm(cmAll, event.Modified, "shop", "a", "uid-2", "22", at(5))
	mustAppend(t, s, v1, v2, other)
	mustAppend(t, s, del, re, inAll)
	obj := objectID(v1)
	all, err := s.ObjectHistory(ctx, obj, storage.HistoryQuery{})
	if err != nil || len(all) != 5 {
		t.Fatalf("ObjectHistory: %v, %d records", err, len(all))
	}
	cases := []struct {
		name string
		q    storage.HistoryQuery
		want []event.Record
	}{
		{"all across uids and streams", storage.HistoryQuery{}, []event.Record{v1, v2, del, re, inAll}},
		{"since", storage.HistoryQuery{Since: at(3)}, []event.Record{del, re, inAll}},
		{"until", storage.HistoryQuery{Until: at(2)}, []event.Record{v1, v2}},
		{"stream", storage.HistoryQuery{StreamID: cmAll.ID()}, []event.Record{inAll}},
		{"limit", storage.HistoryQuery{Limit: 2}, []event.Record{v1, v2}},
		{"after seq", storage.HistoryQuery{AfterSeq: all[1].IngestSeq}, []event.Record{del, re, inAll}},
		{"after seq, limit", storage.HistoryQuery{AfterSeq: all[1].IngestSeq, Limit: 2}, []event.Record{del, re}},
		{"after seq, since", storage.HistoryQuery{AfterSeq: all[0].IngestSeq, Since: at(3)}, []event.Record{del, re, inAll}},
		{"after the last", storage.HistoryQuery{AfterSeq: all[4].IngestSeq}, nil},
	}
	for _, tc := range cases {
		got, err := s.ObjectHistory(ctx, obj, tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if !slices.Equal(eventIDs(got), eventIDs(tc.want)) {
			t.Fatalf("%s: got %v, want %v", tc.name, eventIDs(got), eventIDs(tc.want))
		}
	}
	got, _ := s.ObjectHistory(ctx, obj, storage.HistoryQuery{})
	if got[3].Resource.UID != "uid-2" || got[2].WatchType != event.Deleted || string(got[0].Object) != string(v1.Object) {
		t.Fatalf("history content wrong: %+v", got)
	}
	got, _ = s.ObjectHistory(ctx, obj, storage.HistoryQuery{WithoutBodies: true})
	if len(got) != 5 || len(got[0].Object) != 0 {
		t.Fatal("WithoutBodies history returned bodies")
	}
	none, err := s.ObjectHistory(ctx, storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: "nope"}, storage.HistoryQuery{})
	if err != nil || len(none) != 0 {
		t.Fatalf("unknown object: %v, %d records", err, len(none))
	}
}

func testLatestAt(t *testing.T, s storage.Store) {
	ctx := context.Background()
	add := cm(cmShop, event.Added, "shop", "a", "ua", "10", at(10))
	mod := cm(cmShop, event.Modified, "shop", "a", "ua", "11", at(20))
	// Two records at the same ObservedAt: the later append wins.
	tie1 := cm(cmShop, event.Modified, "shop", "a", "ua", "12", at(30))
	tie2 := cm(cmShop, event.Modified, "shop", "a", "ua", "13", at(30))
	del := cm(cmShop, event.Deleted, "shop", "a", "ua", "14", at(40))
	re := cm(cmShop, event.Added, "shop", "a", "ua2", "15", at(50))
	// b is deleted by inference after a gap.
	b := cm(cmShop, event.Added, "shop", "b", "ub", "16", at(50))
	gap := Gap(cmShop, at(50), at(60), "410 Gone", "16")
	relist := Baseline(cmShop, "relist", at(61), "30", []Item{cmItem(cmShop, "shop", "a", "ua2", "15")})
	inferred := InferredDelete(cmShop, b, at(50), at(61), "relist")
	mustAppend(t, s, add, mod, tie1, tie2)
	mustAppend(t, s, del, re, b, gap)
	mustAppend(t, s, append(relist, inferred)...)
	objA, objB := objectID(add), objectID(b)
	cases := []struct {
		name string
		obj  storage.ObjectID
		at   time.Time
		want *event.Record // nil: ErrNotFound
	}{
		{"before the first record", objA, at(9), nil},
		{"exactly at the first", objA, at(10), &add},
		{"between", objA, at(15), &add},
		{"exactly at a change", objA, at(20), &mod},
		{"a nanosecond before a change", objA, at(20).Add(-time.Nanosecond), &add},
		{"tie broken by seq", objA, at(30), &tie2},
		{"after a delete", objA, at(45), &del},
		{"re-created", objA, at(55), &re},
		{"relist item is newer", objA, at(61), &relist[1]},
		{"before the inferred delete", objB, at(60), &b},
		{"after an inferred delete", objB, at(61), &inferred},
		{"long after", objB, at(1_000_000), &inferred},
		{"unknown object", storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: "zz"}, at(100), nil},
		{"other cluster", storage.ObjectID{ClusterID: "c2", Resource: "configmaps", Namespace: "shop", Name: "a"}, at(100), nil},
	}
	for _, tc := range cases {
		got, err := s.LatestAt(ctx, tc.obj, tc.at)
		if tc.want == nil {
			if !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("%s: got %v (%v), want ErrNotFound", tc.name, got.EventID, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if got.EventID != tc.want.EventID {
			t.Errorf("%s: got %s rv %s, want rv %s", tc.name, got.WatchType, got.Resource.ResourceVersion, tc.want.Resource.ResourceVersion)
		}
	}
	got, _ := s.LatestAt(ctx, objB, at(61))
	if got.Inferred == nil || !got.Synthetic || got.Inferred.Reason != "absent from relist" || string(got.Object) != string(b.Object) {
		t.Fatalf("inferred delete lost its payload: %+v", got)
	}
}

func testAliveAt(t *testing.T, s storage.Store) {
	ctx := context.Background()
	a := cm(cmShop, event.Added, "shop", "a", "ua", "10", at(1))
	b := cm(cmShop, event.Added, "shop", "b", "ub", "11", at(2))
	bDel := cm(cmShop, event.Deleted, "shop", "b", "ub", "12", at(5))
	c := cm(cmAll, event.Added, "web", "c", "uc", "13", at(3))
	aAll := cm(cmAll, event.Added, "shop", "a", "ua", "10", at(1))
	d := deploy(event.Added, "web", "ud", "14", 1, at(4))
	o := cm(cmOther, event.Added, "shop", "a", "uo", "3", at(1))
	mustAppend(t, s, a, b, aAll, c, d, o, bDel)
	cases := []struct {
		name string
		q    storage.AliveQuery
		want []event.Record
	}{
		{"stream before delete", storage.AliveQuery{StreamID: cmShop.ID(), At: at(4)}, []event.Record{a, b}},
		{"stream after delete", storage.AliveQuery{StreamID: cmShop.ID(), At: at(5)}, []event.Record{a}},
		{"stream before anything", storage.AliveQuery{StreamID: cmShop.ID(), At: at(0)}, nil},
		{"other stream", storage.AliveQuery{StreamID: cmAll.ID(), At: at(10)}, []event.Record{aAll, c}},
		{"cluster", storage.AliveQuery{ClusterID: "c1", At: at(10)}, []event.Record{a, c, d}},
		{"cluster and namespace", storage.AliveQuery{ClusterID: "c1", Namespace: "web", At: at(10)}, []event.Record{c}},
		{"cluster and resource", storage.AliveQuery{ClusterID: "c1", Group: "apps", Resource: "deployments", At: at(10)}, []event.Record{d}},
		{"cluster namespace resource at 3", storage.AliveQuery{ClusterID: "c1", Namespace: "shop", Resource: "configmaps", At: at(3)}, []event.Record{a, b}},
		{"other cluster", storage.AliveQuery{ClusterID: "c2", At: at(10)}, []event.Record{o}},
	}
	for _, tc := range cases {
		got, err := s.AliveAt(ctx, tc.q)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		gotIDs, wantIDs := eventIDs(got), eventIDs(tc.want)
		// For the cluster query an object in two streams may be answered
		// by either copy of the same event: compare objects and versions.
		if tc.q.StreamID == "" {
			gotIDs, wantIDs = versions(got), versions(tc.want)
		}
		if len(gotIDs) == 0 {
			gotIDs = nil
		}
		if len(wantIDs) == 0 {
			wantIDs = nil
		}
		if !slices.Equal(gotIDs, wantIDs) {
			t.Fatalf("%s:\n got %v\nwant %v", tc.name, gotIDs, wantIDs)
		}
	}
	got, _ := s.AliveAt(ctx, storage.AliveQuery{StreamID: cmShop.ID(), At: at(10), WithoutBodies: true})
	if len(got) != 1 || len(got[0].Object) != 0 {
		t.Fatalf("WithoutBodies: %+v", got)
	}
}

// versions names each record by object and resourceVersion.
func versions(recs []event.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		id := objectID(r)
		out[i] = fmt.Sprintf("%s/%s/%s/%s/%s@%s", id.ClusterID, id.Group, id.Resource, id.Namespace, id.Name, r.Resource.ResourceVersion)
	}
	return out
}

func testEventByResourceVersion(t *testing.T, s storage.Store) {
	ctx := context.Background()
	v1 := cm(cmShop, event.Added, "shop", "a", "uid-1", "10", at(1))
	del := cm(cmShop, event.Deleted, "shop", "a", "uid-1", "11", at(2))
	re := cm(cmShop, event.Added, "shop", "a", "uid-2", "12", at(3))
	mustAppend(t, s, v1, del, re)
	obj := objectID(v1)
	for _, tc := range []struct {
		uid, rv string
		want    *event.Record
	}{
		{"", "10", &v1}, {"uid-1", "10", &v1}, {"uid-1", "11", &del}, {"", "12", &re},
		{"uid-2", "12", &re}, {"uid-2", "10", nil}, {"", "99", nil},
	} {
		got, err := s.EventByResourceVersion(ctx, obj, tc.uid, tc.rv)
		if tc.want == nil {
			if !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("uid %q rv %q: got %s, %v; want ErrNotFound", tc.uid, tc.rv, got.EventID, err)
			}
			continue
		}
		if err != nil || got.EventID != tc.want.EventID {
			t.Fatalf("uid %q rv %q: got %s, %v; want %s", tc.uid, tc.rv, got.EventID, err, tc.want.EventID)
		}
	}
	eventByRVAfterRelists(t, s)
}

// eventByRVAfterRelists checks that EventByResourceVersion answers the
// write that made a version: the real event when there is one, however
// many relists repeat the version later; otherwise the first synthetic
// record that shows it; never an item of an open baseline.
func eventByRVAfterRelists(t *testing.T, s storage.Store) {
	ctx := context.Background()
	// b's initial baseline shows x at 5; the watch sees x change to 20 and
	// y created at 21.
	b1 := Baseline(deployShop, "b1", at(10), "6", []Item{
		{Ref: Ref(deployShop, "Deployment", "shop", "x", "ux", "5"), Object: Deployment("shop", "x", "ux", "5", 1, "app:5")},
	})
	x20 := deploy(event.Modified, "x", "ux", "20", 2, at(11))
	y21 := deploy(event.Added, "y", "uy", "21", 1, at(12))
	mustAppend(t, s, append(b1, x20, y21)...)
	// A 410, and a relist: x unchanged, z created during the gap, y
	// deleted during it (inferred).
	itemOf := func(rec event.Record) Item { return Item{Ref: rec.Resource, Object: rec.Object} }
	z30 := deploy(event.Added, "z", "uz", "30", 1, at(20))
	b2 := Baseline(deployShop, "b2", at(21), "31", []Item{itemOf(x20), itemOf(z30)})
	y21gone := InferredDelete(deployShop, y21, at(12), at(21), "b2")
	mustAppend(t, s, Gap(deployShop, at(12), at(20), "410 Gone", "21"))
	mustAppend(t, s, append(b2, y21gone)...)
	// Another gap and relist: the same versions again.
	b3 := Baseline(deployShop, "b3", at(31), "32", []Item{itemOf(x20), itemOf(z30)})
	mustAppend(t, s, Gap(deployShop, at(21), at(30), "410 Gone", "31"))
	mustAppend(t, s, b3...)
	// A relist killed mid-list shows w at 40 and x at 41.
	w40 := deploy(event.Added, "w", "uw", "40", 1, at(40))
	x41 := deploy(event.Modified, "x", "ux", "41", 3, at(40))
	mustAppend(t, s, Gap(deployShop, at(31), at(39), "410 Gone", "32"))
	mustAppend(t, s, BaselineBegin(deployShop, "killed", at(40), []Item{itemOf(w40), itemOf(x41)})...)

	for _, tc := range []struct {
		name, obj, uid, rv string
		want               *event.Record
	}{
		{"real event, not the relist items repeating it", "x", "ux", "20", &x20},
		{"real ADDED, not the inferred deletion carrying its body", "y", "", "21", &y21},
		{"seen only through relists: the first item", "z", "uz", "30", &b2[2]},
		{"seen only through the initial baseline", "x", "", "5", &b1[1]},
		{"item of an open baseline", "w", "", "40", nil},
		{"a version only an open baseline shows", "x", "ux", "41", nil},
	} {
		got, err := s.EventByResourceVersion(ctx, objectID(deploy(event.Added, tc.obj, "", "", 1, at(0))), tc.uid, tc.rv)
		if tc.want == nil {
			if !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("%s: got %s (synthetic %v, baseline %q), %v; want ErrNotFound", tc.name, got.EventID, got.Synthetic, got.BaselineID, err)
			}
			continue
		}
		if err != nil || got.EventID != tc.want.EventID {
			t.Fatalf("%s: got %s (synthetic %v, baseline %q, watch type %s), %v; want %s (synthetic %v, baseline %q)", tc.name,
				got.EventID, got.Synthetic, got.BaselineID, got.WatchType, err, tc.want.EventID, tc.want.Synthetic, tc.want.BaselineID)
		}
		if string(got.Object) != string(tc.want.Object) || got.Synthetic != tc.want.Synthetic {
			t.Fatalf("%s: the record's body or Synthetic differ from what was appended", tc.name)
		}
	}
}

func testCorrelations(t *testing.T, s storage.Store) {
	ctx := context.Background()
	a := cm(cmShop, event.Modified, "shop", "a", "ua", "10", at(1))
	b := cm(cmShop, event.Modified, "shop", "b", "ub", "11", at(2))
	ca1 := Correlation(a, "audit-1", "alice", at(3))
	ca2 := Correlation(a, "audit-2", "bob", at(4))
	cb := Correlation(b, "audit-3", "carol", at(5))
	mustAppend(t, s, a, b, ca1)
	mustAppend(t, s, ca2, cb, ca1)
	got, err := s.Correlations(ctx, []string{a.EventID, b.EventID, "unknown"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("Correlations: %d keys, want 2 (none for an unknown ID)", len(got))
	}
	if !slices.Equal(eventIDs(got[a.EventID]), eventIDs([]event.Record{ca1, ca2})) || !slices.Equal(eventIDs(got[b.EventID]), []string{cb.EventID}) {
		t.Fatalf("Correlations: %v", got)
	}
	if c := got[a.EventID][1].Audit; c.User != "bob" || c.TargetEventID != a.EventID || c.Confidence != 1 || len(c.SourceIPs) != 1 {
		t.Fatalf("correlation payload: %+v", c)
	}
	if empty, err := s.Correlations(ctx, nil); err != nil || len(empty) != 0 {
		t.Fatalf("Correlations(nil) = %v, %v", empty, err)
	}
}

func testDocuments(t *testing.T, s storage.Store) {
	ctx := context.Background()
	doc := []byte(`{"apiVersion":"krply.dev/v1alpha1","kind":"Snapshot","items":[{"name":"a"}],"x-unknown":  true}`)
	s1 := Document(event.TypeSnapshot, "c1", "snap-1", "before upgrade", at(10), true, doc)
	s2 := Document(event.TypeSnapshot, "c1", "snap-2", "", at(20), false, []byte(`{"kind":"Snapshot"}`))
	p1 := Document(event.TypePlan, "c1", "plan-1", "to sandbox", at(30), true, []byte(`{"kind":"Plan"}`))
	mustAppend(t, s, s1, cm(cmShop, event.Added, "shop", "a", "ua", "1", at(11)), s2, p1)
	snaps := allRecords(t, s, storage.Query{Types: []event.RecordType{event.TypeSnapshot}})
	if !slices.Equal(eventIDs(snaps), []string{s1.EventID, s2.EventID}) {
		t.Fatalf("snapshots listed: %v", eventIDs(snaps))
	}
	plans := allRecords(t, s, storage.Query{Types: []event.RecordType{event.TypePlan}})
	if len(plans) != 1 || plans[0].Saved.ID != "plan-1" {
		t.Fatalf("plans listed: %+v", plans)
	}
	got, err := s.Get(ctx, s1.EventID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Object) != string(doc) || got.Saved.Name != "before upgrade" || !got.Saved.Complete || !got.Saved.At.Equal(at(10)) {
		t.Fatalf("Get snapshot: %+v", got)
	}
	if _, err := s.Get(ctx, "no-such-id"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Get unknown: %v", err)
	}
}

func testStats(t *testing.T, s storage.Store) {
	ctx := context.Background()
	empty, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if empty.Records != 0 || empty.Events != 0 || empty.Bodies != 0 {
		t.Fatalf("empty store stats: %+v", empty)
	}
	body := ConfigMap("shop", "a", "ua", "1", map[string]string{"k": "v"})
	ref := Ref(cmShop, "ConfigMap", "shop", "a", "ua", "1")
	e1 := Event(cmShop, event.Added, ref, body, at(1))
	// The same body seen by another stream, and as a baseline item.
	e2 := Event(cmAll, event.Added, ref, body, at(1))
	base := Baseline(cmShop, "b1", at(2), "5", []Item{{Ref: ref, Object: body}})
	other := cm(cmShop, event.Modified, "shop", "a", "ua", "2", at(3))
	mustAppend(t, s, append([]event.Record{e1, e2, other, Checkpoint(cmShop, "2", true, at(3))}, base...)...)
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != 7 || st.Events != 4 || st.Bodies != 2 {
		t.Fatalf("Stats = %+v, want 7 records, 4 events, 2 distinct bodies", st)
	}
	if want := int64(len(body) + len(other.Object)); st.RawBodyBytes != want || st.BodyBytes <= 0 {
		t.Fatalf("RawBodyBytes = %d, want %d (each distinct body once); BodyBytes %d", st.RawBodyBytes, want, st.BodyBytes)
	}
}

// testFilledHash: a record appended with a body and no ObjectHash is
// stored with its hash filled in, as the Collector relies on (it leaves
// hashing to the store, so that a body is hashed once).
func testFilledHash(t *testing.T, s storage.Store) {
	ctx := context.Background()
	rec := cm(cmShop, event.Added, "shop", "a", "ua", "1", at(1))
	rec.ObjectHash = ""
	mustAppend(t, s, rec)
	for _, without := range []bool{false, true} {
		got, err := s.Records(ctx, storage.Query{StreamID: cmShop.ID(), WithoutBodies: without})
		if err != nil || len(got.Records) != 1 {
			t.Fatalf("Records (WithoutBodies %v) = %d records, %v; want 1", without, len(got.Records), err)
		}
		if want := event.ObjectHash(rec.Object); got.Records[0].ObjectHash != want {
			t.Fatalf("Records (WithoutBodies %v): ObjectHash %q, want %q, the hash of the body", without, got.Records[0].ObjectHash, want)
		}
	}
}

func testCopies(t *testing.T, s storage.Store) {
	ctx := context.Background()
	rec := Correlation(cm(cmShop, event.Added, "shop", "a", "ua", "1", at(1)), "audit-1", "alice", at(2))
	rec.Object = []byte(`{"note":"original"}`)
	rec.ObjectHash = event.ObjectHash(rec.Object)
	batch := []event.Record{rec}
	mustAppend(t, s, batch...)
	// The caller's batch is theirs to reuse.
	batch[0].Object[2] = 'X'
	batch[0].Audit.User = "mallory"
	batch[0].Audit.SourceIPs[0] = "0.0.0.0"
	got, err := s.Get(ctx, rec.EventID)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Object) != `{"note":"original"}` || got.Audit.User != "alice" || got.Audit.SourceIPs[0] != "192.0.2.10" {
		t.Fatalf("the store kept the caller's slices: %+v", got)
	}
	// What the store hands out is the caller's too.
	got.Object[2] = 'Y'
	got.Audit.Groups[0] = "system:masters"
	again, _ := s.Get(ctx, rec.EventID)
	if string(again.Object) != `{"note":"original"}` || again.Audit.Groups[0] != "system:authenticated" {
		t.Fatalf("a returned record shares memory with the store: %+v", again)
	}
}

func testClosed(t *testing.T, s storage.Store) {
	ctx := context.Background()
	rec := cm(cmShop, event.Added, "shop", "a", "ua", "1", at(1))
	mustAppend(t, s, rec)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	obj := objectID(rec)
	calls := map[string]func() error{
		"Append": func() error {
			_, err := s.Append(ctx, []event.Record{cm(cmShop, event.Added, "shop", "b", "ub", "2", at(2))})
			return err
		},
		"Compact": func() error { _, err := s.Compact(ctx, at(1)); return err },
		"Get":     func() error { _, err := s.Get(ctx, rec.EventID); return err },
		"GetMany": func() error { _, err := storage.GetMany(ctx, s, []string{rec.EventID}); return err },
		"Records": func() error { _, err := s.Records(ctx, storage.Query{}); return err },
		"StreamStatus": func() error {
			_, err := s.StreamStatus(ctx, cmShop.ID())
			return err
		},
		"Streams":       func() error { _, err := s.Streams(ctx, ""); return err },
		"ObjectHistory": func() error { _, err := s.ObjectHistory(ctx, obj, storage.HistoryQuery{}); return err },
		"LatestAt":      func() error { _, err := s.LatestAt(ctx, obj, at(5)); return err },
		"AliveAt": func() error {
			_, err := s.AliveAt(ctx, storage.AliveQuery{StreamID: cmShop.ID(), At: at(5)})
			return err
		},
		"EventByResourceVersion": func() error {
			_, err := s.EventByResourceVersion(ctx, obj, "", "1")
			return err
		},
		"Correlations": func() error { _, err := s.Correlations(ctx, []string{rec.EventID}); return err },
		"Stats":        func() error { _, err := s.Stats(ctx); return err },
	}
	for _, name := range sortedKeys(calls) {
		if err := calls[name](); !errors.Is(err, storage.ErrClosed) {
			t.Errorf("%s after Close: err = %v, want ErrClosed", name, err)
		}
	}
}

// testRecordsUntil checks Records bounded by time within a stream, which
// backends answer by seeking to the stream's last record observed at or
// before Until: on a journal with many records after Until, and with ties
// in ObservedAt on both sides of it, the first descending page is exactly
// the last records at or before Until, and paging yields all of them.
func testRecordsUntil(t *testing.T, s storage.Store) {
	ctx := context.Background()
	var recs []event.Record
	recs = append(recs, Baseline(cmShop, "b1", at(0), "1", []Item{cmItem(cmShop, "shop", "a", "ua", "1")})...)
	rv := 10
	next := func() string { rv++; return fmt.Sprint(rv) }
	// 200 seconds of history, three records of the stream per second (a
	// tie), a checkpoint every tenth second, and another stream's records
	// interleaved (observed earlier, appended later: streams are
	// independent).
	for sec := 1; sec <= 200; sec++ {
		for i := 0; i < 3; i++ {
			name := fmt.Sprintf("o%d", (sec*3+i)%7)
			recs = append(recs, cm(cmShop, event.Modified, "shop", name, "u"+name, next(), at(sec)))
		}
		if sec%10 == 0 {
			recs = append(recs, Checkpoint(cmShop, next(), true, at(sec)))
		}
		recs = append(recs, cm(cmOther, event.Modified, "shop", "x", "ux", next(), at(sec-1)))
	}
	for i := 0; i < len(recs); i += 50 {
		mustAppend(t, s, recs[i:min(i+50, len(recs))]...)
	}
	want := func(q storage.Query) []string {
		var out []string
		for i := len(recs) - 1; i >= 0; i-- {
			r := recs[i]
			if r.StreamID == q.StreamID && !r.ObservedAt.After(q.Until) &&
				(len(q.Types) == 0 || slices.Contains(q.Types, r.Type)) {
				out = append(out, r.EventID)
			}
		}
		return out
	}
	all := []event.RecordType{event.TypeEvent, event.TypeCheckpoint, event.TypeBaseline}
	for _, tc := range []struct {
		name  string
		until time.Time
		types []event.RecordType
	}{
		{"on a tie", at(40), nil},
		{"between seconds", at(40).Add(500 * time.Millisecond), nil},
		{"on a checkpoint with types", at(70), all},
		{"checkpoints only", at(95), []event.RecordType{event.TypeCheckpoint}},
		{"baselines only", at(150), []event.RecordType{event.TypeBaseline}},
		{"start", at(0), nil},
		{"before the stream", at(-5), all},
		{"after the end", at(500), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := storage.Query{StreamID: cmShop.ID(), Types: tc.types, Until: tc.until, Descending: true, Limit: 5, WithoutBodies: true}
			w := want(q)
			if tc.name != "before the stream" && len(w) == 0 {
				t.Fatal("fixture: no record expected")
			}
			p, err := s.Records(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if got, first := eventIDs(p.Records), w[:min(5, len(w))]; !slices.Equal(got, first) && len(got)+len(first) > 0 {
				t.Fatalf("first page:\n got %v\nwant %v", got, first)
			}
			if (len(w) > 5) != (p.Next != "") {
				t.Fatalf("first page: Next %q with %d matching records", p.Next, len(w))
			}
			got := eventIDs(allRecords(t, s, q))
			if !slices.Equal(got, w) && len(got)+len(w) > 0 {
				t.Fatalf("all pages: %d records, want %d:\n got %v\nwant %v", len(got), len(w), got, w)
			}
			// Ascending answers the same set in append order.
			q.Descending = false
			got = eventIDs(allRecords(t, s, q))
			slices.Reverse(got)
			if !slices.Equal(got, w) && len(got)+len(w) > 0 {
				t.Fatalf("ascending: %d records, want %d", len(got), len(w))
			}
		})
	}
}

// testGetMany checks storage.GetMany (the store's own when it is a
// storage.MultiGetter): more records than a statement of the SQLite store
// looks up, asked in another order than stored and with repeats, come
// back as Get returns them, in the order asked; a missing one is
// ErrNotFound naming it.
func testGetMany(t *testing.T, s storage.Store) {
	ctx := context.Background()
	var recs []event.Record
	for i := range 600 {
		recs = append(recs, cm(cmShop, event.Added, "shop", fmt.Sprintf("cm-%03d", i), fmt.Sprintf("u%d", i), fmt.Sprint(i+1), at(i)))
	}
	recs = append(recs, Document(event.TypeSnapshot, "c1", "snap-1", "saved", at(700), true, []byte(`{"objects":[]}`)))
	mustAppend(t, s, recs...)
	ids := make([]string, 0, len(recs)+2)
	for i := len(recs) - 1; i >= 0; i -= 2 { // newest first, every other one
		ids = append(ids, recs[i].EventID)
	}
	for i := len(recs) % 2; i < len(recs); i += 2 { // then the others, oldest first
		ids = append(ids, recs[i].EventID)
	}
	ids = append(ids, recs[3].EventID, recs[len(recs)-1].EventID) // repeats
	seen := map[string]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	if len(seen) != len(recs) {
		t.Fatalf("the test asks %d distinct IDs of %d records", len(seen), len(recs))
	}
	got, err := storage.GetMany(ctx, s, ids)
	if err != nil {
		t.Fatalf("GetMany of %d IDs: %v", len(ids), err)
	}
	if len(got) != len(ids) {
		t.Fatalf("GetMany of %d IDs: %d records", len(ids), len(got))
	}
	for i, id := range ids {
		want, err := s.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		if got[i].EventID != id || got[i].IngestSeq != want.IngestSeq || string(got[i].Object) != string(want.Object) ||
			got[i].Resource != want.Resource || !got[i].ObservedAt.Equal(want.ObservedAt) {
			t.Fatalf("GetMany[%d] = %s (seq %d, %s), want %s as Get gives it (seq %d, %s)", i, got[i].EventID, got[i].IngestSeq, got[i].Object, id, want.IngestSeq, want.Object)
		}
	}
	if got, err := storage.GetMany(ctx, s, nil); err != nil || len(got) != 0 {
		t.Errorf("GetMany of no IDs = %d records, %v; want none", len(got), err)
	}
	missing := "0123456789abcdef0123456789abcdef"
	_, err = storage.GetMany(ctx, s, []string{recs[0].EventID, missing, recs[1].EventID})
	if !errors.Is(err, storage.ErrNotFound) || !strings.Contains(err.Error(), missing) {
		t.Errorf("GetMany with an ID the journal lacks: %v; want ErrNotFound naming %s", err, missing)
	}
}
