package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/storagetest"
)

// TestTimelinesSeeOtherHandles reads timelines through one handle while
// another (as another process would) appends a gap, a new stream and a
// compaction: each read reflects what was committed before it.
func TestTimelinesSeeOtherHandles(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	writer, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = writer.Close() })
	reader, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reader.Close() })

	cms := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	item := storagetest.Item{Ref: storagetest.Ref(cms, "ConfigMap", "shop", "a", "u1", "10"), Object: storagetest.ConfigMap("shop", "a", "u1", "10", nil)}
	appendAll := func(recs ...event.Record) {
		t.Helper()
		if _, err := writer.Append(ctx, recs); err != nil {
			t.Fatal(err)
		}
	}
	covered := func(at time.Time) bool {
		t.Helper()
		c, err := storage.CoverageAt(ctx, reader, cms.ID(), at)
		if err != nil {
			t.Fatal(err)
		}
		return c.Covered
	}
	types := func(cluster string) []string {
		t.Helper()
		tls, err := reader.Timelines(ctx, cluster)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, tl := range tls {
			out = append(out, tl.StreamID)
			for _, r := range tl.Records {
				out = append(out, string(r.Type))
			}
		}
		return out
	}

	if got := types(""); len(got) != 0 {
		t.Fatalf("timelines of an empty journal = %v", got)
	}
	appendAll(storagetest.Baseline(cms, "b1", t0, "10", []storagetest.Item{item})...)
	appendAll(storagetest.Checkpoint(cms, "10", true, t0.Add(90*time.Second)))
	if !covered(t0.Add(time.Minute)) {
		t.Fatal("not covered after the baseline another handle wrote")
	}
	appendAll(storagetest.Gap(cms, t0.Add(30*time.Second), t0.Add(2*time.Minute), "410 Gone", "10"))
	if covered(t0.Add(time.Minute)) {
		t.Fatal("still covered after a gap another handle wrote")
	}
	first := types("c1")
	pods := event.Stream{ClusterID: "c2", Version: "v1", Resource: "pods"}
	appendAll(storagetest.Checkpoint(pods, "5", true, t0.Add(3*time.Minute)))
	if got := types("c2"); len(got) != 1 || got[0] != pods.ID() {
		t.Fatalf("timelines of c2 = %v, want the new stream, empty", got)
	}
	if got := types("c1"); len(got) != len(first) {
		t.Fatalf("timelines of c1 changed to %v from %v", got, first)
	}
	appendAll(storagetest.Baseline(cms, "b2", t0.Add(4*time.Minute), "20", []storagetest.Item{item})...)
	if _, err := writer.Compact(ctx, t0.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	tls, err := reader.Timelines(ctx, "c1")
	if err != nil {
		t.Fatal(err)
	}
	want, err := storage.ReadTimeline(ctx, writer, cms.ID())
	if err != nil {
		t.Fatal(err)
	}
	if len(tls) != 1 || len(tls[0].Records) != len(want.Records) || len(want.Records) >= len(first)+1 {
		t.Fatalf("after compaction the reader's timeline has %d records, the writer's %d (before: %v)", len(tls[0].Records), len(want.Records), first)
	}
	for i := range want.Records {
		if tls[0].Records[i].EventID != want.Records[i].EventID {
			t.Fatalf("after compaction record %d is %s, want %s", i, tls[0].Records[i].EventID, want.Records[i].EventID)
		}
	}
}
