package sqlite_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/storagetest"
)

// writeHistory writes a journal with a baseline, events, a gap, a
// checkpoint, an audit correlation and a snapshot, and returns what it
// appended.
func writeHistory(t *testing.T, path string, opts ...sqlite.Option) []event.Record {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	w := newWorkload(t)
	cms := w.kinds[2]
	var items []storagetest.Item
	for i := range 5 {
		rec := w.record(cms, i, 0, event.Added, "", benchStart)
		items = append(items, storagetest.Item{Ref: rec.Resource, Object: rec.Object})
	}
	recs := storagetest.Baseline(cms.stream, "b1", benchStart, "100", items)
	c := &churn{w: w, objects: 40}
	recs = append(recs, c.batch(200)...)
	last := recs[len(recs)-1]
	recs = append(recs,
		storagetest.Gap(cms.stream, last.ObservedAt, last.ObservedAt.Add(time.Second), "410 Gone", last.Resource.ResourceVersion),
		storagetest.Checkpoint(cms.stream, "9999", true, last.ObservedAt.Add(2*time.Second)),
		storagetest.Correlation(recs[10], "audit-1", "alice", recs[10].ObservedAt),
		storagetest.Document(event.TypeSnapshot, "bench", "snap-1", "before", last.ObservedAt, true, []byte(`{"objects":[]}`)))
	if _, err := s.Append(ctx, recs); err != nil {
		t.Fatal(err)
	}
	return recs
}

// answers asks a store the queries of storage.Reader (and of the
// timeline and watermark readers) about the records of writeHistory.
func answers(t *testing.T, s *sqlite.Store, recs []event.Record) []any {
	t.Helper()
	ctx := context.Background()
	stream := recs[0].StreamID
	obj := storage.ObjectIDOf(recs[10])
	mid := recs[100].ObservedAt
	var out []any
	add := func(v any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	add(s.Get(ctx, recs[42].EventID))
	add(s.Records(ctx, storage.Query{StreamID: stream, Until: mid, Descending: true, Limit: 50}))
	add(s.Records(ctx, storage.Query{Types: []event.RecordType{event.TypeSnapshot, event.TypeGap}}))
	add(s.StreamStatus(ctx, stream))
	add(s.Streams(ctx, ""))
	add(s.ObjectHistory(ctx, obj, storage.HistoryQuery{}))
	add(s.LatestAt(ctx, obj, mid))
	add(s.AliveAt(ctx, storage.AliveQuery{At: mid, StreamID: stream}))
	add(s.EventByResourceVersion(ctx, obj, recs[10].Resource.UID, recs[10].Resource.ResourceVersion))
	add(s.Correlations(ctx, []string{recs[10].EventID}))
	add(s.Timelines(ctx, ""))
	rv, at, err := s.Watermark(ctx, stream, mid)
	add([]any{rv, at}, err)
	stats, err := s.Stats(ctx)
	stats.FileBytes = 0 // the read-only store may have made a -wal file
	stats.UsedBytes = 0
	add(stats, err)
	return out
}

// TestReadOnlyAnswersEveryQuery opens a journal with WithReadOnly: every
// query answers as on a writable store, Append and Compact are refused
// with storage.ErrReadOnly, the file is not written, and what another
// store commits meanwhile is seen.
func TestReadOnlyAnswersEveryQuery(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	recs := writeHistory(t, path)
	rw, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	want := answers(t, rw, recs)
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}

	ro, err := sqlite.Open(ctx, path, sqlite.WithReadOnly(), sqlite.WithReadConnections(2), sqlite.WithMmapSize(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if got := answers(t, ro, recs); !reflect.DeepEqual(got, want) {
		t.Errorf("read-only answers differ from the writable store's:\n got %+v\nwant %+v", got, want)
	}
	more := storagetest.Checkpoint(event.Stream{ClusterID: "bench", Version: "v1", Resource: "configmaps", Namespace: "shop"}, "10000", true, benchStart.Add(time.Hour))
	if _, err := ro.Append(ctx, []event.Record{more}); !errors.Is(err, storage.ErrReadOnly) {
		t.Errorf("Append on a read-only store: %v, want storage.ErrReadOnly", err)
	}
	if _, err := ro.Compact(ctx, benchStart.Add(time.Hour)); !errors.Is(err, storage.ErrReadOnly) {
		t.Errorf("Compact on a read-only store: %v, want storage.ErrReadOnly", err)
	}
	if err := ro.RestoreStreams(ctx, []storage.StreamStatus{{StreamID: more.StreamID, CheckpointRV: "1"}}); !errors.Is(err, storage.ErrReadOnly) {
		t.Errorf("RestoreStreams on a read-only store: %v, want storage.ErrReadOnly", err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("the read-only store changed the journal file")
	}

	// A writer commits while the read-only store is open.
	rw, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	res, err := rw.Append(ctx, []event.Record{more})
	if err != nil {
		t.Fatal(err)
	}
	got, err := ro.Get(ctx, more.EventID)
	if err != nil || got.IngestSeq != res.Seqs[0] {
		t.Errorf("read-only store after another store's commit: seq %d, %v; want %d", got.IngestSeq, err, res.Seqs[0])
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ro.Stats(ctx); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Stats after Close: %v, want storage.ErrClosed", err)
	}
}

// TestReadOnlyNeverCreatesNorMigrates: a read-only Open of a missing
// file creates nothing, and one of an older schema refuses to migrate it
// and leaves it untouched.
func TestReadOnlyNeverCreatesNorMigrates(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.db")
	s, err := sqlite.Open(ctx, path, sqlite.WithReadOnly())
	if err == nil {
		s.Close()
		t.Fatal("read-only Open of a missing journal succeeded")
	}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read-only Open of a missing journal: %v, want fs.ErrNotExist", err)
	}
	if got := dirNames(t, dir); got != "" {
		t.Errorf("the read-only Open left %s", got)
	}

	path = olderJournal(t, 2)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err = sqlite.Open(ctx, path, sqlite.WithReadOnly())
	if err == nil {
		s.Close()
		t.Fatal("read-only Open of a version 2 journal succeeded")
	}
	var ie *sqlite.IncompatibleError
	if !errors.As(err, &ie) || ie.FileVersion != 2 || !bytes.Contains([]byte(err.Error()), []byte("without WithReadOnly")) {
		t.Errorf("read-only Open of a version 2 journal: %v; want an *IncompatibleError saying to open it without WithReadOnly", err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Errorf("the read-only Open changed the version 2 journal")
	}
}

// TestOptionsRoundTrip appends and reads back a churn workload with the
// writer's and the readers' options set away from their defaults.
func TestOptionsRoundTrip(t *testing.T) {
	ctx := context.Background()
	for name, opts := range map[string][]sqlite.Option{
		"full sync, no keyframe cache, one reader": {sqlite.WithSynchronous(sqlite.SyncFull), sqlite.WithKeyframeCache(0), sqlite.WithReadConnections(1)},
		"small keyframe cache, mmap, small cache":  {sqlite.WithKeyframeCache(8), sqlite.WithMmapSize(4 << 20), sqlite.WithCacheSize(512)},
	} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "journal.db")
			recs := writeHistory(t, path, opts...)
			s, err := sqlite.Open(ctx, path, opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			for _, rec := range recs {
				got, err := s.Get(ctx, rec.EventID)
				if err != nil || !bytes.Equal(got.Object, rec.Object) {
					t.Fatalf("%s: body equal %v, %v", rec.EventID, bytes.Equal(got.Object, rec.Object), err)
				}
			}
		})
	}
}

// TestReadOnlyLeavesNoSharedMemory: a read-only Open of a file no writer
// may write (no write permission: an archive, a copy) reads it as
// immutable and leaves the folder as it found it; one of a writable file,
// which a writer may open meanwhile, shares the write-ahead log through a
// -shm file, as SQLite must.
func TestReadOnlyLeavesNoSharedMemory(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		mode os.FileMode
		want string
	}{
		{0o444, "journal.db"},
		{0o644, "journal.db,journal.db-shm,journal.db-wal"},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "journal.db")
		writeJournal(t, path)
		if err := os.Chmod(path, tc.mode); err != nil {
			t.Fatal(err)
		}
		s, err := sqlite.Open(ctx, path, sqlite.WithReadOnly())
		if err != nil {
			t.Fatalf("mode %o: read-only Open: %v", tc.mode, err)
		}
		stats, err := s.Stats(ctx)
		if err != nil || stats.Records != 1 {
			t.Errorf("mode %o: Stats = %+v, %v; want 1 record", tc.mode, stats, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if got := dirNames(t, dir); got != tc.want {
			t.Errorf("mode %o: after a read-only Open and Close the folder holds %s, want %s", tc.mode, got, tc.want)
		}
	}
}
