package storagetest

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// plainReader hides every method of a store but storage.Reader's, so the
// storage functions take their generic path (Streams and Records queries)
// instead of the store's TimelineReader.
type plainReader struct{ storage.Reader }

// testTimelines checks that a store's timelines, when it keeps them
// (storage.TimelineReader), are the records its Records queries return,
// and that coverage computed from them is the same, as the journal grows
// and after a compaction.
func testTimelines(t *testing.T, s storage.Store) {
	ctx := context.Background()
	m := newSim(7)
	batches := m.journal(400)
	check := func(when string) {
		t.Helper()
		for _, cluster := range []string{"", "c1", "c2", "no-such-cluster"} {
			got, err := storage.Timelines(ctx, s, cluster)
			if err != nil {
				t.Fatalf("%s: Timelines(%q): %v", when, cluster, err)
			}
			want, err := storage.Timelines(ctx, plainReader{s}, cluster)
			if err != nil {
				t.Fatalf("%s: Timelines(%q) through Records: %v", when, cluster, err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s: Timelines(%q) has %d streams, Streams has %d", when, cluster, len(got), len(want))
			}
			for i := range want {
				if err := sameTimeline(got[i], want[i]); err != nil {
					t.Fatalf("%s: cluster %q: %v", when, cluster, err)
				}
				one, err := storage.StreamTimeline(ctx, s, want[i].StreamID)
				if err != nil {
					t.Fatalf("%s: StreamTimeline(%s): %v", when, want[i].StreamID, err)
				}
				if err := sameTimeline(one, want[i]); err != nil {
					t.Fatalf("%s: StreamTimeline: %v", when, err)
				}
			}
		}
		for _, st := range []string{cmShop.ID(), cmAll.ID(), deployShop.ID()} {
			for sec := -30; sec <= int(m.now.Sub(t0)/time.Second)+30; sec += 41 {
				tp := t0.Add(time.Duration(sec) * time.Second)
				got, err := storage.CoverageAt(ctx, s, st, tp)
				if err != nil {
					t.Fatalf("%s: CoverageAt(%s, %s): %v", when, st, tp, err)
				}
				want, err := storage.CoverageAt(ctx, plainReader{s}, st, tp)
				if err != nil {
					t.Fatalf("%s: CoverageAt(%s, %s) through Records: %v", when, st, tp, err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("%s: CoverageAt(%s, %s) = %+v, through Records %+v", when, st, tp, got, want)
				}
			}
		}
	}
	check("empty journal")
	for i, b := range batches {
		mustAppend(t, s, b...)
		if i%25 == 0 || isTimelineBatch(b) && i%3 == 0 {
			check(fmt.Sprintf("after batch %d", i))
		}
		if i == len(batches)/2 {
			if _, err := s.Compact(ctx, b[0].ObservedAt.Add(-2*time.Minute)); err != nil {
				t.Fatalf("Compact: %v", err)
			}
			check("after compaction")
		}
	}
	check("at the end")
	empty, err := storage.StreamTimeline(ctx, s, "c9/core/v1/pods")
	if err != nil || empty.StreamID != "c9/core/v1/pods" || len(empty.Records) != 0 || empty.Stream.Resource != "pods" {
		t.Fatalf("StreamTimeline of an unknown stream = %+v, %v; want an empty timeline", empty, err)
	}
}

func isTimelineBatch(b []event.Record) bool {
	for i := range b {
		if storage.IsTimelineRecord(&b[i]) {
			return true
		}
	}
	return false
}

func sameTimeline(got, want storage.Timeline) error {
	if got.StreamID != want.StreamID || got.Stream != want.Stream {
		return fmt.Errorf("timeline of %s (%+v), want %s (%+v)", got.StreamID, got.Stream, want.StreamID, want.Stream)
	}
	if len(got.Records) != len(want.Records) {
		return fmt.Errorf("timeline of %s has %d records, Records returns %d: %v vs %v", got.StreamID, len(got.Records), len(want.Records), eventIDs(got.Records), eventIDs(want.Records))
	}
	for i := range want.Records {
		if !reflect.DeepEqual(got.Records[i], want.Records[i]) {
			return fmt.Errorf("timeline of %s, record %d = %+v, Records returns %+v", got.StreamID, i, got.Records[i], want.Records[i])
		}
	}
	return nil
}

// testReaders checks the optional readers a store may implement against
// the plain queries they stand for, on a simulated journal (changes,
// bookmarks, silent breaks found by a 410, gaps, relists with inferred
// deletions, interrupted baselines, unavailability) as it grows and after
// two compactions: storage.TimelineReader against the stream's timeline
// records of an unbounded Records query, storage.WatermarkReader and the
// watermark of storage.CoverageFrom through Records (the generic path,
// which seeks by time) against the last progress record of the unbounded
// query, storage.CoverageAt with the store against it through Records
// only, and the first page of Records bounded by Until (the seek by time)
// against the unbounded query filtered by time, at every time a record of
// the stream was observed and just before it.
func testReaders(t *testing.T, s storage.Store) {
	ctx := context.Background()
	m := newSim(11)
	batches := m.journal(450)
	n := len(batches)
	checkReaders(t, s, "empty journal")
	for i, b := range batches {
		mustAppend(t, s, b...)
		switch i {
		case n / 6, n / 2, 5 * n / 6:
			checkReaders(t, s, fmt.Sprintf("after batch %d", i))
		case n / 3, 2 * n / 3:
			checkReaders(t, s, fmt.Sprintf("after batch %d", i))
			// Compact at a record's time, or between records.
			cut := batches[i*3/4][0].ObservedAt
			if i == 2*n/3 {
				cut = cut.Add(500 * time.Millisecond)
			}
			if _, err := s.Compact(ctx, cut); err != nil {
				t.Fatalf("Compact(%s): %v", cut, err)
			}
			checkReaders(t, s, fmt.Sprintf("after batch %d and Compact(%s)", i, cut.Format(time.RFC3339Nano)))
		}
	}
	checkReaders(t, s, "at the end")
}

// checkReaders is testReaders' comparison of the journal s holds now.
func checkReaders(t *testing.T, s storage.Store, when string) {
	t.Helper()
	ctx := context.Background()
	streams, err := s.Streams(ctx, "")
	if err != nil {
		t.Fatalf("%s: Streams: %v", when, err)
	}
	checkTimelineStreams(t, s, when, streams)
	for _, st := range streams {
		full := allRecords(t, s, storage.Query{StreamID: st.StreamID, WithoutBodies: true})
		want := storage.Timeline{StreamID: st.StreamID, Stream: st.Stream}
		for _, r := range full {
			if storage.IsTimelineRecord(&r) {
				want.Records = append(want.Records, r)
			}
		}
		tl, err := storage.StreamTimeline(ctx, s, st.StreamID)
		if err != nil {
			t.Fatalf("%s: StreamTimeline(%s): %v", when, st.StreamID, err)
		}
		if err := sameTimeline(tl, want); err != nil {
			t.Fatalf("%s: against an unbounded Records query: %v", when, err)
		}
		for _, tp := range probeTimes(full) {
			checkReadersAt(t, s, fmt.Sprintf("%s: %s at %s", when, st.StreamID, tp.Format(time.RFC3339Nano)), tl, full, tp)
		}
	}
	if wr, ok := s.(storage.WatermarkReader); ok {
		if rv, rvAt, err := wr.Watermark(ctx, "c9/core/v1/pods", t0); rv != "" || !rvAt.IsZero() || err != nil {
			t.Fatalf("%s: Watermark of an unknown stream = %q at %s, %v; want none", when, rv, rvAt, err)
		}
	}
}

// checkTimelineStreams checks that Timelines of every cluster holds the
// streams Streams lists, in order.
func checkTimelineStreams(t *testing.T, s storage.Store, when string, streams []storage.StreamStatus) {
	t.Helper()
	for _, cluster := range []string{"", "c1", "c2"} {
		got, err := storage.Timelines(context.Background(), s, cluster)
		if err != nil {
			t.Fatalf("%s: Timelines(%q): %v", when, cluster, err)
		}
		var ids, want []string
		for _, tl := range got {
			ids = append(ids, tl.StreamID)
		}
		for _, st := range streams {
			if cluster == "" || st.Stream.ClusterID == cluster {
				want = append(want, st.StreamID)
			}
		}
		if !slices.Equal(ids, want) {
			t.Fatalf("%s: Timelines(%q) has the streams %v, Streams %v", when, cluster, ids, want)
		}
	}
}

// checkReadersAt compares, at tp, the watermarks (the store's
// WatermarkReader, the generic path through Records) with the last
// progress record of full (the stream's records, tl its timeline),
// CoverageAt with the store against it through Records only, and the
// first page of Records bounded by tp with full filtered by time.
func checkReadersAt(t *testing.T, s storage.Store, what string, tl storage.Timeline, full []event.Record, tp time.Time) {
	t.Helper()
	ctx := context.Background()
	var rv string
	var rvAt time.Time
	for _, r := range full {
		if p, ok := storage.ProgressRV(r); ok && !r.ObservedAt.After(tp) {
			rv, rvAt = p, r.ObservedAt
		}
	}
	if wr, ok := s.(storage.WatermarkReader); ok {
		got, gotAt, err := wr.Watermark(ctx, tl.StreamID, tp)
		if err != nil || got != rv || !gotAt.Equal(rvAt) {
			t.Fatalf("%s: Watermark = %q at %s, %v; the last progress record says %q at %s", what, got, gotAt, err, rv, rvAt)
		}
	}
	generic, err := storage.CoverageFrom(ctx, plainReader{s}, tl, evidenceOf(t, s, tl.StreamID), tp)
	if err != nil || generic.Watermark != rv || !generic.WatermarkAt.Equal(rvAt) {
		t.Fatalf("%s: watermark through Records = %q at %s, %v; the last progress record says %q at %s", what, generic.Watermark, generic.WatermarkAt, err, rv, rvAt)
	}
	got, err := storage.CoverageAt(ctx, s, tl.StreamID, tp)
	if err != nil || !reflect.DeepEqual(got, generic) {
		t.Fatalf("%s: CoverageAt = %+v, %v; through Records %+v", what, got, err, generic)
	}
	checkUntilPage(t, s, what, full, tp)
}

// probeTimes returns the times at which records were observed, each also
// a nanosecond earlier, and a time before and one after all of them.
func probeTimes(recs []event.Record) []time.Time {
	out := []time.Time{t0.Add(-time.Hour)}
	for i, r := range recs {
		if i == 0 || !r.ObservedAt.Equal(recs[i-1].ObservedAt) {
			out = append(out, r.ObservedAt.Add(-time.Nanosecond), r.ObservedAt)
		}
	}
	if len(recs) > 0 {
		out = append(out, recs[len(recs)-1].ObservedAt.Add(time.Hour))
	}
	return out
}

// checkUntilPage compares the first page of a stream's records bounded by
// Until, newest first, with full (the stream's records) filtered by time.
func checkUntilPage(t *testing.T, s storage.Reader, what string, full []event.Record, until time.Time) {
	t.Helper()
	var want []string
	for i := len(full) - 1; i >= 0; i-- {
		if !full[i].ObservedAt.After(until) {
			want = append(want, full[i].EventID)
		}
	}
	const limit = 3
	p, err := s.Records(context.Background(), storage.Query{StreamID: full[0].StreamID, Until: until, Descending: true, Limit: limit, WithoutBodies: true})
	if err != nil {
		t.Fatalf("%s: Records until then: %v", what, err)
	}
	if got := eventIDs(p.Records); !slices.Equal(got, want[:min(limit, len(want))]) || (p.Next != "") != (len(want) > limit) {
		t.Fatalf("%s: Records until then, newest first: %v (next %q); the stream's records observed until then: %v", what, got, p.Next, want[:min(limit+2, len(want))])
	}
}

// evidenceOf is the stream's evidence as the generic path reads it.
func evidenceOf(t *testing.T, s storage.Reader, streamID string) time.Time {
	t.Helper()
	ev, err := storage.StreamEvidence(context.Background(), plainReader{s}, streamID)
	if err != nil {
		t.Fatalf("evidence of %s: %v", streamID, err)
	}
	return ev
}
