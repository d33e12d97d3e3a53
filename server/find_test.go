package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/server"
	"github.com/krply/krply/server/client"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/storagetest"
)

// containsConditions compiles "contains:TEXT" into the condition "the
// body contains TEXT": a stand-in for CEL, which lives in its own module.
type containsConditions struct{}

func (containsConditions) Compile(expr string) (materialize.Predicate, error) {
	text, ok := strings.CutPrefix(expr, "contains:")
	if !ok {
		return nil, fmt.Errorf("test: %w: line 1, column 1: want contains:TEXT (hint: start with contains:)", materialize.ErrInvalidArgument)
	}
	return materialize.PredicateFunc(func(_ context.Context, object json.RawMessage) (bool, error) {
		return strings.Contains(string(object), text), nil
	}), nil
}

// TestFind: GET /api/v1/find answers what the library's Find answers,
// through the client, without Secrets (a condition would read their data).
func TestFind(t *testing.T) {
	j := newRecorded(t)
	c, base := j.serve(server.WithConditions(containsConditions{}))
	q := materialize.FindQuery{Scope: materialize.Scope{ClusterID: "c1"}}
	got, err := c.Find(ctx, q, `contains:"color":"red"`)
	if err != nil {
		t.Fatal(err)
	}
	// settings was red from 3 to 5 (rv of the changes at 3 and 5).
	if len(got.Objects) != 1 || got.Objects[0].Object.Name != "settings" || len(got.Objects[0].Intervals) != 1 ||
		!got.Objects[0].Intervals[0].From.Equal(at(3)) || !got.Objects[0].Intervals[0].To.Equal(at(5)) ||
		got.Objects[0].Intervals[0].Closed.Provenance[0].User != "alice" {
		t.Errorf("find red: %+v", got.Objects)
	}
	q.ExcludeResources = got.Query.ExcludeResources
	want, err := j.materializer().Find(ctx, q, materialize.PredicateFunc(func(_ context.Context, object json.RawMessage) (bool, error) {
		return strings.Contains(string(object), `"color":"red"`), nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "find red", got, want)

	// The Secret db has "password" in its data: not searched.
	secret, err := c.Find(ctx, materialize.FindQuery{Scope: materialize.Scope{ClusterID: "c1", Namespaces: []string{"shop"}}, First: true}, `contains:"password":"b2xk"`)
	if err != nil || len(secret.Objects) != 0 {
		t.Errorf("find in the Secrets: %+v, %v; want nothing", secret, err)
	}
	for _, s := range secret.Streams {
		if strings.Contains(s.StreamID, "secrets") {
			t.Errorf("find looked at the Secrets' stream %s", s.StreamID)
		}
	}
	wantError(t, http.MethodGet, base+"/api/v1/find?resource=secrets&expr=contains:x", "", http.StatusForbidden, server.CodeSecret, "resource")
	wantError(t, http.MethodGet, base+"/api/v1/find", "", http.StatusBadRequest, server.CodeInvalidParameter, "expr")
	wantError(t, http.MethodGet, base+"/api/v1/find?expr=object.spec", "", http.StatusBadRequest, server.CodeInvalidParameter, "expr")
	wantError(t, http.MethodGet, base+"/api/v1/find?expr=contains:x&first=maybe", "", http.StatusBadRequest, server.CodeInvalidParameter, "first")
	wantError(t, http.MethodGet, base+"/api/v1/find?expr=contains:x&labelSelector=a+in+(b", "", http.StatusBadRequest, server.CodeInvalidParameter, "")

	_, plain := j.serve()
	wantError(t, http.MethodGet, plain+"/api/v1/find?expr=contains:x", "", http.StatusNotImplemented, server.CodeNotImplemented, "expr")
}

// changeConditions adds change filters to containsConditions: "type:T"
// keeps the versions of watch type T.
type changeConditions struct{ containsConditions }

func (changeConditions) CompileChange(expr string) (materialize.ChangeFilter, error) {
	if expr == "fail" {
		return materialize.ChangeFilterFunc(func(context.Context, materialize.Change) (bool, error) {
			return false, fmt.Errorf("%w: no such key: spec", materialize.ErrEvaluation)
		}), nil
	}
	typ, ok := strings.CutPrefix(expr, "type:")
	if !ok {
		return nil, fmt.Errorf("test: %w: want type:T or fail", materialize.ErrInvalidArgument)
	}
	return materialize.ChangeFilterFunc(func(_ context.Context, c materialize.Change) (bool, error) {
		return string(c.Version.WatchType) == typ, nil
	}), nil
}

// sentFilter is a change filter the Go client sends as its expression;
// the server compiles it with its Conditions.
type sentFilter string

func (f sentFilter) MatchChange(context.Context, materialize.Change) (bool, error) {
	return false, errors.New("test: evaluated by the server, not the client")
}

func (f sentFilter) Expression() string { return string(f) }

// TestHistoryFilter: GET /api/v1/history?filter= keeps the versions the
// change filter matches, when the handler's Conditions compile them.
func TestHistoryFilter(t *testing.T) {
	j := newRecorded(t)
	c, base := j.serve(server.WithConditions(changeConditions{}))
	obj := storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: "settings"}
	h, err := c.History(ctx, obj, materialize.WithChangeFilter(sentFilter("type:MODIFIED")))
	if err != nil {
		t.Fatal(err)
	}
	// A filter that cannot say its expression cannot be sent.
	local := materialize.ChangeFilterFunc(func(context.Context, materialize.Change) (bool, error) { return true, nil })
	if _, err := c.History(ctx, obj, materialize.WithChangeFilter(local)); !errors.Is(err, client.ErrInvalidArgument) || !strings.Contains(err.Error(), "WithChangeFilter") {
		t.Errorf("History with a filter without its expression: %v, want ErrInvalidArgument naming WithChangeFilter", err)
	}
	if v := h.Versions(); len(v) != 3 || v[0].ResourceVersion != j.changes[0].Resource.ResourceVersion {
		t.Errorf("history of settings, MODIFIED only: %d versions; want its three changes", len(v))
	}
	wantError(t, http.MethodGet, base+"/api/v1/history?resource=configmaps&namespace=shop&name=settings&filter=bogus", "", http.StatusBadRequest, server.CodeInvalidParameter, "filter")
	_, plain := j.serve(server.WithConditions(containsConditions{}))
	wantError(t, http.MethodGet, plain+"/api/v1/history?resource=configmaps&namespace=shop&name=settings&filter=type:ADDED", "", http.StatusNotImplemented, server.CodeNotImplemented, "filter")
}

// TestWatchFilter: GET /api/v1/watch?filter= sends, of the records of
// objects, the versions whose change the filter matches, live and from the
// journal's start, and every record of no object; a version the filter
// cannot be evaluated on is left out with a warning event.
func TestWatchFilter(t *testing.T) {
	j := newRecorded(t)
	c, base := j.serve(server.WithConditions(changeConditions{}), server.WithPollInterval(10*time.Millisecond))
	// A relist of shop after a gap finds settings at its last version: a
	// confirmation, no change, whatever the filter.
	j.append(storagetest.Gap(cmShop, at(10), at(11), "410 Gone: too old resource version", j.settings.Resource.ResourceVersion))
	relist := storagetest.Baseline(cmShop, "b-shop-2", at(11), j.nextRV(), []storagetest.Item{
		cmItem(cmShop, "shop", "settings", j.settings.Resource.ResourceVersion, map[string]string{"color": "yellow"})})
	j.append(relist...)
	confirmation := relist[1].EventID
	shop := materialize.Scope{Namespaces: []string{"shop"}}
	past := allRecords(t, c, client.RecordQuery{Scope: shop})
	if !slices.ContainsFunc(past, func(r event.Record) bool { return r.EventID == confirmation }) {
		t.Fatalf("the relist's item %s is not in the journal", confirmation)
	}
	// want keeps the records of past a filter keeping watch type wt keeps.
	want := func(recs []event.Record, wt event.WatchType) []event.Record {
		var out []event.Record
		for _, r := range recs {
			if r.Type == event.TypeEvent && r.Resource.Name != "" && r.WatchType != wt || r.Type == event.TypeAuditCorrelation || r.EventID == confirmation {
				continue
			}
			out = append(out, r)
		}
		return out
	}
	for _, wt := range []event.WatchType{event.Modified, event.Added} {
		f, err := c.Watch(ctx, client.WatchQuery{Scope: shop, Cursor: "0", Filter: "type:" + string(wt)})
		if err != nil {
			t.Fatal(err)
		}
		w := want(past, wt)
		got := readFeed(t, f, len(w))
		sameJSON(t, "the feed filtered to "+string(wt), got, w)
		versions := 0
		for _, r := range got {
			if r.Type == event.TypeEvent {
				versions++
			}
		}
		// MODIFIED: settings 3 times and web; ADDED: the baselines' items
		// of settings and web.
		if wantVersions := map[event.WatchType]int{event.Modified: 4, event.Added: 2}[wt]; versions != wantVersions {
			t.Errorf("the feed filtered to %s sent %d versions, want %d", wt, versions, wantVersions)
		}
		if wt == event.Modified {
			// Live: shop's settings changes; other's flags and the
			// Secret do not belong to the scope.
			live := j.change("purple", at(21))
			if got := readFeed(t, f, 1); got[0].EventID != live.EventID {
				t.Errorf("the filtered feed sent %s %s live, want the change of settings %s", got[0].Type, got[0].EventID, live.EventID)
			}
			past = allRecords(t, c, client.RecordQuery{Scope: shop})
		}
		if len(f.Warnings()) != 0 {
			t.Errorf("warnings %q", f.Warnings())
		}
		f.Close()
	}

	// A filter that cannot be evaluated: the records of no object, and a
	// warning naming the count and the first version.
	f, err := c.Watch(ctx, client.WatchQuery{Scope: shop, Cursor: "0", Filter: "fail"})
	if err != nil {
		t.Fatal(err)
	}
	w := want(past, "none")
	got := readFeed(t, f, len(w))
	sameJSON(t, "the feed with a failing filter", got, w)
	if ws := f.Warnings(); len(ws) != 1 || !strings.Contains(ws[0], "could not be evaluated on 7 versions") || !strings.Contains(ws[0], "no such key: spec") {
		t.Errorf("warnings of a failing filter: %q, want one naming 7 versions", ws)
	}
	f.Close()

	wantError(t, http.MethodGet, base+"/api/v1/watch?filter=nonsense", "", http.StatusBadRequest, server.CodeInvalidParameter, "filter")
	wantError(t, http.MethodGet, base+"/api/v1/watch?includeStatus=false", "", http.StatusBadRequest, server.CodeInvalidParameter, "includeStatus")
	wantError(t, http.MethodGet, base+"/api/v1/watch?filter=fail&includeStatus=maybe", "", http.StatusBadRequest, server.CodeInvalidParameter, "includeStatus")
	if _, err := c.Watch(ctx, client.WatchQuery{Scope: shop, ExcludeStatus: true}); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("a watch query with ExcludeStatus and no filter: %v, want ErrInvalidArgument", err)
	}
	_, plain := j.serve()
	wantError(t, http.MethodGet, plain+"/api/v1/watch?filter=type:ADDED", "", http.StatusNotImplemented, server.CodeNotImplemented, "filter")
}

// findPages asks u page after page and returns the pages.
func findPages(t *testing.T, u string) []server.FoundPage {
	t.Helper()
	var pages []server.FoundPage
	for next := ""; len(pages) == 0 || next != ""; {
		var page server.FoundPage
		ask := u
		if next != "" {
			ask += "&cursor=" + next
		}
		getJSON(t, ask, &page)
		pages = append(pages, page)
		if len(pages) > 100 {
			t.Fatalf("%s: more than 100 pages", u)
		}
		next = page.Next
	}
	return pages
}

// TestFindPages: GET /api/v1/find with limit answers a page at a time,
// and the pages put together are the whole answer, in the window of the
// first page; the pages after the first are cut from the first page's
// answer while the server remembers it, so that they agree with it even
// when the journal grows meanwhile; a server that does not remember it
// finds again in the first page's window. Bad limits and cursors are
// refused.
func TestFindPages(t *testing.T) {
	j := newRecorded(t)
	_, base := j.serve(server.WithConditions(containsConditions{}))
	const expr = `contains:"uid"`
	ask := base + "/api/v1/find?cluster=c1&expr=" + url.QueryEscape(expr)

	var whole server.FoundPage
	getJSON(t, ask, &whole)
	if whole.Next != "" || len(whole.Objects) != 5 || !whole.Query.Until.IsZero() {
		t.Fatalf("the whole answer: next %q, until %s, %d objects, want 5 and no next: %+v", whole.Next, whole.Query.Until, len(whole.Objects), whole.Objects)
	}
	pages := findPages(t, ask+"&limit=2")
	if len(pages) != 3 {
		t.Fatalf("5 objects in pages of 2: %d pages", len(pages))
	}
	var objects []materialize.FoundObject
	for i, p := range pages {
		if len(p.Objects) > 2 {
			t.Errorf("page %d: %d objects", i, len(p.Objects))
		}
		// Every page is the answer's, but for its objects; the window is
		// the first page's time.
		if !p.Query.Until.Equal(now) || p.Versions != whole.Versions || p.Evaluated != whole.Evaluated {
			t.Errorf("page %d: until %s, %d versions, %d evaluated; want until %s, %d and %d", i, p.Query.Until, p.Versions, p.Evaluated, now, whole.Versions, whole.Evaluated)
		}
		sameJSON(t, fmt.Sprintf("page %d's streams", i), p.Streams, whole.Streams)
		objects = append(objects, p.Objects...)
	}
	sameJSON(t, "the pages' objects", objects, whole.Objects)

	// The journal grows after a first page: a ConfigMap of another
	// namespace, true since 1, which sorts between the first page's
	// objects and the others.
	first := findPages(t, ask+"&limit=2")[0]
	late := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "tea"}
	j.append(storagetest.Baseline(late, "b-tea", at(1), j.nextRV(), []storagetest.Item{cmItem(late, "tea", "late", j.nextRV(), map[string]string{"a": "b"})})...)
	var grown server.FoundPage
	getJSON(t, ask, &grown)
	if len(grown.Objects) != 6 {
		t.Fatalf("after the append, a new find: %d objects, want 6", len(grown.Objects))
	}
	var rest server.FoundPage
	getJSON(t, ask+"&limit=2&cursor="+first.Next, &rest)
	for _, o := range rest.Objects {
		if o.Object.Namespace == "tea" {
			t.Errorf("a page after the first has %v, which the first page's answer had not", o.Object)
		}
	}
	sameJSON(t, "the second page, remembered", rest.Objects, whole.Objects[2:4])
	// Another server (a replica) remembers nothing: it finds again, in
	// the first page's window, and the page follows the cursor.
	_, other := j.serve(server.WithConditions(containsConditions{}))
	var again server.FoundPage
	getJSON(t, other+"/api/v1/find?cluster=c1&expr="+url.QueryEscape(expr)+"&limit=2&cursor="+first.Next, &again)
	if len(again.Objects) != 2 || again.Objects[0].Object.Namespace != "tea" || !again.Query.Until.Equal(now) {
		t.Errorf("the second page from another server: until %s, %+v; want tea/late first", again.Query.Until, again.Objects)
	}

	wantError(t, http.MethodGet, ask+"&limit=0", "", http.StatusBadRequest, server.CodeInvalidParameter, "limit")
	wantError(t, http.MethodGet, ask+"&limit=x", "", http.StatusBadRequest, server.CodeInvalidParameter, "limit")
	wantError(t, http.MethodGet, ask+"&limit=2&cursor=bm90IGEgY3Vyc29y", "", http.StatusBadRequest, server.CodeInvalidCursor, "cursor")
	// A cursor of another expression, or of a snapshot.
	wantError(t, http.MethodGet, base+"/api/v1/find?cluster=c1&expr=contains:x&limit=2&cursor="+first.Next, "", http.StatusBadRequest, server.CodeInvalidCursor, "cursor")
	snap := snapshotPages(t, base+"/api/v1/snapshot?cluster=c1&limit=1")[0]
	wantError(t, http.MethodGet, ask+"&limit=2&cursor="+snap.Next, "", http.StatusBadRequest, server.CodeInvalidCursor, "cursor")
}
