//go:build unix

package cel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/krply/krply/cel"
	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/storagetest"
)

// The find benchmark's journal: benchObjects ConfigMaps in benchNamespaces
// streams, benchVersions versions each, the version's number in
// data.version (so each version has another body).
const (
	benchNamespaces = 10
	benchObjects    = 10_000
	benchVersions   = 100
)

// BenchmarkFind finds, with a CEL condition, when each ConfigMap had
// data.version "3", over 1,000,000 versions (benchJournal): the condition
// compiled once and asked about every version, of which it reads only
// data.version, taking 100 values (cel: each evaluated once, the answer
// kept); then the same with resourceVersion read too, which differs in
// every version (cel-distinct: every version evaluated); then the same
// condition as a substring test, which is what Find costs besides CEL.
// It reports the process CPU per Find.
//
//	go test -run XXX -bench BenchmarkFind ./cel/
func BenchmarkFind(b *testing.B) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, benchJournal(b), sqlite.WithReadOnly())
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	m, err := materialize.New(store)
	if err != nil {
		b.Fatal(err)
	}
	e, err := cel.Compile(`object.data.version == "3"`)
	if err != nil {
		b.Fatal(err)
	}
	// The same answer from a projection that differs in every version
	// (resourceVersion): no answer is kept, every version is evaluated.
	distinct, err := cel.Compile(`object.metadata.resourceVersion != "" && object.data.version == "3"`)
	if err != nil {
		b.Fatal(err)
	}
	want := []byte(`"version":"3"`)
	for _, c := range []struct {
		name string
		cond func() materialize.Predicate
	}{
		{"cel", func() materialize.Predicate { return e.Predicate() }},
		{"cel-distinct", func() materialize.Predicate { return distinct.Predicate() }},
		{"substring", func() materialize.Predicate {
			return materialize.PredicateFunc(func(_ context.Context, object json.RawMessage) (bool, error) {
				return bytes.Contains(object, want), nil
			})
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			q := materialize.FindQuery{Scope: materialize.Scope{ClusterID: "bench"}}
			start := processCPU()
			for n := 0; n < b.N; n++ {
				f, err := m.Find(ctx, q, c.cond())
				if err != nil {
					b.Fatal(err)
				}
				if f.Versions != benchObjects*benchVersions || f.Evaluated != f.Versions || len(f.Objects) != benchObjects {
					b.Fatalf("versions %d, evaluated %d, objects %d", f.Versions, f.Evaluated, len(f.Objects))
				}
			}
			b.ReportMetric(float64((processCPU()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
		})
	}
}

// processCPU is the CPU time (user and system) the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// benchJournal returns the path of the find benchmark's journal, built
// once and kept in the temporary folder between runs (the name carries
// the schema version): a baseline per namespace, then the versions a
// millisecond apart, object after object in turn.
func benchJournal(b *testing.B) string {
	path := filepath.Join(os.TempDir(), fmt.Sprintf("krply-bench-cel-find-v%d-%dx%d.db", sqlite.SchemaVersion, benchObjects, benchVersions))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	ctx := context.Background()
	tmp := path + ".building"
	os.Remove(tmp)
	s, err := sqlite.Open(ctx, tmp)
	if err != nil {
		b.Fatal(err)
	}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	stream := func(ns int) event.Stream {
		return event.Stream{ClusterID: "bench", Version: "v1", Resource: "configmaps", Namespace: fmt.Sprintf("ns-%02d", ns)}
	}
	bulk, err := s.BeginBulk(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer bulk.Rollback()
	for ns := range benchNamespaces {
		if _, err := bulk.Append(ctx, storagetest.Baseline(stream(ns), "b-"+strconv.Itoa(ns), start, "1000", nil)); err != nil {
			b.Fatal(err)
		}
	}
	recs := make([]event.Record, 0, 10_000)
	for i := range benchObjects * benchVersions {
		obj, version := i%benchObjects, i/benchObjects
		st := stream(obj % benchNamespaces)
		name, rv := fmt.Sprintf("cm-%05d", obj), strconv.Itoa(1000+i)
		ref := storagetest.Ref(st, "ConfigMap", st.Namespace, name, "uid-"+name, rv)
		body := storagetest.ConfigMap(st.Namespace, name, "uid-"+name, rv, map[string]string{"version": strconv.Itoa(version), "owner": "team-" + strconv.Itoa(obj%7)})
		recs = append(recs, storagetest.Event(st, event.Modified, ref, body, start.Add(time.Duration(i+1)*time.Millisecond)))
		if len(recs) == cap(recs) {
			if _, err := bulk.Append(ctx, recs); err != nil {
				b.Fatal(err)
			}
			recs = recs[:0]
		}
	}
	if err := bulk.Commit(); err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
	return path
}
