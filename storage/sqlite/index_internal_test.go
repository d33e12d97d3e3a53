package sqlite

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
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
	_, at, recs := configMapVersions(5, 1)
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

// TestVersionIndexBackground: over a journal of indexBackgroundFrom
// records or more, the first LatestAt starts the index's build on a
// goroutine of its own and SQLite answers until it is built, with the
// same answers; BuildVersionIndex waits for it; a failed build's error
// goes to the next LatestAt and the one after builds again; Close stops a
// build in progress.
func TestVersionIndexBackground(t *testing.T) {
	from, hook := indexBackgroundFrom, indexBuildHook
	t.Cleanup(func() { indexBackgroundFrom, indexBuildHook = from, hook })
	indexBackgroundFrom = 10

	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	st, at, recs := configMapVersions(20, 2)
	w, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if _, err := w.Append(ctx, recs); err != nil {
		t.Fatal(err)
	}
	check := func(s *Store) {
		t.Helper()
		for v := 2; v < 20; v += 5 {
			got, err := s.LatestAt(ctx, storage.ObjectIDOf(recs[v]), at.Add(time.Duration(v)*time.Second+500*time.Millisecond))
			if err != nil || got.EventID != recs[v].EventID || string(got.Object) != string(recs[v].Object) {
				t.Errorf("LatestAt of version %d: %s (%v), want %s", v, got.EventID, err, recs[v].EventID)
			}
		}
	}
	state := func(s *Store) (built, building bool) {
		s.index.mu.RLock()
		defer s.index.mu.RUnlock()
		return s.index.built, s.index.building != nil
	}

	// A build held at its start: SQLite answers meanwhile.
	release := make(chan struct{})
	indexBuildHook = func(ctx context.Context) error {
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	r, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	check(r)
	if built, building := state(r); built || !building {
		t.Fatalf("after the first LatestAt: built %v, building %v; want a build on its own goroutine", built, building)
	}
	check(r)
	close(release)
	if err := r.BuildVersionIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if built, building := state(r); !built || building || r.index.versions != len(recs) {
		t.Fatalf("after BuildVersionIndex: built %v, building %v, %d versions; want %d built", built, building, r.index.versions, len(recs))
	}
	// Appends after the build are caught up with before an answer.
	more := storagetest.Event(st, event.Modified, storagetest.Ref(st, "ConfigMap", "shop", "cm-a", "u-cm-a", "200"),
		storagetest.ConfigMap("shop", "cm-a", "u-cm-a", "200", nil), at.Add(time.Minute))
	if _, err := w.Append(ctx, []event.Record{more}); err != nil {
		t.Fatal(err)
	}
	if got, err := r.LatestAt(ctx, storage.ObjectIDOf(more), at.Add(time.Hour)); err != nil || got.EventID != more.EventID {
		t.Errorf("LatestAt after an append by another Store: %s (%v), want %s", got.EventID, err, more.EventID)
	}
	check(r)

	// A failed build: its error goes to the next answer, and the one
	// after it starts another build.
	failed := errors.New("injected build failure")
	indexBuildHook = func(context.Context) error { return failed }
	f, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// The first answer starts the build that fails.
	if _, err := f.LatestAt(ctx, storage.ObjectIDOf(recs[0]), at.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	f.index.mu.RLock()
	done := f.index.building
	f.index.mu.RUnlock()
	if done != nil {
		<-done
	}
	if _, err := f.LatestAt(ctx, storage.ObjectIDOf(recs[0]), at.Add(time.Hour)); !errors.Is(err, failed) || !strings.Contains(err.Error(), "version index") {
		t.Errorf("LatestAt after a failed build: %v, want the build's error", err)
	}
	indexBuildHook = nil
	check(f)
	if err := f.BuildVersionIndex(ctx); err != nil {
		t.Fatal(err)
	}
	if built, _ := state(f); !built {
		t.Errorf("the build after a failed one did not build the index")
	}

	// Close stops a build in progress.
	indexBuildHook = func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }
	c, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	check(c)
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close during a build: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return during a build")
	}
	if err := c.BuildVersionIndex(ctx); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("BuildVersionIndex after Close: %v, want storage.ErrClosed", err)
	}
	off, err := Open(ctx, path, WithVersionIndex(0))
	if err != nil {
		t.Fatal(err)
	}
	defer off.Close()
	if err := off.BuildVersionIndex(ctx); err != nil {
		t.Errorf("BuildVersionIndex without an index: %v", err)
	}
}

// configMapVersions returns n versions of objects ConfigMaps cm-a, cm-b,
// … of one stream, in turn, a second apart from at, and the stream.
func configMapVersions(n, objects int) (event.Stream, time.Time, []event.Record) {
	st := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	var recs []event.Record
	for v := range n {
		name := "cm-" + string(rune('a'+v%objects))
		ref := storagetest.Ref(st, "ConfigMap", "shop", name, "u-"+name, strconv.Itoa(100+v))
		recs = append(recs, storagetest.Event(st, event.Modified, ref, storagetest.ConfigMap("shop", name, ref.UID, ref.ResourceVersion, nil), at.Add(time.Duration(v)*time.Second)))
	}
	return st, at, recs
}
