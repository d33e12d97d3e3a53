package storagetest

import (
	"context"
	"fmt"
	"reflect"
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
