package transfer_test

import (
	"testing"
	"time"

	"github.com/krply/krply/internal/testing/wiretest"
	"github.com/krply/krply/storage/transfer"
)

// TestWireTransfer pins the JSON form of what Export, Import and Verify
// report (testdata/wire/transfer.json).
func TestWireTransfer(t *testing.T) {
	wiretest.Check(t, "transfer", map[string]any{
		"progress": transfer.Progress{Lines: 1002, Records: 1000, Bytes: 949000},
		"result": transfer.Result{Progress: transfer.Progress{Lines: 1023, Records: 1000, Bytes: 951234}, Streams: 21,
			Clusters: []string{"c1"}, Inserted: 990, Duplicates: 10, StreamsRestored: 1,
			FirstObservedAt: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), LastObservedAt: time.Date(2026, 3, 1, 12, 0, 25, 500000000, time.UTC)},
	})
}
