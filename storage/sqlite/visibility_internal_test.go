package sqlite

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/storagetest"
)

// LatestAt's fallback, which decides inside the statement which rows are
// items of open baselines, answers as the statement built from the kept
// timelines does: on complete, killed, superseded and running baselines,
// inferred deletions after an end, and a baseline that ends later.
func TestLatestAtSelfContainedAgrees(t *testing.T) {
	ctx := context.Background()
	s := openInternal(t)
	st := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }
	item := func(name, rv string) storagetest.Item {
		return storagetest.Item{Ref: storagetest.Ref(st, "ConfigMap", "shop", name, "u"+name, rv), Object: storagetest.ConfigMap("shop", name, "u"+name, rv, nil)}
	}
	names := []string{"a", "b", "c", "d"}
	b1 := storagetest.Baseline(st, "b1", at(1), "10", []storagetest.Item{item("a", "1"), item("b", "2")})
	mod := storagetest.Event(st, event.Modified, storagetest.Ref(st, "ConfigMap", "shop", "a", "ua", "3"), storagetest.ConfigMap("shop", "a", "ua", "3", nil), at(2))
	killed := storagetest.BaselineBegin(st, "killed", at(4), []storagetest.Item{item("a", "5"), item("c", "6")})
	restart := storagetest.Baseline(st, "restart", at(6), "20", []storagetest.Item{item("a", "5"), item("c", "6")})
	bGone := storagetest.InferredDelete(st, b1[2], at(2), at(6), "restart")
	running := storagetest.BaselineBegin(st, "running", at(8), []storagetest.Item{item("a", "7"), item("d", "8")})
	check := func(when string) {
		t.Helper()
		for _, name := range names {
			obj := storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: name}
			for sec := 0; sec <= 10; sec++ {
				want, err := s.latestAt(ctx, obj, at(sec))
				if err != nil {
					t.Fatal(err)
				}
				rows, err := s.cachedQuery(ctx, latestAtSelfContained, append(objectArgs(obj), encodeTime(at(sec)))...)
				if err != nil {
					t.Fatal(err)
				}
				got, err := s.decodeRows(ctx, rows, new(int64), new(int64))
				if err != nil {
					t.Fatal(err)
				}
				if fmt.Sprint(ids(got)) != fmt.Sprint(ids(want)) {
					t.Fatalf("%s: %s at %ds: self-contained %v, with timelines %v", when, name, sec, ids(got), ids(want))
				}
			}
		}
	}
	for _, batch := range [][]event.Record{b1, {mod}, killed, append(restart, bGone), running} {
		if _, err := s.Append(ctx, batch); err != nil {
			t.Fatal(err)
		}
		check(fmt.Sprintf("after %d records", len(batch)))
	}
	if _, err := s.Append(ctx, []event.Record{storagetest.BaselineEnd(st, "running", at(9), "30", 2)}); err != nil {
		t.Fatal(err)
	}
	check("after the running baseline ended")
	if rec, err := s.LatestAt(ctx, storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: "d"}, at(10)); err != nil || rec.BaselineID != "running" {
		t.Fatalf("LatestAt(d) once its baseline ended = %+v, %v", rec, err)
	}
}

func ids(recs []event.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.BaselineID + "/" + r.Resource.ResourceVersion + "/" + string(r.WatchType)
	}
	return out
}
