package storagetest

import (
	"bytes"
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/journal"
)

// testRecordsByObject checks storage.ObjectOrderReader, for a store that
// has it: the stream's records of objects, each once, grouped by object,
// each object's in the order of ObservedAt then IngestSeq, across pages of
// every size, with and without bodies.
func testRecordsByObject(t *testing.T, s storage.Store) {
	or, ok := s.(storage.ObjectOrderReader)
	if !ok {
		t.Skip("the store does not implement storage.ObjectOrderReader")
	}
	ctx := context.Background()
	mixedJournal(t, s)
	// More versions of more objects, interleaved, two at each time.
	var more []event.Record
	for i := range 12 {
		name := []string{"c", "d", "a"}[i%3]
		more = append(more, cm(cmShop, event.Modified, "shop", name, "u"+name, strconv.Itoa(200+i), at(20+i/2)))
	}
	mustAppend(t, s, more[:5]...)
	mustAppend(t, s, more[5:]...)
	events := []event.RecordType{event.TypeEvent}
	want := allRecords(t, s, storage.Query{StreamID: cmShop.ID(), Types: events})
	byID := map[string]event.Record{}
	for _, r := range want {
		byID[r.EventID] = r
	}
	for _, types := range [][]event.RecordType{events, nil} {
		for _, limit := range []int{0, 1, 2, 3, 5, 100} {
			for _, without := range []bool{false, true} {
				q := storage.Query{StreamID: cmShop.ID(), Types: types, Limit: limit, WithoutBodies: without}
				got := allByObject(t, or, q)
				sameScan(t, or, q, got)
				if len(got) != len(want) {
					t.Fatalf("RecordsByObject(%+v): %d records, want the %d records of objects Records reads: %v", q, len(got), len(want), eventIDs(got))
				}
				done := map[storage.ObjectID]bool{}
				for i, r := range got {
					w, ok := byID[r.EventID]
					if !ok {
						t.Fatalf("RecordsByObject(%+v): record %s is not one of the stream's records of objects", q, r.EventID)
					}
					delete(byID, r.EventID)
					if without {
						if len(r.Object) != 0 {
							t.Errorf("RecordsByObject(%+v): record %s has a body", q, r.EventID)
						}
						r.Object, r.ObjectHash = w.Object, w.ObjectHash
					}
					if !sameRecord(r, w) || r.IngestSeq != w.IngestSeq {
						t.Errorf("RecordsByObject(%+v): record %s differs from Records':\n%s\n%s", q, r.EventID, canonicalJSON(r), canonicalJSON(w))
					}
					id := objectID(r)
					if i > 0 && objectID(got[i-1]) == id {
						p := got[i-1]
						if r.ObservedAt.Before(p.ObservedAt) || r.ObservedAt.Equal(p.ObservedAt) && r.IngestSeq < p.IngestSeq {
							t.Errorf("RecordsByObject(%+v): %s (seq %d, %s) after %s (seq %d, %s)", q, r.EventID, r.IngestSeq, r.ObservedAt, p.EventID, p.IngestSeq, p.ObservedAt)
						}
						continue
					}
					if done[id] {
						t.Errorf("RecordsByObject(%+v): the records of %v are not side by side: %v", q, id, eventIDs(got))
					}
					done[id] = true
				}
				for _, r := range want {
					byID[r.EventID] = r
				}
			}
		}
	}

	// Parts: each read from its cursor, together every record once, in
	// the order RecordsByObject reads without parts.
	whole := allByObject(t, or, storage.Query{StreamID: cmShop.ID(), Types: events})
	objects := map[storage.ObjectID]bool{}
	for _, r := range whole {
		objects[objectID(r)] = true
	}
	for _, n := range []int{1, 2, 3, len(objects), len(objects) + 5} {
		parts, err := or.SplitByObject(ctx, cmShop.ID(), n)
		if err != nil {
			t.Fatalf("SplitByObject(%d): %v", n, err)
		}
		if want := min(n, len(objects)); len(parts) != want {
			t.Fatalf("SplitByObject(%d) of %d objects: %d parts, want %d", n, len(objects), len(parts), want)
		}
		for _, limit := range []int{1, 2, 100} {
			var got []event.Record
			partOf := map[storage.ObjectID]int{}
			for i, cursor := range parts {
				part := allByObject(t, or, storage.Query{StreamID: cmShop.ID(), Types: events, Limit: limit, Cursor: cursor})
				sameScan(t, or, storage.Query{StreamID: cmShop.ID(), Types: events, Cursor: cursor}, part)
				if len(part) == 0 {
					t.Errorf("SplitByObject(%d): part %d has no records", n, i)
				}
				for _, r := range part {
					if p, ok := partOf[objectID(r)]; ok && p != i {
						t.Errorf("SplitByObject(%d): %v is in parts %d and %d", n, objectID(r), p, i)
					}
					partOf[objectID(r)] = i
				}
				got = append(got, part...)
			}
			if len(got) != len(whole) {
				t.Fatalf("SplitByObject(%d), pages of %d: the parts read %d records, want %d: %v", n, limit, len(got), len(whole), eventIDs(got))
			}
			for i := range got {
				if got[i].EventID != whole[i].EventID {
					t.Fatalf("SplitByObject(%d), pages of %d: record %d of the parts is %s, want %s (the order without parts)", n, limit, i, got[i].EventID, whole[i].EventID)
				}
			}
		}
	}
	if parts, err := or.SplitByObject(ctx, "no-such-stream", 2); err != nil || len(parts) != 0 {
		t.Errorf("SplitByObject of a stream with no records: %q, %v", parts, err)
	}
	for _, n := range []int{0, -1} {
		if _, err := or.SplitByObject(ctx, cmShop.ID(), n); !errors.Is(err, storage.ErrInvalidArgument) {
			t.Errorf("SplitByObject(%d): %v, want an error wrapping storage.ErrInvalidArgument", n, err)
		}
	}
	if _, err := or.SplitByObject(ctx, "", 2); !errors.Is(err, storage.ErrInvalidArgument) {
		t.Errorf("SplitByObject without a stream: %v, want an error wrapping storage.ErrInvalidArgument", err)
	}

	// A stream no record has: no records, no error.
	if p, err := or.RecordsByObject(ctx, storage.Query{StreamID: "no-such-stream"}); err != nil || len(p.Records) != 0 || p.Next != "" {
		t.Errorf("RecordsByObject of a stream with no records: %d records, next %q, %v", len(p.Records), p.Next, err)
	}
	// What it does not take.
	for _, q := range []storage.Query{
		{},
		{StreamID: cmShop.ID(), ClusterID: "c1"},
		{StreamID: cmShop.ID(), Since: at(1)},
		{StreamID: cmShop.ID(), Until: at(1)},
		{StreamID: cmShop.ID(), AfterSeq: 1},
		{StreamID: cmShop.ID(), BeforeSeq: 5},
		{StreamID: cmShop.ID(), Descending: true},
	} {
		if _, err := or.RecordsByObject(ctx, q); !errors.Is(err, storage.ErrInvalidArgument) {
			t.Errorf("RecordsByObject(%+v): %v, want an error wrapping storage.ErrInvalidArgument", q, err)
		}
	}
	// A cursor of Records is not one of RecordsByObject's.
	if _, err := or.RecordsByObject(ctx, storage.Query{StreamID: cmShop.ID(), Cursor: journal.EncodeCursor(3)}); err == nil {
		t.Error("RecordsByObject with a cursor of Records: no error")
	}
	testScanByObject(t, or)
}

// testScanByObject checks what ScanByObject does besides reading as
// RecordsByObject does (sameScan): from the cursor of any page, the rest;
// an error of the function ends the scan; what it does not take.
func testScanByObject(t *testing.T, or storage.ObjectOrderReader) {
	sc, ok := or.(storage.ObjectOrderScanner)
	if !ok {
		return
	}
	ctx := context.Background()
	q := storage.Query{StreamID: cmShop.ID(), Limit: 2}
	for {
		p, err := or.RecordsByObject(ctx, q)
		if err != nil {
			t.Fatalf("RecordsByObject(%+v): %v", q, err)
		}
		if p.Next == "" {
			break
		}
		q.Cursor = p.Next
		sameScan(t, or, q, allByObject(t, or, q))
	}
	stop := errors.New("enough")
	calls := 0
	err := sc.ScanByObject(ctx, storage.Query{StreamID: cmShop.ID()}, func(*event.Record) error {
		calls++
		return stop
	})
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("ScanByObject whose function fails: %v after %d calls, want the function's error after 1", err, calls)
	}
	if err := sc.ScanByObject(ctx, storage.Query{StreamID: "no-such-stream"}, func(*event.Record) error {
		return errors.New("called")
	}); err != nil {
		t.Errorf("ScanByObject of a stream with no records: %v", err)
	}
	for _, q := range []storage.Query{{}, {StreamID: cmShop.ID(), Since: at(1)}, {StreamID: cmShop.ID(), Descending: true}} {
		if err := sc.ScanByObject(ctx, q, func(*event.Record) error { return nil }); !errors.Is(err, storage.ErrInvalidArgument) {
			t.Errorf("ScanByObject(%+v): %v, want an error wrapping storage.ErrInvalidArgument", q, err)
		}
	}
	if err := sc.ScanByObject(ctx, storage.Query{StreamID: cmShop.ID()}, nil); !errors.Is(err, storage.ErrInvalidArgument) {
		t.Errorf("ScanByObject without a function: %v, want an error wrapping storage.ErrInvalidArgument", err)
	}
}

// sameScan checks, for a store that implements
// storage.ObjectOrderScanner, that ScanByObject calls its function with
// want, the records RecordsByObject reads for q, in their order.
func sameScan(t *testing.T, or storage.ObjectOrderReader, q storage.Query, want []event.Record) {
	t.Helper()
	sc, ok := or.(storage.ObjectOrderScanner)
	if !ok {
		return
	}
	var got []event.Record
	err := sc.ScanByObject(context.Background(), q, func(r *event.Record) error {
		c := *r
		c.Object = bytes.Clone(r.Object)
		got = append(got, c)
		return nil
	})
	if err != nil {
		t.Fatalf("ScanByObject(%+v): %v", q, err)
	}
	if len(got) != len(want) {
		t.Fatalf("ScanByObject(%+v): %d records, want the %d of RecordsByObject: %v, want %v", q, len(got), len(want), eventIDs(got), eventIDs(want))
	}
	for i := range got {
		if !sameRecord(got[i], want[i]) || got[i].IngestSeq != want[i].IngestSeq || got[i].ObjectHash != want[i].ObjectHash || len(got[i].Object) != len(want[i].Object) {
			t.Errorf("ScanByObject(%+v): record %d is\n%s\nwant RecordsByObject's\n%s", q, i, canonicalJSON(got[i]), canonicalJSON(want[i]))
		}
	}
}

// allByObject reads every page of RecordsByObject.
func allByObject(t *testing.T, or storage.ObjectOrderReader, q storage.Query) []event.Record {
	t.Helper()
	var out []event.Record
	deadline := time.Now().Add(time.Minute)
	for {
		p, err := or.RecordsByObject(context.Background(), q)
		if err != nil {
			t.Fatalf("RecordsByObject(%+v): %v", q, err)
		}
		if q.Limit > 0 && len(p.Records) > q.Limit {
			t.Fatalf("RecordsByObject(%+v): %d records in a page", q, len(p.Records))
		}
		out = append(out, p.Records...)
		if p.Next == "" {
			return out
		}
		if len(p.Records) == 0 || time.Now().After(deadline) {
			t.Fatalf("RecordsByObject(%+v): a page with a cursor but no records, or pages without end", q)
		}
		q.Cursor = p.Next
	}
}
