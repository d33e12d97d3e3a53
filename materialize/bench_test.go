package materialize_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/cputime"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/sqlite"
)

// The benchmark journal: one stream of ConfigMaps in namespace "bench" with
// benchObjects objects, a baseline, then modifications up to benchEvents
// object-change records in all, benchRate per hour (so a one-hour window
// holds 50,000 changes).
const (
	benchObjects  = 10_000
	benchEvents   = 1_000_000
	benchRate     = 50_000
	benchVariants = 8
	benchBatch    = 1000
)

var (
	benchStream = event.Stream{ClusterID: "bench", Version: "v1", Resource: "configmaps", Namespace: "bench"}
	benchStart  = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	benchStep   = time.Hour / benchRate
	benchEnd    = benchStart.Add(time.Duration(benchEvents-benchObjects) * benchStep)

	// benchJournals holds one journal per backend, built once per run.
	benchMu       sync.Mutex
	benchJournals = map[string]*benchJournal{}
	// benchDir holds the SQLite journal; TestMain removes it.
	benchDir string
)

type benchJournal struct {
	store   storage.Store
	buildIn time.Duration
}

// benchBackends are the stores the benchmarks run on. open reports whether
// the store already holds the benchmark journal.
var benchBackends = []struct {
	name string
	open func() (storage.Store, bool, error)
}{
	{"memory", func() (storage.Store, bool, error) { return memory.New(), false, nil }},
	{"sqlite", openBenchSQLite},
}

// openBenchSQLite opens the SQLite benchmark journal: in a temporary folder
// removed after the run, or, when KRPLY_BENCH_DIR names a folder, kept there
// and reused by later runs (building it takes minutes).
func openBenchSQLite() (storage.Store, bool, error) {
	ctx := context.Background()
	dir := os.Getenv("KRPLY_BENCH_DIR")
	if dir == "" {
		tmp, err := os.MkdirTemp("", "krply-materialize-bench-")
		if err != nil {
			return nil, false, err
		}
		benchDir, dir = tmp, tmp
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, false, err
	}
	path := filepath.Join(dir, fmt.Sprintf("materialize-%d-%d.db", benchObjects, benchEvents))
	store, err := sqlite.Open(ctx, path)
	if err != nil {
		return nil, false, err
	}
	st, err := store.Stats(ctx)
	if err != nil {
		store.Close()
		return nil, false, err
	}
	if st.Events == benchEvents {
		return store, true, nil
	}
	if st.Events != 0 {
		store.Close()
		return nil, false, fmt.Errorf("%s holds %d events, not the benchmark journal; remove it", path, st.Events)
	}
	return store, false, nil
}

func TestMain(m *testing.M) {
	code := testenv.RunMain(m)
	for _, j := range benchJournals {
		_ = j.store.Close()
	}
	if benchDir != "" {
		_ = os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// forEachBackend runs a benchmark on every backend's journal.
func forEachBackend(b *testing.B, f func(b *testing.B, m *materialize.Materializer, store storage.Store)) {
	for _, be := range benchBackends {
		b.Run(be.name, func(b *testing.B) {
			j := buildBenchJournal(b, be.name, be.open)
			m, err := materialize.New(j.store)
			if err != nil {
				b.Fatal(err)
			}
			f(b, m, j.store)
		})
	}
}

// benchBody is a ConfigMap shaped like the API server's output; bodies are
// built once per object and variant and reused by every record.
func benchBodies() [][][]byte {
	bodies := make([][][]byte, benchObjects)
	for i := range bodies {
		bodies[i] = make([][]byte, benchVariants)
		for v := range bodies[i] {
			bodies[i][v] = []byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%05d","namespace":"bench","uid":"uid-%05d","resourceVersion":"%d","creationTimestamp":"2025-01-01T00:00:00Z","labels":{"app":"shop","tier":"backend"},"managedFields":[{"manager":"kubectl","operation":"Update","apiVersion":"v1","time":"2025-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:config.yaml":{},"f:version":{}}}}]},"data":{"version":"%d","config.yaml":"listen: 8080\nworkers: %d\nlog: info\n"}}`, i, i, v, v, v+1))
		}
	}
	return bodies
}

func buildBenchJournal(b *testing.B, backend string, open func() (storage.Store, bool, error)) *benchJournal {
	benchMu.Lock()
	defer benchMu.Unlock()
	if j := benchJournals[backend]; j != nil {
		return j
	}
	start := time.Now()
	ctx := context.Background()
	store, built, err := open()
	if err != nil {
		b.Fatal(err)
	}
	if built {
		j := &benchJournal{store: store}
		benchJournals[backend] = j
		return j
	}
	bodies := benchBodies()
	hashes := make([][]string, len(bodies))
	for i := range bodies {
		hashes[i] = make([]string, benchVariants)
		for v := range bodies[i] {
			hashes[i][v] = event.ObjectHash(bodies[i][v])
		}
	}
	names := make([]string, benchObjects)
	uids := make([]string, benchObjects)
	for i := range names {
		names[i], uids[i] = fmt.Sprintf("cm-%05d", i), fmt.Sprintf("uid-%05d", i)
	}
	sid := benchStream.ID()
	rv := 1
	ref := func(i int) event.ResourceRef {
		return event.ResourceRef{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "bench",
			Name: names[i], UID: uids[i], ResourceVersion: strconv.Itoa(rv)}
	}
	batch := make([]event.Record, 0, benchBatch)
	flush := func() {
		if _, err := store.Append(ctx, batch); err != nil {
			b.Fatal(err)
		}
		batch = batch[:0]
	}
	add := func(rec event.Record) {
		batch = append(batch, rec)
		if len(batch) == benchBatch {
			flush()
		}
	}
	at := benchStart
	add(event.Record{Type: event.TypeBaseline, EventID: "bench-b1-begin", ClusterID: "bench", StreamID: sid, ObservedAt: at,
		BaselineID: "b1", Baseline: &event.Baseline{ID: "b1", Phase: event.BaselineBegin}})
	for i := 0; i < benchObjects; i++ {
		r := ref(i)
		add(event.Record{Type: event.TypeEvent, EventID: event.EventID(sid, event.TypeEvent, r, event.Added, "b1"),
			ClusterID: "bench", StreamID: sid, ObservedAt: at, WatchType: event.Added, Synthetic: true, BaselineID: "b1",
			Resource: r, Object: bodies[i][0], ObjectHash: hashes[i][0]})
	}
	add(event.Record{Type: event.TypeBaseline, EventID: "bench-b1-end", ClusterID: "bench", StreamID: sid, ObservedAt: at,
		BaselineID: "b1", Baseline: &event.Baseline{ID: "b1", Phase: event.BaselineEnd, ResourceVersion: "1", ItemCount: benchObjects}})
	rng := rand.New(rand.NewPCG(1, 2))
	for n := benchObjects; n < benchEvents; n++ {
		rv++
		at = at.Add(benchStep)
		i := rng.IntN(benchObjects)
		v := 1 + n%(benchVariants-1)
		r := ref(i)
		add(event.Record{Type: event.TypeEvent, EventID: event.EventID(sid, event.TypeEvent, r, event.Modified),
			ClusterID: "bench", StreamID: sid, ObservedAt: at, WatchType: event.Modified,
			Resource: r, Object: bodies[i][v], ObjectHash: hashes[i][v]})
	}
	flush()
	j := &benchJournal{store: store, buildIn: time.Since(start)}
	benchJournals[backend] = j
	b.Logf("%s journal of %d object changes built in %s", backend, benchEvents, j.buildIn)
	return j
}

// BenchmarkObjectAt asks for random objects at random times and reports
// the median and 99th percentile latency.
func BenchmarkObjectAt(b *testing.B) { forEachBackend(b, benchObjectAt) }

func benchObjectAt(b *testing.B, m *materialize.Materializer, store storage.Store) {
	ctx := context.Background()
	buildVersionIndex(b, store)
	rng := rand.New(rand.NewPCG(3, 4))
	span := benchEnd.Sub(benchStart)
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	cpu := cputime.Process()
	for n := 0; n < b.N; n++ {
		id := storage.ObjectID{ClusterID: "bench", Resource: "configmaps", Namespace: "bench", Name: fmt.Sprintf("cm-%05d", rng.IntN(benchObjects))}
		at := benchStart.Add(time.Duration(rng.Int64N(int64(span))))
		start := time.Now()
		st, err := m.ObjectAt(ctx, id, at)
		lat = append(lat, time.Since(start))
		if err != nil || !st.Exists || !st.Covered {
			b.Fatalf("ObjectAt(%s, %s): exists=%v covered=%v err %v", id.Name, at, st != nil && st.Exists, st != nil && st.Covered, err)
		}
	}
	b.StopTimer()
	reportPercentiles(b, lat)
	reportCPU(b, cpu)
}

// buildVersionIndex builds the version index of a SQLite store before
// the timer starts: over a journal this large the first LatestAt would
// start it on a goroutine of its own, beside the answers measured.
func buildVersionIndex(b *testing.B, store storage.Store) {
	if s, ok := store.(*sqlite.Store); ok {
		if err := s.BuildVersionIndex(context.Background()); err != nil {
			b.Fatal(err)
		}
	}
}

// reportCPU reports the process CPU time per operation since start: on a
// machine shared with other work it says what an operation costs better
// than wall time does.
func reportCPU(b *testing.B, start time.Duration) {
	if start >= 0 {
		b.ReportMetric(float64((cputime.Process()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
	}
}

// BenchmarkCoverageAt measures storage.CoverageAt alone on the same
// journal and times as BenchmarkObjectAt, which calls it once per object
// stream: the difference is what ObjectAt itself costs.
func BenchmarkCoverageAt(b *testing.B) {
	forEachBackend(b, func(b *testing.B, _ *materialize.Materializer, store storage.Store) {
		ctx := context.Background()
		rng := rand.New(rand.NewPCG(3, 4))
		span := benchEnd.Sub(benchStart)
		lat := make([]time.Duration, 0, b.N)
		b.ResetTimer()
		cpu := cputime.Process()
		for n := 0; n < b.N; n++ {
			_ = rng.IntN(benchObjects) // the same random sequence as BenchmarkObjectAt
			at := benchStart.Add(time.Duration(rng.Int64N(int64(span))))
			start := time.Now()
			cov, err := storage.CoverageAt(ctx, store, benchStream.ID(), at)
			lat = append(lat, time.Since(start))
			if err != nil || !cov.Covered {
				b.Fatalf("CoverageAt(%s): %+v, %v", at, cov, err)
			}
		}
		b.StopTimer()
		reportPercentiles(b, lat)
		reportCPU(b, cpu)
	})
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkSnapshot computes a snapshot of the 10,000-object
// namespace in the middle of the journal.
func BenchmarkSnapshot(b *testing.B) { forEachBackend(b, benchSnapshot) }

func benchSnapshot(b *testing.B, m *materialize.Materializer, _ storage.Store) {
	ctx := context.Background()
	at := benchStart.Add(benchEnd.Sub(benchStart) / 2)
	scope := materialize.Scope{ClusterID: "bench", Namespaces: []string{"bench"}}
	b.ResetTimer()
	cpu := cputime.Process()
	defer reportCPU(b, cpu)
	for n := 0; n < b.N; n++ {
		snap, err := m.Snapshot(ctx, scope, at)
		if err != nil {
			b.Fatal(err)
		}
		if !snap.Complete || len(snap.Objects) != benchObjects {
			b.Fatalf("complete=%v objects=%d", snap.Complete, len(snap.Objects))
		}
	}
}

// BenchmarkDiff diffs the namespace over one hour (50,000 changes).
func BenchmarkDiff(b *testing.B) { forEachBackend(b, benchDiff) }

func benchDiff(b *testing.B, m *materialize.Materializer, _ storage.Store) {
	ctx := context.Background()
	from := benchStart.Add(benchEnd.Sub(benchStart) / 2)
	to := from.Add(time.Hour)
	scope := materialize.Scope{ClusterID: "bench", Namespaces: []string{"bench"}}
	b.ResetTimer()
	cpu := cputime.Process()
	defer reportCPU(b, cpu)
	for n := 0; n < b.N; n++ {
		d, err := m.Diff(ctx, scope, from, to)
		if err != nil {
			b.Fatal(err)
		}
		// 50,000 changes touch about 99% of 10,000 objects at random; one
		// in seven ends on the body it started with.
		if d.HasGaps || len(d.Objects) < benchObjects*8/10 {
			b.Fatalf("hasGaps=%v objects=%d", d.HasGaps, len(d.Objects))
		}
	}
}

// BenchmarkFind finds, over the whole journal (10,000 objects, 1,000,000
// versions), when each ConfigMap had data.version "3": the stream read
// once, the condition evaluated on each distinct body of an object (a
// substring test here: the cost of CEL itself is the cel module's
// BenchmarkMatch, per evaluation).
func BenchmarkFind(b *testing.B) { forEachBackend(b, benchFind) }

func benchFind(b *testing.B, m *materialize.Materializer, _ storage.Store) {
	ctx := context.Background()
	want := []byte(`"version":"3"`)
	cond := materialize.PredicateFunc(func(_ context.Context, object json.RawMessage) (bool, error) {
		return bytes.Contains(object, want), nil
	})
	q := materialize.FindQuery{Scope: materialize.Scope{ClusterID: "bench", Namespaces: []string{"bench"}}}
	b.ResetTimer()
	cpu := cputime.Process()
	defer reportCPU(b, cpu)
	for n := 0; n < b.N; n++ {
		f, err := m.Find(ctx, q, cond)
		if err != nil {
			b.Fatal(err)
		}
		if f.Versions != benchEvents || len(f.Objects) < benchObjects*9/10 {
			b.Fatalf("versions %d, objects %d", f.Versions, len(f.Objects))
		}
		b.ReportMetric(float64(f.Evaluated), "evaluated")
	}
}
