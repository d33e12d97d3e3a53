package sqlite_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/storagetest"
)

// TestAliveAtObjectsOfSeveralStreams: AliveAt of a stream answers with the
// stream's own latest record of each object, also where another stream
// that records the object has a newer one (a deletion, a modification,
// an item of its open baseline), as the memory store does.
func TestAliveAtObjectsOfSeveralStreams(t *testing.T) {
	ctx := context.Background()
	wide := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps"}
	ns := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	ev := func(s event.Stream, wt event.WatchType, name, rv string, m int) event.Record {
		ref := storagetest.Ref(s, "ConfigMap", "shop", name, "uid-"+name, rv)
		return storagetest.Event(s, wt, ref, storagetest.ConfigMap("shop", name, "uid-"+name, rv, map[string]string{"rv": rv}), at(m))
	}
	recs := []event.Record{
		ev(wide, event.Added, "a", "1", 1), ev(ns, event.Added, "a", "1", 1),
		ev(wide, event.Added, "b", "1", 1),
		ev(wide, event.Added, "c", "1", 1), ev(ns, event.Added, "c", "1", 1),
		ev(wide, event.Modified, "a", "2", 2), // ns does not see it
		ev(ns, event.Modified, "a", "3", 3),   // newer than the wide stream's
		ev(ns, event.Deleted, "c", "4", 4),    // the wide stream does not see it
		ev(wide, event.Modified, "b", "5", 5),
	}
	// An open baseline of the namespaced stream lists a again: its item is
	// the newest record of a, and hidden.
	ref := storagetest.Ref(ns, "ConfigMap", "shop", "a", "uid-a", "6")
	recs = append(recs, storagetest.BaselineBegin(ns, "bl-open", at(6), []storagetest.Item{{Ref: ref,
		Object: storagetest.ConfigMap("shop", "a", "uid-a", "6", map[string]string{"rv": "6"})}})...)

	lite, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer lite.Close()
	mem := memory.New()
	for _, s := range []storage.Store{lite, mem} {
		if _, err := s.Append(ctx, recs); err != nil {
			t.Fatal(err)
		}
	}
	rvs := func(s storage.Store, st event.Stream, m int) []string {
		t.Helper()
		alive, err := s.AliveAt(ctx, storage.AliveQuery{StreamID: st.ID(), At: at(m)})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range alive {
			if r.StreamID != st.ID() {
				t.Errorf("AliveAt of %s answers with a record of %s", st.ID(), r.StreamID)
			}
			out = append(out, r.Resource.Name+"@"+r.Resource.ResourceVersion)
		}
		return out
	}
	want := map[string][]string{
		"wide 3": {"a@2", "b@1", "c@1"},
		"ns 3":   {"a@3", "c@1"},
		"wide 7": {"a@2", "b@5", "c@1"},
		"ns 7":   {"a@3"},
	}
	for m := 0; m <= 7; m++ {
		for name, st := range map[string]event.Stream{"wide": wide, "ns": ns} {
			got, ref := rvs(lite, st, m), rvs(mem, st, m)
			if !slices.Equal(got, ref) {
				t.Errorf("AliveAt of %s at minute %d: %v, the memory store %v", name, m, got, ref)
			}
			if w, ok := want[name+" "+string(rune('0'+m))]; ok && !slices.Equal(got, w) {
				t.Errorf("AliveAt of %s at minute %d: %v, want %v", name, m, got, w)
			}
		}
	}
}
