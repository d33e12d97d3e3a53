package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply"
	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/cputime"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/storagetest"
)

// snapshotObjects is the size of the benchmark's namespace.
const snapshotObjects = 20_000

// BenchmarkSnapshot20k measures a snapshot of a namespace of 20,000
// ConfigMaps (a complete list, then a checkpoint): through the library
// (krply.Open, Journal.Snapshot, Close) and as a whole process of this
// command printing its table, started afresh for every snapshot.
func BenchmarkSnapshot20k(b *testing.B) {
	path, at := snapshotJournal(b)
	b.Run("library", func(b *testing.B) {
		ctx := context.Background()
		cpuStart := cputime.Process()
		for range b.N {
			j, err := krply.Open(ctx, path, krply.WithReadOnly())
			if err != nil {
				b.Fatal(err)
			}
			snap, err := j.Snapshot(ctx, krply.Namespaces("bench", "shop"), at)
			if err != nil {
				b.Fatal(err)
			}
			if len(snap.Objects) != snapshotObjects || !snap.Complete {
				b.Fatalf("snapshot: %d objects, complete %v; want %d, complete", len(snap.Objects), snap.Complete, snapshotObjects)
			}
			if err := j.Close(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric((cputime.Process()-cpuStart).Seconds()/float64(b.N), "cpu-s/op")
	})
	b.Run("process", func(b *testing.B) {
		bin := filepath.Join(b.TempDir(), "snapshot")
		if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
			b.Fatalf("go build: %v\n%s", err, out)
		}
		b.ResetTimer()
		var cpu time.Duration
		for range b.N {
			var out bytes.Buffer
			cmd := exec.Command(bin, "--journal", path, "--namespace", "shop", "--at", at.Format(time.RFC3339Nano))
			cmd.Stdout, cmd.Stderr = &out, os.Stderr
			if err := cmd.Run(); err != nil {
				b.Fatal(err)
			}
			cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			if lines := strings.Count(out.String(), "ConfigMap"); lines != snapshotObjects || !strings.Contains(out.String(), "complete: true") {
				b.Fatalf("the table has %d ConfigMaps, want %d, complete:\n%.500s", lines, snapshotObjects, out.String())
			}
		}
		b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	})
}

// snapshotJournal writes the benchmark's journal and returns its path and
// a time after its list, which its evidence has passed.
func snapshotJournal(b *testing.B) (string, time.Time) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "journal.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	stream := event.Stream{ClusterID: "bench", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	items := make([]storagetest.Item, snapshotObjects)
	for i := range items {
		name, uid, rv := fmt.Sprintf("cm-%06d", i), fmt.Sprintf("00000000-0000-4000-8000-%012d", i), strconv.Itoa(1000+i)
		items[i] = storagetest.Item{Ref: storagetest.Ref(stream, "ConfigMap", "shop", name, uid, rv),
			Object: storagetest.ConfigMap("shop", name, uid, rv, map[string]string{"REPLICA_ID": strconv.Itoa(i), "LOG_LEVEL": "info"})}
	}
	recs := append(storagetest.Baseline(stream, "bl-1", start, strconv.Itoa(1000+snapshotObjects), items),
		storagetest.Checkpoint(stream, strconv.Itoa(2000+snapshotObjects), true, start.Add(time.Minute)))
	for len(recs) > 0 {
		n := min(len(recs), 512)
		if _, err := s.Append(ctx, recs[:n]); err != nil {
			b.Fatal(err)
		}
		recs = recs[n:]
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	return path, start.Add(30 * time.Second)
}
