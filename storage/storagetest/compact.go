package storagetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// answers returns, one per line, every answer the store gives about time
// tp: LatestAt of each object (a deletion and "not found" both read
// "absent"), AliveAt per stream and per cluster scope, CoverageAt per stream
// and ObjectHistory since tp.
// appendSim appends the simulated journal of seed (400 batches) to s and
// returns its records, its objects in a stable order, and its streams.
func appendSim(t *testing.T, s storage.Store, seed uint64) ([]event.Record, []storage.ObjectID, []event.Stream) {
	t.Helper()
	var all []event.Record
	for _, b := range newSim(seed).journal(400) {
		mustAppend(t, s, b...)
		all = append(all, b...)
	}
	objSet := map[storage.ObjectID]bool{}
	for _, r := range all {
		if r.IsObjectChange() {
			objSet[objectID(r)] = true
		}
	}
	objs := make([]storage.ObjectID, 0, len(objSet))
	for o := range objSet {
		objs = append(objs, o)
	}
	sort.Slice(objs, func(i, j int) bool { return fmt.Sprint(objs[i]) < fmt.Sprint(objs[j]) })
	return all, objs, []event.Stream{cmShop, cmAll, deployShop}
}

// coveredAnswers returns LatestAt of every object at tp, and AliveAt of
// every stream at tp, keyed by object or stream; given was, only those
// whose streams all say they are covered at tp (of an object: the streams
// that hold its resource and namespace) and that was holds.
func coveredAnswers(t *testing.T, s storage.Reader, objs []storage.ObjectID, streams []event.Stream, tp time.Time, was map[string]string) map[string]string {
	t.Helper()
	ctx := context.Background()
	covered := map[string]bool{}
	for _, st := range streams {
		c, err := storage.CoverageAt(ctx, s, st.ID(), tp)
		if err != nil {
			t.Fatalf("CoverageAt: %v", err)
		}
		covered[st.ID()] = c.Covered
	}
	out := map[string]string{}
	keep := func(key string) bool {
		if was == nil {
			return true
		}
		_, ok := was[key]
		return ok
	}
	for _, obj := range objs {
		all, some := true, false
		for _, st := range streams {
			if st.ClusterID == obj.ClusterID && st.Resource == obj.Resource && (st.Namespace == "" || st.Namespace == obj.Namespace) {
				some = true
				all = all && covered[st.ID()]
			}
		}
		key := fmt.Sprintf("%s/%s/%s LatestAt", obj.Resource, obj.Namespace, obj.Name)
		if was != nil && (!some || !all) || !keep(key) {
			continue
		}
		rec, err := s.LatestAt(ctx, obj, tp)
		switch {
		case errors.Is(err, storage.ErrNotFound) || err == nil && rec.WatchType == event.Deleted:
			out[key] = "absent"
		case err != nil:
			t.Fatalf("LatestAt: %v", err)
		default:
			out[key] = rec.EventID
		}
	}
	for _, st := range streams {
		key := st.ID() + " AliveAt"
		if was != nil && !covered[st.ID()] || !keep(key) {
			continue
		}
		alive, err := s.AliveAt(ctx, storage.AliveQuery{StreamID: st.ID(), At: tp})
		if err != nil {
			t.Fatalf("AliveAt: %v", err)
		}
		out[key] = strings.Join(eventIDs(alive), ",")
	}
	return out
}

func answers(t *testing.T, s storage.Reader, objs []storage.ObjectID, streams []event.Stream, tp time.Time) []string {
	t.Helper()
	ctx := context.Background()
	var out []string
	stamp := tp.UTC().Format(time.RFC3339Nano)
	for _, obj := range objs {
		name := fmt.Sprintf("%s %s/%s/%s", stamp, obj.Resource, obj.Namespace, obj.Name)
		rec, err := s.LatestAt(ctx, obj, tp)
		switch {
		case errors.Is(err, storage.ErrNotFound) || err == nil && rec.WatchType == event.Deleted:
			out = append(out, name+" LatestAt absent")
		case err != nil:
			t.Fatalf("LatestAt: %v", err)
		default:
			out = append(out, name+" LatestAt "+rec.EventID)
		}
		hist, err := s.ObjectHistory(ctx, obj, storage.HistoryQuery{Since: tp, WithoutBodies: true})
		if err != nil {
			t.Fatalf("ObjectHistory: %v", err)
		}
		out = append(out, name+" history "+strings.Join(eventIDs(hist), ","))
	}
	for _, st := range streams {
		alive, err := s.AliveAt(ctx, storage.AliveQuery{StreamID: st.ID(), At: tp})
		if err != nil {
			t.Fatalf("AliveAt: %v", err)
		}
		out = append(out, fmt.Sprintf("%s %s AliveAt %s", stamp, st.ID(), strings.Join(eventIDs(alive), ",")))
		c, err := storage.CoverageAt(ctx, s, st.ID(), tp)
		if err != nil {
			t.Fatalf("CoverageAt: %v", err)
		}
		var gaps []string
		for _, g := range c.Gaps {
			gaps = append(gaps, g.EventID)
		}
		out = append(out, fmt.Sprintf("%s %s CoverageAt covered=%v reason=%q watermark=%q at %s gaps=%v", stamp, st.ID(),
			c.Covered, c.Reason, c.Watermark, c.WatermarkAt.UTC().Format(time.RFC3339Nano), gaps))
	}
	for _, scope := range []storage.AliveQuery{
		{ClusterID: "c1"}, {ClusterID: "c1", Namespace: "shop"}, {ClusterID: "c1", Namespace: "web", Resource: "configmaps"},
		{ClusterID: "c1", Group: "apps", Resource: "deployments"},
	} {
		scope.At = tp
		alive, err := s.AliveAt(ctx, scope)
		if err != nil {
			t.Fatalf("AliveAt: %v", err)
		}
		out = append(out, fmt.Sprintf("%s %+v AliveAt %s", stamp, scope, strings.Join(versions(alive), ",")))
	}
	return out
}

func diffLines(t *testing.T, what string, before, after []string) {
	t.Helper()
	if len(before) != len(after) {
		t.Fatalf("%s: %d answers before, %d after", what, len(before), len(after))
	}
	for i := range before {
		if before[i] != after[i] {
			t.Fatalf("%s: an answer changed:\nbefore: %s\n after: %s", what, before[i], after[i])
		}
	}
}

func testCompact(t *testing.T, s storage.Store) { compactInvariants(t, s, 1) }

// compactInvariants fills s with a simulated journal, compacts it at a time
// in its middle and checks that no answer about a later time changes.
func compactInvariants(t *testing.T, s storage.Store, seed uint64) {
	ctx := context.Background()
	all, objs, streams := appendSim(t, s, seed)

	rnd := rand.New(rand.NewPCG(seed, 7))
	cut := all[len(all)/2].ObservedAt
	if seed%2 == 0 {
		cut = cut.Add(500 * time.Millisecond) // between records
	}
	// Probes: the cut itself, record times after it (boundaries), times
	// just after them, and one far in the future.
	probes := []time.Time{cut}
	for i := 0; i < 25; i++ {
		r := all[len(all)/2+rnd.IntN(len(all)-len(all)/2)]
		probes = append(probes, r.ObservedAt, r.ObservedAt.Add(time.Nanosecond))
	}
	probes = append(probes, all[len(all)-1].ObservedAt.Add(time.Hour))
	slices.SortFunc(probes, func(a, b time.Time) int { return a.Compare(b) })

	want := map[time.Time][]string{}
	for _, p := range probes {
		want[p] = answers(t, s, objs, streams, p)
	}
	// Probes before the cut: an answer there that the compacted journal
	// still says is covered must be the answer it gave before.
	var early []time.Time
	for i := 0; i < 12; i++ {
		r := all[rnd.IntN(len(all)/2)]
		if r.ObservedAt.Before(cut) {
			early = append(early, r.ObservedAt, r.ObservedAt.Add(time.Nanosecond))
		}
	}
	wantEarly := map[time.Time]map[string]string{}
	for _, p := range early {
		wantEarly[p] = coveredAnswers(t, s, objs, streams, p, nil)
	}
	statusBefore := map[string]storage.StreamStatus{}
	coveredBefore := map[string]storage.Coverage{}
	for _, st := range streams {
		statusBefore[st.ID()], _ = s.StreamStatus(ctx, st.ID())
		coveredBefore[st.ID()], _ = storage.CoverageAt(ctx, s, st.ID(), cut)
	}
	statsBefore, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}

	res, err := s.Compact(ctx, cut)
	if err != nil {
		t.Fatalf("Compact: %v", err)
	}
	statsAfter, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if statsAfter.Records >= statsBefore.Records || statsAfter.Bodies > statsBefore.Bodies || statsAfter.RawBodyBytes > statsBefore.RawBodyBytes {
		t.Fatalf("Compact did not shrink the journal: %+v → %+v", statsBefore, statsAfter)
	}
	if res.RecordsRemoved != statsBefore.Records-statsAfter.Records {
		t.Fatalf("CompactResult.RecordsRemoved = %d, Stats say %d", res.RecordsRemoved, statsBefore.Records-statsAfter.Records)
	}
	if res.BodiesRemoved != statsBefore.Bodies-statsAfter.Bodies {
		t.Fatalf("CompactResult.BodiesRemoved = %d, Stats say %d", res.BodiesRemoved, statsBefore.Bodies-statsAfter.Bodies)
	}
	for _, p := range probes {
		diffLines(t, fmt.Sprintf("after Compact(%s), at %s", cut.Format(time.RFC3339Nano), p.Format(time.RFC3339Nano)), want[p], answers(t, s, objs, streams, p))
	}
	for _, p := range early {
		for key, got := range coveredAnswers(t, s, objs, streams, p, wantEarly[p]) {
			if got != wantEarly[p][key] {
				t.Errorf("after Compact(%s), at %s (before the cut, still covered): %s: %s, was %s (seed %d)",
					cut.Format(time.RFC3339Nano), p.Format(time.RFC3339Nano), key, got, wantEarly[p][key], seed)
			}
		}
	}

	// Every record at or after the cut is still there, unchanged.
	for _, r := range all {
		if r.ObservedAt.Before(cut) {
			continue
		}
		got, err := s.Get(ctx, r.EventID)
		if err != nil {
			t.Fatalf("record at %s after the cut: %v", r.ObservedAt, err)
		}
		if !sameRecord(got, r) {
			t.Fatalf("record after the cut changed:\n got %+v\nwant %+v", got, r)
		}
	}
	// An interrupted baseline whose restart began before the cut is gone,
	// begin and items; any other is still there.
	abandoned := 0
	for i, r := range all {
		if r.Type != event.TypeBaseline || r.Baseline.Phase != event.BaselineBegin || !strings.HasPrefix(r.BaselineID, "crashed-") {
			continue
		}
		var restart event.Record
		for _, n := range all[i+1:] {
			if n.StreamID == r.StreamID && n.Type == event.TypeBaseline && n.Baseline.Phase == event.BaselineBegin {
				restart = n
				break
			}
		}
		gone := restart.EventID != "" && restart.ObservedAt.Before(cut)
		if gone {
			abandoned++
		}
		for _, item := range all[i:] {
			if item.BaselineID != r.BaselineID {
				continue
			}
			if _, err := s.Get(ctx, item.EventID); gone != errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("record of interrupted baseline %s (restarted at %s, cut %s): Get = %v, want gone=%v", r.BaselineID,
					restart.ObservedAt.Format(time.RFC3339Nano), cut.Format(time.RFC3339Nano), err, gone)
			}
		}
	}
	if abandoned == 0 {
		t.Fatalf("no interrupted baseline restarted before the cut %s: the journal does not exercise their removal", cut.Format(time.RFC3339Nano))
	}
	// A stream continuous at the cut (covered, but for evidence after the
	// cut) by a baseline that ended before it now rests on a compaction
	// baseline.
	folded := 0
	for _, st := range streams {
		before := coveredBefore[st.ID()]
		after, err := storage.CoverageAt(ctx, s, st.ID(), cut)
		if err != nil {
			t.Fatal(err)
		}
		if before.Continuous() && before.BaselineEndAt.Before(cut) {
			folded++
			end := allRecords(t, s, storage.Query{StreamID: st.ID(), Types: []event.RecordType{event.TypeBaseline}})
			found := false
			for _, r := range end {
				if r.BaselineID == after.BaselineID && r.Baseline.Phase == event.BaselineEnd && r.Baseline.Reason == "compaction" {
					found = true
				}
			}
			if !found {
				t.Fatalf("stream %s covered at the cut: no compaction baseline (coverage rests on %q)", st.ID(), after.BaselineID)
			}
		}
		status, err := s.StreamStatus(ctx, st.ID())
		if err != nil {
			t.Fatal(err)
		}
		old := statusBefore[st.ID()]
		if status.CheckpointRV != old.CheckpointRV || !status.CheckpointAt.Equal(old.CheckpointAt) || status.Available != old.Available || status.OpenBaselineID != old.OpenBaselineID {
			t.Fatalf("StreamStatus changed by Compact:\nbefore %+v\n after %+v", old, status)
		}
		if n := int64(len(allRecords(t, s, storage.Query{StreamID: st.ID(), WithoutBodies: true}))); status.Records != n {
			t.Fatalf("StreamStatus.Records = %d after Compact, the stream has %d", status.Records, n)
		}
	}
	if res.Streams != folded {
		t.Fatalf("CompactResult.Streams = %d, want %d", res.Streams, folded)
	}

	// Compacting again at the same time changes nothing that matters.
	if _, err := s.Compact(ctx, cut); err != nil {
		t.Fatalf("second Compact: %v", err)
	}
	for _, p := range probes {
		diffLines(t, "after a second Compact at the same time", want[p], answers(t, s, objs, streams, p))
	}
	// A later compaction keeps the answers after its own time.
	later := probes[len(probes)/2]
	if _, err := s.Compact(ctx, later); err != nil {
		t.Fatalf("later Compact: %v", err)
	}
	for _, p := range probes {
		if !p.Before(later) {
			diffLines(t, "after a later Compact", want[p], answers(t, s, objs, streams, p))
		}
	}
	// Appending goes on after a compaction, with larger sequence numbers.
	var maxSeq int64
	for _, r := range allRecords(t, s, storage.Query{WithoutBodies: true}) {
		maxSeq = max(maxSeq, r.IngestSeq)
	}
	res2 := mustAppend(t, s, cm(cmShop, event.Added, "shop", "late", "u-late", "99999", all[len(all)-1].ObservedAt.Add(time.Minute)))
	if res2.Inserted != 1 || res2.Seqs[0] <= maxSeq {
		t.Fatalf("append after Compact: %+v (largest seq was %d)", res2, maxSeq)
	}
}

// CompactRandom checks the compaction invariants on simulated journals from
// several seeds, each on a fresh store: for many times T' at or after the
// compaction time, LatestAt, AliveAt (per stream and per cluster scope),
// storage.CoverageAt and ObjectHistory answer the same before and after
// Compact, records at or after the compaction time are untouched, and the
// journal shrinks. Run calls it with one seed; backends may call it with
// more.
func CompactRandom(t *testing.T, newStore func(t *testing.T) storage.Store, seeds ...uint64) {
	t.Helper()
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			s := newStore(t)
			t.Cleanup(func() { _ = s.Close() })
			compactInvariants(t, s, seed)
		})
	}
}

func testConcurrentReaders(t *testing.T, s storage.Store) {
	ctx := context.Background()
	m := newSim(42)
	batches := m.journal(300)
	done := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	reader := func(kind int) {
		defer wg.Done()
		obj := storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: "cm-1"}
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			tp := t0.Add(time.Duration(i%600) * time.Second)
			switch kind {
			case 0:
				p, err := s.Records(ctx, storage.Query{StreamID: cmShop.ID(), Limit: 50})
				if err != nil {
					errs <- err
					return
				}
				for j := 1; j < len(p.Records); j++ {
					if p.Records[j].IngestSeq <= p.Records[j-1].IngestSeq {
						errs <- fmt.Errorf("page out of order: %d after %d", p.Records[j].IngestSeq, p.Records[j-1].IngestSeq)
						return
					}
				}
			case 1:
				rec, err := s.LatestAt(ctx, obj, tp)
				if err == nil && rec.ObservedAt.After(tp) {
					errs <- fmt.Errorf("LatestAt(%s) returned a record observed at %s", tp, rec.ObservedAt)
					return
				}
				if err != nil && !errors.Is(err, storage.ErrNotFound) {
					errs <- err
					return
				}
			case 2:
				alive, err := s.AliveAt(ctx, storage.AliveQuery{ClusterID: "c1", At: tp})
				if err != nil {
					errs <- err
					return
				}
				for _, r := range alive {
					if r.ObservedAt.After(tp) || r.WatchType == event.Deleted {
						errs <- fmt.Errorf("AliveAt(%s) returned %s observed at %s", tp, r.WatchType, r.ObservedAt)
						return
					}
				}
			case 3:
				if _, err := storage.CoverageAt(ctx, s, cmAll.ID(), tp); err != nil {
					errs <- err
					return
				}
				if _, err := s.Stats(ctx); err != nil {
					errs <- err
					return
				}
			}
		}
	}
	for k := 0; k < 4; k++ {
		wg.Add(1)
		go reader(k)
	}
	total := 0
	for i, b := range batches {
		if i == len(batches)/2 {
			// A compaction while readers read: it must not change what
			// they can see about later times, nor race with them.
			res, err := s.Compact(ctx, b[0].ObservedAt.Add(-time.Minute))
			if err != nil {
				close(done)
				wg.Wait()
				t.Fatalf("Compact: %v", err)
			}
			total -= int(res.RecordsRemoved)
		}
		res, err := s.Append(ctx, b)
		if err != nil {
			close(done)
			wg.Wait()
			t.Fatalf("Append: %v", err)
		}
		total += res.Inserted
	}
	close(done)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	st, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != int64(total) {
		t.Fatalf("Stats.Records = %d after concurrent reads, want %d", st.Records, total)
	}
}

// testCompactUntil checks the queries bounded by time right around a
// compaction point. Compact inserts its synthetic baseline records under
// sequence numbers it freed, observed at the watermark's time, so within
// a stream a record may follow one observed later than itself — the one
// place where ObservedAt decreases in IngestSeq order — while Records
// with a StreamID and an Until seeks by time. For times at or after the
// cut, the stream's records that Records returns bounded by Until (every
// page, oldest and newest first) — those observed at or after the cut,
// the compaction's own records aside — and the watermark (through Records,
// and storage.WatermarkReader when the store has it) are the uncompacted
// journal's; at every time, before the cut too, Records bounded by Until
// returns exactly the stream's records observed until then.
func testCompactUntil(t *testing.T, s storage.Store) {
	ctx := context.Background()
	m := newSim(1)
	var all []event.Record
	for _, b := range m.journal(400) {
		mustAppend(t, s, b...)
		all = append(all, b...)
	}
	cut := all[len(all)/2].ObservedAt
	streams := []event.Stream{cmShop, cmAll, deployShop}
	probes := map[string][]time.Time{}
	before := map[string][]string{}
	for _, st := range streams {
		var times []time.Time
		for _, r := range all {
			if r.StreamID == st.ID() && (len(times) == 0 || !r.ObservedAt.Equal(times[len(times)-1])) {
				times = append(times, r.ObservedAt)
			}
		}
		// The cut, the five times before and after it at which the
		// stream has records, a nanosecond around each, and much later.
		i := sort.Search(len(times), func(i int) bool { return !times[i].Before(cut) })
		ps := []time.Time{cut.Add(-time.Nanosecond), cut, cut.Add(time.Nanosecond), times[len(times)-1].Add(time.Hour)}
		for _, tp := range times[max(i-5, 0):min(i+5, len(times))] {
			ps = append(ps, tp.Add(-time.Nanosecond), tp, tp.Add(time.Nanosecond))
		}
		slices.SortFunc(ps, func(a, b time.Time) int { return a.Compare(b) })
		probes[st.ID()] = slices.CompactFunc(ps, time.Time.Equal)
		for _, tp := range probes[st.ID()] {
			if !tp.Before(cut) {
				before[st.ID()] = append(before[st.ID()], untilAnswers(t, s, st.ID(), tp, cut)...)
			}
		}
	}
	if _, err := s.Compact(ctx, cut); err != nil {
		t.Fatalf("Compact: %v", err)
	}
	for _, st := range streams {
		var after []string
		full := allRecords(t, s, storage.Query{StreamID: st.ID(), WithoutBodies: true})
		for _, tp := range probes[st.ID()] {
			what := fmt.Sprintf("after Compact(%s): %s at %s", cut.Format(time.RFC3339Nano), st.ID(), tp.Format(time.RFC3339Nano))
			for _, desc := range []bool{true, false} {
				var want []string
				for _, r := range full {
					if !r.ObservedAt.After(tp) {
						want = append(want, r.EventID)
					}
				}
				if desc {
					slices.Reverse(want)
				}
				got := eventIDs(allRecords(t, s, storage.Query{StreamID: st.ID(), Until: tp, Descending: desc, Limit: 2, WithoutBodies: true}))
				if !slices.Equal(got, want) {
					t.Fatalf("%s: Records until then (descending %v) = %v; the stream's records observed until then: %v", what, desc, got, want)
				}
			}
			if !tp.Before(cut) {
				after = append(after, untilAnswers(t, s, st.ID(), tp, cut)...)
			}
		}
		diffLines(t, fmt.Sprintf("after Compact(%s): %s", cut.Format(time.RFC3339Nano), st.ID()), before[st.ID()], after)
	}
}

// untilAnswers returns testCompactUntil's answers about a stream at tp, at
// or after the cut, one per line: the records Records returns bounded by
// tp that were observed at or after the cut and are not the compaction's
// (every page, both orders), and the watermarks.
func untilAnswers(t *testing.T, s storage.Store, streamID string, tp, cut time.Time) []string {
	t.Helper()
	ctx := context.Background()
	stamp := tp.UTC().Format(time.RFC3339Nano)
	var out []string
	for _, desc := range []bool{true, false} {
		var ids []string
		for _, r := range allRecords(t, s, storage.Query{StreamID: streamID, Until: tp, Descending: desc, Limit: 2, WithoutBodies: true}) {
			if !r.ObservedAt.Before(cut) && !(r.Type == event.TypeBaseline && r.Synthetic && r.Baseline.Reason == "compaction") {
				ids = append(ids, r.EventID)
			}
		}
		out = append(out, fmt.Sprintf("%s Records until, descending %v: %v", stamp, desc, ids))
	}
	c, err := storage.CoverageFrom(ctx, plainReader{s}, storage.Timeline{StreamID: streamID}, evidenceOf(t, s, streamID), tp)
	if err != nil {
		t.Fatalf("watermark through Records: %v", err)
	}
	out = append(out, fmt.Sprintf("%s watermark through Records %q at %s", stamp, c.Watermark, c.WatermarkAt.UTC().Format(time.RFC3339Nano)))
	if wr, ok := s.(storage.WatermarkReader); ok {
		rv, rvAt, err := wr.Watermark(ctx, streamID, tp)
		if err != nil {
			t.Fatalf("Watermark: %v", err)
		}
		out = append(out, fmt.Sprintf("%s Watermark %q at %s", stamp, rv, rvAt.UTC().Format(time.RFC3339Nano)))
	}
	return out
}

// testCompactMarkerOrder compacts a stream whose last records before the
// cut carry no progress and are observed after its watermark: a coverage
// change, and a synthetic deletion that belongs to no baseline (Append
// allows one; the collector writes none). The compaction's end marker
// must not take the deletion's freed sequence number: observed at the
// watermark's time, it would sit after the coverage change observed later,
// and a query bounded by a time after both, which seeks to the coverage
// change, would miss it and the watermark it carries.
func testCompactMarkerOrder(t *testing.T, s storage.Store) {
	ctx := context.Background()
	recs := Baseline(cmShop, "b1", at(1), "10", []Item{cmItem(cmShop, "shop", "x", "ux", "9")})
	recs = append(recs, CoverageChange(cmShop, true, "still there", 0, at(2)))
	y := cm(cmShop, event.Deleted, "shop", "y", "uy", "8", at(3))
	y.Synthetic = true
	recs = append(recs, y)
	mustAppend(t, s, recs...)
	mustAppend(t, s, cm(cmShop, event.Added, "shop", "z", "uz", "20", at(10)))
	cut := at(4)
	probes := []time.Time{cut, at(5), at(10)}
	var before []string
	for _, tp := range probes {
		before = append(before, untilAnswers(t, s, cmShop.ID(), tp, cut)...)
	}
	if res, err := s.Compact(ctx, cut); err != nil || res.Streams != 1 {
		t.Fatalf("Compact = %+v, %v; want one stream folded", res, err)
	}
	full := allRecords(t, s, storage.Query{StreamID: cmShop.ID(), WithoutBodies: true})
	var after []string
	for _, tp := range probes {
		checkUntilPage(t, s, fmt.Sprintf("after Compact(%s), at %s", cut.Format(time.RFC3339Nano), tp.Format(time.RFC3339Nano)), full, tp)
		after = append(after, untilAnswers(t, s, cmShop.ID(), tp, cut)...)
	}
	diffLines(t, "after Compact", before, after)
	c, err := storage.CoverageAt(ctx, s, cmShop.ID(), at(5))
	if err != nil || !c.Covered || c.Watermark != "10" || !c.WatermarkAt.Equal(at(1)) {
		t.Fatalf("CoverageAt(5s) after Compact = %+v, %v; want covered, watermark 10 at %s", c, err, at(1))
	}
}

// testCompactResources checks storage.ResourceCompactor: compacting the
// Deployments' stream alone removes records of it only, and changes no
// answer about the ConfigMaps at any time nor any answer at or after the
// cut.
func testCompactResources(t *testing.T, s storage.Store) {
	rc, ok := s.(storage.ResourceCompactor)
	if !ok {
		t.Fatalf("%T does not implement storage.ResourceCompactor: a resource's own retention (Events) needs it", s)
	}
	ctx := context.Background()
	all, objs, streams := appendSim(t, s, 3)
	cut := all[len(all)/2].ObservedAt
	probes := []time.Time{cut, all[len(all)-1].ObservedAt.Add(time.Hour)}
	for i := 0; i < len(all); i += 7 {
		probes = append(probes, all[i].ObservedAt, all[i].ObservedAt.Add(time.Nanosecond))
	}
	want := map[time.Time][]string{}
	for _, p := range probes {
		want[p] = answers(t, s, objs, streams, p)
	}
	statsBefore, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}

	if res, err := rc.CompactResources(ctx, cut, nil); err != nil || res != (storage.CompactResult{}) {
		t.Fatalf("CompactResources of no resource: %+v, %v; want nothing done", res, err)
	}
	res, err := rc.CompactResources(ctx, cut, []string{"deployments.apps"})
	if err != nil {
		t.Fatalf("CompactResources: %v", err)
	}
	statsAfter, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.RecordsRemoved == 0 || res.RecordsRemoved != statsBefore.Records-statsAfter.Records {
		t.Fatalf("CompactResult.RecordsRemoved = %d, Stats say %d; want some removed", res.RecordsRemoved, statsBefore.Records-statsAfter.Records)
	}
	for _, r := range all {
		if r.StreamID == deployShop.ID() || r.Type == event.TypeAuditCorrelation {
			continue
		}
		got, err := s.Get(ctx, r.EventID)
		if err != nil || !sameRecord(got, r) {
			t.Fatalf("a record of another stream changed: %v\n got %+v\nwant %+v", err, got, r)
		}
	}
	deploys, err := s.Records(ctx, storage.Query{StreamID: deployShop.ID(), Until: cut, WithoutBodies: true})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(deploys.Records); n == 0 {
		t.Fatalf("no record of the Deployments' stream left before the cut")
	}
	for _, p := range probes {
		what := fmt.Sprintf("after CompactResources(%s, deployments.apps), at %s", cut.Format(time.RFC3339Nano), p.Format(time.RFC3339Nano))
		got := answers(t, s, objs, streams, p)
		if !p.Before(cut) {
			diffLines(t, what, want[p], got)
			continue
		}
		for i := range got {
			// Before the cut, the Deployments' stream answers as after a
			// Compact; a scope of every resource holds Deployments too.
			if strings.Contains(got[i], "deployments") || strings.Contains(got[i], " Resource: ") {
				continue
			}
			if got[i] != want[p][i] {
				t.Fatalf("%s: an answer about another stream changed:\nbefore: %s\n after: %s", what, want[p][i], got[i])
			}
		}
	}
}
