package server_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/server"
	"github.com/krply/krply/server/client"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/storagetest"
)

var ctx = context.Background()

// get asks a raw URL and decodes the answer, for the error paths the
// client does not reach.
func get(t *testing.T, method, u string, body string, header ...string) (int, server.Error, http.Header) {
	t.Helper()
	status, raw, hdr := request(t, method, u, body, header...)
	var e server.Error
	_ = json.Unmarshal(raw, &e)
	return status, e, hdr
}

// request asks a raw URL with the headers (name, value, …) and returns
// the status, the body and the headers of the answer.
func request(t *testing.T, method, u string, body string, header ...string) (int, []byte, http.Header) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, raw, resp.Header
}

// wantError asks u and checks the status, code and param of the error.
func wantError(t *testing.T, method, u, body string, status int, code, param string, header ...string) {
	t.Helper()
	got, e, _ := get(t, method, u, body, header...)
	if got != status || e.Code != code || e.Param != param || e.Message == "" || (e.Status != status) {
		t.Errorf("%s %s: %d %+v; want %d %s (param %q) with a message", method, u, got, e, status, code, param)
	}
}

func TestHealthAndReadiness(t *testing.T) {
	j := newRecorded(t)
	c, base := j.serve()
	if err := c.Healthy(ctx); err != nil {
		t.Fatalf("healthz: %v", err)
	}
	if err := c.Ready(ctx); err != nil {
		t.Fatalf("readyz without a recorder, the journal answering: %v", err)
	}
	rec := &fakeRecorder{err: errors.New("stream c1/core/v1/configmaps/shop is listing")}
	c, _ = j.serve(server.WithRecorder(rec))
	var e *server.Error
	if err := c.Ready(ctx); !errors.As(err, &e) || e.Status != http.StatusServiceUnavailable || e.Code != server.CodeNotReady || !strings.Contains(e.Message, "listing") {
		t.Fatalf("readyz while the recorder is not synced: %v; want 503 not_ready with the reason", err)
	}
	rec.err = nil
	if err := c.Ready(ctx); err != nil {
		t.Fatalf("readyz once synced: %v", err)
	}
	wantError(t, http.MethodGet, base+"/api/v1/nothing", "", http.StatusNotFound, server.CodeNotFound, "")
	_, _, hdr := get(t, http.MethodDelete, base+"/api/v1/snapshots", "")
	wantError(t, http.MethodDelete, base+"/api/v1/snapshots", "", http.StatusMethodNotAllowed, server.CodeMethodNotAllowed, "")
	if allow := hdr.Get("Allow"); !strings.Contains(allow, "GET") || !strings.Contains(allow, "POST") {
		t.Errorf("405 Allow header %q; want GET and POST", allow)
	}
}

// fakeRecorder is a Recorder whose state the test sets.
type fakeRecorder struct{ err error }

func (f *fakeRecorder) Synced() error { return f.err }

func TestClustersAndStreams(t *testing.T) {
	j := newRecorded(t)
	c, base := j.serve()
	clusters, err := c.Clusters(ctx)
	if err != nil || len(clusters) != 1 || clusters[0].ClusterID != "c1" || clusters[0].Streams != 5 || !clusters[0].FirstObservedAt.Equal(at(0)) || !clusters[0].LastObservedAt.Equal(at(20)) {
		t.Fatalf("clusters: %+v, %v", clusters, err)
	}
	// Coverage at 5 (inside other's gap) as the library computes it.
	streams, err := c.Streams(ctx, materialize.Scope{ClusterID: "c1", Resources: []schema.GroupResource{{Resource: "configmaps"}}}, at(5))
	if err != nil || len(streams) != 2 {
		t.Fatalf("streams of configmaps: %+v, %v; want other and shop", streams, err)
	}
	for _, st := range streams {
		want, err := storage.CoverageAt(ctx, j.ro, st.Status.StreamID, at(5))
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, "coverage of "+st.Status.StreamID, st.Coverage, want)
	}
	if other := streams[0]; other.Status.StreamID != cmOther.ID() || other.Coverage.Covered || len(other.Gaps) != 1 || other.Gaps[0].Gap == nil {
		t.Errorf("other's ConfigMaps at 5: %+v; want not covered, its gap listed", other)
	}
	if shop := streams[1]; !shop.Coverage.Covered || len(shop.Gaps) != 0 || shop.Collector != nil {
		t.Errorf("shop's ConfigMaps at 5: %+v; want covered, no gaps, no collector", shop)
	}
	// Pages of one stream each, in stream ID order.
	var ids []string
	q := url.Values{"limit": {"1"}}
	for {
		var page server.StreamList
		getJSON(t, base+"/api/v1/streams?"+q.Encode(), &page)
		for _, it := range page.Items {
			ids = append(ids, it.Status.StreamID)
		}
		if page.Next == "" {
			break
		}
		q.Set("cursor", page.Next)
	}
	want := []string{deploys.ID(), cmOther.ID(), cmShop.ID(), nsStream.ID(), secShop.ID()}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("streams page by page: %v; want %v", ids, want)
	}
	wantError(t, http.MethodGet, base+"/api/v1/streams?at=yesterday", "", http.StatusBadRequest, server.CodeInvalidParameter, "at")
	wantError(t, http.MethodGet, base+"/api/v1/streams?limit=0", "", http.StatusBadRequest, server.CodeInvalidParameter, "limit")
	wantError(t, http.MethodGet, base+"/api/v1/streams?limit=1001", "", http.StatusBadRequest, server.CodeInvalidParameter, "limit")
	wantError(t, http.MethodGet, base+"/api/v1/streams?cursor=nonsense", "", http.StatusBadRequest, server.CodeInvalidCursor, "cursor")
}

// getJSON asks u and decodes a 200 answer into v.
func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		raw, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, raw)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// allRecords reads every page of a records query.
func allRecords(t *testing.T, c *client.Client, q client.RecordQuery) []event.Record {
	t.Helper()
	var out []event.Record
	for {
		page, err := c.Records(ctx, q)
		if err != nil {
			t.Fatalf("records %+v: %v", q, err)
		}
		out = append(out, page.Items...)
		if page.Next == "" {
			return out
		}
		q.Cursor = page.Next
	}
}

// journalRecords reads the journal directly and keeps what keep accepts.
func journalRecords(t *testing.T, r storage.Reader, keep func(event.Record) bool) []event.Record {
	t.Helper()
	var out []event.Record
	q := storage.Query{ClusterID: "c1"}
	for {
		page, err := r.Records(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range page.Records {
			if keep(rec) {
				out = append(out, rec)
			}
		}
		if page.Next == "" {
			return out
		}
		q.Cursor = page.Next
	}
}

func seqs(recs []event.Record) []int64 {
	out := make([]int64, len(recs))
	for i, r := range recs {
		out[i] = r.IngestSeq
	}
	return out
}

func TestRecords(t *testing.T) {
	j := newRecorded(t)
	c, base := j.serve()
	notSecret := func(r event.Record) bool { return r.Resource.Resource != "secrets" && r.StreamID != secShop.ID() }

	// Every record but the Secrets', page by page, equal to the journal's.
	all := allRecords(t, c, client.RecordQuery{Limit: 3})
	want := journalRecords(t, j.ro, notSecret)
	if len(want) < 20 || !slices.Equal(seqs(all), seqs(want)) {
		t.Fatalf("records in pages of 3: %v; want %v", seqs(all), seqs(want))
	}
	sameJSON(t, "records", all, want)
	for _, r := range all {
		if r.Resource.Resource == "secrets" || r.StreamID == secShop.ID() {
			t.Fatalf("a Secret was served: %+v", r)
		}
	}

	// Newest first.
	desc := allRecords(t, c, client.RecordQuery{Limit: 4, Descending: true})
	slices.Reverse(desc)
	if !slices.Equal(seqs(desc), seqs(want)) {
		t.Errorf("records newest first, reversed: %v; want %v", seqs(desc), seqs(want))
	}

	// One namespace: its objects' records (also from the all-namespace
	// Deployments stream) and the stream records of the streams that can
	// hold it; not other's.
	shop := allRecords(t, c, client.RecordQuery{Scope: materialize.Scope{Namespaces: []string{"shop"}}, Limit: 2})
	wantShop := journalRecords(t, j.ro, func(r event.Record) bool {
		if !notSecret(r) || (r.StreamID == "" && r.Resource.Resource == "") || strings.HasSuffix(r.StreamID, "/other") {
			return false
		}
		return r.Resource.Name == "" || r.Resource.Namespace == "shop"
	})
	if !slices.Equal(seqs(shop), seqs(wantShop)) {
		t.Errorf("records of shop: %v; want %v", seqs(shop), seqs(wantShop))
	}

	// One object, events only, in a time range, without bodies.
	obj := allRecords(t, c, client.RecordQuery{Scope: materialize.Scope{Namespaces: []string{"shop"}, Resources: []schema.GroupResource{{Resource: "configmaps"}}},
		Name: "settings", Types: []event.RecordType{event.TypeEvent}, Since: at(0.5), Until: at(4), WithoutBodies: true})
	if len(obj) != 2 || obj[0].Resource.ResourceVersion == "" || len(obj[0].Object) != 0 || !obj[1].ObservedAt.Equal(at(3)) {
		t.Errorf("events of shop/settings from 0.5 to 4 without bodies: %+v; want the two at 1 and 3", obj)
	}

	// The gaps of the scope's streams that intersect the range come along.
	for _, tc := range []struct {
		ns    string
		since time.Time
		gaps  int
	}{{"other", at(5), 1}, {"other", at(7), 0}, {"other", time.Time{}, 1}, {"shop", time.Time{}, 0}} {
		page, err := c.Records(ctx, client.RecordQuery{Scope: materialize.Scope{Namespaces: []string{tc.ns}}, Since: tc.since, Limit: 1})
		if err != nil || len(page.Gaps) != tc.gaps || (tc.gaps == 1 && page.Gaps[0].Gap == nil) {
			t.Errorf("records of %s since %v: gaps %+v, %v; want %d", tc.ns, tc.since, page.Gaps, err, tc.gaps)
		}
	}

	// Secrets asked for by name are still not served.
	if secrets := allRecords(t, c, client.RecordQuery{Scope: materialize.Scope{Resources: []schema.GroupResource{{Resource: "secrets"}}}}); len(secrets) != 0 {
		t.Errorf("records of secrets: %+v; want none", secrets)
	}

	// Errors.
	page, err := c.Records(ctx, client.RecordQuery{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	wantError(t, http.MethodGet, base+"/api/v1/records?limit=2&order=desc&cursor="+page.Next, "", http.StatusBadRequest, server.CodeInvalidCursor, "cursor")
	wantError(t, http.MethodGet, base+"/api/v1/records?order=sideways", "", http.StatusBadRequest, server.CodeInvalidParameter, "order")
	wantError(t, http.MethodGet, base+"/api/v1/records?types=events", "", http.StatusBadRequest, server.CodeInvalidParameter, "types")
	wantError(t, http.MethodGet, base+"/api/v1/records?bodies=maybe", "", http.StatusBadRequest, server.CodeInvalidParameter, "bodies")
	wantError(t, http.MethodGet, base+"/api/v1/records?since=1000h", "", http.StatusBadRequest, server.CodeRangeTooLarge, "since")
	wantError(t, http.MethodGet, base+"/api/v1/records?since=1m&until=2m", "", http.StatusBadRequest, server.CodeInvalidParameter, "since")
	wantError(t, http.MethodGet, base+"/api/v1/records?cluster=c1&resource=deployments.", "", http.StatusBadRequest, server.CodeInvalidParameter, "resource")
	_, base2 := j.serve(server.WithMaxRange(time.Hour))
	wantError(t, http.MethodGet, base2+"/api/v1/records?since=2h", "", http.StatusBadRequest, server.CodeRangeTooLarge, "since")
}

func TestObjectAndHistory(t *testing.T) {
	j := newRecorded(t)
	c, base := j.serve()
	m := j.materializer()
	settings := storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: "settings"}
	for _, when := range []time.Time{at(0), at(2), at(10), at(25)} {
		got, err := c.ObjectAt(ctx, settings, when)
		if err != nil {
			t.Fatal(err)
		}
		want, err := m.ObjectAt(ctx, settings, when)
		if err != nil {
			t.Fatal(err)
		}
		sameJSON(t, "settings at "+when.Format(time.RFC3339), got, want)
	}
	if st, _ := c.ObjectAt(ctx, settings, at(2)); !st.Exists || !st.Covered || !strings.Contains(string(st.Object), `"green"`) {
		t.Errorf("settings at 2: %+v; want it green, covered", st)
	}
	// Cluster-scoped, by a relative time and resource without group.
	var ns materialize.ObjectState
	getJSON(t, base+"/api/v1/object?resource=namespaces&name=shop&at=20m+ago", &ns)
	if !ns.Exists || !ns.At.Equal(at(10)) {
		t.Errorf("namespace shop 20m before %s: %+v", now, ns)
	}
	// Deployments resolve to apps.
	var web materialize.ObjectState
	getJSON(t, base+"/api/v1/object?resource=deployments&namespace=shop&name=web", &web)
	if !web.Exists || web.ID.Group != "apps" {
		t.Errorf("deployment web: %+v", web)
	}

	hist, err := c.History(ctx, settings)
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.History(ctx, settings, materialize.Limit(server.DefaultMaxPageSize))
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "history of settings", hist, want)
	if vs := hist.Versions(); len(vs) != 4 || len(vs[3].Provenance) != 1 || vs[3].Provenance[0].User != "alice" {
		t.Errorf("history of settings: %d versions; want the baseline and three changes, the last by alice", len(vs))
	}
	cut, err := c.History(ctx, settings, materialize.Limit(2), materialize.Since(at(0.5)))
	if err != nil || len(cut.Versions()) != 2 || cut.Next == "" {
		t.Errorf("history cut at 2: %+v, %v; want 2 versions and the cursor of the rest", cut, err)
	}

	var e *server.Error
	_, err = c.ObjectAt(ctx, storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: "nothing"}, now)
	if !errors.As(err, &e) || e.Status != http.StatusNotFound || !errors.Is(err, &server.Error{Code: server.CodeNotFound}) {
		t.Errorf("an object never recorded: %v; want 404 not_found", err)
	}
	_, err = c.History(ctx, storage.ObjectID{ClusterID: "c1", Resource: "secrets", Namespace: "shop", Name: "db"})
	if !errors.As(err, &e) || e.Status != http.StatusForbidden || e.Code != server.CodeSecret {
		t.Errorf("history of a Secret: %v; want 403 secret", err)
	}
	wantError(t, http.MethodGet, base+"/api/v1/object?resource=configmaps&namespace=shop", "", http.StatusBadRequest, server.CodeInvalidParameter, "name")
	wantError(t, http.MethodGet, base+"/api/v1/object?namespace=shop&name=x", "", http.StatusBadRequest, server.CodeInvalidParameter, "resource")
	wantError(t, http.MethodGet, base+"/api/v1/object?resource=configmaps&namespace=shop&namespace=other&name=x", "", http.StatusBadRequest, server.CodeInvalidParameter, "namespace")
	wantError(t, http.MethodGet, base+"/api/v1/history?resource=configmaps&namespace=shop&name=settings&since=soon", "", http.StatusBadRequest, server.CodeInvalidParameter, "since")
	wantError(t, http.MethodGet, base+"/api/v1/history?resource=configmaps&namespace=shop&name=settings&until=later", "", http.StatusBadRequest, server.CodeInvalidParameter, "until")
	wantError(t, http.MethodGet, base+"/api/v1/object?cluster=c2&resource=configmaps&namespace=shop&name=settings", "", http.StatusNotFound, server.CodeNotFound, "")
}

func TestSnapshotAndDiff(t *testing.T) {
	j := newRecorded(t)
	c, base := j.serve()
	m := j.materializer()
	scope := materialize.Scope{ClusterID: "c1", Namespaces: []string{"shop"}}

	snap, err := c.Snapshot(ctx, scope, at(5))
	if err != nil {
		t.Fatal(err)
	}
	want, err := m.Snapshot(ctx, scope, at(5))
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Objects) != 3 {
		t.Fatalf("the library's snapshot of shop at 5 holds %d objects; want settings, web and the Secret db", len(want.Objects))
	}
	if !snap.Complete || len(snap.Objects) != 2 || !strings.Contains(strings.Join(snap.Warnings, " "), "1 Secrets left out") {
		t.Errorf("snapshot of shop at 5: complete %v, %d objects, warnings %q; want complete, without the Secret, saying so", snap.Complete, len(snap.Objects), snap.Warnings)
	}
	want.Objects = slices.DeleteFunc(want.Objects, func(o materialize.SnapshotObject) bool { return o.Ref.Resource == "secrets" })
	want.Warnings = snap.Warnings
	sameJSON(t, "snapshot of shop at 5", snap, want)

	// Inside other's gap: incomplete, as the library says.
	other, err := c.Snapshot(ctx, materialize.Scope{ClusterID: "c1", Namespaces: []string{"other"}}, at(5))
	if err != nil || other.Complete || len(other.Missing) == 0 {
		t.Errorf("snapshot of other inside its gap: %+v, %v; want incomplete, the stream missing", other, err)
	}

	d, err := c.Diff(ctx, materialize.Scope{ClusterID: "c1"}, at(0.5), at(10))
	if err != nil {
		t.Fatal(err)
	}
	wantDiff, err := m.Diff(ctx, materialize.Scope{ClusterID: "c1"}, at(0.5), at(10))
	if err != nil {
		t.Fatal(err)
	}
	wantDiff.Objects = slices.DeleteFunc(wantDiff.Objects, func(o materialize.ObjectDiff) bool { return o.ID.Resource == "secrets" })
	wantDiff.Warnings = d.Warnings
	sameJSON(t, "diff of c1 from 0.5 to 10", d, wantDiff)
	if !d.HasGaps || len(d.Gaps) != 1 || !strings.Contains(strings.Join(d.Warnings, " "), "Secrets left out") {
		t.Errorf("diff across other's gap: hasGaps %v, gaps %d, warnings %q; want the gap and the Secret left out", d.HasGaps, len(d.Gaps), d.Warnings)
	}
	withStatus, err := c.Diff(ctx, materialize.Scope{ClusterID: "c1", Namespaces: []string{"shop"}, Resources: []schema.GroupResource{{Group: "apps", Resource: "deployments"}}}, at(0.5), at(10), materialize.IncludeStatus(true))
	if err != nil || len(withStatus.Objects) != 1 {
		t.Fatalf("diff of shop's deployments with status: %+v, %v", withStatus, err)
	}
	wantError(t, http.MethodGet, base+"/api/v1/diff?to=now", "", http.StatusBadRequest, server.CodeInvalidParameter, "from")
	wantError(t, http.MethodGet, base+"/api/v1/diff?from=1000h", "", http.StatusBadRequest, server.CodeRangeTooLarge, "from")
	wantError(t, http.MethodGet, base+"/api/v1/diff?from=1h&to=whenever", "", http.StatusBadRequest, server.CodeInvalidParameter, "to")
	wantError(t, http.MethodGet, base+"/api/v1/diff?from=1h&includeStatus=perhaps", "", http.StatusBadRequest, server.CodeInvalidParameter, "includeStatus")
	wantError(t, http.MethodGet, base+"/api/v1/snapshot?at=never", "", http.StatusBadRequest, server.CodeInvalidParameter, "at")
}

// TestHistoryCursor: a history read in pages through the API, each page
// asked with the cursor of the one before while the recorder appends
// versions (some observed at the instant of the last version read, some
// with a clock gone back), holds every version exactly once, as the
// library's history read at once does. A cursor of another query or not
// made by the server is refused.
func TestHistoryCursor(t *testing.T) {
	j := newRecorded(t)
	c, base := j.serve()
	settings := storage.ObjectIDOf(j.settings)
	n := 0
	write := func(when time.Time) {
		n++
		rv := j.nextRV()
		ref := storagetest.Ref(cmShop, "ConfigMap", "shop", "settings", "uid-shop-settings", rv)
		j.append(storagetest.Event(cmShop, event.Modified, ref, storagetest.ConfigMap("shop", "settings", "uid-shop-settings", rv, map[string]string{"color": "c" + strconv.Itoa(n)}), when))
	}
	for i := range 9 {
		write(at(8 + float64(i/3))) // three versions an instant
	}
	var paged []materialize.Entry
	after := ""
	pages := 0
	for ; pages == 0 || after != ""; pages++ {
		h, err := c.History(ctx, settings, materialize.Limit(3), materialize.After(after))
		if err != nil {
			t.Fatalf("page %d: %v", pages, err)
		}
		paged = append(paged, h.Entries...)
		after = h.Next
		if vs := h.Versions(); pages < 3 && len(vs) > 0 {
			write(vs[len(vs)-1].ObservedAt)
			write(vs[len(vs)-1].ObservedAt.Add(-time.Second))
		}
		if pages > 20 {
			t.Fatal("paging does not end")
		}
	}
	whole, err := j.materializer().History(ctx, settings)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.Versions()) != 4+n {
		t.Fatalf("the whole history has %d versions, want %d", len(whole.Versions()), 4+n)
	}
	var got, want []string
	for _, e := range paged {
		got = append(got, e.EventID)
	}
	for _, e := range whole.Entries {
		want = append(want, e.EventID)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("%d pages hold the entries\n%v\nthe whole history\n%v", pages, got, want)
	}
	sameJSON(t, "the paged history's entries", paged, whole.Entries)

	first, err := c.History(ctx, settings, materialize.Limit(2))
	if err != nil {
		t.Fatal(err)
	}
	var e *server.Error
	if _, err := c.History(ctx, settings, materialize.Limit(2), materialize.After(first.Next), materialize.Since(at(1))); !errors.As(err, &e) || e.Code != server.CodeInvalidCursor || !errors.Is(err, storage.ErrInvalidArgument) {
		t.Errorf("a cursor of another query: %v; want 400 invalid_cursor", err)
	}
	wantError(t, http.MethodGet, base+"/api/v1/history?resource=configmaps&namespace=shop&name=settings&cursor=bm9wZQ", "", http.StatusBadRequest, server.CodeInvalidCursor, "cursor")
}

// recordsHook is a store that runs before, once, before its first
// Records query of records (not of a stream's timeline): what a recorder
// appends while the records route reads.
type recordsHook struct {
	storage.Store
	before func()
}

func (h *recordsHook) Records(ctx context.Context, q storage.Query) (storage.Page, error) {
	if f := h.before; f != nil && !slices.Equal(q.Types, storage.TimelineTypes) {
		h.before = nil
		f()
	}
	return h.Store.Records(ctx, q)
}

// A gap appended while the records route reads, with records from both
// sides of it, is listed beside them: the losses are read after the
// records.
func TestRecordsGapAppendedMeanwhile(t *testing.T) {
	j := newRecorded(t)
	h := &recordsHook{Store: j.ro}
	h.before = func() {
		j.append(storagetest.Gap(cmShop, at(21), at(23), "410 Gone: too old resource version", j.nextRV()))
		j.append(storagetest.Baseline(cmShop, "b-shop-2", at(23), j.nextRV(), []storagetest.Item{cmItem(cmShop, "shop", "settings", j.nextRV(), map[string]string{"color": "black"})})...)
		j.append(storagetest.Checkpoint(cmShop, j.nextRV(), true, at(25)))
	}
	srv := httptest.NewServer(server.NewHandler(h, server.WithClock(clocktesting.NewFakePassiveClock(now))))
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	page, err := c.Records(context.Background(), client.RecordQuery{Scope: materialize.Scope{Namespaces: []string{"shop"}, Resources: []schema.GroupResource{{Resource: "configmaps"}}}, Since: at(19), Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if h.before != nil {
		t.Fatal("the route read no records")
	}
	after := 0
	for _, r := range page.Items {
		if r.ObservedAt.After(at(21)) {
			after++
		}
	}
	if after == 0 {
		t.Fatalf("records %v: want those appended after the gap too", seqs(page.Items))
	}
	if len(page.Gaps) != 1 || page.Gaps[0].Gap == nil || !page.Gaps[0].Gap.From.Equal(at(21)) {
		t.Fatalf("%d records after minute 21, gaps %+v: want the gap from minute 21", after, page.Gaps)
	}
}
