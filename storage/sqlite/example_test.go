package sqlite_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/storagetest"
)

// A journal file: append a watch event and its checkpoint in one batch,
// reopen the file, and read the object back as it was at a time.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "krply-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "journal.db")

	s, err := sqlite.Open(ctx, path) // durable: WAL, synchronous=NORMAL
	if err != nil {
		fmt.Println(err)
		return
	}
	stream := event.Stream{ClusterID: "prod", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	ref := event.ResourceRef{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "shop",
		Name: "web-config", UID: "6f1c", ResourceVersion: "1001"}
	observed := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	change := event.Record{
		Type: event.TypeEvent, EventID: event.EventID(stream.ID(), event.TypeEvent, ref, event.Modified),
		ClusterID: "prod", StreamID: stream.ID(), ObservedAt: observed, WatchType: event.Modified, Resource: ref,
		Object: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web-config","namespace":"shop","resourceVersion":"1001"},"data":{"LOG_LEVEL":"debug"}}`),
	}
	bookmark := event.Record{
		Type: event.TypeCheckpoint, EventID: event.EventID(stream.ID(), event.TypeCheckpoint, event.ResourceRef{ResourceVersion: "1007"}, event.Bookmark),
		ClusterID: "prod", StreamID: stream.ID(), ObservedAt: observed.Add(time.Minute),
		Checkpoint: &event.Checkpoint{ResourceVersion: "1007", Bookmark: true},
	}
	res, err := s.Append(ctx, []event.Record{change, bookmark})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("stored:", res.Inserted)
	res, _ = s.Append(ctx, []event.Record{change}) // delivered again: stored once
	fmt.Println("duplicates:", res.Duplicates)
	s.Close()

	s, err = sqlite.Open(ctx, path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()
	st, _ := s.StreamStatus(ctx, stream.ID())
	fmt.Println("resume watch from:", st.CheckpointRV)
	rec, err := s.LatestAt(ctx, storage.ObjectIDOf(change), observed.Add(time.Hour))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rec.WatchType, rec.Resource.ResourceVersion, string(rec.Object[len(rec.Object)-29:]))
	// Output:
	// stored: 2
	// duplicates: 1
	// resume watch from: 1007
	// MODIFIED 1001 "data":{"LOG_LEVEL":"debug"}}
}

// A bulk load: many batches in one transaction, which readers see only
// once it commits. transfer.Import loads a SQLite journal this way.
func ExampleStore_BeginBulk() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "krply-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	s, err := sqlite.Open(ctx, filepath.Join(dir, "journal.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	stream := event.Stream{ClusterID: "prod", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	observed := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	batch := func(from, n int) []event.Record {
		var out []event.Record
		for i := from; i < from+n; i++ {
			rv := fmt.Sprint(1000 + i)
			ref := event.ResourceRef{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "shop",
				Name: fmt.Sprintf("cm-%d", i%3), UID: fmt.Sprintf("u%d", i%3), ResourceVersion: rv}
			out = append(out, event.Record{
				Type: event.TypeEvent, EventID: event.EventID(stream.ID(), event.TypeEvent, ref, event.Modified),
				ClusterID: "prod", StreamID: stream.ID(), ObservedAt: observed.Add(time.Duration(i) * time.Second),
				WatchType: event.Modified, Resource: ref,
				Object: fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"shop","resourceVersion":%q}}`, ref.Name, rv),
			})
		}
		return out
	}

	bulk, err := s.BeginBulk(ctx)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer bulk.Rollback() // does nothing once committed
	for i := range 3 {
		if _, err := bulk.Append(ctx, batch(i*4, 4)); err != nil {
			fmt.Println(err) // the bulk can only be rolled back now
			return
		}
	}
	st, _ := s.Stats(ctx)
	fmt.Println("records before the commit:", st.Records)
	if err := bulk.Commit(); err != nil {
		fmt.Println(err)
		return
	}
	st, _ = s.Stats(ctx)
	fmt.Println("records after the commit:", st.Records)
	// Output:
	// records before the commit: 0
	// records after the commit: 12
}

// ScanByObject hands a stream's records to a function one at a time,
// object after object, each object's in time order; here, in the two
// parts SplitByObject cuts the stream into (which could be scanned side by
// side). The record and its body are the scan's only until the function
// returns: keep copies.
func ExampleStore_ScanByObject() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "krply-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	s, err := sqlite.Open(ctx, filepath.Join(dir, "journal.db"))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer s.Close()

	// Two versions each of three ConfigMaps, in turn.
	stream := event.Stream{ClusterID: "prod", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	var recs []event.Record
	for i := range 6 {
		name, rv := fmt.Sprintf("cm-%d", i%3), fmt.Sprint(1000+i)
		body := fmt.Appendf(nil, `{"metadata":{"name":%q,"resourceVersion":%q}}`, name, rv)
		recs = append(recs, storagetest.Event(stream, event.Modified, storagetest.Ref(stream, "ConfigMap", "shop", name, "u-"+name, rv), body,
			time.Date(2025, 3, 1, 12, 0, i, 0, time.UTC)))
	}
	if _, err := s.Append(ctx, recs); err != nil {
		fmt.Println(err)
		return
	}

	parts, err := s.SplitByObject(ctx, stream.ID(), 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	for i, cursor := range parts {
		err := s.ScanByObject(ctx, storage.Query{StreamID: stream.ID(), Cursor: cursor}, func(r *event.Record) error {
			fmt.Printf("part %d: %s %s %s\n", i, r.Resource.Name, r.Resource.ResourceVersion, r.Object)
			return nil
		})
		if err != nil {
			fmt.Println(err)
			return
		}
	}
	// Output:
	// part 0: cm-0 1000 {"metadata":{"name":"cm-0","resourceVersion":"1000"}}
	// part 0: cm-0 1003 {"metadata":{"name":"cm-0","resourceVersion":"1003"}}
	// part 1: cm-1 1001 {"metadata":{"name":"cm-1","resourceVersion":"1001"}}
	// part 1: cm-1 1004 {"metadata":{"name":"cm-1","resourceVersion":"1004"}}
	// part 1: cm-2 1002 {"metadata":{"name":"cm-2","resourceVersion":"1002"}}
	// part 1: cm-2 1005 {"metadata":{"name":"cm-2","resourceVersion":"1005"}}
}

// A query server opens the journal a recorder writes and builds the
// version index before it answers, so that its first answers come from
// the index (without it, the first LatestAt starts the build and SQLite
// answers until it is done).
func ExampleStore_BuildVersionIndex() {
	ctx := context.Background()
	path := filepath.Join(os.TempDir(), fmt.Sprintf("krply-example-%d.db", os.Getpid()))
	defer func() {
		for _, suffix := range []string{"", "-wal", "-shm"} {
			os.Remove(path + suffix)
		}
	}()
	recorder, err := sqlite.Open(ctx, path)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer recorder.Close()
	stream := event.Stream{ClusterID: "prod", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	ref := storagetest.Ref(stream, "ConfigMap", "shop", "cm", "u-cm", "1000")
	rec := storagetest.Event(stream, event.Added, ref, []byte(`{"metadata":{"name":"cm","resourceVersion":"1000"}}`), time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC))
	if _, err := recorder.Append(ctx, []event.Record{rec}); err != nil {
		fmt.Println(err)
		return
	}

	// The server: read-only, with the index a read-only Store leaves off.
	server, err := sqlite.Open(ctx, path, sqlite.WithReadOnly(), sqlite.WithVersionIndex(sqlite.DefaultVersionIndex))
	if err != nil {
		fmt.Println(err)
		return
	}
	defer server.Close()
	if err := server.BuildVersionIndex(ctx); err != nil {
		fmt.Println(err)
		return
	}
	got, err := server.LatestAt(ctx, storage.ObjectIDOf(rec), time.Date(2025, 3, 1, 13, 0, 0, 0, time.UTC))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(got.Resource.Name, got.Resource.ResourceVersion)
	// Output:
	// cm 1000
}
