package storagetest

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// testBulk checks storage.BulkAppender, for a store that implements it,
// against ref, a second store of the backend given the same batches one
// Append each:
//   - batches appended in bulks answer as the same batches appended one
//     by one, with the same sequence numbers;
//   - readers see nothing of a bulk until its commit;
//   - nothing of a rolled-back bulk stays, and the store's next appends,
//     of other objects under the IDs the bulk had taken, are right;
//   - a record appended twice in a bulk is a duplicate, as in Append;
//   - a failed or cancelled Append fails the bulk, which can then only
//     roll back;
//   - an Append of the store waits for the bulk to end;
//   - a bulk is done after Commit: Rollback does nothing.
func testBulk(t *testing.T, s, ref storage.Store) {
	ba, ok := s.(storage.BulkAppender)
	if !ok {
		t.Skip("the store does not implement storage.BulkAppender")
	}
	ctx := context.Background()
	batches := newSim(7).journal(150)
	var objs []storage.ObjectID
	seen := map[storage.ObjectID]bool{}
	var times []time.Time
	for _, b := range batches {
		for _, r := range b {
			if id := objectID(r); r.IsObjectChange() && !seen[id] {
				seen[id] = true
				objs = append(objs, id)
			}
			times = append(times, r.ObservedAt)
		}
	}
	sort.Slice(objs, func(i, j int) bool { return fmt.Sprint(objs[i]) < fmt.Sprint(objs[j]) })
	streams := []event.Stream{cmShop, cmAll, deployShop}
	same := func(what string) {
		t.Helper()
		got, want := allRecords(t, s, storage.Query{}), allRecords(t, ref, storage.Query{})
		if g, w := seqsAndIDs(got), seqsAndIDs(want); !slices.Equal(g, w) {
			t.Fatalf("%s: the journal holds %d records, want %d:\n got %v\nwant %v", what, len(got), len(want), g, w)
		}
		for i := range got {
			if !sameRecord(got[i], want[i]) {
				t.Fatalf("%s: record %d differs:\n got %s\nwant %s", what, i, canonicalJSON(got[i]), canonicalJSON(want[i]))
			}
		}
		for _, k := range []int{0, len(times) / 4, len(times) / 2, 3 * len(times) / 4, len(times) - 1} {
			diffLines(t, what, answers(t, ref, objs, streams, times[k]), answers(t, s, objs, streams, times[k]))
		}
		gs, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		ws, err := ref.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if gs.Records != ws.Records || gs.Events != ws.Events {
			t.Fatalf("%s: Stats %+v, want the records and events of %+v", what, gs, ws)
		}
	}
	begin := func() storage.Bulk {
		t.Helper()
		b, err := ba.BeginBulk(ctx)
		if err != nil {
			t.Fatalf("BeginBulk: %v", err)
		}
		return b
	}
	bulkAppend := func(b storage.Bulk, recs []event.Record) storage.AppendResult {
		t.Helper()
		res, err := b.Append(ctx, recs)
		if err != nil {
			t.Fatalf("Bulk.Append(%d records): %v", len(recs), err)
		}
		return res
	}
	// rolledBack checks that a bulk failed by what does not commit, rolls
	// back, and leaves the store as ref.
	rolledBack := func(b storage.Bulk, what string) {
		t.Helper()
		if err := b.Commit(); err == nil {
			t.Errorf("Commit after %s: no error", what)
		}
		if err := b.Rollback(); err != nil {
			t.Fatalf("Rollback after %s: %v", what, err)
		}
		same("after " + what)
	}
	third := len(batches) / 3

	// A first bulk of a third of the batches, committed; the first batch
	// twice.
	b := begin()
	for i, batch := range batches[:third] {
		res := bulkAppend(b, batch)
		want := mustAppend(t, ref, batch...)
		if !slices.Equal(res.Seqs, want.Seqs) || res.Inserted != want.Inserted {
			t.Fatalf("batch %d: Bulk.Append gave %+v, Append %+v", i, res, want)
		}
	}
	again := bulkAppend(b, batches[0])
	if first := mustAppend(t, ref, batches[0]...); again.Duplicates != len(batches[0]) || !slices.Equal(again.Seqs, first.Seqs) {
		t.Fatalf("the first batch again in the bulk: %+v, want %d duplicates with the seqs %v", again, len(batches[0]), first.Seqs)
	}
	if n := len(allRecords(t, s, storage.Query{})); n != 0 {
		t.Fatalf("a reader sees %d records of a bulk not committed", n)
	}
	// An Append of the store waits for the bulk.
	appended := make(chan error, 1)
	go func() {
		_, err := s.Append(ctx, batches[third])
		appended <- err
	}()
	select {
	case err := <-appended:
		t.Fatalf("an Append returned (%v) while a bulk was open", err)
	case <-time.After(100 * time.Millisecond):
	}
	if err := b.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if err := <-appended; err != nil {
		t.Fatalf("the Append that waited for the bulk: %v", err)
	}
	mustAppend(t, ref, batches[third]...)
	same("after a committed bulk and an Append")
	if err := b.Rollback(); err != nil {
		t.Errorf("Rollback after Commit: %v, want nil", err)
	}
	if _, err := b.Append(ctx, batches[third+1]); err == nil {
		t.Error("Append after Commit: no error")
	}
	if err := b.Commit(); err == nil {
		t.Error("a second Commit: no error")
	}

	// A bulk of the second third, rolled back; then the last third is
	// appended, new objects under the IDs the rolled-back bulk took.
	b = begin()
	for _, batch := range batches[third+1 : 2*third] {
		bulkAppend(b, batch)
	}
	if err := b.Rollback(); err != nil {
		t.Fatalf("Rollback: %v", err)
	}
	same("after a rolled-back bulk")
	for _, batch := range batches[2*third:] {
		mustAppend(t, s, batch...)
		mustAppend(t, ref, batch...)
	}
	same("after a rolled-back bulk and Appends")

	// A failed Append fails the bulk.
	b = begin()
	bulkAppend(b, batches[third+1])
	bad := slices.Clone(batches[third+2])
	bad[len(bad)-1].EventID = ""
	if _, err := b.Append(ctx, bad); err == nil {
		t.Fatal("Bulk.Append of a record without EventID: no error")
	}
	if _, err := b.Append(ctx, batches[third+3]); err == nil {
		t.Error("Append after a failed Append: no error")
	}
	rolledBack(b, "a failed Append")

	// A cancelled Append fails the bulk too; the store goes on.
	b = begin()
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.Append(cctx, batches[third+1]); err == nil {
		t.Fatal("Bulk.Append with a cancelled context: no error")
	}
	rolledBack(b, "a cancelled Append")
}

func seqsAndIDs(recs []event.Record) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = fmt.Sprintf("%d %s", r.IngestSeq, r.EventID)
	}
	return out
}
