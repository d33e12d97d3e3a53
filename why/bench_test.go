package why_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/krply/krply/internal/testing/benchjournal"
	"github.com/krply/krply/krplytest/incident"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/why"
)

// BenchmarkWhy: why a Deployment with 50 Pods broke, on a SQLite journal
// of 1,000,000 events (the query API benchmark's journal, its cluster
// "bench") to which the incident of krplytest/incident is added in
// namespace "shop": the graph holds the Deployment, its ReplicaSet, its 50
// Pods, their ConfigMap, ServiceAccount and Node; the window is the
// incident's. It reports ms/op; the bound is 200 ms.
//
//	go test -run XXX -bench BenchmarkWhy -benchtime 20x ./why/
func BenchmarkWhy(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "why.db")
	benchjournal.CopyFile(b, benchjournal.SQLite(b), path)
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if err := (&incident.Journal{Cluster: "bench", Namespace: "shop", Pods: 50, Events: true}).Write(ctx, s); err != nil {
		b.Fatal(err)
	}
	stats, err := s.Stats(ctx)
	if err != nil {
		b.Fatal(err)
	}
	ex, err := why.New(s)
	if err != nil {
		b.Fatal(err)
	}
	q := why.Query{Object: storage.ObjectID{ClusterID: "bench", Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web"},
		At: incident.Crashed, From: incident.T0}
	a, err := ex.Explain(ctx, q)
	if err != nil {
		b.Fatal(err)
	}
	if len(a.Nodes) < 55 || len(a.Candidates) == 0 || a.Candidates[0].Change < 0 || a.Changes[a.Candidates[0].Change].Object.Resource != "configmaps" {
		b.Fatalf("graph of %d objects, candidates %+v", len(a.Nodes), a.Candidates)
	}
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		if _, err := ex.Explain(ctx, q); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(time.Since(start).Milliseconds())/float64(b.N), "ms/op")
	b.ReportMetric(float64(len(a.Nodes)), "objects")
	b.ReportMetric(float64(stats.Events), "events")
}
