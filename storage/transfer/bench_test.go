package transfer_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/storagetest"
	"github.com/krply/krply/storage/transfer"
	"github.com/krply/krply/storage/transfer/transfertest"
)

// benchRecords is the size of the benchmark journal; KRPLY_BENCH_RECORDS
// overrides it.
func benchRecords(b *testing.B) int { return envInt(b, "KRPLY_BENCH_RECORDS", 1_000_000) }

// benchBatch is the batch size of the imports; KRPLY_BENCH_BATCH
// overrides DefaultBatchSize.
func benchBatch(b *testing.B) int { return envInt(b, "KRPLY_BENCH_BATCH", transfer.DefaultBatchSize) }

func envInt(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return n
}

// benchJournal writes a journal of n records to a SQLite file in dir
// (kept when KRPLY_BENCH_DIR names it): 10,000 ConfigMaps in 20
// namespace streams, each stream's baseline, then changes to them with a
// checkpoint after every 100 records.
func benchJournal(b *testing.B, dir string, n int) string {
	path := filepath.Join(dir, fmt.Sprintf("transfer-%d.db", n))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path+".tmp")
	if err != nil {
		b.Fatal(err)
	}
	const streams, perStream = 20, 500
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var batch []event.Record
	flush := func() {
		if _, err := s.Append(ctx, batch); err != nil {
			b.Fatal(err)
		}
		batch = batch[:0]
	}
	rv := 1
	total := 0
	for i := range streams {
		st := event.Stream{ClusterID: "bench", Version: "v1", Resource: "configmaps", Namespace: fmt.Sprintf("ns-%02d", i)}
		var items []storagetest.Item
		for k := range perStream {
			name := fmt.Sprintf("cm-%04d", k)
			ref := storagetest.Ref(st, "ConfigMap", st.Namespace, name, fmt.Sprintf("uid-%d-%d", i, k), strconv.Itoa(rv))
			items = append(items, storagetest.Item{Ref: ref, Object: benchBody(st.Namespace, name, ref.UID, rv, 0)})
			rv++
		}
		recs := storagetest.Baseline(st, fmt.Sprintf("b%d", i), start, strconv.Itoa(rv), items)
		if _, err := s.Append(ctx, recs); err != nil {
			b.Fatal(err)
		}
		total += len(recs)
	}
	for i := 0; total < n; i++ {
		k := i % (streams * perStream)
		st := event.Stream{ClusterID: "bench", Version: "v1", Resource: "configmaps", Namespace: fmt.Sprintf("ns-%02d", k%streams)}
		name := fmt.Sprintf("cm-%04d", k/streams)
		at := start.Add(time.Duration(i+1) * time.Millisecond)
		ref := storagetest.Ref(st, "ConfigMap", st.Namespace, name, fmt.Sprintf("uid-%d-%d", k%streams, k/streams), strconv.Itoa(rv))
		batch = append(batch, storagetest.Event(st, event.Modified, ref, benchBody(st.Namespace, name, ref.UID, rv, i), at))
		rv++
		total++
		if i%100 == 99 && total < n {
			batch = append(batch, storagetest.Checkpoint(st, strconv.Itoa(rv-1), true, at))
			total++
		}
		if len(batch) >= 2000 {
			flush()
		}
	}
	if len(batch) > 0 {
		flush()
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		b.Fatal(err)
	}
	return path
}

// benchBody is a ConfigMap of about 600 bytes as the API server sends it.
func benchBody(ns, name, uid string, rv, gen int) []byte {
	return fmt.Appendf(nil, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":%q,"namespace":%q,"uid":%q,"resourceVersion":"%d","creationTimestamp":"2026-03-01T00:00:00Z","labels":{"app":"shop","tier":"backend"},"managedFields":[{"manager":"kubectl-client-side-apply","operation":"Update","apiVersion":"v1","time":"2026-03-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:config.yaml":{},"f:generation":{}}}}]},"data":{"config.yaml":"listen: 8080\nworkers: 4\ncache: 256Mi\n","generation":"%d"}}`,
		name, ns, uid, rv, gen)
}

// BenchmarkTransfer exports a SQLite journal of 1,000,000 records to a
// file, verifies the file, and imports it into a new SQLite journal and
// into a memory store, reporting records per second (wall) and CPU time
// per record of each step.
//
//	go test -run '^$' -bench Transfer -benchtime 1x ./storage/transfer/
func BenchmarkTransfer(b *testing.B) {
	dir := os.Getenv("KRPLY_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	n := benchRecords(b)
	src := benchJournal(b, dir, n)
	ctx := context.Background()
	file := filepath.Join(b.TempDir(), "journal.ndjson")
	step := func(name string, fn func(b *testing.B) transfer.Result) { transfertest.Bench(b, name, n, fn) }
	open := func(b *testing.B, path string, opts ...sqlite.Option) *sqlite.Store {
		s, err := sqlite.Open(ctx, path, opts...)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	step("ExportSQLite", func(b *testing.B) transfer.Result {
		s := open(b, src, sqlite.WithReadOnly())
		defer s.Close()
		f, err := os.Create(file)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		res, err := transfer.Export(ctx, s, f)
		if err != nil {
			b.Fatal(err)
		}
		return res
	})
	read := func(b *testing.B, into storage.ReadWriter) transfer.Result {
		f, err := os.Open(file)
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		var res transfer.Result
		if into == nil {
			res, err = transfer.Verify(ctx, bufio.NewReader(f))
		} else {
			res, err = transfer.Import(ctx, f, into, transfer.WithBatchSize(benchBatch(b)))
		}
		if err != nil {
			b.Fatal(err)
		}
		return res
	}
	step("Verify", func(b *testing.B) transfer.Result { return read(b, nil) })
	step("ImportSQLite", func(b *testing.B) transfer.Result {
		s := open(b, filepath.Join(b.TempDir(), "imported.db"))
		defer s.Close()
		return read(b, s)
	})
	step("ImportMemory", func(b *testing.B) transfer.Result {
		s := memory.New()
		defer s.Close()
		return read(b, s)
	})
}
