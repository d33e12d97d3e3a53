package transfer_test

import (
	"context"
	"testing"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/recording"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/transfer/transfertest"
)

// A journal recorded from the real control plane — writes by two users,
// an outage during which etcd is compacted (the restarted recorder gets
// 410 Gone, records a gap, relists and infers a deletion), audit
// correlations, a saved snapshot and a saved plan — goes SQLite → NDJSON →
// memory → NDJSON → SQLite and answers every query the same; the exports
// are byte for byte the same; a second import stores nothing. The same
// after compacting it just after the relist that closed the gap.
func TestRoundTripRecordedJournal(t *testing.T) {
	ctx := context.Background()
	src := openSQLite(t)
	counts := recording.Outage(t, src)
	t.Logf("recorded %v", counts)
	transfertest.RoundTrip(t, src, memory.New(), openSQLite(t))

	page, err := src.Records(ctx, storage.Query{Types: []event.RecordType{event.TypeBaseline}, Descending: true, Limit: 1})
	if err != nil || len(page.Records) == 0 {
		t.Fatalf("the last baseline record: %v", err)
	}
	res, err := src.Compact(ctx, page.Records[0].ObservedAt.Add(1))
	if err != nil {
		t.Fatal(err)
	}
	if res.RecordsRemoved == 0 || res.Streams == 0 {
		t.Fatalf("the compaction did little: %+v", res)
	}
	t.Logf("compacted: %+v", res)
	transfertest.RoundTrip(t, src, memory.New(), openSQLite(t))
}
