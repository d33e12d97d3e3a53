package storage_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/storagetest"
)

var (
	t0    = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	shop  = event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	other = event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "web"}
)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func item(s event.Stream, name, rv string) storagetest.Item {
	ref := storagetest.Ref(s, "ConfigMap", s.Namespace, name, "uid-"+name, rv)
	return storagetest.Item{Ref: ref, Object: storagetest.ConfigMap(s.Namespace, name, ref.UID, rv, map[string]string{"k": rv})}
}

func change(s event.Stream, wt event.WatchType, name, rv string, when time.Time) event.Record {
	it := item(s, name, rv)
	return storagetest.Event(s, wt, it.Ref, it.Object, when)
}

func appendAll(t *testing.T, st storage.Store, recs ...event.Record) {
	t.Helper()
	if _, err := st.Append(context.Background(), recs); err != nil {
		t.Fatal(err)
	}
}

func coverage(t *testing.T, st storage.Reader, s event.Stream, when time.Time) storage.Coverage {
	t.Helper()
	c, err := storage.CoverageAt(context.Background(), st, s.ID(), when)
	if err != nil {
		t.Fatalf("CoverageAt(%s): %v", when, err)
	}
	if c.StreamID != s.ID() || !c.At.Equal(when) {
		t.Fatalf("CoverageAt names %q at %s", c.StreamID, c.At)
	}
	return c
}

type coverageCase struct {
	when      time.Time
	covered   bool
	reason    string // a substring of Reason
	baseline  string
	watermark string
	gaps      int
}

func TestCoverageAtTimeline(t *testing.T) {
	st := memory.New()
	defer st.Close()
	// t1: a list begins; t2: it ends at RV 100. t3: an event. t5..t8: a gap
	// (found at t8); t9: begin of the relist, t10: its end at RV 200;
	// t20: 403, t22: available again, t23..t24: a baseline.
	appendAll(t, st, storagetest.BaselineBegin(shop, "b1", at(1), []storagetest.Item{item(shop, "a", "90")})...)
	appendAll(t, st, storagetest.BaselineEnd(shop, "b1", at(2), "100", 1))
	appendAll(t, st, change(shop, event.Modified, "a", "101", at(3)))
	appendAll(t, st, storagetest.Checkpoint(shop, "104", true, at(5)))
	appendAll(t, st, storagetest.Gap(shop, at(5), at(8), "410 Gone", "104"))
	appendAll(t, st, storagetest.BaselineBegin(shop, "b2", at(9), []storagetest.Item{item(shop, "a", "150")})...)
	appendAll(t, st, storagetest.BaselineEnd(shop, "b2", at(10), "200", 1))
	appendAll(t, st, storagetest.CoverageChange(shop, false, "403 Forbidden", 403, at(20)))
	appendAll(t, st, storagetest.CoverageChange(shop, true, "access restored", 0, at(22)))
	appendAll(t, st, storagetest.Baseline(shop, "b3", at(24), "300", []storagetest.Item{item(shop, "a", "250")})...)
	// Another stream's gap never matters here.
	appendAll(t, st, storagetest.Gap(other, at(0), at(30), "410 Gone", "1"))

	cases := []coverageCase{
		{at(0), false, "no complete baseline", "", "", 0},
		{at(1), false, "no complete baseline", "", "", 0}, // begun, not ended
		{at(2).Add(-time.Nanosecond), false, "no complete baseline", "", "", 0},
		{at(2), true, "", "b1", "100", 0},
		{at(3), true, "", "b1", "101", 0},
		{at(5).Add(-time.Nanosecond), true, "", "b1", "101", 0},
		{at(5), false, "gap from", "b1", "104", 1}, // the gap starts at its From, not when it was found
		{at(8), false, "gap from", "b1", "104", 1},
		{at(9), false, "gap from", "b1", "104", 1}, // the relist has begun but not ended
		{at(10), true, "", "b2", "200", 0},
		{at(20).Add(-time.Nanosecond), true, "", "b2", "200", 0},
		{at(20), false, "unavailable", "b2", "200", 1},
		{at(23), false, "unavailable", "b2", "200", 1}, // available again, but no baseline yet
		// b3's end is the stream's last evidence of continuity: it and
		// everything after it is not yet observed.
		{at(24), false, "not yet observed: evidence reaches to 2025-03-01T12:00:24Z", "b3", "300", 0},
		{at(1000), false, "not yet observed: evidence reaches to 2025-03-01T12:00:24Z", "b3", "300", 0},
	}
	check := func(cases []coverageCase) {
		t.Helper()
		for _, tc := range cases {
			c := coverage(t, st, shop, tc.when)
			name := tc.when.Sub(t0).String()
			if c.Covered != tc.covered || !strings.Contains(c.Reason, tc.reason) || c.BaselineID != tc.baseline || c.Watermark != tc.watermark || len(c.Gaps) != tc.gaps {
				t.Errorf("at %s: covered=%v reason=%q baseline=%q watermark=%q gaps=%d; want %v %q %q %q %d",
					name, c.Covered, c.Reason, c.BaselineID, c.Watermark, len(c.Gaps), tc.covered, tc.reason, tc.baseline, tc.watermark, tc.gaps)
			}
			if c.Covered && c.Reason != "" {
				t.Errorf("at %s: covered with a reason %q", name, c.Reason)
			}
			if c.Continuous() != (tc.covered || strings.HasPrefix(tc.reason, "not yet observed")) {
				t.Errorf("at %s: Continuous() = %v with reason %q", name, c.Continuous(), c.Reason)
			}
		}
	}
	check(cases)
	// A progress checkpoint (the Collector's watch healthy) extends the
	// evidence: the times before it are covered now, the ones after it
	// are still not yet observed.
	appendAll(t, st, storagetest.Checkpoint(shop, "300", false, at(1001)))
	check([]coverageCase{
		{at(24), true, "", "b3", "300", 0},
		{at(1000), true, "", "b3", "300", 0},
		{at(1001), false, "not yet observed: evidence reaches to 2025-03-01T12:16:41Z", "b3", "300", 0},
		{at(5000), false, "not yet observed", "b3", "300", 0},
	})
	if c := coverage(t, st, shop, at(1000)); !c.EvidenceUntil.Equal(at(1001)) {
		t.Errorf("EvidenceUntil %s, want %s", c.EvidenceUntil, at(1001))
	}
	c := coverage(t, st, shop, at(3))
	if !c.BaselineEndAt.Equal(at(2)) || !c.WatermarkAt.Equal(at(3)) {
		t.Errorf("BaselineEndAt %s WatermarkAt %s, want %s and %s", c.BaselineEndAt, c.WatermarkAt, at(2), at(3))
	}
	if c := coverage(t, st, other, at(40)); c.Covered || c.Watermark != "" {
		t.Errorf("a stream with only a gap: %+v", c)
	}
}

// A gap found late starts at the stream's last evidence, so it never takes
// back a time that was covered: before it is known, the time after the
// last evidence is already not yet observed. History never claims more
// than it saw. (Before evidence was required, 6 was covered until the gap
// was found, then not: a Complete answer that turned incomplete.)
func TestCoverageAtGapFoundLater(t *testing.T) {
	st := memory.New()
	defer st.Close()
	appendAll(t, st, storagetest.Baseline(shop, "b1", at(1), "100", nil)...)
	appendAll(t, st, change(shop, event.Added, "a", "101", at(2)))
	if c := coverage(t, st, shop, at(6)); c.Covered || !c.Continuous() || !strings.Contains(c.Reason, "not yet observed") || !c.EvidenceUntil.Equal(at(2)) {
		t.Fatalf("before the gap is known: %+v", c)
	}
	if c := coverage(t, st, shop, at(2).Add(-time.Nanosecond)); !c.Covered {
		t.Fatalf("just before the last evidence: %+v", c)
	}
	appendAll(t, st, storagetest.Gap(shop, at(2), at(9), "watch closed with 410", "101"))
	c := coverage(t, st, shop, at(6))
	if c.Covered || c.Continuous() || len(c.Gaps) != 1 || c.Gaps[0].Gap.LastResourceVersion != "101" {
		t.Fatalf("after the gap is known: %+v", c)
	}
	if c := coverage(t, st, shop, at(2).Add(-time.Nanosecond)); !c.Covered {
		t.Fatalf("just before the gap's From: %+v", c)
	}
}

// A synthetic baseline item or inferred deletion is no progress: the
// watermark stays at the list's resourceVersion.
func TestCoverageAtWatermarkIgnoresSynthetic(t *testing.T) {
	st := memory.New()
	defer st.Close()
	base := storagetest.Baseline(shop, "b1", at(1), "100", []storagetest.Item{item(shop, "a", "90")})
	appendAll(t, st, base...)
	appendAll(t, st, storagetest.InferredDelete(shop, base[1], at(0), at(2), "b1"))
	c := coverage(t, st, shop, at(3))
	if c.Watermark != "100" || !c.WatermarkAt.Equal(at(1)) {
		t.Fatalf("watermark %q at %s, want 100 at %s", c.Watermark, c.WatermarkAt, at(1))
	}
}

// CoverageAt pages through long runs of records: many interrupted
// baselines after a complete one, and many synthetic items after the last
// progress.
func TestCoverageAtPaging(t *testing.T) {
	st := memory.New()
	defer st.Close()
	appendAll(t, st, storagetest.Baseline(shop, "b1", at(1), "100", nil)...)
	var crashed []event.Record
	for i := 0; i < 600; i++ {
		crashed = append(crashed, storagetest.BaselineBegin(shop, fmt.Sprintf("crashed-%d", i), at(2), nil)...)
	}
	appendAll(t, st, crashed...)
	var items []storagetest.Item
	for i := 0; i < 700; i++ {
		items = append(items, item(shop, fmt.Sprintf("cm-%d", i), "150"))
	}
	appendAll(t, st, storagetest.BaselineBegin(shop, "open", at(3), items)...)
	// Evidence after the times asked about below.
	appendAll(t, st, storagetest.Checkpoint(shop, "100", false, at(10)))
	c := coverage(t, st, shop, at(4))
	if !c.Covered || c.BaselineID != "b1" || c.Watermark != "100" {
		t.Fatalf("after 600 interrupted baselines and 700 items: %+v", c)
	}
	var gaps []event.Record
	for i := 0; i < 300; i++ {
		gaps = append(gaps, storagetest.Gap(shop, at(10+i), at(1000+i), "410", "100"))
	}
	appendAll(t, st, gaps...)
	if c := coverage(t, st, shop, at(9)); !c.Covered {
		t.Fatalf("before 300 gaps: %+v", c)
	}
	if c := coverage(t, st, shop, at(2000)); c.Covered || len(c.Gaps) != 300 {
		t.Fatalf("after 300 gaps: covered=%v with %d gaps", c.Covered, len(c.Gaps))
	}
}

// An end whose begin was removed still counts, bounded by itself.
func TestCoverageAtEndWithoutBegin(t *testing.T) {
	st := memory.New()
	defer st.Close()
	appendAll(t, st, storagetest.Gap(shop, at(0), at(1), "410", ""))
	appendAll(t, st, storagetest.BaselineEnd(shop, "b1", at(2), "100", 0))
	appendAll(t, st, storagetest.Checkpoint(shop, "100", true, at(4)))
	if c := coverage(t, st, shop, at(3)); !c.Covered || c.BaselineID != "b1" {
		t.Fatalf("end without begin after a gap: %+v", c)
	}
}
