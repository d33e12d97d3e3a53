package cel_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/krply/krply/cel"
	"github.com/krply/krply/internal/cputime"
	"github.com/krply/krply/internal/testing/benchjournal"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage/sqlite"
)

// BenchmarkFind finds, with a CEL condition, when each ConfigMap of the
// query API benchmark's journal (10,000 objects × 100 versions, 1,000,000
// events, ten streams) had data.version "3": the condition compiled once
// and evaluated on every version (each has another body), of which it
// decodes only data.version. It reports the process CPU per Find.
//
//	go test -run XXX -bench BenchmarkFind ./cel/
func BenchmarkFind(b *testing.B) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, benchjournal.SQLite(b), sqlite.WithReadOnly())
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
	want := []byte(`"version":"3"`)
	for _, c := range []struct {
		name string
		cond func() materialize.Predicate
	}{
		{"cel", func() materialize.Predicate { return e.Predicate() }},
		// The same condition as a substring test: what Find costs
		// besides CEL.
		{"substring", func() materialize.Predicate {
			return materialize.PredicateFunc(func(_ context.Context, object json.RawMessage) (bool, error) {
				return bytes.Contains(object, want), nil
			})
		}},
	} {
		b.Run(c.name, func(b *testing.B) {
			q := materialize.FindQuery{Scope: materialize.Scope{ClusterID: "bench"}}
			start := cputime.Process()
			for n := 0; n < b.N; n++ {
				f, err := m.Find(ctx, q, c.cond())
				if err != nil {
					b.Fatal(err)
				}
				if f.Versions != benchjournal.Objects*benchjournal.Versions || f.Evaluated != f.Versions || len(f.Objects) != benchjournal.Objects {
					b.Fatalf("versions %d, evaluated %d, objects %d", f.Versions, f.Evaluated, len(f.Objects))
				}
			}
			if start >= 0 {
				b.ReportMetric(float64((cputime.Process()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			}
		})
	}
}
