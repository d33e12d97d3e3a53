package transfer_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/transfer"
)

// A journal goes to NDJSON and into another store; a second import of the
// same stream stores nothing.
func Example() {
	ctx := context.Background()
	src := memory.New()
	defer src.Close()
	stream := event.Stream{ClusterID: "prod", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	sid := stream.ID()
	ref := event.ResourceRef{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "shop", Name: "settings", UID: "u-1", ResourceVersion: "15"}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	if _, err := src.Append(ctx, []event.Record{
		{Type: event.TypeEvent, EventID: event.EventID(sid, event.TypeEvent, ref, event.Modified), ClusterID: "prod", StreamID: sid,
			ObservedAt: at, WatchType: event.Modified, Resource: ref,
			Object: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"shop"},"data":{"color":"blue"}}`)},
		{Type: event.TypeCheckpoint, EventID: "bookmark-16", ClusterID: "prod", StreamID: sid, ObservedAt: at.Add(time.Second),
			Checkpoint: &event.Checkpoint{ResourceVersion: "16", Bookmark: true}},
	}); err != nil {
		fmt.Println(err)
		return
	}

	var export bytes.Buffer
	res, err := transfer.Export(ctx, src, &export)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("exported %d records, %d streams, %d lines\n", res.Records, res.Streams, res.Lines)
	fmt.Print(strings.SplitAfter(export.String(), "\n")[0])

	dst := memory.New()
	defer dst.Close()
	for range 2 {
		res, err = transfer.Import(ctx, bytes.NewReader(export.Bytes()), dst, transfer.WithBatchSize(100))
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Printf("imported: %d inserted, %d duplicates\n", res.Inserted, res.Duplicates)
	}
	st, _ := dst.StreamStatus(ctx, sid)
	fmt.Println("checkpoint", st.CheckpointRV, "at", st.CheckpointAt.Format(time.TimeOnly))

	// A stream cut short fails with the line at fault.
	_, err = transfer.Import(ctx, bytes.NewReader(export.Bytes()[:export.Len()-10]), memory.New())
	fmt.Println(err)
	// Output:
	// exported 2 records, 1 streams, 5 lines
	// {"krplyExport":{"format":"krply-journal","version":1,"clusters":["prod"]}}
	// imported: 2 inserted, 0 duplicates
	// imported: 0 inserted, 2 duplicates
	// checkpoint 16 at 12:00:01
	// transfer: line 5: invalid export stream: the line ends without a newline after 24 bytes: the stream was cut short
}
