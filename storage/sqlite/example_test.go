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
