package sqlite_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/cputime"
	"github.com/krply/krply/internal/testing/benchjournal"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/storagetest"
)

// BenchmarkObjectHistory measures what a history request asks of the
// journal: ObjectHistory of an object's benchjournal.Versions versions, then
// Correlations of their event IDs (the audit provenance; the journal has
// none). "small" is a journal of one object ("small-audited" has an audit
// correlation record of another object); "large" is the query API
// benchmark's journal of 1,000,000 events at KRPLY_BENCH_HISTORY_JOURNAL
// (a copy: the store writes to it), asked at random objects. It reports
// the process CPU per request.
//
//	go test -run XXX -bench BenchmarkObjectHistory ./storage/sqlite/
func BenchmarkObjectHistory(b *testing.B) {
	ctx := context.Background()
	run := func(b *testing.B, s *sqlite.Store, objects int) {
		rng := rand.New(rand.NewPCG(99, 7))
		b.ResetTimer()
		start := cputime.Process()
		for range b.N {
			obj := rng.IntN(objects)
			s0 := benchjournal.Stream(obj % benchjournal.Namespaces)
			id := storage.ObjectID{ClusterID: s0.ClusterID, Resource: s0.Resource, Namespace: s0.Namespace, Name: fmt.Sprintf("cm-%05d", obj)}
			recs, err := s.ObjectHistory(ctx, id, storage.HistoryQuery{Limit: benchjournal.Versions + 1})
			if err != nil {
				b.Fatal(err)
			}
			if len(recs) != benchjournal.Versions || len(recs[0].Object) == 0 {
				b.Fatalf("%s: %d versions", id.Name, len(recs))
			}
			ids := make([]string, len(recs))
			for i := range recs {
				ids[i] = recs[i].EventID
			}
			corr, err := s.Correlations(ctx, ids)
			if err != nil || len(corr) != 0 {
				b.Fatalf("Correlations: %v, %d", err, len(corr))
			}
		}
		b.ReportMetric(float64((cputime.Process()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	}
	// "audited" has a correlation record too (of another object), so
	// that Correlations looks the IDs up.
	for _, audited := range []bool{false, true} {
		name := "small"
		if audited {
			name = "small-audited"
		}
		b.Run(name, func(b *testing.B) {
			var extra []event.Record
			if audited {
				other := benchjournal.Object(benchjournal.Namespaces, 0, benchjournal.Start)
				extra = append(extra, other, storagetest.Correlation(other, "audit-1", "alice", benchjournal.Start.Add(time.Second)))
			}
			s := openSmallJournal(b, time.Second, extra...)
			defer s.Close()
			run(b, s, 1)
		})
	}
	b.Run("large", func(b *testing.B) {
		s := openLargeJournal(b)
		defer s.Close()
		run(b, s, 10_000)
	})
}

// openSmallJournal opens a new journal of one object: a baseline of its
// stream, then benchjournal.Versions versions step apart and the extra records.
func openSmallJournal(b *testing.B, step time.Duration, extra ...event.Record) *sqlite.Store {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "journal.db"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Append(ctx, storagetest.Baseline(benchjournal.Stream(0), "b-0", benchjournal.Start, "1000", nil)); err != nil {
		b.Fatal(err)
	}
	recs := make([]event.Record, benchjournal.Versions, benchjournal.Versions+len(extra))
	for v := range recs {
		recs[v] = benchjournal.Object(0, v, benchjournal.Start.Add(time.Duration(v+1)*step))
	}
	if _, err := s.Append(ctx, append(recs, extra...)); err != nil {
		b.Fatal(err)
	}
	return s
}

// openLargeJournal opens the query API benchmark's journal, the one at
// KRPLY_BENCH_HISTORY_JOURNAL or else a copy of the one
// benchjournal.SQLite builds once, mapping KRPLY_BENCH_HISTORY_MMAP bytes
// of it when set.
func openLargeJournal(b *testing.B, opts ...sqlite.Option) *sqlite.Store {
	path := os.Getenv("KRPLY_BENCH_HISTORY_JOURNAL")
	if path == "" {
		// A copy: the recording benchmarks append to it.
		path = filepath.Join(b.TempDir(), "journal.db")
		benchjournal.CopyFile(b, benchjournal.SQLite(b), path)
	}
	return openJournalAt(b, path, opts...)
}

func openJournalAt(b *testing.B, path string, opts ...sqlite.Option) *sqlite.Store {
	if v := os.Getenv("KRPLY_BENCH_HISTORY_MMAP"); v != "" {
		n, _ := strconv.ParseInt(v, 10, 64)
		opts = append(opts, sqlite.WithMmapSize(n))
	}
	s, err := sqlite.Open(context.Background(), path, opts...)
	if err != nil {
		b.Fatal(err)
	}
	return s
}
