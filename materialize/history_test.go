package materialize_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage/sqlite"
)

// describe renders history entries compactly for comparison.
func describe(h *materialize.History) []string {
	var out []string
	for _, e := range h.Entries {
		switch e.Kind {
		case materialize.EntryVersion:
			v := e.Version
			s := fmt.Sprintf("%s %s/%s", v.WatchType, v.Origin, v.Ref.Name)
			for _, c := range v.Changes {
				s += fmt.Sprintf(" %s:%v→%v", c.Path, c.Before, c.After)
			}
			if v.Recreated {
				s += " recreated"
			}
			for _, p := range v.Provenance {
				s += fmt.Sprintf(" by %s(%s,%.1f)", p.User, p.Verb, p.Confidence)
			}
			out = append(out, s)
		case materialize.EntryGap:
			out = append(out, fmt.Sprintf("gap from %s", e.Gap.From.Sub(t0)))
		default:
			out = append(out, string(e.Kind))
		}
	}
	return out
}

func TestHistory(t *testing.T) {
	j := newOutageJournal(t)
	// Provenance for the modification of a at minute 2.
	h0, err := j.materializer().History(context.Background(), idOf(j.cms, "a", "shop"))
	if err != nil {
		t.Fatal(err)
	}
	mod := h0.Versions()[1]
	target, err := j.store.EventByResourceVersion(context.Background(), idOf(j.cms, "a", "shop"), "ua", mod.ResourceVersion)
	if err != nil {
		t.Fatal(err)
	}
	j.correlate(target, "bob", "patch", 0.5)
	j.correlate(target, "alice", "update", 1)

	m := j.materializer()
	tests := []struct {
		object string
		opts   []materialize.HistoryOption
		want   []string
	}{
		{object: "a", want: []string{
			"ADDED baseline/a",
			"MODIFIED watch/a data.v:1→2 by alice(update,1.0) by bob(patch,0.5)",
			"gap from 5m0s",
			"ADDED baseline/a",
		}},
		{object: "c", want: []string{
			"ADDED watch/c",
			"MODIFIED watch/c data.v:1→2",
			"gap from 5m0s",
			"DELETED inferred/c",
		}},
		{object: "c", opts: []materialize.HistoryOption{materialize.Since(at(5))}, want: []string{
			"MODIFIED watch/c data.v:1→2",
			"gap from 5m0s",
			"DELETED inferred/c",
		}},
		{object: "c", opts: []materialize.HistoryOption{materialize.Until(at(4))}, want: []string{
			"ADDED watch/c",
		}},
		{object: "b", opts: []materialize.HistoryOption{materialize.Limit(1)}, want: []string{
			"ADDED baseline/b",
		}},
		{object: "c", opts: []materialize.HistoryOption{materialize.Limit(2)}, want: []string{
			"ADDED watch/c",
			"MODIFIED watch/c data.v:1→2",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.object, func(t *testing.T) {
			h, err := m.History(context.Background(), idOf(j.cms, tc.object, "shop"), tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(h); !slices.Equal(got, tc.want) {
				t.Fatalf("history\n got %q\nwant %q", got, tc.want)
			}
		})
	}
	h, err := m.History(context.Background(), idOf(j.cms, "c", "shop"))
	if err != nil {
		t.Fatal(err)
	}
	del := h.Versions()[2]
	if del.Inferred == nil || del.BaselineID != "b2" || !del.Inferred.From.Equal(at(5)) || del.Object == nil {
		t.Fatalf("inferred deletion %+v", del)
	}
	if p := h0.Versions()[1]; p.ResourceVersion == "" || !p.ObservedAt.Equal(at(2)) {
		t.Fatalf("version %+v", p)
	}
}

func TestHistoryStatusRecreateAndAvailability(t *testing.T) {
	j := newJournal(t)
	deploys := j.stream("apps", "v1", "deployments", "shop")
	web := func(uid string, replicas, ready int) obj {
		return obj{kind: "Deployment", namespace: "shop", name: "web", uid: uid, body: map[string]any{
			"spec":   map[string]any{"replicas": replicas},
			"status": map[string]any{"readyReplicas": ready},
		}}
	}
	j.baseline(deploys, "b1", at(1), web("u1", 2, 2))
	j.watch(deploys, event.Modified, web("u1", 2, 1), at(2))
	j.coverage(deploys, false, at(3))
	j.coverage(deploys, true, at(4))
	j.baseline(deploys, "b2", at(4), web("u1", 2, 1))
	j.watch(deploys, event.Deleted, web("u1", 2, 1), at(5))
	j.watch(deploys, event.Added, web("u2", 5, 0), at(6))
	j.watch(deploys, event.Modified, web("u2", 6, 0), at(7))
	m := j.materializer()
	id := idOf(deploys, "web", "shop")

	h, err := m.History(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"ADDED baseline/web",
		"MODIFIED watch/web status.readyReplicas:2→1",
		"unavailable",
		"available",
		"ADDED baseline/web",
		"DELETED watch/web",
		"ADDED watch/web",
		"MODIFIED watch/web spec.replicas:5→6",
	}
	if got := describe(h); !slices.Equal(got, want) {
		t.Fatalf("history\n got %q\nwant %q", got, want)
	}
	h, err = m.History(context.Background(), id, materialize.IncludeStatus(false))
	if err != nil {
		t.Fatal(err)
	}
	if got := describe(h)[1]; got != "MODIFIED watch/web" {
		t.Fatalf("without status: %q", got)
	}
	h, err = m.History(context.Background(), id, materialize.FromStream("elsewhere"))
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Entries) != 0 || len(h.Warnings) != 1 || !strings.Contains(h.Warnings[0], "no version") {
		t.Fatalf("other stream: %q %q", describe(h), h.Warnings)
	}
}

// The same watch event recorded by a namespaced and an all-namespaces
// stream appears once.
func TestHistoryAcrossStreams(t *testing.T) {
	j := newJournal(t)
	shop := j.stream("", "v1", "configmaps", "shop")
	all := j.stream("", "v1", "configmaps", "")
	a := cm("shop", "a", "ua", map[string]any{"v": "1"})
	j.baseline(shop, "s1", at(1), a)
	a.body["data"] = map[string]any{"v": "2"}
	rec := j.watch(shop, event.Modified, a, at(2))
	dup := rec
	dup.StreamID = all.ID()
	dup.EventID = event.EventID(all.ID(), event.TypeEvent, rec.Resource, rec.WatchType)
	j.append(dup)
	h, err := j.materializer().History(context.Background(), idOf(shop, "a", "shop"))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describe(h), []string{"ADDED baseline/a", "MODIFIED watch/a data.v:1→2"}; !slices.Equal(got, want) {
		t.Fatalf("history %q, want %q", got, want)
	}
}

// TestHistoryPagesAfter: a long history read in pages, each continuing
// After the Next of the one before, while versions keep being appended
// (some observed at the same instant as the last version read, some with
// a clock that went back), holds every version and every loss exactly
// once, with the same changes as the history read at once; each page's
// first version is compared with the previous page's last.
// TestHistoryRelistConfirms: relist items that find an object at the
// resourceVersion of its version before are confirmations of that version,
// not versions, whether the history is read whole, by pages or from a
// time; an item at another resourceVersion stays a version.
func TestHistoryRelistConfirms(t *testing.T) {
	j := newJournal(t)
	cms := j.stream("", "v1", "configmaps", "shop")
	a := cm("shop", "a", "ua", map[string]any{"v": "1"})
	j.baseline(cms, "b1", at(1), a)
	a.body["data"] = map[string]any{"v": "2"}
	modified := j.watch(cms, event.Modified, a, at(2))
	// relist lists a at the resourceVersion of the watch event.
	relist := func(id string, when time.Time, rv string) event.Record {
		recs := j.baselineRecords(cms, id, when, true, a)
		item := &recs[1]
		item.Resource.ResourceVersion = rv
		item.Object = raw(cms, a, rv)
		item.ObjectHash = event.ObjectHash(item.Object)
		item.EventID = event.EventID(cms.ID(), event.TypeEvent, item.Resource, event.Added, id)
		j.append(recs...)
		return *item
	}
	j.gap(cms, at(3), at(4))
	first := relist("b2", at(5), modified.Resource.ResourceVersion)
	j.gap(cms, at(6), at(6.5))
	second := relist("b3", at(7), modified.Resource.ResourceVersion)
	a.body["data"] = map[string]any{"v": "3"}
	j.gap(cms, at(8), at(8.5))
	changed := relist("b4", at(9), "200")
	m := j.materializer()
	id := idOf(cms, "a", "shop")

	confirmation := func(e materialize.Entry, item event.Record) string {
		if e.Kind != materialize.EntryConfirmed || e.Version != nil || e.Confirmation == nil {
			return fmt.Sprintf("%s entry %+v", e.Kind, e)
		}
		c := e.Confirmation
		if e.EventID != item.EventID || c.ResourceVersion != modified.Resource.ResourceVersion || c.VersionEventID != modified.EventID || c.BaselineID != item.BaselineID {
			return fmt.Sprintf("confirmation %s %+v, want %s of %s (rv %s) by %s", e.EventID, c, item.EventID, modified.EventID, modified.Resource.ResourceVersion, item.BaselineID)
		}
		return ""
	}
	h, err := m.History(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describe(h), []string{"ADDED baseline/a", "MODIFIED watch/a data.v:1→2", "gap from 3m0s", "confirmed",
		"gap from 6m0s", "confirmed", "gap from 8m0s", "ADDED baseline/a data.v:2→3"}; !slices.Equal(got, want) {
		t.Fatalf("history\n got %q\nwant %q", got, want)
	}
	for i, item := range map[int]event.Record{3: first, 5: second} {
		if problem := confirmation(h.Entries[i], item); problem != "" {
			t.Errorf("entry %d: %s", i, problem)
		}
	}
	if vs := h.Versions(); len(vs) != 3 || vs[2].ResourceVersion != changed.Resource.ResourceVersion {
		t.Errorf("versions %q, want the baseline, the watch event and the changed relist item", describe(h))
	}

	// A change filter sees the versions only: a confirmation is no change,
	// and it stays, as gaps do, whatever the filter keeps.
	var filtered []string
	for _, keep := range []bool{true, false} {
		fh, err := m.History(context.Background(), id, materialize.WithChangeFilter(materialize.ChangeFilterFunc(
			func(_ context.Context, c materialize.Change) (bool, error) {
				if c.Version == nil {
					return false, fmt.Errorf("a change without its version")
				}
				return keep, nil
			})))
		if err != nil {
			t.Fatalf("history filtered (keep %v): %v", keep, err)
		}
		filtered = append(filtered, describe(fh)...)
	}
	if want := []string{"ADDED baseline/a", "MODIFIED watch/a data.v:1→2", "gap from 3m0s", "confirmed",
		"gap from 6m0s", "confirmed", "gap from 8m0s", "ADDED baseline/a data.v:2→3",
		"gap from 3m0s", "confirmed", "gap from 6m0s", "confirmed", "gap from 8m0s"}; !slices.Equal(filtered, want) {
		t.Errorf("history filtered to keep all, then none\n got %q\nwant %q", filtered, want)
	}

	// A page that starts at a confirmation, and a history from a time
	// after the version it confirms.
	page, err := m.History(context.Background(), id, materialize.After(modified.EventID), materialize.Limit(1))
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entries) == 0 {
		t.Fatalf("the page after the watch event is empty")
	}
	if problem := confirmation(page.Entries[len(page.Entries)-1], first); problem != "" {
		t.Errorf("page after the watch event: %s (%q)", problem, describe(page))
	}
	since, err := m.History(context.Background(), id, materialize.Since(at(6)))
	if err != nil {
		t.Fatal(err)
	}
	if got := describe(since); len(got) < 2 || got[1] != "confirmed" {
		t.Fatalf("history since 6m: %q, want the gap and then the second relist's confirmation", got)
	} else if problem := confirmation(since.Entries[1], second); problem != "" {
		t.Errorf("history since 6m: %s", problem)
	}

	// The query answer's JSON says the same.
	raw, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"kind":"confirmed","streamID":"` + cms.ID() + `","eventID":"` + first.EventID + `","observedAt":"` + at(5).UTC().Format(time.RFC3339Nano) +
		`","confirmation":{"resourceVersion":"` + modified.Resource.ResourceVersion + `","versionEventID":"` + modified.EventID + `","baselineID":"b2"}}`; !strings.Contains(string(raw), want) {
		t.Errorf("history JSON lacks\n%s\nin\n%s", want, raw)
	}
}

func TestHistoryPagesAfter(t *testing.T) {
	for _, store := range []string{"memory", "sqlite"} {
		t.Run(store, func(t *testing.T) {
			j := newJournal(t)
			if store == "sqlite" {
				s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "j.db"))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				j = newJournalIn(t, s)
			}
			cms := j.stream("", "v1", "configmaps", "shop")
			j.baseline(cms, "b1", at(0), cm("shop", "a", "ua", map[string]any{"v": "0"}))
			n := 0
			write := func(when time.Time) {
				n++
				j.watch(cms, event.Modified, cm("shop", "a", "ua", map[string]any{"v": strconv.Itoa(n)}), when)
			}
			for i := range 12 {
				write(at(1 + float64(i/3))) // three versions an instant
			}
			j.gap(cms, at(4), at(4.5))
			m := j.materializer()
			id := idOf(cms, "a", "shop")
			var paged []materialize.Entry
			next, pages := "", 0
			for ; pages == 0 || next != ""; pages++ {
				opts := []materialize.HistoryOption{materialize.Limit(4)}
				if next != "" {
					opts = append(opts, materialize.After(next))
				}
				h, err := m.History(context.Background(), id, opts...)
				if err != nil {
					t.Fatalf("page %d: %v", pages, err)
				}
				paged = append(paged, h.Entries...)
				next = h.Next
				if pages < 3 {
					last := h.Versions()[len(h.Versions())-1].ObservedAt
					write(last)                   // at the instant of the last version read
					write(last.Add(-time.Second)) // a clock gone back
				}
				if pages > 20 {
					t.Fatal("paging does not end")
				}
			}
			whole, err := m.History(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if len(whole.Versions()) != n+1 {
				t.Fatalf("the whole history has %d versions, want %d", len(whole.Versions()), n+1)
			}
			got, want := describe(&materialize.History{Entries: paged}), describe(whole)
			if !slices.Equal(got, want) {
				t.Fatalf("pages (%d) hold\n%s\nthe whole history\n%s", pages, strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			seen := map[string]bool{}
			for _, e := range paged {
				if seen[e.EventID] {
					t.Fatalf("entry %s twice", e.EventID)
				}
				seen[e.EventID] = true
			}
		})
	}
}

// TestHistoryAfterRefused: After names a record of the object the journal
// holds, or History says why not.
func TestHistoryAfterRefused(t *testing.T) {
	j := newJournal(t)
	cms := j.stream("", "v1", "configmaps", "shop")
	j.baseline(cms, "b1", at(0), cm("shop", "a", "ua", map[string]any{"v": "0"}), cm("shop", "b", "ub", map[string]any{"v": "0"}))
	other := j.watch(cms, event.Modified, cm("shop", "b", "ub", map[string]any{"v": "1"}), at(1))
	m := j.materializer()
	for _, after := range []string{"no-such-record", other.EventID} {
		_, err := m.History(context.Background(), idOf(cms, "a", "shop"), materialize.After(after))
		if !errors.Is(err, materialize.ErrInvalidArgument) {
			t.Errorf("After(%s): %v, want ErrInvalidArgument", after, err)
		}
	}
}
