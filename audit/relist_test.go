package audit

import (
	"context"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/storagetest"
)

const oldUID = "5f0c3a8e-0b6e-4b7e-9a43-6f1f2a0c0002"

// onOld moves a write event of writeEvent to the configmap shop/old.
func onOld(e Event) Event {
	e.RequestURI = "/api/v1/namespaces/shop/configmaps/old"
	e.ObjectRef.Name = "old"
	return e
}

func oldDeleteStatus() map[string]any {
	st := deleteStatus(oldUID)
	st["details"].(map[string]any)["name"] = "old"
	return st
}

func oldBody(rv string) []byte {
	return storagetest.ConfigMap("shop", "old", oldUID, rv, map[string]string{"rv": rv})
}

// relistJournal is what a collector records while the writes of
// relistWrites happen: settings created and updated, old created, all
// seen by the watch; then the watch breaks, settings is updated and old
// deleted unseen, and a 410 leads to a relist that shows settings at its
// new version and infers old's deletion.
type relistJournal struct {
	added, modified, oldAdded event.Record
	relist                    []event.Record // the relist's begin, item, end
	oldGone                   event.Record
}

func newRelistJournal() relistJournal {
	var j relistJournal
	j.added = cmEvent(event.Added, "1001", at(0, 120))
	j.oldAdded = storagetest.Event(cmStream, event.Added, storagetest.Ref(cmStream, "ConfigMap", "shop", "old", oldUID, "1002"), oldBody("1002"), at(1, 20))
	j.modified = cmEvent(event.Modified, "1003", at(2, 15))
	item := storagetest.Item{Ref: storagetest.Ref(cmStream, "ConfigMap", "shop", "settings", cmUID, "1004"), Object: cmBody("1004")}
	j.relist = storagetest.Baseline(cmStream, "relist-1", at(5, 0), "1010", []storagetest.Item{item})
	j.oldGone = storagetest.InferredDelete(cmStream, j.oldAdded, at(2, 15), at(5, 0), "relist-1")
	return j
}

func (j relistJournal) records() []event.Record {
	recs := storagetest.Baseline(cmStream, "initial", at(-30, 0), "900", nil)
	recs = append(recs, j.added, j.oldAdded, j.modified, storagetest.Gap(cmStream, at(2, 15), at(4, 900), "410 Gone", "1003"))
	return append(append(recs, j.relist...), j.oldGone)
}

// relistWrites are the audited writes behind relistJournal.
func relistWrites() []Event {
	return []Event{
		writeEvent("create-settings", "alice", "create", at(0, 100), cmBody("1001")),
		onOld(writeEvent("create-old", "erin", "create", at(1, 0), oldBody("1002"))),
		writeEvent("update-settings", "bob", "update", at(2, 0), cmBody("1003")),
		writeEvent("unseen-update", "carol", "update", at(3, 500), cmBody("1004")),
		onOld(writeEvent("unseen-delete", "frank", "delete", at(4, 0), oldDeleteStatus())),
	}
}

// After a relist, writes the watch recorded are linked to their real
// events (not to the relist's items or inferred deletions repeating their
// versions); a write seen only through the relist is linked to the
// relist's item, labelled so; ingesting the same log again after another
// relist stores nothing; and History shows who made each version.
func TestCorrelationAfterRelists(t *testing.T) {
	for _, backend := range []struct {
		name string
		open func(t *testing.T) storage.Store
	}{
		{"memory", func(t *testing.T) storage.Store { return memory.New() }},
		{"sqlite", func(t *testing.T) storage.Store {
			st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"))
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
	} {
		t.Run(backend.name, func(t *testing.T) {
			ctx := context.Background()
			st := backend.open(t)
			t.Cleanup(func() { st.Close() })
			j := newRelistJournal()
			if _, err := st.Append(ctx, j.records()); err != nil {
				t.Fatal(err)
			}
			c := newCorrelator(t, st)
			sum, err := c.Ingest(ctx, Events(relistWrites()...))
			if err != nil {
				t.Fatal(err)
			}
			want := Summary{Events: 5, Exact: 3, Scored: 2, SeenThroughRelist: 2, Recorded: 5}
			if got := withoutProblems(sum); !reflect.DeepEqual(got, want) {
				t.Fatalf("first ingest: %+v\nwant          %+v", got, want)
			}

			item := j.relist[1]
			corr := correlationsOf(t, st, j.added, j.oldAdded, j.modified, item, j.oldGone)
			for _, tc := range []struct {
				name       string
				target     event.Record
				user, rule string
				confidence float64
			}{
				{"create", j.added, "alice", RuleExactResourceVersion, 1},
				{"create of an object later deleted unseen", j.oldAdded, "erin", RuleExactResourceVersion, 1},
				{"update", j.modified, "bob", RuleExactResourceVersion, 1},
				{"update during the gap", item, "carol", RuleSeenThroughRelist, ConfidenceSeenThroughRelist},
				{"delete during the gap", j.oldGone, "frank", RuleInferredDeletion, ConfidenceInferredDeletion},
			} {
				got := corr[tc.target.EventID]
				if len(got) != 1 {
					t.Fatalf("%s: %d correlations on %s %s rv %s, want 1", tc.name, len(got), tc.target.WatchType, tc.target.Resource.Name, tc.target.Resource.ResourceVersion)
				}
				if a := got[0].Audit; a.User != tc.user || a.Rule != tc.rule || a.Confidence != tc.confidence {
					t.Fatalf("%s: %s by %s at %v, want %s by %s at %v", tc.name, a.Rule, a.User, a.Confidence, tc.rule, tc.user, tc.confidence)
				}
			}

			// Another gap and relist repeat settings at 1004; ingesting
			// the same log again finds the same targets.
			again := storagetest.Baseline(cmStream, "relist-2", at(9, 0), "1020", []storagetest.Item{{Ref: item.Resource, Object: item.Object}})
			if _, err := st.Append(ctx, append([]event.Record{storagetest.Gap(cmStream, at(5, 0), at(8, 0), "410 Gone", "1010")}, again...)); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2; i++ {
				sum, err = c.Ingest(ctx, Events(relistWrites()...))
				if err != nil {
					t.Fatal(err)
				}
				want = Summary{Events: 5, Exact: 3, Scored: 2, SeenThroughRelist: 2, Duplicates: 5}
				if got := withoutProblems(sum); !reflect.DeepEqual(got, want) {
					t.Fatalf("ingest %d after another relist: %+v\nwant %+v", i+2, got, want)
				}
			}
			if n := len(correlationsOf(t, st, again[1])[again[1].EventID]); n != 0 {
				t.Fatalf("%d correlations on the second relist's item, want none", n)
			}

			// History: who made each version of settings.
			m, err := materialize.New(st)
			if err != nil {
				t.Fatal(err)
			}
			h, err := m.History(ctx, storage.ObjectIDOf(j.added))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, v := range h.Versions() {
				line := string(v.Origin) + " " + v.ResourceVersion
				for _, p := range v.Provenance {
					line += " " + p.User + "/" + p.Rule
				}
				got = append(got, line)
			}
			wantVersions := []string{
				"watch 1001 alice/" + RuleExactResourceVersion,
				"watch 1003 bob/" + RuleExactResourceVersion,
				"baseline 1004 carol/" + RuleSeenThroughRelist,
			}
			if !reflect.DeepEqual(got, wantVersions) {
				t.Fatalf("History of settings:\n got %q\nwant %q", got, wantVersions)
			}
			// The second relist found settings unchanged: a confirmation
			// of the version at 1004, not a version.
			if last := h.Entries[len(h.Entries)-1]; last.Kind != materialize.EntryConfirmed || last.EventID != again[1].EventID ||
				last.Confirmation.VersionEventID != item.EventID || last.Confirmation.ResourceVersion != "1004" {
				t.Fatalf("History of settings ends with %+v, want the second relist's confirmation of %s", last, item.EventID)
			}
			h, err = m.History(ctx, storage.ObjectIDOf(j.oldAdded))
			if err != nil {
				t.Fatal(err)
			}
			if vs := h.Versions(); len(vs) != 2 || len(vs[0].Provenance) != 1 || vs[0].Provenance[0].User != "erin" ||
				len(vs[1].Provenance) != 1 || vs[1].Provenance[0].User != "frank" || vs[1].Provenance[0].Rule != RuleInferredDeletion {
				t.Fatalf("History of old: %+v", h.Versions())
			}
		})
	}
}
