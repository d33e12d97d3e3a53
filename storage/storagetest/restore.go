package storagetest

import (
	"context"
	"errors"
	"testing"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// testRestoreStreams checks storage.StreamRestorer, for stores that
// implement it: the checkpoint and availability are set, nothing else; a
// stream without records is created; a bad stream ID changes nothing; the
// next Append goes on from the restored state.
func testRestoreStreams(t *testing.T, s storage.Store) {
	sr, ok := s.(storage.StreamRestorer)
	if !ok {
		t.Fatalf("%T does not implement storage.StreamRestorer: a backend needs it for storage/transfer.Import to be lossless after a Compact", s)
	}
	ctx := context.Background()
	refA := Ref(cmShop, "ConfigMap", "shop", "a", "ua", "1")
	if _, err := s.Append(ctx, Baseline(cmShop, "b1", at(0), "5", []Item{{Ref: refA, Object: ConfigMap("shop", "a", "ua", "1", nil)}})); err != nil {
		t.Fatal(err)
	}
	before, err := s.StreamStatus(ctx, cmShop.ID())
	if err != nil {
		t.Fatal(err)
	}
	want := before
	want.CheckpointRV, want.CheckpointAt = "9", at(30)
	want.Available, want.AvailabilityReason = true, "coverage restored"
	empty := storage.StreamStatus{StreamID: cmOther.ID(), Stream: cmOther, CheckpointRV: "3", CheckpointAt: at(7), Available: false, AvailabilityReason: "403 Forbidden"}

	bad := storage.StreamStatus{StreamID: "no stream"}
	if err := sr.RestoreStreams(ctx, []storage.StreamStatus{want, bad}); !errors.Is(err, storage.ErrInvalidRecord) {
		t.Fatalf("RestoreStreams with a bad stream ID: %v, want ErrInvalidRecord", err)
	}
	if got, _ := s.StreamStatus(ctx, cmShop.ID()); !sameStatus(got, before) {
		t.Fatalf("a refused RestoreStreams changed the stream: %+v", got)
	}

	// Fields other than the durable ones are the store's, whatever is given.
	given := want
	given.Records, given.Gaps, given.LastBaselineID = 99, 5, "other"
	if err := sr.RestoreStreams(ctx, []storage.StreamStatus{given, empty}); err != nil {
		t.Fatal(err)
	}
	got, err := s.StreamStatus(ctx, cmShop.ID())
	if err != nil {
		t.Fatal(err)
	}
	if !sameStatus(got, want) {
		t.Errorf("restored status %+v, want %+v", got, want)
	}
	if ev, err := storage.StreamEvidence(ctx, s, cmShop.ID()); err != nil || !ev.Equal(at(30)) {
		t.Errorf("evidence after the restore: %v %v, want %v", ev, err, at(30))
	}
	got, err = s.StreamStatus(ctx, cmOther.ID())
	if err != nil {
		t.Fatalf("the restored stream without records: %v", err)
	}
	if got.Records != 0 || got.CheckpointRV != "3" || !got.CheckpointAt.Equal(at(7)) || got.Available || got.AvailabilityReason != "403 Forbidden" || got.Stream != cmOther {
		t.Errorf("the restored stream without records: %+v", got)
	}
	if all, _ := s.Streams(ctx, "c2"); len(all) != 1 || all[0].StreamID != cmOther.ID() {
		t.Errorf("Streams(c2) = %+v, want the restored stream", all)
	}

	if _, err := s.Append(ctx, []event.Record{Checkpoint(cmShop, "12", true, at(40))}); err != nil {
		t.Fatal(err)
	}
	got, _ = s.StreamStatus(ctx, cmShop.ID())
	if got.CheckpointRV != "12" || got.AvailabilityReason != "coverage restored" || got.Records != before.Records+1 {
		t.Errorf("after an Append on top of the restore: %+v", got)
	}
}

// sameStatus compares statuses with times compared as instants.
func sameStatus(a, b storage.StreamStatus) bool {
	times := func(s storage.StreamStatus) [5]int64 {
		return [5]int64{s.CheckpointAt.UnixNano(), s.LastBaselineEndAt.UnixNano(), s.LastGapAt.UnixNano(), s.FirstObservedAt.UnixNano(), s.LastObservedAt.UnixNano()}
	}
	ta, tb := times(a), times(b)
	for _, t := range []*storage.StreamStatus{&a, &b} {
		t.CheckpointAt, t.LastBaselineEndAt, t.LastGapAt, t.FirstObservedAt, t.LastObservedAt = t0, t0, t0, t0, t0
	}
	return ta == tb && a == b
}
