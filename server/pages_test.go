package server_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/server"
	"github.com/krply/krply/storage/storagetest"
)

// snapshotPages asks u page after page and returns the pages.
func snapshotPages(t *testing.T, u string) []server.SnapshotPage {
	t.Helper()
	var pages []server.SnapshotPage
	ask, err := url.Parse(u)
	if err != nil {
		t.Fatal(err)
	}
	for {
		var page server.SnapshotPage
		getJSON(t, ask.String(), &page)
		pages = append(pages, page)
		if page.Next == "" {
			return pages
		}
		if len(pages) > 100 {
			t.Fatalf("%s: more than 100 pages", u)
		}
		q := ask.Query()
		q.Set("cursor", page.Next)
		ask.RawQuery = q.Encode()
	}
}

// TestSnapshotAndDiffPages: the query API answers snapshots and diffs a
// page at a time — as large as WithMaxPageSize by default — and the pages,
// each at most the page size, put together (as the client does) are the
// library's answer. A relative time stays the time of the first page. A
// cursor of another query is refused.
func TestSnapshotAndDiffPages(t *testing.T) {
	j := newRecorded(t)
	clk := clocktesting.NewFakePassiveClock(at(10))
	c, base := j.serve(server.WithMaxPageSize(1), server.WithClock(clk))
	m := j.materializer()
	cluster := materialize.Scope{ClusterID: "c1"}
	noSecrets := func(o materialize.SnapshotObject) bool { return o.Ref.Resource == "secrets" }

	want, err := m.Snapshot(ctx, cluster, at(10))
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Objects) != 6 {
		t.Fatalf("the library's snapshot at 10 holds %d objects, want 6", len(want.Objects))
	}
	// Asked without limit: the whole snapshot, or, as here, more objects
	// than a page holds, an error saying to ask in pages — never a first
	// page a client written before pages would take for the whole.
	wantError(t, http.MethodGet, base+"/api/v1/snapshot?cluster=c1&at=now", "", http.StatusBadRequest, server.CodeInvalidParameter, "limit")
	var one server.SnapshotPage
	getJSON(t, base+"/api/v1/snapshot?cluster=c1&at=now&resource=namespaces", &one)
	if len(one.Objects) != 1 || one.Next != "" || !one.Complete {
		t.Fatalf("the namespaces, asked without limit: %d objects, next %q, complete %v; want the 1 of them, whole", len(one.Objects), one.Next, one.Complete)
	}
	// Each page holds one object, whatever limit asks beyond the
	// server's page (the Secret's page none, saying so).
	pages := snapshotPages(t, base+"/api/v1/snapshot?cluster=c1&at=now&limit=5")
	if len(pages) != 6 {
		t.Fatalf("%d pages of at most 1 object, want 6", len(pages))
	}
	var objects []materialize.SnapshotObject
	for i, p := range pages {
		if len(p.Objects) > 1 || !p.Complete || !p.At.Equal(at(10)) {
			t.Fatalf("page %d: %d objects, complete %v, at %v; want at most 1, complete, at 10", i, len(p.Objects), p.Complete, p.At)
		}
		objects = append(objects, p.Objects...)
	}
	want.Objects = slices.DeleteFunc(want.Objects, noSecrets)
	sameJSON(t, "the pages' objects", objects, want.Objects)

	// The client puts the pages together.
	snap, err := c.Snapshot(ctx, cluster, at(10))
	if err != nil {
		t.Fatal(err)
	}
	want.Warnings = snap.Warnings
	want.CreatedAt = snap.CreatedAt
	sameJSON(t, "the client's snapshot of pages", snap, want)
	if !strings.Contains(strings.Join(snap.Warnings, " "), "1 Secrets left out") {
		t.Errorf("warnings %q: want the Secret left out said", snap.Warnings)
	}

	// "now" is the first page's time: an object added after it does not
	// show in the later pages.
	var first server.SnapshotPage
	getJSON(t, base+"/api/v1/snapshot?cluster=c1&at=now&limit=1", &first)
	clk.SetTime(at(25))
	rv := j.nextRV()
	j.append(storagetest.Event(cmShop, event.Added, storagetest.Ref(cmShop, "ConfigMap", "shop", "zz-late", "uid-late", rv),
		storagetest.ConfigMap("shop", "zz-late", "uid-late", rv, map[string]string{"late": "yes"}), at(24)))
	rest := snapshotPages(t, base+"/api/v1/snapshot?cluster=c1&at=now&limit=1&cursor="+url.QueryEscape(first.Next))
	for _, p := range rest {
		if !p.At.Equal(at(10)) || slices.ContainsFunc(p.Objects, func(o materialize.SnapshotObject) bool { return o.Ref.Name == "zz-late" }) {
			t.Fatalf("a later page at %v holds %d objects: want the first page's time 10, without zz-late", p.At, len(p.Objects))
		}
	}
	if now := snapshotPages(t, base+"/api/v1/snapshot?cluster=c1&at=now&limit=1"); !slices.ContainsFunc(now, func(p server.SnapshotPage) bool {
		return slices.ContainsFunc(p.Objects, func(o materialize.SnapshotObject) bool { return o.Ref.Name == "zz-late" })
	}) {
		t.Error("a snapshot asked again now lacks zz-late")
	}

	// A diff's pages.
	wantDiff, err := m.Diff(ctx, cluster, at(0.5), at(10))
	if err != nil {
		t.Fatal(err)
	}
	wantDiff.Objects = slices.DeleteFunc(wantDiff.Objects, func(o materialize.ObjectDiff) bool { return o.ID.Resource == "secrets" })
	if len(wantDiff.Objects) < 3 {
		t.Fatalf("the library's diff holds %d objects: too few to page", len(wantDiff.Objects))
	}
	var page server.DiffPage
	window := "&from=" + url.QueryEscape(at(0.5).Format(time.RFC3339)) + "&to=" + url.QueryEscape(at(10).Format(time.RFC3339))
	wantError(t, http.MethodGet, base+"/api/v1/diff?cluster=c1"+window, "", http.StatusBadRequest, server.CodeInvalidParameter, "limit")
	getJSON(t, base+"/api/v1/diff?cluster=c1&limit=1"+window, &page)
	if len(page.Objects) != 1 || page.Next == "" || !page.HasGaps {
		t.Fatalf("first page of the diff: %d objects, next %q, hasGaps %v; want 1, more, the gap", len(page.Objects), page.Next, page.HasGaps)
	}
	d, err := c.Diff(ctx, cluster, at(0.5), at(10))
	if err != nil {
		t.Fatal(err)
	}
	wantDiff.Warnings = d.Warnings
	sameJSON(t, "the client's diff of pages", d, wantDiff)

	// Limits and cursors.
	wantError(t, http.MethodGet, base+"/api/v1/snapshot?cluster=c1&limit=many", "", http.StatusBadRequest, server.CodeInvalidParameter, "limit")
	wantError(t, http.MethodGet, base+"/api/v1/diff?cluster=c1&from=1h&limit=0", "", http.StatusBadRequest, server.CodeInvalidParameter, "limit")
	wantError(t, http.MethodGet, base+"/api/v1/snapshot?cluster=c1&at=now&limit=1&cursor="+url.QueryEscape(first.Next)+"&namespace=shop", "", http.StatusBadRequest, server.CodeInvalidCursor, "cursor")
	var records server.RecordList
	getJSON(t, base+"/api/v1/records?cluster=c1", &records)
	wantError(t, http.MethodGet, base+"/api/v1/records?cluster=c1&cursor="+url.QueryEscape(first.Next), "", http.StatusBadRequest, server.CodeInvalidCursor, "cursor")
	forged := base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"s":3,"p":%d}`, 0))
	wantError(t, http.MethodGet, base+"/api/v1/snapshot?cluster=c1&cursor="+forged, "", http.StatusBadRequest, server.CodeInvalidCursor, "cursor")
}

// TestSavedSnapshotPages: a saved snapshot is served a page at a time, and
// the client reads it whole.
func TestSavedSnapshotPages(t *testing.T) {
	j := newRecorded(t)
	writable := &recorded{t: t, ro: j.w}
	c, base := writable.serve(server.WithMaxPageSize(2), server.WithWrites())
	saved, err := c.SaveSnapshot(ctx, materialize.Scope{ClusterID: "c1"}, at(10), "before")
	if err != nil {
		t.Fatal(err)
	}
	if len(saved.Objects) != 5 {
		t.Fatalf("saved %d objects (Secrets left out), want 5", len(saved.Objects))
	}
	wantError(t, http.MethodGet, base+"/api/v1/snapshots/"+saved.ID, "", http.StatusBadRequest, server.CodeInvalidParameter, "limit")
	pages := snapshotPages(t, base+"/api/v1/snapshots/"+saved.ID+"?limit=2")
	if len(pages) != 3 {
		t.Fatalf("%d pages of 2 of the saved snapshot's 6 objects, want 3", len(pages))
	}
	got, err := c.GetSnapshot(ctx, saved.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "the saved snapshot read in pages", got, saved)
	if got.ID != saved.ID || got.Name != "before" {
		t.Errorf("saved snapshot %q %q, want %q before", got.ID, got.Name, saved.ID)
	}

	// Saving answers the first page, and its next continues with GET
	// snapshots/{id}; without limit, a snapshot larger than a page is
	// refused before it is saved (a client written before pages would
	// take a first page for the whole).
	body := `{"scope":{"clusterID":"c1"},"at":"` + at(10).Format(time.RFC3339Nano) + `"}`
	wantError(t, http.MethodPost, base+"/api/v1/snapshots", body, http.StatusBadRequest, server.CodeInvalidParameter, "limit")
	wantError(t, http.MethodPost, base+"/api/v1/snapshots?cursor="+pages[0].Next, body, http.StatusBadRequest, server.CodeInvalidCursor, "cursor")
	if list, err := c.ListSnapshots(ctx, "c1"); err != nil || len(list) != 1 {
		t.Fatalf("after the refused saves: %d snapshots, %v; want the first alone", len(list), err)
	}
	status, raw, _ := request(t, http.MethodPost, base+"/api/v1/snapshots?limit=2", body)
	var first server.SnapshotPage
	if err := json.Unmarshal(raw, &first); err != nil || status != http.StatusCreated || first.ID == "" || first.Next == "" || len(first.Objects) == 0 || len(first.Objects) > 2 {
		t.Fatalf("save with limit=2: %d %s; want 201 and a first page of at most 2 objects with next", status, raw)
	}
	rest := snapshotPages(t, base+"/api/v1/snapshots/"+first.ID+"?limit=2&cursor="+first.Next)
	objects := slices.Clone(first.Objects)
	for _, p := range rest {
		objects = append(objects, p.Objects...)
	}
	second, err := c.GetSnapshot(ctx, first.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "the pages of the save's answer", objects, second.Objects)
	sameJSON(t, "the snapshot saved again", second.Objects, saved.Objects)
}

// Pages asked at once share the server's remembered state without
// changing it (under the race detector in make test): each client's
// snapshot, Secrets left out with a warning on a page, is the whole.
func TestPagesConcurrently(t *testing.T) {
	j := newRecorded(t)
	c, _ := j.serve(server.WithMaxPageSize(1))
	want, err := c.Snapshot(ctx, materialize.Scope{ClusterID: "c1"}, at(10))
	if err != nil {
		t.Fatal(err)
	}
	want.CreatedAt = time.Time{}
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := c.Snapshot(ctx, materialize.Scope{ClusterID: "c1"}, at(10))
			if err != nil {
				t.Error(err)
				return
			}
			got.CreatedAt = time.Time{}
			sameJSON(t, fmt.Sprintf("client %d's snapshot", i), got, want)
		}()
	}
	wg.Wait()
}
