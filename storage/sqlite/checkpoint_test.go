package sqlite_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/storagetest"
)

// TestCheckpointsBesideTheWriter: once the writer has written a thousand
// pages to the write-ahead log, the checkpointer copies them into the
// database file on its own connection, without a reader, a writer or
// Close asking. It fails when nothing checkpoints before 4,000 pages
// (the writer's automatic checkpoint this package had) or at all.
func TestCheckpointsBesideTheWriter(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	created := fileSize(t, path)

	// 1,000 ConfigMaps of 8 KB of random hex each: about 1,500 pages of
	// log, compressed, with their records and indexes; fewer than the
	// 4,000.
	st := event.Stream{ClusterID: "c", Version: "v1", Resource: "configmaps", Namespace: "ns"}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := s.Append(ctx, storagetest.Baseline(st, "b", start, "1", nil)); err != nil {
		t.Fatal(err)
	}
	var wrote int
	for batch := range 10 {
		var recs []event.Record
		for i := range 100 {
			raw := make([]byte, 4096)
			rand.Read(raw)
			name := fmt.Sprintf("cm-%d-%d", batch, i)
			rv := fmt.Sprint(2 + batch*100 + i)
			body := storagetest.ConfigMap("ns", name, "uid-"+name, rv, map[string]string{"blob": hex.EncodeToString(raw)})
			wrote += len(body)
			recs = append(recs, storagetest.Event(st, event.Added, storagetest.Ref(st, "ConfigMap", "ns", name, "uid-"+name, rv), body, start.Add(time.Duration(batch*100+i+1)*time.Second)))
		}
		if _, err := s.Append(ctx, recs); err != nil {
			t.Fatal(err)
		}
	}
	if wal := fileSize(t, path+"-wal"); wal < 1000*4096 || wal > 4000*4096 {
		t.Fatalf("the log holds %d bytes, want between 1,000 and 4,000 pages: the test writes too little or too much", wal)
	}
	// The checkpoint copies at least the bodies (compressed, about
	// half their size) into the file.
	want := created + int64(wrote)/4
	deadline := time.Now().Add(10 * time.Second)
	for fileSize(t, path) < want {
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s the file holds %d bytes (%d when created), want %d or more: no checkpoint copied the log into it", fileSize(t, path), created, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// What the checkpoint copied is the journal.
	got, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got.Events != 1000 {
		t.Errorf("the journal holds %d events, want 1000", got.Events)
	}
}

// TestLogStartsOver: a writer that never pauses still finds the log all
// copied into the file now and then, and starts it over, so the log stays
// near the checkpoints' size instead of growing for as long as it
// writes. It fails when the checkpointer copies the log only beside the
// writer (the writer always wrote more meanwhile).
func TestLogStartsOver(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st := event.Stream{ClusterID: "c", Version: "v1", Resource: "configmaps", Namespace: "ns"}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := s.Append(ctx, storagetest.Baseline(st, "b", start, "1", nil)); err != nil {
		t.Fatal(err)
	}
	// About 40 MiB of log (10,000 pages), back to back: ten times
	// what a checkpoint waits for.
	var wrote int
	for batch := 0; wrote < 80<<20; batch++ {
		var recs []event.Record
		for i := range 50 {
			raw := make([]byte, 4096)
			rand.Read(raw)
			n := batch*50 + i
			name, rv := fmt.Sprintf("cm-%d", n), fmt.Sprint(2+n)
			body := storagetest.ConfigMap("ns", name, "uid-"+name, rv, map[string]string{"blob": hex.EncodeToString(raw)})
			wrote += len(body)
			recs = append(recs, storagetest.Event(st, event.Added, storagetest.Ref(st, "ConfigMap", "ns", name, "uid-"+name, rv), body, start.Add(time.Duration(n+1)*time.Second)))
		}
		if _, err := s.Append(ctx, recs); err != nil {
			t.Fatal(err)
		}
	}
	// The log of the inline checkpoints this package had reached 4,000
	// pages and a batch (17 MiB); a log that never starts over, all of
	// it (91 MiB).
	wal := fileSize(t, path+"-wal")
	t.Logf("after %d MiB of bodies the log is %.1f MiB", wrote>>20, float64(wal)/(1<<20))
	if wal > 20<<20 {
		t.Errorf("after %d MiB of bodies the log is %d MiB, want 20 MiB or less: it did not start over", wrote>>20, wal>>20)
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}
