package storagetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// Run runs the conformance suite against the backend newStore makes. Each
// subtest calls newStore for a fresh, empty store, and closes it (a second
// Close by the test's cleanup is allowed to fail with storage.ErrClosed).
//
// The subtests can be selected with go test -run 'TestX/Name', where Name
// is one of: AppendOrder, Dedup, InvalidRecords, Checkpoint, StreamStatus,
// Records, RecordsUntil, ObjectHistory, LatestAt, AliveAt,
// EventByResourceVersion, OpenBaselines, Correlations, Documents, Stats,
// Copies, Compact, CompactUntil, CompactMarkerOrder, CompactResources (every
// backend implements storage.ResourceCompactor), Timelines, Readers,
// ConcurrentReaders, ConcurrentAppends, RestoreStreams (every backend
// implements storage.StreamRestorer), Bulk (for a storage.BulkAppender),
// Closed.
func Run(t *testing.T, newStore func(t *testing.T) storage.Store) {
	t.Helper()
	tests := []struct {
		name string
		fn   func(t *testing.T, s storage.Store)
	}{
		{"AppendOrder", testAppendOrder},
		{"Dedup", testDedup},
		{"InvalidRecords", testInvalidRecords},
		{"Checkpoint", testCheckpoint},
		{"StreamStatus", testStreamStatus},
		{"Records", testRecords},
		{"RecordsUntil", testRecordsUntil},
		{"RecordsByObject", testRecordsByObject},
		{"ObjectHistory", testObjectHistory},
		{"LatestAt", testLatestAt},
		{"AliveAt", testAliveAt},
		{"EventByResourceVersion", testEventByResourceVersion},
		{"OpenBaselines", testOpenBaselines},
		{"Correlations", testCorrelations},
		{"GetMany", testGetMany},
		{"Documents", testDocuments},
		{"Stats", testStats},
		{"Copies", testCopies},
		{"FilledHash", testFilledHash},
		{"Compact", testCompact},
		{"CompactUntil", testCompactUntil},
		{"CompactMarkerOrder", testCompactMarkerOrder},
		{"CompactResources", testCompactResources},
		{"Timelines", testTimelines},
		{"Readers", testReaders},
		{"ConcurrentReaders", testConcurrentReaders},
		{"ConcurrentAppends", testConcurrentAppends},
		{"RestoreStreams", testRestoreStreams},
		{"Bulk", func(t *testing.T, s storage.Store) {
			ref := newStore(t) // the same batches, one Append each
			t.Cleanup(func() { _ = ref.Close() })
			testBulk(t, s, ref)
		}},
		{"Closed", testClosed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newStore(t)
			if s == nil {
				t.Fatal("newStore returned nil")
			}
			t.Cleanup(func() { _ = s.Close() })
			tc.fn(t, s)
		})
	}
}

// The streams of the fixtures: configmaps of namespace shop, configmaps of
// all namespaces (which overlaps the first), deployments of shop, and a
// stream of another cluster.
var (
	cmShop     = event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	cmAll      = event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps"}
	deployShop = event.Stream{ClusterID: "c1", Group: "apps", Version: "v1", Resource: "deployments", Namespace: "shop"}
	cmOther    = event.Stream{ClusterID: "c2", Version: "v1", Resource: "configmaps", Namespace: "shop"}
)

// t0 is the start of every fixture's timeline.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func at(seconds int) time.Time { return t0.Add(time.Duration(seconds) * time.Second) }

// cm returns a ConfigMap watch event of stream s.
func cm(s event.Stream, wt event.WatchType, ns, name, uid, rv string, when time.Time) event.Record {
	ref := Ref(s, "ConfigMap", ns, name, uid, rv)
	return Event(s, wt, ref, ConfigMap(ns, name, uid, rv, map[string]string{"rv": rv, "key": "value-" + name}), when)
}

// cmItem returns a ConfigMap list item of stream s.
func cmItem(s event.Stream, ns, name, uid, rv string) Item {
	return Item{Ref: Ref(s, "ConfigMap", ns, name, uid, rv), Object: ConfigMap(ns, name, uid, rv, map[string]string{"rv": rv})}
}

func deploy(wt event.WatchType, name, uid, rv string, replicas int, when time.Time) event.Record {
	ref := Ref(deployShop, "Deployment", "shop", name, uid, rv)
	return Event(deployShop, wt, ref, Deployment("shop", name, uid, rv, replicas, "registry.example/app:"+rv), when)
}

func objectID(rec event.Record) storage.ObjectID { return storage.ObjectIDOf(rec) }

func mustAppend(t *testing.T, s storage.Store, recs ...event.Record) storage.AppendResult {
	t.Helper()
	res, err := s.Append(context.Background(), recs)
	if err != nil {
		t.Fatalf("Append(%d records): %v", len(recs), err)
	}
	if len(res.Seqs) != len(recs) {
		t.Fatalf("Append returned %d seqs for %d records", len(res.Seqs), len(recs))
	}
	return res
}

func eventIDs(recs []event.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.EventID
	}
	return out
}

func allRecords(t *testing.T, s storage.Reader, q storage.Query) []event.Record {
	t.Helper()
	var out []event.Record
	for pages := 0; ; pages++ {
		p, err := s.Records(context.Background(), q)
		if err != nil {
			t.Fatalf("Records(%+v): %v", q, err)
		}
		out = append(out, p.Records...)
		if p.Next == "" {
			return out
		}
		if len(p.Records) == 0 || pages > 1_000_000 {
			t.Fatalf("Records(%+v): a page with a cursor but no records", q)
		}
		q.Cursor = p.Next
	}
}

func testAppendOrder(t *testing.T, s storage.Store) {
	var want []event.Record
	var last int64
	for b := 0; b < 5; b++ {
		var batch []event.Record
		for i := 0; i < 1+b*3; i++ {
			n := len(want)
			batch = append(batch, cm(cmShop, event.Added, "shop", fmt.Sprintf("cm-%03d", n), fmt.Sprintf("uid-%d", n), fmt.Sprint(100+n), at(n)))
			want = append(want, batch[len(batch)-1])
		}
		res := mustAppend(t, s, batch...)
		if res.Inserted != len(batch) || res.Duplicates != 0 {
			t.Fatalf("batch %d: Inserted=%d Duplicates=%d, want %d and 0", b, res.Inserted, res.Duplicates, len(batch))
		}
		for i, seq := range res.Seqs {
			if seq <= last {
				t.Fatalf("batch %d record %d: IngestSeq %d does not increase (previous %d)", b, i, seq, last)
			}
			last = seq
		}
	}
	got := allRecords(t, s, storage.Query{})
	if !slices.Equal(eventIDs(got), eventIDs(want)) {
		t.Fatalf("Records() order:\n got %v\nwant %v", eventIDs(got), eventIDs(want))
	}
	for i := 1; i < len(got); i++ {
		if got[i].IngestSeq <= got[i-1].IngestSeq {
			t.Fatalf("record %d: IngestSeq %d after %d", i, got[i].IngestSeq, got[i-1].IngestSeq)
		}
	}
	// Limit 0 means pages of 1000.
	var big []event.Record
	for i := 0; i < 1100; i++ {
		big = append(big, Checkpoint(cmAll, fmt.Sprint(i), true, at(100+i)))
	}
	mustAppend(t, s, big...)
	p, err := s.Records(context.Background(), storage.Query{StreamID: cmAll.ID(), WithoutBodies: true})
	if err != nil || len(p.Records) != 1000 || p.Next == "" {
		t.Fatalf("Records with Limit 0: %d records, Next %q, err %v; want a page of 1000 and a cursor", len(p.Records), p.Next, err)
	}
	desc := allRecords(t, s, storage.Query{StreamID: cmShop.ID(), Descending: true, Limit: 4})
	if len(desc) != len(want) || desc[0].EventID != want[len(want)-1].EventID || desc[len(desc)-1].EventID != want[0].EventID {
		t.Fatalf("descending pages: got %d records starting %s", len(desc), desc[0].EventID)
	}
}

func testDedup(t *testing.T, s storage.Store) {
	a := cm(cmShop, event.Added, "shop", "a", "u1", "10", at(1))
	m := cm(cmShop, event.Modified, "shop", "a", "u1", "11", at(2))
	res := mustAppend(t, s, a, m, a)
	if res.Inserted != 2 || res.Duplicates != 1 {
		t.Fatalf("same EventID twice in one batch: Inserted=%d Duplicates=%d, want 2 and 1", res.Inserted, res.Duplicates)
	}
	if res.Seqs[2] != res.Seqs[0] || res.Seqs[1] == res.Seqs[0] {
		t.Fatalf("seqs %v: the duplicate must get the first copy's seq", res.Seqs)
	}
	d := cm(cmShop, event.Deleted, "shop", "a", "u1", "12", at(3))
	res2 := mustAppend(t, s, m, d, a)
	if res2.Inserted != 1 || res2.Duplicates != 2 {
		t.Fatalf("across batches: Inserted=%d Duplicates=%d, want 1 and 2", res2.Inserted, res2.Duplicates)
	}
	if res2.Seqs[0] != res.Seqs[1] || res2.Seqs[2] != res.Seqs[0] {
		t.Fatalf("across batches: seqs %v, want existing %d and %d", res2.Seqs, res.Seqs[1], res.Seqs[0])
	}
	if res2.Seqs[1] <= res.Seqs[1] {
		t.Fatalf("new record seq %d not after %d", res2.Seqs[1], res.Seqs[1])
	}
	// A duplicate with a different body is still the same event: the
	// first copy stays.
	changed := a
	changed.Object = ConfigMap("shop", "a", "u1", "10", map[string]string{"other": "body"})
	changed.ObjectHash = event.ObjectHash(changed.Object)
	res3 := mustAppend(t, s, changed)
	if res3.Duplicates != 1 || res3.Seqs[0] != res.Seqs[0] {
		t.Fatalf("duplicate with another body: %+v", res3)
	}
	got := allRecords(t, s, storage.Query{})
	if len(got) != 3 {
		t.Fatalf("stored %d records, want 3", len(got))
	}
	if string(got[0].Object) != string(a.Object) {
		t.Fatal("the first copy's body was replaced by a duplicate's")
	}
	st, err := s.StreamStatus(context.Background(), cmShop.ID())
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != 3 {
		t.Fatalf("StreamStatus.Records = %d, want 3 (duplicates are not counted)", st.Records)
	}
}

func testInvalidRecords(t *testing.T, s storage.Store) {
	ctx := context.Background()
	valid := cm(cmShop, event.Added, "shop", "ok", "u1", "10", at(1))
	mustAppend(t, s, valid)
	before, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	base := func() event.Record { return cm(cmAll, event.Modified, "web", "x", "u9", "20", at(5)) }
	cases := map[string]func() event.Record{
		"empty EventID":     func() event.Record { r := base(); r.EventID = ""; return r },
		"unknown type":      func() event.Record { r := base(); r.Type = "bogus"; return r },
		"zero ObservedAt":   func() event.Record { r := base(); r.ObservedAt = time.Time{}; return r },
		"event no stream":   func() event.Record { r := base(); r.StreamID = ""; return r },
		"bookmark as event": func() event.Record { r := base(); r.WatchType = event.Bookmark; return r },
		"event no name":     func() event.Record { r := base(); r.Resource.Name = ""; return r },
		"hash not of body":  func() event.Record { r := base(); r.ObjectHash = event.ObjectHash([]byte("other")); return r },
		"inferred on MODIFIED": func() event.Record {
			r := base()
			r.Synthetic = true
			r.Inferred = &event.InferredDeletion{From: at(1), To: at(5), BaselineID: "b", Reason: "absent from relist"}
			return r
		},
		"stream of another cluster": func() event.Record { r := base(); r.ClusterID = "c2"; return r },
		"baseline no payload": func() event.Record {
			r := BaselineEnd(cmAll, "b1", at(5), "20", 0)
			r.Baseline = nil
			return r
		},
		"gap no payload": func() event.Record {
			r := Gap(cmAll, at(1), at(5), "410", "10")
			r.Gap = nil
			return r
		},
		"checkpoint no payload": func() event.Record {
			r := Checkpoint(cmAll, "20", true, at(5))
			r.Checkpoint = nil
			return r
		},
		"coverage no payload": func() event.Record {
			r := CoverageChange(cmAll, false, "403", 403, at(5))
			r.Coverage = nil
			return r
		},
		"snapshot no payload": func() event.Record {
			r := Document(event.TypeSnapshot, "c1", "snap-1", "", at(5), true, []byte(`{}`))
			r.Saved = nil
			return r
		},
		"correlation no payload": func() event.Record {
			r := Correlation(valid, "audit-1", "alice", at(5))
			r.Audit = nil
			return r
		},
	}
	for _, name := range sortedKeys(cases) {
		t.Run(name, func(t *testing.T) {
			good := cm(cmAll, event.Added, "web", "y", "u8", "19", at(4))
			bad := cases[name]()
			for _, batch := range [][]event.Record{{good, bad}, {bad, good}} {
				_, err := s.Append(ctx, batch)
				if !errors.Is(err, storage.ErrInvalidRecord) {
					t.Fatalf("Append: err = %v, want ErrInvalidRecord", err)
				}
			}
			after, err := s.Stats(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if after.Records != before.Records {
				t.Fatalf("a rejected batch stored records: %d → %d", before.Records, after.Records)
			}
			if _, err := s.Get(ctx, good.EventID); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("the valid record of a rejected batch: Get err = %v, want ErrNotFound", err)
			}
			if _, err := s.StreamStatus(ctx, cmAll.ID()); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("a rejected batch created its stream: err = %v", err)
			}
		})
	}
}

func testCheckpoint(t *testing.T, s storage.Store) {
	ctx := context.Background()
	id := cmShop.ID()
	status := func() storage.StreamStatus {
		t.Helper()
		st, err := s.StreamStatus(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	// A baseline's items do not move the checkpoint; its end does.
	recs := Baseline(cmShop, "b1", at(1), "100", []Item{cmItem(cmShop, "shop", "a", "ua", "90"), cmItem(cmShop, "shop", "b", "ub", "95")})
	mustAppend(t, s, recs[:len(recs)-1]...)
	if st := status(); st.CheckpointRV != "" || st.OpenBaselineID != "b1" {
		t.Fatalf("after baseline items: CheckpointRV=%q OpenBaselineID=%q, want \"\" and b1", st.CheckpointRV, st.OpenBaselineID)
	}
	mustAppend(t, s, recs[len(recs)-1])
	if st := status(); st.CheckpointRV != "100" || !st.CheckpointAt.Equal(at(1)) {
		t.Fatalf("after baseline end: CheckpointRV=%q at %v, want 100 at %v", st.CheckpointRV, st.CheckpointAt, at(1))
	}
	// A bookmark moves it.
	mustAppend(t, s, Checkpoint(cmShop, "105", true, at(2)))
	if st := status(); st.CheckpointRV != "105" || !st.CheckpointAt.Equal(at(2)) {
		t.Fatalf("after bookmark: CheckpointRV=%q, want 105", st.CheckpointRV)
	}
	// In a batch, the last record carrying progress wins; synthetic ones
	// (an inferred deletion) never carry it, even when they come last.
	a := cm(cmShop, event.Modified, "shop", "a", "ua", "110", at(3))
	ck := Checkpoint(cmShop, "115", true, at(4))
	inferred := InferredDelete(cmShop, cm(cmShop, event.Added, "shop", "b", "ub", "120", at(4)), at(2), at(5), "b1")
	mustAppend(t, s, a, ck, inferred)
	if st := status(); st.CheckpointRV != "115" || !st.CheckpointAt.Equal(at(4)) {
		t.Fatalf("batch [event 110, checkpoint 115, inferred delete]: CheckpointRV=%q at %v, want 115 at %v", st.CheckpointRV, st.CheckpointAt, at(4))
	}
	mustAppend(t, s, cm(cmShop, event.Deleted, "shop", "a", "ua", "130", at(6)))
	if st := status(); st.CheckpointRV != "130" {
		t.Fatalf("after a real DELETED: CheckpointRV=%q, want 130", st.CheckpointRV)
	}
	// A duplicate batch does not move it back.
	mustAppend(t, s, a)
	if st := status(); st.CheckpointRV != "130" {
		t.Fatalf("after a duplicate: CheckpointRV=%q, want 130", st.CheckpointRV)
	}
	// The checkpoint is per stream.
	mustAppend(t, s, cm(cmAll, event.Added, "web", "z", "uz", "140", at(7)))
	if st := status(); st.CheckpointRV != "130" {
		t.Fatalf("another stream's event moved this checkpoint to %q", st.CheckpointRV)
	}
}

func testStreamStatus(t *testing.T, s storage.Store) {
	ctx := context.Background()
	if _, err := s.StreamStatus(ctx, cmShop.ID()); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("unknown stream: err = %v, want ErrNotFound", err)
	}
	mustAppend(t, s, Baseline(cmShop, "b1", at(1), "100", []Item{cmItem(cmShop, "shop", "a", "ua", "90")})...)
	mustAppend(t, s, cm(cmShop, event.Modified, "shop", "a", "ua", "101", at(2)))
	mustAppend(t, s, Gap(cmShop, at(2), at(10), "410 Gone", "101"))
	mustAppend(t, s, BaselineBegin(cmShop, "b2", at(11), []Item{cmItem(cmShop, "shop", "a", "ua", "101")})...)
	st, err := s.StreamStatus(ctx, cmShop.ID())
	if err != nil {
		t.Fatal(err)
	}
	want := storage.StreamStatus{
		StreamID: cmShop.ID(), Stream: cmShop, CheckpointRV: "101", CheckpointAt: at(2), Available: true,
		LastBaselineID: "b1", LastBaselineEndAt: at(1), OpenBaselineID: "b2", Gaps: 1, LastGapAt: at(10),
		FirstObservedAt: at(1), LastObservedAt: at(11), Records: 7,
	}
	want.LastSeq = st.LastSeq
	if !equalStatus(st, want) {
		t.Fatalf("StreamStatus:\n got %+v\nwant %+v", st, want)
	}
	if p, _ := s.Records(ctx, storage.Query{StreamID: cmShop.ID(), Descending: true, Limit: 1}); len(p.Records) != 1 || st.LastSeq != p.Records[0].IngestSeq {
		t.Fatalf("LastSeq = %d, want the newest record's seq", st.LastSeq)
	}
	mustAppend(t, s, BaselineEnd(cmShop, "b2", at(12), "200", 1))
	mustAppend(t, s, CoverageChange(cmShop, false, "403 Forbidden", 403, at(20)))
	st, _ = s.StreamStatus(ctx, cmShop.ID())
	if st.OpenBaselineID != "" || st.LastBaselineID != "b2" || !st.LastBaselineEndAt.Equal(at(12)) || st.Available || st.AvailabilityReason != "403 Forbidden" {
		t.Fatalf("after end and unavailable: %+v", st)
	}
	mustAppend(t, s, CoverageChange(cmShop, true, "access restored", 0, at(30)), Gap(cmShop, at(20), at(30), "unavailable", "200"))
	st, _ = s.StreamStatus(ctx, cmShop.ID())
	if !st.Available || st.AvailabilityReason != "access restored" || st.Gaps != 2 || !st.LastGapAt.Equal(at(30)) {
		t.Fatalf("after available again: %+v", st)
	}

	mustAppend(t, s, cm(cmAll, event.Added, "web", "w", "uw", "5", at(3)), cm(cmOther, event.Added, "shop", "o", "uo", "7", at(3)))
	all, err := s.Streams(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	wantIDs := []string{cmShop.ID(), cmAll.ID(), cmOther.ID()}
	slices.Sort(wantIDs)
	var gotIDs []string
	for _, st := range all {
		gotIDs = append(gotIDs, st.StreamID)
	}
	if !slices.Equal(gotIDs, wantIDs) {
		t.Fatalf("Streams(\"\") = %v, want %v", gotIDs, wantIDs)
	}
	c1, err := s.Streams(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	if len(c1) != 2 || c1[0].StreamID > c1[1].StreamID || c1[0].Stream.ClusterID != "c1" {
		t.Fatalf("Streams(c1) = %+v", c1)
	}
	if c2, _ := s.Streams(ctx, "c2"); len(c2) != 1 || c2[0].Stream != cmOther {
		t.Fatalf("Streams(c2) = %+v", c2)
	}
}

func equalStatus(a, b storage.StreamStatus) bool {
	eqt := func(x, y time.Time) bool { return x.Equal(y) }
	return a.StreamID == b.StreamID && a.Stream == b.Stream && a.CheckpointRV == b.CheckpointRV && eqt(a.CheckpointAt, b.CheckpointAt) &&
		a.Available == b.Available && a.AvailabilityReason == b.AvailabilityReason && a.LastBaselineID == b.LastBaselineID &&
		eqt(a.LastBaselineEndAt, b.LastBaselineEndAt) && a.OpenBaselineID == b.OpenBaselineID && a.Gaps == b.Gaps &&
		eqt(a.LastGapAt, b.LastGapAt) && eqt(a.FirstObservedAt, b.FirstObservedAt) && eqt(a.LastObservedAt, b.LastObservedAt) &&
		a.Records == b.Records && a.LastSeq == b.LastSeq
}
