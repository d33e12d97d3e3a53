package sqlite_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/krply/krply/internal/cputime"
	"github.com/krply/krply/internal/testing/benchjournal"
	"github.com/krply/krply/storage"
)

// BenchmarkVersionIndexBuild measures the version index's build on the
// query API benchmark's journal of 1,000,000 events
// (KRPLY_BENCH_HISTORY_JOURNAL): BuildVersionIndex on a Store just
// opened, which scans the journal once, in CPU seconds per million
// records of objects, and the heap the index holds per record.
//
//	go test -run '^$' -bench BenchmarkVersionIndexBuild -benchtime 1x ./storage/sqlite/
func BenchmarkVersionIndexBuild(b *testing.B) {
	ctx := context.Background()
	for range b.N {
		s := openLargeJournal(b)
		st, err := s.Stats(ctx)
		if err != nil {
			b.Fatal(err)
		}
		s0 := benchjournal.Stream(0)
		id := storage.ObjectID{ClusterID: s0.ClusterID, Resource: s0.Resource, Namespace: s0.Namespace, Name: fmt.Sprintf("cm-%05d", 0)}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		cpu, wall := cputime.Process(), time.Now()
		if err := s.BuildVersionIndex(ctx); err != nil {
			b.Fatal(err)
		}
		cpu, elapsed := cputime.Process()-cpu, time.Since(wall)
		if _, err := s.LatestAt(ctx, id, benchjournal.Start.Add(time.Hour)); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		versions := float64(st.Records)
		b.ReportMetric(cpu.Seconds()/versions*1e6, "cpu-s/M-records")
		b.ReportMetric(elapsed.Seconds()/versions*1e6, "s/M-records")
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/versions, "B/record")
		runtime.KeepAlive(s)
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
