package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
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
