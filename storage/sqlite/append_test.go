package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/sqlite"
)

// TestAppendFindsObjectsInLargeBatchesAndAfterReopen covers how Append
// resolves objects, event IDs and bodies in batches: more keys than one
// lookup takes (512), a padded rest, objects stored before a reopen (no
// cache), new ones in the same batch, and one object twice in a batch.
func TestAppendFindsObjectsInLargeBatchesAndAfterReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	w := newWorkload(t)
	k := w.kinds[2]
	at := benchStart
	var first []event.Record
	for obj := range 600 {
		first = append(first, w.baselineItem(k, obj, "b1", at))
	}
	res, err := s.Append(ctx, first)
	if err != nil || res.Inserted != 600 {
		t.Fatalf("first Append = %+v, %v; want 600 inserted", res, err)
	}
	again, err := s.Append(ctx, first)
	if err != nil || again.Duplicates != 600 || !slices.Equal(again.Seqs, res.Seqs) {
		t.Fatalf("Append again = %d duplicates, same seqs %v, %v; want 600 duplicates with the first seqs", again.Duplicates, slices.Equal(again.Seqs, res.Seqs), err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// Objects 595-599 are stored, 600-604 and 700 are new; 700 comes twice.
	var second []event.Record
	for obj := 595; obj < 605; obj++ {
		second = append(second, w.record(k, obj, 1, event.Modified, "", at.Add(time.Second)))
	}
	second = append(second, w.record(k, 700, 0, event.Added, "", at.Add(time.Second)),
		w.record(k, 700, 1, event.Modified, "", at.Add(2*time.Second)))
	if res, err := s.Append(ctx, second); err != nil || res.Inserted != len(second) {
		t.Fatalf("second Append = %+v, %v; want %d inserted", res, err, len(second))
	}

	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var objects, streamObjects int
	if err := db.QueryRow(`SELECT (SELECT count(*) FROM objects), (SELECT count(*) FROM stream_objects)`).Scan(&objects, &streamObjects); err != nil {
		t.Fatal(err)
	}
	if objects != 606 || streamObjects != 606 {
		t.Fatalf("%d objects rows, %d stream_objects rows; want 606 each", objects, streamObjects)
	}
	for _, tc := range []struct {
		obj  int
		want []event.Record
	}{
		{0, first[:1]},
		{597, []event.Record{first[597], second[2]}},
		{602, second[7:8]},
		{700, second[10:]},
	} {
		want := tc.want[0]
		id := storage.ObjectIDOf(want)
		hist, err := s.ObjectHistory(ctx, id, storage.HistoryQuery{})
		if err != nil {
			t.Fatalf("ObjectHistory(%s): %v", id.Name, err)
		}
		if len(hist) != len(tc.want) {
			t.Fatalf("ObjectHistory(%s) has %d versions, want %d", id.Name, len(hist), len(tc.want))
		}
		for i := range hist {
			if hist[i].EventID != tc.want[i].EventID || !bytes.Equal(hist[i].Object, tc.want[i].Object) {
				t.Fatalf("ObjectHistory(%s)[%d] = %s with %d body bytes, want %s byte for byte", id.Name, i, hist[i].EventID, len(hist[i].Object), tc.want[i].EventID)
			}
		}
	}
	alive, err := s.AliveAt(ctx, storage.AliveQuery{StreamID: k.stream.ID(), At: at.Add(time.Hour), WithoutBodies: true})
	if err != nil || len(alive) != 606 {
		t.Fatalf("AliveAt = %d objects, %v; want 606", len(alive), err)
	}
}

// TestAppendStoresARepeatedBodyOnce covers how Append keeps a body once
// without an index of bodies by hash (schema version 5): a relist that
// records unchanged objects again, in the same process and after a reopen
// (no cache: the object's latest body is read), adds no body, and a batch
// that holds one body twice stores it once; a changed object adds one.
func TestAppendStoresARepeatedBodyOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	w := newWorkload(t)
	k := w.kinds[2]
	var first []event.Record
	for obj := range 20 {
		first = append(first, w.baselineItem(k, obj, "b1", benchStart))
	}
	// relist records the objects of the first relist again, unchanged,
	// as the items of another baseline.
	relist := func(s *sqlite.Store, baselineID string, at time.Time) {
		t.Helper()
		items := slices.Clone(first)
		for i := range items {
			if baselineID != "b1" {
				items[i].BaselineID, items[i].ObservedAt = baselineID, at
				items[i].EventID = event.EventID(items[i].StreamID, event.TypeEvent, items[i].Resource, event.Added, baselineID)
			}
		}
		if res, err := s.Append(ctx, items); err != nil || res.Inserted != len(items) {
			t.Fatalf("relist %s = %+v, %v; want %d inserted", baselineID, res, err, len(items))
		}
	}
	bodies := func(s *sqlite.Store) int64 {
		t.Helper()
		st, err := s.Stats(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Bodies
	}
	relist(s, "b1", benchStart)
	if got := bodies(s); got != 20 {
		t.Fatalf("after the first relist: %d bodies, want 20", got)
	}
	relist(s, "b2", benchStart.Add(time.Minute))
	if got := bodies(s); got != 20 {
		t.Fatalf("after a second relist of unchanged objects: %d bodies, want 20", got)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if s, err = sqlite.Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	relist(s, "b3", benchStart.Add(2*time.Minute))
	if got := bodies(s); got != 20 {
		t.Fatalf("after a relist of unchanged objects after a reopen: %d bodies, want 20", got)
	}
	// Object 0 changes; object 30 is new and its body comes twice in one
	// batch (an ADDED and a MODIFIED that changed nothing but the type).
	changed := w.record(k, 0, 1, event.Modified, "", benchStart.Add(3*time.Minute))
	added := w.record(k, 30, 0, event.Added, "", benchStart.Add(3*time.Minute))
	same := added
	same.WatchType, same.EventID = event.Modified, added.EventID+"-again"
	if res, err := s.Append(ctx, []event.Record{changed, added, same}); err != nil || res.Inserted != 3 {
		t.Fatalf("Append = %+v, %v; want 3 inserted", res, err)
	}
	if got := bodies(s); got != 22 {
		t.Fatalf("after a change and a new object twice: %d bodies, want 22", got)
	}
	hist, err := s.ObjectHistory(ctx, storage.ObjectIDOf(added), storage.HistoryQuery{})
	if err != nil || len(hist) != 2 || !bytes.Equal(hist[0].Object, added.Object) || !bytes.Equal(hist[1].Object, added.Object) {
		t.Fatalf("ObjectHistory of the new object = %d versions, %v; want 2 with its body", len(hist), err)
	}
}

// TestAppendFindsObjectsAnotherWriterAddedToANewScope covers the objects
// Append does not look up: those of a scope (cluster, namespace, group,
// resource) the writer created and knows whole. When another writer of
// the same journal adds objects, maybe to that scope, the first must look
// them up again rather than take them for new (which would fail on the
// objects' unique index, or worse, split an object's history).
func TestAppendFindsObjectsAnotherWriterAddedToANewScope(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	a, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	w := newWorkload(t)
	k := w.kinds[2]
	appendTo := func(s *sqlite.Store, recs ...event.Record) {
		t.Helper()
		if res, err := s.Append(ctx, recs); err != nil || res.Inserted != len(recs) {
			t.Fatalf("Append = %+v, %v; want %d inserted", res, err, len(recs))
		}
	}
	// a creates the scope with objects 0 and 1 and appends to it again,
	// knowing it whole.
	appendTo(a, w.baselineItem(k, 0, "b1", benchStart), w.baselineItem(k, 1, "b1", benchStart))
	appendTo(a, w.record(k, 0, 1, event.Modified, "", benchStart.Add(time.Second)), w.record(k, 2, 0, event.Added, "", benchStart.Add(time.Second)))
	// b adds object 3 to that scope; then a records a version of it and
	// of object 0.
	appendTo(b, w.record(k, 3, 0, event.Added, "", benchStart.Add(2*time.Second)))
	appendTo(a, w.record(k, 3, 1, event.Modified, "", benchStart.Add(3*time.Second)), w.record(k, 0, 2, event.Modified, "", benchStart.Add(3*time.Second)))
	for obj, want := range map[int]int{0: 3, 1: 1, 2: 1, 3: 2} {
		id := storage.ObjectID{ClusterID: k.stream.ClusterID, Group: k.stream.Group, Resource: k.stream.Resource,
			Namespace: k.stream.Namespace, Name: fmt.Sprintf("%s-%06d", k.stream.Resource, obj)}
		hist, err := a.ObjectHistory(ctx, id, storage.HistoryQuery{})
		if err != nil || len(hist) != want {
			t.Errorf("ObjectHistory(%s) = %d versions, %v; want %d", id.Name, len(hist), err, want)
		}
	}
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var objects int
	if err := db.QueryRow(`SELECT count(*) FROM objects`).Scan(&objects); err != nil || objects != 4 {
		t.Fatalf("%d objects rows, %v; want 4", objects, err)
	}
}
