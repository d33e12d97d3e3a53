package transfer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
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

// An import of a compacted journal's export cut anywhere is completed by
// importing the whole export again, as for any other export: the
// compaction's synthetic baseline comes before older records of its
// stream in the export (as in the journal), so the records after the cut
// are older than the stream's last record in the importing journal, and
// they continue the same history, not another.
func TestResumeCompactedImport(t *testing.T) {
	ctx := context.Background()
	for _, before := range []int{3, 6, 22, 26} {
		src := memory.New()
		handJournal(t, src)
		if _, err := src.Compact(ctx, at(before)); err != nil {
			t.Fatal(err)
		}
		want := transfertest.Answers(t, src)
		good := export(t, src)
		ls := lines(good)
		for cut := 2; cut < len(ls); cut++ {
			dst := memory.New()
			if _, err := transfer.Import(ctx, strings.NewReader(strings.Join(ls[:cut], "")), dst, transfer.WithBatchSize(1)); !errors.Is(err, transfer.ErrInvalidStream) {
				t.Fatalf("compacted at %ds, cut at line %d: %v, want ErrInvalidStream", before, cut+1, err)
			}
			if _, err := transfer.Import(ctx, bytes.NewReader(good), dst); err != nil {
				t.Errorf("compacted at %ds, cut at line %d, then the whole export: %v", before, cut+1, err)
				continue
			}
			transfertest.SameAnswers(t, fmt.Sprintf("compacted at %ds, cut at line %d, then the whole export", before, cut+1), want, transfertest.Answers(t, dst))
		}
	}
}
