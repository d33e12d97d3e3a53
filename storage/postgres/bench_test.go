package postgres_test

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/postgres"
	"github.com/krply/krply/storage/storagetest"
)

// The benchmarks record realistic ConfigMap changes (a body of about
// 600 bytes with managed fields) in batches of benchBatch, the size of a
// busy recorder's commits. Run them with
//
//	go test -run '^$' -bench . -benchtime 20000x ./
//
// BenchmarkObjectAt and BenchmarkSnapshot load KRPLY_PG_BENCH_EVENTS
// events (default 1,000,000) first.
const benchBatch = 100

var benchT0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// benchEvents returns n MODIFIED events of objects objects (round robin)
// of one stream of cluster, one millisecond apart.
func benchEvents(cluster string, objects, from, n int) []event.Record {
	s := event.Stream{ClusterID: cluster, Version: "v1", Resource: "configmaps", Namespace: "bench"}
	out := make([]event.Record, n)
	for i := range n {
		k := from + i
		name := "cm-" + strconv.Itoa(k%objects)
		rv := strconv.Itoa(1000 + k)
		ref := storagetest.Ref(s, "ConfigMap", "bench", name, "u-"+name, rv)
		body := storagetest.ConfigMap("bench", name, "u-"+name, rv, map[string]string{"k": rv, "app": "bench", "tier": "backend"})
		out[i] = storagetest.Event(s, event.Modified, ref, body, benchT0.Add(time.Duration(k)*time.Millisecond))
	}
	return out
}

// BenchmarkAppend compares Append with a raw batched INSERT and a COPY of
// the same rows (the record's JSON and its body) into a bare table, in the
// same run.
func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	dsn := pgtestDatabase(b)
	b.Run("krply", func(b *testing.B) {
		recs := benchEvents("c1", 1000, 0, b.N)
		s, err := postgres.Open(ctx, dsn, postgres.WithSchema("bench_append"))
		if err != nil {
			b.Fatal(err)
		}
		defer s.Close()
		b.ResetTimer()
		for i := 0; i < b.N; i += benchBatch {
			if _, err := s.Append(ctx, recs[i:min(i+benchBatch, b.N)]); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		b.Fatal(err)
	}
	defer conn.Close(ctx)
	bare := func(b *testing.B, name string) {
		if _, err := conn.Exec(ctx, "DROP TABLE IF EXISTS "+name+"; CREATE TABLE "+name+" (cluster_id text, event_id text, stream_id text, observed_at bigint, body bytea, meta bytea)"); err != nil {
			b.Fatal(err)
		}
	}
	rows := func(batch []event.Record) [][]any {
		out := make([][]any, len(batch))
		for i, r := range batch {
			m := r
			m.Object = nil
			meta, _ := json.Marshal(&m)
			out[i] = []any{r.ClusterID, r.EventID, r.StreamID, r.ObservedAt.UnixNano(), []byte(r.Object), meta}
		}
		return out
	}
	b.Run("insert", func(b *testing.B) {
		recs := benchEvents("c1", 1000, 0, b.N)
		bare(b, "bare_insert")
		b.ResetTimer()
		for i := 0; i < b.N; i += benchBatch {
			batch := rows(recs[i:min(i+benchBatch, b.N)])
			var c, e, st []string
			var o []int64
			var body, meta [][]byte
			for _, r := range batch {
				c, e, st = append(c, r[0].(string)), append(e, r[1].(string)), append(st, r[2].(string))
				o, body, meta = append(o, r[3].(int64)), append(body, r[4].([]byte)), append(meta, r[5].([]byte))
			}
			if _, err := conn.Exec(ctx, `INSERT INTO bare_insert SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bytea[], $6::bytea[])`, c, e, st, o, body, meta); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})
	b.Run("copy", func(b *testing.B) {
		recs := benchEvents("c1", 1000, 0, b.N)
		bare(b, "bare_copy")
		b.ResetTimer()
		for i := 0; i < b.N; i += benchBatch {
			if _, err := conn.CopyFrom(ctx, pgx.Identifier{"bare_copy"}, []string{"cluster_id", "event_id", "stream_id", "observed_at", "body", "meta"},
				pgx.CopyFromRows(rows(recs[i:min(i+benchBatch, b.N)]))); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "records/s")
	})
}

// BenchmarkConcurrentRecorders measures the combined throughput of two
// recorders appending at once, each with a store (a connection pool) of
// its own, as two processes would: of two clusters, and two replicas of
// one cluster appending the same records (each stored once).
func BenchmarkConcurrentRecorders(b *testing.B) {
	ctx := context.Background()
	dsn := pgtestDatabase(b)
	for _, sameCluster := range []bool{false, true} {
		name := "two-clusters"
		if sameCluster {
			name = "one-cluster-two-replicas"
		}
		b.Run(name, func(b *testing.B) {
			schema := "bench_" + strconv.FormatBool(sameCluster)
			var batches [2][]event.Record
			for w := range 2 {
				cluster := "c" + strconv.Itoa(w)
				if sameCluster {
					cluster = "c0"
				}
				batches[w] = benchEvents(cluster, 1000, 0, b.N)
			}
			stores := make([]*postgres.Store, 2)
			for w := range stores {
				s, err := postgres.Open(ctx, dsn, postgres.WithSchema(schema))
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				stores[w] = s
			}
			b.ResetTimer()
			var wg sync.WaitGroup
			errs := make(chan error, 2)
			for w := range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; i < b.N; i += benchBatch {
						if _, err := stores[w].Append(ctx, batches[w][i:min(i+benchBatch, b.N)]); err != nil {
							errs <- err
							return
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				b.Fatal(err)
			}
			st, err := stores[0].Stats(ctx)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(2*b.N)/b.Elapsed().Seconds(), "appended/s")
			b.ReportMetric(float64(st.Records)/b.Elapsed().Seconds(), "stored/s")
		})
	}
}

var (
	loadedMu sync.Mutex
	loaded   *postgres.Store
)

// loadedStore returns a journal of KRPLY_PG_BENCH_EVENTS events of 10,000
// objects (100 versions each by default), loaded once per run.
func loadedStore(b *testing.B) (*postgres.Store, int, int) {
	const objects = 10000
	n := 1_000_000
	if v, err := strconv.Atoi(os.Getenv("KRPLY_PG_BENCH_EVENTS")); err == nil && v > 0 {
		n = v
	}
	loadedMu.Lock()
	defer loadedMu.Unlock()
	if loaded != nil {
		return loaded, n, objects
	}
	ctx := context.Background()
	s, err := postgres.Open(ctx, pgtestDatabase(b), postgres.WithSchema("bench_loaded"))
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	const chunk = 1000
	for i := 0; i < n; i += chunk {
		if _, err := s.Append(ctx, benchEvents("c1", objects, i, min(chunk, n-i))); err != nil {
			b.Fatal(err)
		}
	}
	took := time.Since(start)
	conn, err := pgx.Connect(ctx, pgtestDatabase(b))
	if err == nil {
		_, _ = conn.Exec(ctx, "SET search_path = bench_loaded; VACUUM ANALYZE krply_records")
		conn.Close(ctx)
	}
	b.Logf("loaded %d events of %d objects in %s (%.0f records/s, batches of %d)", n, objects, took.Round(time.Millisecond), float64(n)/took.Seconds(), chunk)
	loaded = s
	return s, n, objects
}

// BenchmarkObjectAt measures LatestAt (the object at a time T, with its
// body) on the loaded journal at random objects and times, and reports
// its p50 and p99.
func BenchmarkObjectAt(b *testing.B) {
	ctx := context.Background()
	s, n, objects := loadedStore(b)
	rng := rand.New(rand.NewPCG(1, 2))
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		obj := storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "bench", Name: "cm-" + strconv.Itoa(rng.IntN(objects))}
		at := benchT0.Add(time.Duration(rng.IntN(n)) * time.Millisecond)
		start := time.Now()
		if _, err := s.LatestAt(ctx, obj, at); err != nil && at.Sub(benchT0) > time.Duration(objects)*time.Millisecond {
			b.Fatal(err)
		}
		lat = append(lat, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkSnapshot measures AliveAt of the whole stream (all 10,000
// objects, with bodies) at the end of the loaded journal and in its
// middle: what a snapshot of the namespace reads.
func BenchmarkSnapshot(b *testing.B) {
	ctx := context.Background()
	s, n, objects := loadedStore(b)
	stream := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "bench"}
	for _, tc := range []struct {
		name string
		at   time.Time
	}{{"end", benchT0.Add(time.Duration(n) * time.Millisecond)}, {"middle", benchT0.Add(time.Duration(n/2) * time.Millisecond)}} {
		b.Run(tc.name, func(b *testing.B) {
			for range b.N {
				recs, err := s.AliveAt(ctx, storage.AliveQuery{StreamID: stream.ID(), At: tc.at})
				if err != nil {
					b.Fatal(err)
				}
				if len(recs) != objects {
					b.Fatalf("%d objects alive, want %d", len(recs), objects)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/snapshot")
		})
	}
}

func pgtestDatabase(b *testing.B) string { return database(b) }
