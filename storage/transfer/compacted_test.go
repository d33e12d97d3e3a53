package transfer_test

import (
	"bytes"
	"context"
	"testing"

	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/transfer"
	"github.com/krply/krply/storage/transfer/transfertest"
)

// A compacted journal round-trips too: the compaction's synthetic
// baseline, placed among older records, keeps its place.
func TestRoundTripCompactedJournal(t *testing.T) {
	for _, before := range []int{3, 6, 22, 26} {
		src := openSQLite(t)
		handJournal(t, src)
		if _, err := src.Compact(context.Background(), at(before)); err != nil {
			t.Fatal(err)
		}
		out := transfertest.RoundTrip(t, src, memory.New(), openSQLite(t))
		// Compacting at 22s or later removed the coverage changes of the
		// configmaps stream (before its relist at 21s), which its
		// availability reason came from: Import restores it.
		dst := memory.New()
		res, err := transfer.Import(context.Background(), bytes.NewReader(out), dst)
		if err != nil {
			t.Fatal(err)
		}
		st, err := dst.StreamStatus(context.Background(), cmShop.ID())
		if err != nil {
			t.Fatal(err)
		}
		if restored := res.StreamsRestored > 0; restored != (before >= 22) || st.AvailabilityReason != "coverage restored" {
			t.Errorf("compacted at %ds: %d streams restored, availability reason %q", before, res.StreamsRestored, st.AvailabilityReason)
		}
	}
}
