package sqlite_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/cputime"
	"github.com/krply/krply/internal/testing/benchjournal"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/storagetest"
)

// BenchmarkObjectAt measures what an object-at-T request asks of the
// journal: materialize's ObjectAt of a random object at a random time of
// the history, as server.BenchmarkQueryAPI asks it. "small" is a journal
// of one object; "large" is the query API benchmark's journal of
// 1,000,000 events at KRPLY_BENCH_HISTORY_JOURNAL (a copy: the store
// writes to it), "large-recording" the same while events are appended,
// and "large-recording-index-off" that without the version index.
// It reports the process CPU per request and the latency percentiles.
//
//	go test -run XXX -bench BenchmarkObjectAt ./storage/sqlite/
func BenchmarkObjectAt(b *testing.B) {
	ctx := context.Background()
	// With recording, a batch of 20 events is appended after every 4
	// requests (not measured), as server.BenchmarkQueryAPI's recorder
	// does meanwhile: each commit makes the read connections drop their
	// page caches.
	run := func(b *testing.B, s *sqlite.Store, objects int, recording bool) {
		m, err := materialize.New(s)
		if err != nil {
			b.Fatal(err)
		}
		span := int64(objects * benchjournal.Versions)
		rng := rand.New(rand.NewPCG(99, 7))
		next := objects * benchjournal.Versions
		latencies := make([]time.Duration, 0, b.N)
		// The version index is built before the timer starts (see
		// BenchmarkVersionIndexBuild).
		if err := s.BuildVersionIndex(ctx); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		var cpu time.Duration
		start := cputime.Process()
		for i := range b.N {
			if recording && i%4 == 0 {
				cpu += cputime.Process() - start
				recs := make([]event.Record, 20)
				for k := range recs {
					recs[k] = benchjournal.Object(next%objects, next/objects, benchjournal.Start.Add(time.Duration(next+1)*time.Millisecond))
					next++
				}
				if _, err := s.Append(ctx, recs); err != nil {
					b.Fatal(err)
				}
				start = cputime.Process()
			}
			obj := rng.IntN(objects)
			s0 := benchjournal.Stream(obj % benchjournal.Namespaces)
			id := storage.ObjectID{ClusterID: s0.ClusterID, Resource: s0.Resource, Namespace: s0.Namespace, Name: fmt.Sprintf("cm-%05d", obj)}
			at := benchjournal.Start.Add(time.Duration(int64(objects)+rng.Int64N(span-int64(objects))) * time.Millisecond)
			began := time.Now()
			st, err := m.ObjectAt(ctx, id, at)
			latencies = append(latencies, time.Since(began))
			if err != nil {
				b.Fatal(err)
			}
			if !st.Exists || !st.Covered || len(st.Object) == 0 {
				b.Fatalf("%s at %s: exists %v, covered %v", id.Name, at, st.Exists, st.Covered)
			}
		}
		cpu += cputime.Process() - start
		b.StopTimer()
		b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
		reportPercentiles(b, latencies, "")
	}
	b.Run("small", func(b *testing.B) {
		s := openSmallJournal(b, time.Millisecond, storagetest.Checkpoint(benchjournal.Stream(0), "2000", true, benchjournal.Start.Add(time.Hour)))
		defer s.Close()
		run(b, s, 1, false)
	})
	for _, c := range []struct {
		name      string
		recording bool
		opts      []sqlite.Option
	}{
		{"large", false, nil},
		{"large-recording", true, nil},
		{"large-recording-index-off", true, []sqlite.Option{sqlite.WithVersionIndex(0)}},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := openLargeJournal(b, c.opts...)
			defer s.Close()
			run(b, s, 10_000, c.recording)
		})
	}
}
