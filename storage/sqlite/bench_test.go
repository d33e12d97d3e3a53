package sqlite_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/cputime"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/sqlite"
)

// benchStart is the first ObservedAt of the benchmark workloads.
var benchStart = time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)

// churn hands out the events of a churn workload: objects objects, each
// changed in turn, one event per millisecond.
type churn struct {
	w       *workload
	objects int
	next    int
}

func (c *churn) batch(n int) []event.Record {
	recs := make([]event.Record, n)
	for i := range recs {
		obj, version := c.next%c.objects, c.next/c.objects
		recs[i] = c.w.event(obj, version, benchStart.Add(time.Duration(c.next)*time.Millisecond))
		c.next++
	}
	return recs
}

// rawTable is the baseline: the same rows, plainly INSERTed into a bare
// table with the same connection settings, one transaction per batch.
type rawTable struct {
	db     *sql.DB
	insert *sql.Stmt
}

func openRaw(b *testing.B) *rawTable {
	path := filepath.Join(b.TempDir(), "raw.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_txlock=immediate&_pragma=journal_mode(WAL)&_pragma=synchronous(NORMAL)")
	if err != nil {
		b.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	b.Cleanup(func() { db.Close() })
	if _, err := db.Exec(`CREATE TABLE raw (seq INTEGER PRIMARY KEY, event_id TEXT, stream TEXT, observed_at INTEGER, body BLOB)`); err != nil {
		b.Fatal(err)
	}
	ins, err := db.Prepare(`INSERT INTO raw (event_id, stream, observed_at, body) VALUES (?,?,?,?)`)
	if err != nil {
		b.Fatal(err)
	}
	return &rawTable{db: db, insert: ins}
}

func (r *rawTable) append(ctx context.Context, recs []event.Record) error {
	tx, err := r.db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	st := tx.StmtContext(ctx, r.insert)
	for i := range recs {
		if _, err := st.ExecContext(ctx, recs[i].EventID, recs[i].StreamID, recs[i].ObservedAt.UnixNano(), []byte(recs[i].Object)); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// BenchmarkAppend measures durable Append throughput (one op = one event)
// on a churn workload of 1,000 objects, and the same rows INSERTed into a
// bare table in the same run: raw-events/s and krply/raw, and the CPU time
// of both per event.
func BenchmarkAppend(b *testing.B) {
	for _, batch := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			c := &churn{w: newWorkload(b), objects: 1000}
			appendAgainstRaw(b, batch, c.batch)
		})
	}
}

// BenchmarkAppendBaseline measures Append of a baseline of new objects
// (one op = one object): the synthetic ADDED items of a list, in batches
// of 512 as the Collector commits them, each a ConfigMap never seen
// before (a new objects row, stream_objects row and body), against the
// same rows INSERTed into a bare table; and the journal's bytes on disk
// over the JSON recorded (disk/json).
func BenchmarkAppendBaseline(b *testing.B) {
	w := newWorkload(b)
	k := w.kinds[2] // configmaps
	const baselineID = "bench-baseline"
	next := 0
	journal := appendAgainstRaw(b, 512, func(n int) []event.Record {
		recs := make([]event.Record, n)
		for i := range recs {
			recs[i] = w.baselineItem(k, next, baselineID, benchStart)
			next++
		}
		return recs
	})
	reportDiskPerJSON(b, journal)
}

// reportDiskPerJSON reports the size of a closed journal file over the
// JSON bytes of the bodies recorded in it.
func reportDiskPerJSON(b *testing.B, j journalSize) {
	if err := j.s.Close(); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(j.path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(fi.Size())/float64(j.jsonBytes), "disk/json")
}

// journalSize is a journal written by a benchmark and the JSON bytes of
// the bodies it was given.
type journalSize struct {
	s         *sqlite.Store
	path      string
	jsonBytes int64
}

// appendAgainstRaw appends b.N records made by next, batch at a time, to
// a new journal and to a raw table, and reports the throughput and CPU
// time per record of both and their ratio. It returns the journal, still
// open.
func appendAgainstRaw(b *testing.B, batch int, next func(n int) []event.Record) journalSize {
	ctx := context.Background()
	j := journalSize{path: filepath.Join(b.TempDir(), "journal.db")}
	s, err := sqlite.Open(ctx, j.path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	j.s = s
	raw := openRaw(b)
	var krplyTime, rawTime, krplyCPU, rawCPU time.Duration
	b.ResetTimer()
	for done := 0; done < b.N; {
		n := min(batch, b.N-done)
		recs := next(n)
		for i := range recs {
			j.jsonBytes += int64(len(recs[i].Object))
		}
		start, startCPU := time.Now(), cputime.Process()
		if _, err := s.Append(ctx, recs); err != nil {
			b.Fatal(err)
		}
		mid, midCPU := time.Now(), cputime.Process()
		if err := raw.append(ctx, recs); err != nil {
			b.Fatal(err)
		}
		krplyTime += mid.Sub(start)
		rawTime += time.Since(mid)
		krplyCPU += midCPU - startCPU
		rawCPU += cputime.Process() - midCPU
		done += n
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/krplyTime.Seconds(), "events/s")
	b.ReportMetric(float64(b.N)/rawTime.Seconds(), "raw-events/s")
	b.ReportMetric(rawTime.Seconds()/krplyTime.Seconds(), "krply/raw")
	b.ReportMetric(float64(krplyCPU.Microseconds())/float64(b.N), "cpu-µs/event")
	b.ReportMetric(float64(rawCPU.Microseconds())/float64(b.N), "raw-cpu-µs/event")
	return j
}

// BenchmarkChurnBytes measures the file size per event of a churn workload
// (300 objects, every event a MODIFIED with small changes) against the raw
// JSON bytes of the events, and the CPU time per event of appending them.
// One op = one event; at least 30,000 events are written so the fixed size
// of an empty journal does not count.
func BenchmarkChurnBytes(b *testing.B) {
	churnBytes(b, &churn{w: newWorkload(b), objects: 300})
}

// BenchmarkEventsBytes is BenchmarkChurnBytes for Kubernetes Events, as a
// recorder of Events writes them: each Event object created and then
// updated twice (its count raised), in a stream of its own. Its figures
// against BenchmarkChurnBytes's are what recording Events costs per event
// of the Events stream.
func BenchmarkEventsBytes(b *testing.B) {
	churnBytes(b, &churn{w: newEventsWorkload(b), objects: max(b.N, 30000) / 3})
}

func churnBytes(b *testing.B, c *churn) {
	ctx := context.Background()
	events := max(b.N, 30000)
	path := filepath.Join(b.TempDir(), "churn.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	var rawBytes int64
	var cpu time.Duration
	for done := 0; done < events; done += 500 {
		recs := c.batch(min(500, events-done))
		for i := range recs {
			rawBytes += int64(len(recs[i].Object))
		}
		startCPU := cputime.Process()
		if _, err := s.Append(ctx, recs); err != nil {
			b.Fatal(err)
		}
		cpu += cputime.Process() - startCPU
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(fi.Size())/float64(events), "disk-B/event")
	b.ReportMetric(float64(rawBytes)/float64(events), "json-B/event")
	b.ReportMetric(float64(fi.Size())/float64(rawBytes), "disk/json")
	b.ReportMetric(float64(cpu.Microseconds())/float64(events), "cpu-µs/event")
}

// The object-at-T journal: latestObjects objects with latestVersions
// versions each, one event per millisecond, cached in the temporary
// directory between runs (the name carries the schema version).
const (
	latestObjects  = 10_000
	latestVersions = 100
)

func latestJournal(b *testing.B) string {
	// The name changes with the schema (and its layout before release).
	path := filepath.Join(os.TempDir(), fmt.Sprintf("krply-bench-latestat-v%d.3-%dx%d.db", sqlite.SchemaVersion, latestObjects, latestVersions))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	ctx := context.Background()
	tmp := path + ".building"
	os.Remove(tmp)
	// Large batches and a large cache: each batch dirties most pages of
	// the random-key indexes (event ID, body hash, object), so the number
	// of batches, not of events, drives the build's I/O.
	s, err := sqlite.Open(ctx, tmp, sqlite.WithCacheSize(256<<10))
	if err != nil {
		b.Fatal(err)
	}
	c := &churn{w: newWorkload(b), objects: latestObjects}
	start := time.Now()
	const total = latestObjects * latestVersions
	const batch = 20_000
	for done := 0; done < total; done += batch {
		if _, err := s.Append(ctx, c.batch(batch)); err != nil {
			b.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
	b.Logf("built a %d-event journal in %v (%.0f events/s)", total, elapsed, total/elapsed.Seconds())
	return path
}

// BenchmarkLatestAt measures LatestAt (object at T) on a 1,000,000-event
// journal at random objects and times, with p50 and p99 latency.
func BenchmarkLatestAt(b *testing.B) {
	ctx := context.Background()
	path := latestJournal(b)
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	w := newWorkload(b)
	rng := rand.New(rand.NewPCG(1, 2))
	span := time.Duration(latestObjects*latestVersions) * time.Millisecond
	// The store's version index is built by the first LatestAt: not one
	// of the latencies (each of the benchmark's runs opens the store anew).
	if _, err := s.LatestAt(ctx, storage.ObjectID{ClusterID: "none", Resource: "none", Name: "none"}, benchStart); err != nil && !errors.Is(err, storage.ErrNotFound) {
		b.Fatal(err)
	}
	latencies := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for range b.N {
		obj := rng.IntN(latestObjects)
		k := w.kinds[obj%len(w.kinds)]
		id := storage.ObjectID{ClusterID: k.stream.ClusterID, Group: k.stream.Group, Resource: k.stream.Resource,
			Namespace: k.stream.Namespace, Name: fmt.Sprintf("%s-%06d", k.stream.Resource, obj)}
		at := benchStart.Add(time.Duration(rng.Int64N(int64(span))))
		start := time.Now()
		rec, err := s.LatestAt(ctx, id, at)
		latencies = append(latencies, time.Since(start))
		switch {
		case errors.Is(err, storage.ErrNotFound) && at.Before(benchStart.Add(time.Duration(latestObjects)*time.Millisecond)):
			// Before the object's first version.
		case err != nil:
			b.Fatal(err)
		case rec.ObservedAt.After(at) || len(rec.Object) < 1000:
			b.Fatalf("LatestAt(%s, %v) = record at %v with %d body bytes", id.Name, at, rec.ObservedAt, len(rec.Object))
		}
	}
	b.StopTimer()
	reportPercentiles(b, latencies, "")

	// A control: the same percentiles of a CPU-only task calibrated to
	// LatestAt's median, run in the same process right after, so that a
	// tail caused by the machine (other processes, the scheduler) can be
	// told from one caused here.
	buf := make([]byte, 4096)
	spin := func(n int) time.Duration {
		start := time.Now()
		for range n {
			sha256.Sum256(buf)
		}
		return time.Since(start)
	}
	median := latencies[len(latencies)/2]
	rounds := max(1, int(median/max(spin(100)/100, time.Nanosecond)))
	// At most 5,000 tasks and about two seconds of them.
	control := make([]time.Duration, 0, min(5000, max(100, int(2*time.Second/max(median, time.Microsecond)))))
	for range cap(control) {
		control = append(control, spin(rounds))
	}
	reportPercentiles(b, control, "control-")
}

func reportPercentiles(b *testing.B, latencies []time.Duration, prefix string) {
	slices.Sort(latencies)
	b.ReportMetric(float64(latencies[len(latencies)/2].Nanoseconds())/1e3, prefix+"p50-µs")
	b.ReportMetric(float64(latencies[len(latencies)*95/100].Nanoseconds())/1e3, prefix+"p95-µs")
	b.ReportMetric(float64(latencies[len(latencies)*99/100].Nanoseconds())/1e3, prefix+"p99-µs")
}
