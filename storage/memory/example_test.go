package memory_test

import (
	"context"
	"fmt"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
)

// A baseline, a change and a deletion of one ConfigMap, then the questions
// the materializer asks: the object at a time, what is alive, and whether
// the stream's journal is complete then. After the stream's last evidence
// of continuity (here the deletion) time is not yet observed.
func Example() {
	ctx := context.Background()
	store := memory.New()
	defer store.Close()

	stream := event.Stream{ClusterID: "prod", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	sid := stream.ID()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	ref := func(rv string) event.ResourceRef {
		return event.ResourceRef{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "shop", Name: "settings", UID: "u-1", ResourceVersion: rv}
	}
	body := func(rv string) []byte {
		return []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"shop","resourceVersion":"` + rv + `"},"data":{"rv":"` + rv + `"}}`)
	}
	change := func(wt event.WatchType, rv string, at time.Time, extra ...string) event.Record {
		return event.Record{Type: event.TypeEvent, EventID: event.EventID(sid, event.TypeEvent, ref(rv), wt, extra...),
			ClusterID: "prod", StreamID: sid, ObservedAt: at, WatchType: wt, Resource: ref(rv), Object: body(rv)}
	}
	marker := func(phase event.BaselinePhase, rv string) event.Record {
		return event.Record{Type: event.TypeBaseline, EventID: event.StreamRecordID(sid, event.TypeBaseline, event.ResourceRef{}, "b1", string(phase)),
			ClusterID: "prod", StreamID: sid, ObservedAt: t0, BaselineID: "b1",
			Baseline: &event.Baseline{ID: "b1", Phase: phase, ResourceVersion: rv, ItemCount: 1}}
	}
	item := change(event.Added, "10", t0, "b1")
	item.Synthetic, item.BaselineID = true, "b1"

	res, err := store.Append(ctx, []event.Record{marker(event.BaselineBegin, ""), item, marker(event.BaselineEnd, "12")})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("baseline stored:", res.Inserted, "records")
	modified := change(event.Modified, "15", t0.Add(time.Minute))
	deleted := change(event.Deleted, "16", t0.Add(2*time.Minute))
	// At-least-once delivery: the MODIFIED event arrives twice.
	res, _ = store.Append(ctx, []event.Record{modified, modified, deleted})
	fmt.Println("inserted:", res.Inserted, "duplicates:", res.Duplicates)

	obj := storage.ObjectID{ClusterID: "prod", Resource: "configmaps", Namespace: "shop", Name: "settings"}
	for _, at := range []time.Time{t0.Add(90 * time.Second), t0.Add(3 * time.Minute)} {
		rec, _ := store.LatestAt(ctx, obj, at)
		alive, _ := store.AliveAt(ctx, storage.AliveQuery{StreamID: sid, At: at})
		cov, _ := storage.CoverageAt(ctx, store, sid, at)
		fmt.Printf("at +%s: %s rv %s, alive %d, covered %v, watermark %s\n",
			at.Sub(t0), rec.WatchType, rec.Resource.ResourceVersion, len(alive), cov.Covered, cov.Watermark)
		if !cov.Covered {
			fmt.Println("  ", cov.Reason)
		}
	}
	status, _ := store.StreamStatus(ctx, sid)
	fmt.Println("checkpoint:", status.CheckpointRV)
	// Output:
	// baseline stored: 3 records
	// inserted: 2 duplicates: 1
	// at +1m30s: MODIFIED rv 15, alive 1, covered true, watermark 15
	// at +3m0s: DELETED rv 16, alive 0, covered false, watermark 16
	//    not yet observed: evidence reaches to 2025-03-01T12:02:00Z
	// checkpoint: 16
}

// Compact drops what no question about a later time needs, and keeps every
// answer about those times.
func ExampleStore_Compact() {
	ctx := context.Background()
	store := memory.New()
	defer store.Close()
	sid := event.Stream{ClusterID: "prod", Version: "v1", Resource: "configmaps", Namespace: "shop"}.ID()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var batch []event.Record
	for i := 0; i < 10; i++ {
		ref := event.ResourceRef{Version: "v1", Resource: "configmaps", Namespace: "shop", Name: "settings", UID: "u-1", ResourceVersion: fmt.Sprint(100 + i)}
		batch = append(batch, event.Record{Type: event.TypeEvent, EventID: event.EventID(sid, event.TypeEvent, ref, event.Modified),
			ClusterID: "prod", StreamID: sid, ObservedAt: t0.Add(time.Duration(i) * time.Minute), WatchType: event.Modified,
			Resource: ref, Object: []byte(fmt.Sprintf(`{"data":{"version":"%d"}}`, i))})
	}
	if _, err := store.Append(ctx, batch); err != nil {
		fmt.Println(err)
		return
	}
	obj := storage.ObjectID{ClusterID: "prod", Resource: "configmaps", Namespace: "shop", Name: "settings"}
	cut := t0.Add(5*time.Minute + 30*time.Second)
	res, _ := store.Compact(ctx, cut)
	stats, _ := store.Stats(ctx)
	rec, _ := store.LatestAt(ctx, obj, cut)
	fmt.Println("removed:", res.RecordsRemoved, "left:", stats.Records)
	fmt.Println("at the cut:", string(rec.Object))
	// Output:
	// removed: 5 left: 5
	// at the cut: {"data":{"version":"5"}}
}
