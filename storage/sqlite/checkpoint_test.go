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
	w := newRandomWriter(t)
	created := fileSize(t, w.path)

	// 1,000 ConfigMaps of 8 KB of random hex each: about 1,500 pages of
	// log, compressed, with their records and indexes; fewer than the
	// 4,000.
	for range 10 {
		w.append(t, 100)
	}
	s, path, wrote := w.s, w.path, w.wrote
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
//
// It fails so without the race detector only: under it the writer is slow
// enough that the checkpoints beside it catch up (with the held step of
// checkpointer.run switched off, the log was 12.6 MiB after 48 MiB of
// bodies, against 51 MiB without the race detector). make test runs it
// both ways (PLAIN_TOO in the Makefile), with half the bodies under the
// race detector (logStartsOverBodies), which still fill the log past
// restartPages: the held step runs beside the writer there too (once, on
// a 2-core machine).
func TestLogStartsOver(t *testing.T) {
	w := newRandomWriter(t)
	// 48 MiB of bodies back to back (24 under the race detector): about
	// 51 MiB of log when it never starts over, 13 times what a checkpoint
	// waits for. (80 MiB, as before, took 148 s under the race detector
	// on a slow machine.)
	for w.wrote < logStartsOverBodies {
		w.append(t, 50)
	}
	path, wrote := w.path, w.wrote
	// The log of the inline checkpoints this package had reached 4,000
	// pages and a batch (17 MiB); a log that never starts over, all of
	// it (91 MiB for 80 MiB of bodies).
	wal := fileSize(t, path+"-wal")
	t.Logf("after %d MiB of bodies the log is %.1f MiB", wrote>>20, float64(wal)/(1<<20))
	if wal > 20<<20 {
		t.Errorf("after %d MiB of bodies the log is %d MiB, want 20 MiB or less: it did not start over", wrote>>20, wal>>20)
	}
}

// randomWriter appends ConfigMaps of 8 KB of random hex (about 4 KB
// compressed) to a new journal.
type randomWriter struct {
	s     *sqlite.Store
	path  string
	st    event.Stream
	start time.Time
	n     int
	// wrote is the bytes of the bodies appended.
	wrote int
}

// newRandomWriter opens a journal in the test's folder, closed at its
// end, with a baseline of its stream.
func newRandomWriter(t *testing.T) *randomWriter {
	path := filepath.Join(t.TempDir(), "journal.db")
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	w := &randomWriter{s: s, path: path, st: event.Stream{ClusterID: "c", Version: "v1", Resource: "configmaps", Namespace: "ns"}, start: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	if _, err := s.Append(context.Background(), storagetest.Baseline(w.st, "b", w.start, "1", nil)); err != nil {
		t.Fatal(err)
	}
	return w
}

// append appends a batch of n new ConfigMaps.
func (w *randomWriter) append(t *testing.T, n int) {
	recs := make([]event.Record, 0, n)
	for range n {
		raw := make([]byte, 4096)
		rand.Read(raw)
		w.n++
		name, rv := fmt.Sprintf("cm-%d", w.n), fmt.Sprint(1+w.n)
		body := storagetest.ConfigMap("ns", name, "uid-"+name, rv, map[string]string{"blob": hex.EncodeToString(raw)})
		w.wrote += len(body)
		recs = append(recs, storagetest.Event(w.st, event.Added, storagetest.Ref(w.st, "ConfigMap", "ns", name, "uid-"+name, rv), body, w.start.Add(time.Duration(w.n)*time.Second)))
	}
	if _, err := w.s.Append(context.Background(), recs); err != nil {
		t.Fatal(err)
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
