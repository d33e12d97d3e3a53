package memory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/storagetest"
)

var benchStream = event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}

// churn returns n MODIFIED events of `objects` ConfigMaps, one second
// apart, with realistic bodies (managedFields included).
func churn(n, objects int) []event.Record {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	recs := make([]event.Record, n)
	for i := range recs {
		name := fmt.Sprintf("cm-%05d", i%objects)
		rv := fmt.Sprint(1000 + i)
		ref := storagetest.Ref(benchStream, "ConfigMap", "shop", name, "uid-"+name, rv)
		body := storagetest.ConfigMap("shop", name, ref.UID, rv, map[string]string{"rv": rv, "config.yaml": "replicas: 3\nimage: app:1.2.3\n"})
		recs[i] = storagetest.Event(benchStream, event.Modified, ref, body, t0.Add(time.Duration(i)*time.Second))
	}
	return recs
}

func BenchmarkAppend(b *testing.B) {
	ctx := context.Background()
	for _, size := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("batch=%d", size), func(b *testing.B) {
			recs := churn(b.N, 1000)
			s := memory.New()
			defer s.Close()
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < len(recs); i += size {
				if _, err := s.Append(ctx, recs[i:min(i+size, len(recs))]); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
		})
	}
}

// filled returns a store with n churn events of `objects` objects.
func filled(b *testing.B, n, objects int) *memory.Store {
	b.Helper()
	s := memory.New()
	recs := churn(n, objects)
	for i := 0; i < len(recs); i += 1000 {
		if _, err := s.Append(context.Background(), recs[i:min(i+1000, len(recs))]); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

func BenchmarkLatestAt(b *testing.B) {
	const n, objects = 200_000, 2_000
	s := filled(b, n, objects)
	defer s.Close()
	ctx := context.Background()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	rnd := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		obj := storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: fmt.Sprintf("cm-%05d", rnd.IntN(objects))}
		// Every object has a record after the first `objects` seconds.
		if _, err := s.LatestAt(ctx, obj, t0.Add(time.Duration(objects+rnd.IntN(n-objects))*time.Second)); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAliveAt(b *testing.B) {
	const n, objects = 200_000, 2_000
	s := filled(b, n, objects)
	defer s.Close()
	ctx := context.Background()
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		alive, err := s.AliveAt(ctx, storage.AliveQuery{StreamID: benchStream.ID(), At: t0.Add(time.Duration(n-1) * time.Second), WithoutBodies: true})
		if err != nil || len(alive) != objects {
			b.Fatalf("AliveAt: %d objects, %v", len(alive), err)
		}
	}
}

func BenchmarkCompact(b *testing.B) {
	const n, objects = 100_000, 1_000
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		s := filled(b, n, objects)
		b.StartTimer()
		if _, err := s.Compact(context.Background(), t0.Add(n/2*time.Second)); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		s.Close()
		b.StartTimer()
	}
}
