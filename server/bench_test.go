package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/metrics"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/cputime"
	"github.com/krply/krply/internal/testing/benchjournal"
	"github.com/krply/krply/server"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/storagetest"
)

// The query API benchmark journal: benchNamespaces streams of ConfigMaps,
// benchObjects objects in all with benchVersions versions each (1,000,000
// events), one event per millisecond after a baseline of each stream
// (internal/testing/benchjournal).
const (
	benchNamespaces = benchjournal.Namespaces
	benchObjects    = benchjournal.Objects
	benchVersions   = benchjournal.Versions
)

var (
	benchStart  = benchjournal.Start
	benchStream = benchjournal.Stream
	benchObject = benchjournal.Object
)

// benchJournal returns the path of the benchmark journal, built once.
func benchJournal(b *testing.B) string { return benchjournal.SQLite(b) }

// copyFile copies the cached journal, so that the run's appends leave it
// as it was.
func copyFile(b *testing.B, from, to string) { benchjournal.CopyFile(b, from, to) }

// BenchmarkQueryAPI: 4 concurrent clients, then 32, ask object-at-T and
// history of random objects for 30 s (KRPLY_BENCH_SECONDS to change it) through the
// HTTP handler over a 1,000,000-event SQLite journal, while a recorder
// appends 1,000 events a second to the same journal. It reports the p50
// and p99 latency of each request kind in ms, the errors, and the
// recorder's append latency (its lag) before and during the load. The
// clients accept gzip, as Go's HTTP client does; KRPLY_BENCH_PLAIN=1
// makes them ask for plain answers, and KRPLY_BENCH_CLIENTS=n runs n
// clients instead of 4 and 32. KRPLY_BENCH_RECORDER=process runs the
// recorder in a process of its own on the same journal (this process's
// Store then learns of its appends as of another process's), and
// KRPLY_BENCH_NICE=n lowers this process's priority by n: the recorder's
// lag when the queries do not take its CPU, as a recorder and a query
// server in containers of their own would run.
//
// It then measures the harness's floor for a third of the time: the same
// clients, recorder and HTTP stack against a handler that answers with
// canned bytes of the same sizes (floor-p99-ms, floor-req/s), so that a
// run tells what of the latency the machine costs before the query API
// does any work; and the CPU per request of each kind against both, one
// request at a time (object-cpu-ms, floor-object-cpu-ms, …). The Go
// runtime's scheduling latency (how long a runnable goroutine waited for
// a CPU), p99 over all goroutines, alone and under the load
// (sched-quiet-p99-ms, sched-loaded-p99-ms), tells how much of the
// recorder's lag under load is its wait for a CPU.
//
//	go test -run XXX -bench BenchmarkQueryAPI -benchtime 1x ./server/
func BenchmarkQueryAPI(b *testing.B) {
	clients := []int{4, 32}
	if n, err := strconv.Atoi(os.Getenv("KRPLY_BENCH_CLIENTS")); err == nil && n > 0 {
		clients = []int{n}
	}
	// A recorder of its own process, and a lower priority for this one,
	// are in the sub-benchmark's name.
	var mode string
	if os.Getenv("KRPLY_BENCH_RECORDER") == "process" {
		mode += ",recorder=process"
	}
	if n, err := strconv.Atoi(os.Getenv("KRPLY_BENCH_NICE")); err == nil && n > 0 {
		mode += fmt.Sprintf(",nice=%d", n)
	}
	for _, n := range clients {
		b.Run(fmt.Sprintf("clients=%d%s", n, mode), func(b *testing.B) { benchQueryAPI(b, n) })
	}
}

// benchQueryAPI is BenchmarkQueryAPI with the number of clients.
func benchQueryAPI(b *testing.B, clients int) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "journal.db")
	copyFile(b, benchJournal(b), path)
	store, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	// The version index built, as a server that has answered for a while
	// has it: the first answer over a journal this large would start its
	// build beside the requests measured.
	if err := store.BuildVersionIndex(ctx); err != nil {
		b.Fatal(err)
	}
	h := server.NewHandler(store)
	srv := httptest.NewServer(h)
	defer srv.Close()
	seconds := 30
	if s, err := strconv.Atoi(os.Getenv("KRPLY_BENCH_SECONDS")); err == nil && s > 0 {
		seconds = s
	}

	// The recorder: a batch of 20 events every 20 ms, each object moving
	// on from its last version; its append latency is its lag. In this
	// process, or, with KRPLY_BENCH_RECORDER=process, in a process of its
	// own on the same journal (the test binary again, benchRecorderMain).
	var rec *benchRecorder
	if os.Getenv("KRPLY_BENCH_RECORDER") == "process" {
		rec = startRecorderProcess(b, path)
	} else {
		rec = startRecorder(ctx, store)
	}
	// KRPLY_BENCH_NICE=n lowers the priority of this process (the
	// clients and the query API) by n, as a container of its own with a
	// smaller CPU weight would: with the recorder in a process of its
	// own, what its lag is when its CPU does not depend on the queries.
	if n, err := strconv.Atoi(os.Getenv("KRPLY_BENCH_NICE")); err == nil && n > 0 {
		if err := niceThreads(n); err != nil {
			b.Fatal(err)
		}
	}
	lagSince := rec.since
	schedQuiet := schedLatencies()
	time.Sleep(5 * time.Second)
	quiet := lagSince(0)
	schedQuietP99 := schedPercentileSince(schedQuiet, 0.99)

	// Go's HTTP client accepts gzip, which the server uses for the
	// histories (132 KB); KRPLY_BENCH_PLAIN=1 asks plain answers instead,
	// as client.WithoutCompression and kubectl's --disable-compression do.
	plain := os.Getenv("KRPLY_BENCH_PLAIN") == "1"
	httpc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: clients, DisableCompression: plain}}
	fromLoad := len(lagSince(0))
	cpuStart := cputime.Process()
	schedLoad := schedLatencies()
	b.ResetTimer()
	res := closedLoad(httpc, srv.URL, clients, time.Duration(seconds)*time.Second)
	b.StopTimer()
	cpuLoad := cputime.Process() - cpuStart
	schedLoadP99 := schedPercentileSince(schedLoad, 0.99)
	loaded := lagSince(fromLoad)

	// The harness's floor: the same clients, recorder and HTTP stack for a
	// third of the time against a handler that answers every request with
	// the bytes of one object's answer, computed once. Its latency is what
	// the machine costs before the query API does any work.
	floorSrv := httptest.NewServer(cannedAnswers(b, h, benchQuery(1)))
	defer floorSrv.Close()
	floor := closedLoad(httpc, floorSrv.URL, clients, time.Duration(max(seconds/3, 1))*time.Second)

	// CPU per request of each kind, asked one at a time once the
	// recorder stopped: on a shared machine a steadier figure than the
	// latencies. Asked of the canned answers too, it is the harness's
	// share: the client, the HTTP stack and the loopback.
	cpuPer := func(base, route string, n int) float64 {
		rng := rand.New(rand.NewPCG(99, 7))
		start := cputime.Process()
		for range n {
			q := benchQuery(rng.IntN(benchObjects))
			if route == "object" {
				q.Set("at", benchAt(rng))
			}
			resp, err := httpc.Get(base + "/api/v1/" + route + "?" + q.Encode())
			if err != nil {
				b.Fatal(err)
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		return float64((cputime.Process() - start).Microseconds()) / 1000 / float64(n)
	}
	// The recorder stops first: its appends would count as the requests'.
	if err := rec.stop(); err != nil {
		b.Fatalf("the recorder failed: %v", err)
	}
	b.ReportMetric(cpuPer(srv.URL, "object", 200), "object-cpu-ms")
	b.ReportMetric(cpuPer(srv.URL, "history", 100), "history-cpu-ms")
	b.ReportMetric(cpuPer(floorSrv.URL, "object", 200), "floor-object-cpu-ms")
	b.ReportMetric(cpuPer(floorSrv.URL, "history", 100), "floor-history-cpu-ms")
	for _, r := range []loadResult{res, floor} {
		if r.errors > 0 {
			b.Errorf("%d requests failed, the first: %v", r.errors, r.firstErr)
		}
	}
	b.ReportMetric(float64(res.requests())/float64(seconds), "req/s")
	b.ReportMetric(float64(cpuLoad.Microseconds())/1000/float64(res.requests()), "load-cpu-ms/req")
	b.ReportMetric(ms(res.objects, 50), "object-p50-ms")
	b.ReportMetric(ms(res.objects, 99), "object-p99-ms")
	b.ReportMetric(ms(res.histories, 50), "history-p50-ms")
	b.ReportMetric(ms(res.histories, 99), "history-p99-ms")
	b.ReportMetric(float64(res.errors+floor.errors), "errors")
	b.ReportMetric(float64(floor.requests())/float64(max(seconds/3, 1)), "floor-req/s")
	b.ReportMetric(ms(slices.Concat(floor.objects, floor.histories), 99), "floor-p99-ms")
	b.ReportMetric(ms(quiet, 99), "append-quiet-p99-ms")
	b.ReportMetric(ms(loaded, 99), "append-loaded-p99-ms")
	// What the recorder appended under the load: its ticker drops the
	// ticks a slow append overruns.
	b.ReportMetric(float64(len(loaded)*20)/float64(seconds), "append-loaded-ev/s")
	b.ReportMetric(schedQuietP99, "sched-quiet-p99-ms")
	b.ReportMetric(schedLoadP99, "sched-loaded-p99-ms")
}

// benchRecorder is BenchmarkQueryAPI's recorder: its append latencies,
// and how to stop it.
type benchRecorder struct {
	mu   sync.Mutex
	lat  []time.Duration
	stop func() error
}

func (r *benchRecorder) add(d time.Duration) {
	r.mu.Lock()
	r.lat = append(r.lat, d)
	r.mu.Unlock()
}

// since returns the latencies from the from-th on.
func (r *benchRecorder) since(from int) []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.lat[from:])
}

// recordBench appends a batch of 20 events every 20 ms to store until
// stop is closed, each object moving on from its last version, and
// reports each append's latency.
func recordBench(ctx context.Context, store *sqlite.Store, stop <-chan struct{}, report func(time.Duration)) error {
	next := benchObjects * benchVersions
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return nil
		case <-tick.C:
		}
		recs := make([]event.Record, 20)
		for i := range recs {
			recs[i] = benchObject(next%benchObjects, next/benchObjects, benchStart.Add(time.Duration(next+1)*time.Millisecond))
			next++
		}
		start := time.Now()
		if _, err := store.Append(ctx, recs); err != nil {
			return err
		}
		report(time.Since(start))
	}
}

// startRecorder runs recordBench on a goroutine of this process.
func startRecorder(ctx context.Context, store *sqlite.Store) *benchRecorder {
	r := &benchRecorder{}
	stop, done := make(chan struct{}), make(chan error, 1)
	go func() { done <- recordBench(ctx, store, stop, r.add) }()
	r.stop = func() error {
		close(stop)
		return <-done
	}
	return r
}

// benchRecorderEnv names the journal a recorder process appends to
// (benchRecorderMain).
const benchRecorderEnv = "KRPLY_BENCH_RECORDER_JOURNAL"

// startRecorderProcess runs recordBench in a process of its own, the test
// binary again, on the journal at path; it prints each append's latency
// in µs on a line, and stops when its standard input closes.
func startRecorderProcess(b *testing.B, path string) *benchRecorder {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), benchRecorderEnv+"="+path)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	r := &benchRecorder{}
	read := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			us, err := strconv.ParseInt(sc.Text(), 10, 64)
			if err != nil {
				read <- fmt.Errorf("the recorder process wrote %q", sc.Text())
				return
			}
			r.add(time.Duration(us) * time.Microsecond)
		}
		read <- sc.Err()
	}()
	r.stop = func() error {
		stdin.Close()
		rerr := <-read
		return errors.Join(rerr, cmd.Wait())
	}
	return r
}

// benchRecorderMain is the recorder process of startRecorderProcess.
func benchRecorderMain(path string) int {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, path, sqlite.WithVersionIndex(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stop := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		close(stop)
	}()
	out := bufio.NewWriter(os.Stdout)
	err = recordBench(ctx, store, stop, func(d time.Duration) {
		fmt.Fprintln(out, d.Microseconds())
		out.Flush()
	})
	if cerr := store.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// schedLatencies reads the runtime's histogram of the time goroutines
// waited, runnable, for a CPU (/sched/latencies:seconds).
func schedLatencies() *metrics.Float64Histogram {
	s := []metrics.Sample{{Name: "/sched/latencies:seconds"}}
	metrics.Read(s)
	return s[0].Value.Float64Histogram()
}

// schedPercentileSince returns the p-th quantile, in ms, of the
// scheduling latencies since before (schedLatencies): the upper bound of
// the histogram's bucket it falls in.
func schedPercentileSince(before *metrics.Float64Histogram, p float64) float64 {
	now := schedLatencies()
	var total uint64
	for i, c := range now.Counts {
		total += c - before.Counts[i]
	}
	target := uint64(math.Ceil(float64(total) * p))
	var cum uint64
	for i, c := range now.Counts {
		cum += c - before.Counts[i]
		if cum >= target && cum > 0 {
			upper := now.Buckets[i+1]
			if math.IsInf(upper, 1) {
				upper = now.Buckets[i]
			}
			return upper * 1000
		}
	}
	return 0
}

// benchQuery returns the parameters naming object obj of the benchmark
// journal.
func benchQuery(obj int) url.Values {
	return url.Values{"cluster": {"bench"}, "resource": {"configmaps.core"}, "namespace": {benchStream(obj % benchNamespaces).Namespace},
		"name": {fmt.Sprintf("cm-%05d", obj)}}
}

// benchAt returns a random time within the benchmark journal's events.
func benchAt(rng *rand.Rand) string {
	return benchStart.Add(time.Duration(rng.Int64N(benchObjects*benchVersions)) * time.Millisecond).Format(time.RFC3339Nano)
}

// loadResult is what closedLoad measured: the latency of each object-at-T
// and history request, and the requests that failed.
type loadResult struct {
	objects, histories []time.Duration
	errors             int64
	firstErr           error
}

func (r loadResult) requests() int { return len(r.objects) + len(r.histories) }

// closedLoad runs clients that each ask, one request after the other
// until d has passed, object-at-T and history in turn of random objects
// at base (the /api/v1 routes).
func closedLoad(httpc *http.Client, base string, clients int, d time.Duration) loadResult {
	var errs atomic.Int64
	var errMu sync.Mutex
	var firstErr error
	lat := make([][2][]time.Duration, clients)
	deadline := time.Now().Add(d)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(c), 7))
			for i := 0; time.Now().Before(deadline); i++ {
				q := benchQuery(rng.IntN(benchObjects))
				route, kind := "object", 0
				if i%2 == 1 {
					route, kind = "history", 1
				} else {
					q.Set("at", benchAt(rng))
				}
				start := time.Now()
				resp, err := httpc.Get(base + "/api/v1/" + route + "?" + q.Encode())
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if err == nil && resp.StatusCode != http.StatusOK {
						err = fmt.Errorf("%s: %s", route, resp.Status)
					}
				}
				lat[c][kind] = append(lat[c][kind], time.Since(start))
				if err != nil {
					errs.Add(1)
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	r := loadResult{errors: errs.Load(), firstErr: firstErr}
	for _, l := range lat {
		r.objects = append(r.objects, l[0]...)
		r.histories = append(r.histories, l[1]...)
	}
	return r
}

// cannedAnswers returns a handler answering each route of /api/v1 with
// the answer h gave once to q (history) or q at the journal's middle
// (object), whatever it is asked.
func cannedAnswers(b *testing.B, h http.Handler, q url.Values) http.Handler {
	answers := map[string][]byte{}
	for _, route := range []string{"object", "history"} {
		q := maps.Clone(q)
		if route == "object" {
			q.Set("at", benchStart.Add(benchObjects*benchVersions/2*time.Millisecond).Format(time.RFC3339Nano))
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/v1/"+route+"?"+q.Encode(), nil))
		if w.Code != http.StatusOK {
			b.Fatalf("%s: %d %s", route, w.Code, w.Body)
		}
		answers["/api/v1/"+route] = w.Body.Bytes()
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(answers[r.URL.Path])
	})
}

// ms returns the p-th percentile of ls in ms.
func ms(ls []time.Duration, p int) float64 {
	slices.Sort(ls)
	return float64(ls[len(ls)*p/100].Microseconds()) / 1000
}

// smallJournal returns a handler over a SQLite journal of one ConfigMap
// with benchVersions versions written as BenchmarkQueryAPI's, one a
// second, and the query of that object.
func smallJournal(b *testing.B) (http.Handler, url.Values) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "journal.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { store.Close() })
	if _, err := store.Append(ctx, storagetest.Baseline(benchStream(0), "b-0", benchStart, "1000", nil)); err != nil {
		b.Fatal(err)
	}
	recs := make([]event.Record, benchVersions)
	for v := range recs {
		recs[v] = benchObject(0, v, benchStart.Add(time.Duration(v+1)*time.Second))
	}
	if _, err := store.Append(ctx, recs); err != nil {
		b.Fatal(err)
	}
	return server.NewHandler(store), url.Values{"cluster": {"bench"}, "resource": {"configmaps.core"}, "namespace": {benchStream(0).Namespace}, "name": {"cm-00000"}}
}

// benchRequest runs a GET of target on h b.N times and reports the
// process CPU per request.
func benchRequest(b *testing.B, h http.Handler, target string) {
	start := cputime.Process()
	for range b.N {
		w := &discardWriter{header: http.Header{}, code: http.StatusOK}
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, target, nil))
		if w.code != http.StatusOK {
			b.Fatalf("%s: %d %s", target, w.code, w.head)
		}
	}
	b.ReportMetric(float64((cputime.Process()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
}

// discardWriter is a ResponseWriter that keeps the status and the first
// bytes of the body, for a failure's message, and drops the rest: an
// httptest.ResponseRecorder grows a buffer to the whole answer (some
// hundreds of KB for a history), and the garbage collection that costs
// would be counted as the handler's.
type discardWriter struct {
	header http.Header
	code   int
	head   []byte
}

func (w *discardWriter) Header() http.Header  { return w.header }
func (w *discardWriter) WriteHeader(code int) { w.code = code }
func (w *discardWriter) Write(p []byte) (int, error) {
	if n := min(len(p), 512-len(w.head)); n > 0 {
		w.head = append(w.head, p[:n]...)
	}
	return len(p), nil
}

// BenchmarkHistoryRequest measures one history request through the
// handler (no network) over smallJournal, with the API's default page and
// with a page of 10 versions; it reports the process CPU per request, the
// figure BenchmarkQueryAPI's history-cpu-ms measures against the large
// journal.
//
//	go test -run XXX -bench BenchmarkHistoryRequest ./server/
func BenchmarkHistoryRequest(b *testing.B) {
	h, q := smallJournal(b)
	for _, limit := range []string{"", "10"} {
		name := "default-page"
		if limit != "" {
			q.Set("limit", limit)
			name = "limit-" + limit
		}
		target := "/api/v1/history?" + q.Encode()
		b.Run(name, func(b *testing.B) { benchRequest(b, h, target) })
	}
}

// BenchmarkObjectRequest measures one object-at-T request through the
// handler (no network) over smallJournal, at a time between two of its
// versions; it reports the process CPU per request, the figure
// BenchmarkQueryAPI's object-cpu-ms measures against the large journal.
//
//	go test -run XXX -bench BenchmarkObjectRequest ./server/
func BenchmarkObjectRequest(b *testing.B) {
	h, q := smallJournal(b)
	q.Set("at", benchStart.Add(benchVersions/2*time.Second+time.Millisecond).Format(time.RFC3339Nano))
	benchRequest(b, h, "/api/v1/object?"+q.Encode())
}

// BenchmarkSnapshotPages reads the cluster-wide snapshot of the query API
// benchmark journal (10,000 objects) through the handler (no network) in
// pages of 1,000, as the Go client and the web UI do, and reports the
// time of the first page (which reads the scope's objects) and of the
// nine after it (which read only their bodies), in ms per snapshot; then
// likewise the diff of the same scope over the 8 minutes before, in
// which every object changed (diff-first-page-ms, diff-later-pages-ms).
//
//	go test -run XXX -bench BenchmarkSnapshotPages ./server/
func BenchmarkSnapshotPages(b *testing.B) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, benchJournal(b), sqlite.WithReadOnly())
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	h := server.NewHandler(store)
	var first, later, diffFirst, diffLater time.Duration
	for i := range b.N {
		// Another time each round: a remembered state serves only the
		// pages of its own snapshot.
		at := benchStart.Add(10*time.Minute + time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano)
		f, l, objects := readPages(b, h, "snapshot", url.Values{"cluster": {"bench"}, "limit": {"1000"}, "at": {at}})
		first, later = first+f, later+l
		if objects != benchObjects {
			b.Fatalf("%d objects in the snapshot's pages, want %d", objects, benchObjects)
		}
		// Every object changed in the 8 minutes before: the diff compares
		// (and returns) the two versions of each.
		from := benchStart.Add(2*time.Minute + time.Duration(i)*time.Millisecond).Format(time.RFC3339Nano)
		f, l, objects = readPages(b, h, "diff", url.Values{"cluster": {"bench"}, "limit": {"1000"}, "from": {from}, "to": {at}})
		diffFirst, diffLater = diffFirst+f, diffLater+l
		if objects != benchObjects {
			b.Fatalf("%d objects in the diff's pages, want %d", objects, benchObjects)
		}
	}
	b.ReportMetric(float64(first.Microseconds())/1000/float64(b.N), "first-page-ms")
	b.ReportMetric(float64(later.Microseconds())/1000/float64(b.N), "later-pages-ms")
	b.ReportMetric(float64(diffFirst.Microseconds())/1000/float64(b.N), "diff-first-page-ms")
	b.ReportMetric(float64(diffLater.Microseconds())/1000/float64(b.N), "diff-later-pages-ms")
}

// readPages reads every page of a snapshot or diff query through h and
// returns how long its first page and the pages after it took, and how
// many objects they held.
func readPages(b *testing.B, h http.Handler, route string, q url.Values) (first, later time.Duration, objects int) {
	for page := 0; ; page++ {
		start := time.Now()
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/api/v1/"+route+"?"+q.Encode(), nil))
		if page == 0 {
			first += time.Since(start)
		} else {
			later += time.Since(start)
		}
		var p struct {
			Objects []json.RawMessage `json:"objects"`
			Next    string            `json:"next"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &p); err != nil || w.Code != http.StatusOK {
			b.Fatalf("%s page %d: %d %v %.300s", route, page, w.Code, err, w.Body)
		}
		objects += len(p.Objects)
		if p.Next == "" {
			return first, later, objects
		}
		q.Set("cursor", p.Next)
	}
}
