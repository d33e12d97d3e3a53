package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/storagetest"
)

// TestWithVersionIndex checks who gets the version index, that LatestAt
// answers from it, and that over its budget it keeps the recent part of
// a history and SQLite answers for the rest, with the same answers.
func TestWithVersionIndex(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	st := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var recs []event.Record
	for v := range 5 {
		ref := storagetest.Ref(st, "ConfigMap", "shop", "cm", "u1", "10"+string(rune('0'+v)))
		recs = append(recs, storagetest.Event(st, event.Modified, ref, storagetest.ConfigMap("shop", "cm", "u1", ref.ResourceVersion, nil), at.Add(time.Duration(v)*time.Second)))
	}
	obj := storage.ObjectIDOf(recs[0])

	w, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if w.index == nil || w.index.budget != DefaultVersionIndex {
		t.Fatalf("a Store that writes has index %+v, want one of budget %d", w.index, DefaultVersionIndex)
	}
	if _, err := w.Append(ctx, recs); err != nil {
		t.Fatal(err)
	}
	small, err := Open(ctx, path, WithVersionIndex(3))
	if err != nil {
		t.Fatal(err)
	}
	defer small.Close()
	ro, err := Open(ctx, path, WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if ro.index != nil {
		t.Errorf("a read-only Store has a version index by default")
	}
	off, err := Open(ctx, path, WithVersionIndex(0))
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	if off.index != nil {
		t.Errorf("WithVersionIndex(0) left the version index on")
	}
	for _, s := range []*Store{w, small, ro, off} {
		for _, v := range []int{1, 2, 4} {
			got, err := s.LatestAt(ctx, obj, at.Add(time.Duration(v)*time.Second+500*time.Millisecond))
			if err != nil || got.EventID != recs[v].EventID || string(got.Object) != string(recs[v].Object) {
				t.Errorf("LatestAt: %s %s (%v), want %s", got.EventID, got.Object, err, recs[v].EventID)
			}
		}
		if _, err := s.LatestAt(ctx, obj, at.Add(-time.Second)); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("LatestAt before the first version: %v, want storage.ErrNotFound", err)
		}
	}
	if !w.index.built || w.index.versions != 5 || len(w.index.byRow[w.index.objects[obj]]) != 5 {
		t.Errorf("the writer's index: built %v, %d versions, want 5 of the object", w.index.built, w.index.versions)
	}
	// Over its budget, the index keeps the newest part of the history
	// (three quarters of the budget, and the version before), and leaves
	// an earlier time to SQLite.
	row := small.index.objects[obj]
	if !small.index.built || small.index.versions != 3 || !small.index.truncated[row] {
		t.Fatalf("an index of budget 3 over 5 versions: built %v, %d versions, truncated %v; want 3 versions, truncated",
			small.index.built, small.index.versions, small.index.truncated[row])
	}
	for v, want := range map[int]bool{1: false, 2: true, 4: true} {
		found, ok, known := small.index.latest(row, encodeTime(at.Add(time.Duration(v)*time.Second+500*time.Millisecond)), 1<<62, hidden{})
		if known != want || known && (!ok || found.seq != w.index.byRow[row][v].seq) {
			t.Errorf("version %d from the trimmed index: %+v, %v, known %v; want known %v", v, found, ok, known, want)
		}
	}

	if _, err := Open(ctx, filepath.Join(t.TempDir(), "j.db"), WithVersionIndex(-1)); !errors.Is(err, ErrInvalidArgument) ||
		!strings.Contains(err.Error(), "negative version index budget -1") {
		t.Errorf("Open with WithVersionIndex(-1): %v, want an invalid-argument error naming the budget", err)
	}
}
