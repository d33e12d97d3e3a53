package sqlite_test

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/storagetest"
)

// TestObjectHistoryInSeqOrder: ObjectHistory answers in seq order, and a
// limit keeps the first records by seq, when an object's records were
// observed in another order (two streams with skewed clocks, or a record
// appended late): the statement reads them in the order of the index by
// object and time, not seq.
func TestObjectHistoryInSeqOrder(t *testing.T) {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	a := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	b := a
	b.Namespace = ""
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	version := func(st event.Stream, rv int, at time.Duration) event.Record {
		v := strconv.Itoa(rv)
		return storagetest.Event(st, event.Modified, storagetest.Ref(st, "ConfigMap", "shop", "a", "uid-1", v),
			storagetest.ConfigMap("shop", "a", "uid-1", v, map[string]string{"v": v}), t0.Add(at*time.Second))
	}
	// In seq order; observed at 40, 10, 30, 20, 50 s.
	recs := []event.Record{version(a, 1, 40), version(b, 2, 10), version(a, 3, 30), version(b, 4, 20), version(a, 5, 50)}
	for _, r := range recs {
		if _, err := s.Append(ctx, []event.Record{r}); err != nil {
			t.Fatal(err)
		}
	}
	obj := storage.ObjectIDOf(recs[0])
	all, err := s.ObjectHistory(ctx, obj, storage.HistoryQuery{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rvsOf(all), []string{"1", "2", "3", "4", "5"}; !slices.Equal(got, want) {
		t.Fatalf("history: %v, want %v", got, want)
	}
	for _, c := range []struct {
		name string
		q    storage.HistoryQuery
		want []string
	}{
		{"limit", storage.HistoryQuery{Limit: 2}, []string{"1", "2"}},
		{"after seq, limit", storage.HistoryQuery{AfterSeq: all[1].IngestSeq, Limit: 2}, []string{"3", "4"}},
		{"since, limit", storage.HistoryQuery{Since: t0.Add(20 * time.Second), Limit: 2}, []string{"1", "3"}},
		{"stream, limit", storage.HistoryQuery{StreamID: b.ID(), Limit: 1}, []string{"2"}},
		{"without bodies", storage.HistoryQuery{WithoutBodies: true}, []string{"1", "2", "3", "4", "5"}},
	} {
		got, err := s.ObjectHistory(ctx, obj, c.q)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if !slices.Equal(rvsOf(got), c.want) {
			t.Errorf("%s: %v, want %v", c.name, rvsOf(got), c.want)
		}
	}
	for i, r := range all {
		if r.EventID != recs[i].EventID || r.StreamID != recs[i].StreamID || r.Resource != recs[i].Resource ||
			string(r.Object) != string(recs[i].Object) || !r.ObservedAt.Equal(recs[i].ObservedAt) {
			t.Errorf("record %d: %+v, want %+v", i, r, recs[i])
		}
	}
}

func rvsOf(recs []event.Record) []string {
	var out []string
	for _, r := range recs {
		out = append(out, r.Resource.ResourceVersion)
	}
	return out
}

// TestCorrelationsSeeAnotherStoresAppend: a Store that found no
// correlation record finds the one another Store of the file (another
// process, as far as SQLite knows) appended since.
func TestCorrelationsSeeAnotherStoresAppend(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	reader, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	writer, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Close()
	st := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	target := storagetest.Event(st, event.Modified, storagetest.Ref(st, "ConfigMap", "shop", "a", "uid-1", "7"),
		storagetest.ConfigMap("shop", "a", "uid-1", "7", nil), at)
	if _, err := writer.Append(ctx, []event.Record{target}); err != nil {
		t.Fatal(err)
	}
	got, err := reader.Correlations(ctx, []string{target.EventID})
	if err != nil || len(got) != 0 {
		t.Fatalf("Correlations before: %v, %v", got, err)
	}
	corr := storagetest.Correlation(target, "audit-1", "alice", at.Add(time.Second))
	if _, err := writer.Append(ctx, []event.Record{corr}); err != nil {
		t.Fatal(err)
	}
	got, err = reader.Correlations(ctx, []string{"no-such-event", target.EventID})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got[target.EventID]) != 1 || got[target.EventID][0].EventID != corr.EventID || got[target.EventID][0].Audit.User != "alice" {
		t.Fatalf("Correlations after: %+v", got)
	}
}
