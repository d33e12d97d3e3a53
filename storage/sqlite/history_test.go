package sqlite_test

import (
	"bytes"
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
		// A page that holds the whole history is read in the table's
		// order and sorted; one a row short, by seq in SQLite.
		{"a page of the whole", storage.HistoryQuery{Limit: 5}, []string{"1", "2", "3", "4", "5"}},
		{"a page larger than the whole", storage.HistoryQuery{Limit: 10}, []string{"1", "2", "3", "4", "5"}},
		{"a page a row short", storage.HistoryQuery{Limit: 4}, []string{"1", "2", "3", "4"}},
		{"since, a page of the rest", storage.HistoryQuery{Since: t0.Add(20 * time.Second), Limit: 10}, []string{"1", "3", "4", "5"}},
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

// TestObjectHistoryBodiesMatchRecords: each record ObjectHistory returns
// (whole, a record at a time, without bodies) carries the body and hash
// that Records gives the record of the same seq, its key and its body's
// read by other statements (schema version 6). The journals are
// the format fixtures, migrated (every shape of body: keyframes, deltas
// against the object's keyframe and against another object's, bodies
// repeated by a relist), one of them with a body shared between two
// objects as writers before schema version 5 stored them; each history
// is read whole, a record at a time, and without bodies.
func TestObjectHistoryBodiesMatchRecords(t *testing.T) {
	ctx := context.Background()
	for version := 1; version <= sqlite.SchemaVersion; version++ {
		t.Run(strconv.Itoa(version), func(t *testing.T) {
			path := olderJournal(t, version)
			if version == 4 {
				rawExec(t, path, `UPDATE records SET body = 5 WHERE seq = 3 AND obj = 2`)
			}
			s, err := sqlite.Open(ctx, path)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			// The objects, from Records without bodies: no body is decoded
			// (and no keyframe cached) before the histories are read.
			var objects []storage.ObjectID
			walk := func(withoutBodies bool, each func(event.Record)) {
				for q := (storage.Query{Limit: 50, WithoutBodies: withoutBodies}); ; {
					p, err := s.Records(ctx, q)
					if err != nil {
						t.Fatal(err)
					}
					for _, r := range p.Records {
						each(r)
					}
					if p.Next == "" {
						break
					}
					q.Cursor = p.Next
				}
			}
			walk(true, func(r event.Record) {
				if r.IsObjectChange() && !slices.Contains(objects, storage.ObjectIDOf(r)) {
					objects = append(objects, storage.ObjectIDOf(r))
				}
			})
			type histories struct{ whole, paged, hashes []event.Record }
			read := map[storage.ObjectID]histories{}
			for _, obj := range objects {
				var h histories
				var err error
				if h.whole, err = s.ObjectHistory(ctx, obj, storage.HistoryQuery{}); err != nil {
					t.Fatal(err)
				}
				for after := int64(0); ; {
					page, err := s.ObjectHistory(ctx, obj, storage.HistoryQuery{Limit: 1, AfterSeq: after})
					if err != nil {
						t.Fatal(err)
					}
					if len(page) == 0 {
						break
					}
					h.paged, after = append(h.paged, page...), page[0].IngestSeq
				}
				if h.hashes, err = s.ObjectHistory(ctx, obj, storage.HistoryQuery{WithoutBodies: true}); err != nil {
					t.Fatal(err)
				}
				read[obj] = h
			}
			bySeq := map[int64]event.Record{}
			walk(false, func(r event.Record) { bySeq[r.IngestSeq] = r })
			bodies := 0
			for _, obj := range objects {
				whole, paged, hashes := read[obj].whole, read[obj].paged, read[obj].hashes
				// (An object whose records are all items of the fixture's
				// interrupted baseline has none.)
				if len(paged) != len(whole) || len(hashes) != len(whole) {
					t.Fatalf("%v: %d records whole, %d a record at a time, %d without bodies", obj, len(whole), len(paged), len(hashes))
				}
				for i, r := range whole {
					want := bySeq[r.IngestSeq]
					if !bytes.Equal(r.Object, want.Object) || r.ObjectHash != want.ObjectHash {
						t.Errorf("%v seq %d: history body %q hash %s, Records %q hash %s", obj, r.IngestSeq, r.Object, r.ObjectHash, want.Object, want.ObjectHash)
					}
					if p := paged[i]; p.IngestSeq != r.IngestSeq || !bytes.Equal(p.Object, r.Object) || p.ObjectHash != r.ObjectHash {
						t.Errorf("%v: record %d a record at a time is seq %d body %q, whole seq %d body %q", obj, i, p.IngestSeq, p.Object, r.IngestSeq, r.Object)
					}
					if h := hashes[i]; h.IngestSeq != r.IngestSeq || h.Object != nil || h.ObjectHash != r.ObjectHash {
						t.Errorf("%v: record %d without bodies is seq %d body %q hash %s, want seq %d no body hash %s", obj, i, h.IngestSeq, h.Object, h.ObjectHash, r.IngestSeq, r.ObjectHash)
					}
					if len(r.Object) > 0 {
						bodies++
					}
				}
			}
			if bodies < 10 {
				t.Errorf("only %d bodies compared", bodies)
			}
		})
	}
}
