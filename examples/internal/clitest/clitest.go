// Package clitest records a fake cluster into a SQLite journal file, so the
// tests of the query examples run them on a real journal.
package clitest

import (
	"context"
	"path/filepath"
	"time"

	"github.com/krply/krply"
	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/watch"
)

// TB is what Record needs of a test.
type TB interface {
	krplytest.TestingT
	TempDir() string
}

// Recording is a fake cluster recorded both into krplytest's in-memory
// journal and into a SQLite journal file at Path.
type Recording struct {
	*krplytest.Cluster
	Path string

	t    TB
	j    *krply.Journal
	stop func() error
}

// Record starts a fake cluster with krplytest and a second Collector that
// records it into a journal file.
func Record(t TB, opts ...krplytest.Option) *Recording {
	t.Helper()
	c := krplytest.NewCluster(t, opts...)
	r := &Recording{Cluster: c, Path: filepath.Join(t.TempDir(), "krply.db"), t: t}
	ctx, cancel := context.WithCancel(context.Background())
	j, err := krply.Open(ctx, r.Path)
	if err != nil {
		cancel()
		t.Fatalf("clitest: %v", err)
		return nil
	}
	rec, err := j.RecordClients(c.Dynamic, c.Discovery, watch.WithClusterID(c.ClusterID), watch.WithResources("cm", "deploy", "svc", "ns", "pods"),
		watch.WithBackoff(5*time.Millisecond, 100*time.Millisecond), watch.WithBatching(256, 4<<20, time.Millisecond), watch.WithRediscoveryInterval(0))
	if err != nil {
		cancel()
		t.Fatalf("clitest: %v", err)
		return nil
	}
	done := make(chan error, 1)
	go func() { done <- rec.Start(ctx) }()
	r.j = j
	r.stop = func() error {
		cancel()
		err := <-done
		if cerr := j.Close(); err == nil {
			err = cerr
		}
		return err
	}
	t.Cleanup(func() { _ = r.Close() })
	sctx, scancel := context.WithTimeout(ctx, 10*time.Second)
	defer scancel()
	if err := rec.WaitForSync(sctx); err != nil {
		t.Fatalf("clitest: sync: %v", err)
	}
	// The fake replays no history from a baseline's resourceVersion: a
	// change made before this Collector's watches open would reach the file
	// as ADDED, or not at all for a deletion.
	for !watching(rec) {
		if sctx.Err() != nil {
			t.Fatalf("clitest: the file's Collector is not watching every stream within 10s")
		}
		time.Sleep(2 * time.Millisecond)
	}
	return r
}

// watching reports whether every stream of c has its watch open.
func watching(c *watch.Collector) bool {
	for _, s := range c.Status() {
		if s.State != watch.StateWatching {
			return false
		}
	}
	return true
}

// Mark waits until both journals hold every write made so far and returns
// the time (see krplytest.Cluster.Mark).
func (r *Recording) Mark() time.Time {
	r.t.Helper()
	r.Sync()
	ctx := context.Background()
	want, err := r.Store.Stats(ctx)
	if err != nil {
		r.t.Fatalf("clitest: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := r.j.Store().Stats(ctx)
		if err != nil {
			r.t.Fatalf("clitest: %v", err)
		}
		if got.Events >= want.Events {
			break
		}
		if time.Now().After(deadline) {
			r.t.Fatalf("clitest: the journal file holds %d events, the in-memory one %d", got.Events, want.Events)
		}
		time.Sleep(2 * time.Millisecond)
	}
	return r.Cluster.Mark()
}

// Close stops recording into the file and closes it, so the example under
// test has the journal to itself.
func (r *Recording) Close() error {
	if r.stop == nil {
		return nil
	}
	err := r.stop()
	r.stop = nil
	return err
}

// Open opens the journal file at path for a test's own checks, such as
// whether an example wrote to it; it is closed when the test ends.
func Open(t TB, path string) *sqlite.Store {
	t.Helper()
	store, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("clitest: %v", err)
		return nil
	}
	t.Cleanup(func() {
		if err := store.Close(); err != nil {
			t.Errorf("clitest: close %s: %v", path, err)
		}
	})
	return store
}
