package server_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/server"
	"github.com/krply/krply/server/client"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/storagetest"
	"github.com/krply/krply/watch"
)

// readFeed reads n records from the feed, failing after a while.
func readFeed(t *testing.T, f *client.Feed, n int) []event.Record {
	t.Helper()
	type result struct {
		rec event.Record
		err error
	}
	out := make([]event.Record, 0, n)
	for len(out) < n {
		ch := make(chan result, 1)
		go func() { r, err := f.Next(); ch <- result{r, err} }()
		select {
		case r := <-ch:
			if r.err != nil {
				t.Fatalf("feed after %d of %d records: %v", len(out), n, r.err)
			}
			out = append(out, r.rec)
		case <-time.After(20 * time.Second):
			t.Fatalf("feed: %d of %d records after 20 s", len(out), n)
		}
	}
	return out
}

// change appends a change of shop/settings (and one of other/flags) and
// returns the shop record.
func (j *recorded) change(color string, when time.Time) event.Record {
	rv := j.nextRV()
	ref := storagetest.Ref(cmShop, "ConfigMap", "shop", "settings", "uid-shop-settings", rv)
	rec := storagetest.Event(cmShop, event.Modified, ref, storagetest.ConfigMap("shop", "settings", "uid-shop-settings", rv, map[string]string{"color": color}), when)
	orv := j.nextRV()
	oref := storagetest.Ref(cmOther, "ConfigMap", "other", "flags", "uid-other-flags", orv)
	other := storagetest.Event(cmOther, event.Modified, oref, storagetest.ConfigMap("other", "flags", "uid-other-flags", orv, map[string]string{"beta": color}), when)
	srv := j.nextRV()
	sref := storagetest.Ref(secShop, "Secret", "shop", "db", "uid-secret", srv)
	secret := storagetest.Event(secShop, event.Modified, sref, secretBody("shop", "db", srv, color), when)
	j.append(rec, other, secret)
	stored, err := j.w.Get(ctx, rec.EventID)
	if err != nil {
		j.t.Fatal(err)
	}
	return stored
}

func TestWatch(t *testing.T) {
	j := newRecorded(t)
	c, base := j.serve(server.WithPollInterval(10 * time.Millisecond))
	shop := client.WatchQuery{Scope: materialize.Scope{Namespaces: []string{"shop"}}, Types: []event.RecordType{event.TypeEvent}}

	// From the journal's start: the records of shop so far, as records
	// answers them.
	q := shop
	q.Cursor = "0"
	f, err := c.Watch(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	past := allRecords(t, c, client.RecordQuery{Scope: shop.Scope, Types: shop.Types})
	got := readFeed(t, f, len(past))
	sameJSON(t, "the feed from the start", got, past)
	f.Close()

	// From now: only what is appended after.
	f, err = c.Watch(ctx, shop)
	if err != nil {
		t.Fatal(err)
	}
	var appended []int64
	for i := range 3 {
		appended = append(appended, j.change("c"+strconv.Itoa(i), at(21+float64(i))).IngestSeq)
	}
	got = readFeed(t, f, 3)
	if !slices.Equal(seqs(got), appended) {
		t.Fatalf("feed of new records: %v; want %v", seqs(got), appended)
	}
	cursor := f.Cursor()
	if cursor != strconv.FormatInt(appended[2], 10) {
		t.Fatalf("cursor %q; want the last record's ingestSeq %d", cursor, appended[2])
	}
	f.Close()

	// Disconnected, more records arrive; resumed with the cursor, each
	// is delivered once, none twice.
	var missed []int64
	for i := range 4 {
		missed = append(missed, j.change("d"+strconv.Itoa(i), at(25+float64(i)/10)).IngestSeq)
	}
	q = shop
	q.Cursor = cursor
	f, err = c.Watch(ctx, q)
	if err != nil {
		t.Fatal(err)
	}
	got = readFeed(t, f, 4)
	if !slices.Equal(seqs(got), missed) {
		t.Fatalf("feed resumed after %s: %v; want exactly %v", cursor, seqs(got), missed)
	}
	for _, r := range got {
		if r.Resource.Namespace != "shop" || r.Resource.Resource == "secrets" {
			t.Fatalf("feed of shop sent %+v", r.Resource)
		}
	}
	f.Close()

	// Last-Event-ID resumes too (what EventSource sends).
	req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/watch?namespace=shop&types=event", nil)
	req.Header.Set("Last-Event-ID", strconv.FormatInt(missed[2], 10))
	reqCtx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	resp, err := http.DefaultClient.Do(req.WithContext(reqCtx))
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("feed Content-Type %q", ct)
	}
	buf := make([]byte, 64<<10)
	var text string
	for !containsID(text, missed[3]) {
		n, err := resp.Body.Read(buf)
		if err != nil {
			t.Fatalf("feed with Last-Event-ID: %v after %q", err, text)
		}
		text += string(buf[:n])
	}
	resp.Body.Close()
	if containsID(text, missed[2]) {
		t.Errorf("feed with Last-Event-ID %d sent that record again:\n%s", missed[2], text)
	}

	wantError(t, http.MethodGet, base+"/api/v1/watch?cursor=-3", "", http.StatusBadRequest, server.CodeInvalidCursor, "cursor")
	wantError(t, http.MethodGet, base+"/api/v1/watch", "", http.StatusBadRequest, server.CodeInvalidCursor, "Last-Event-ID", "Last-Event-ID", "x")
	wantError(t, http.MethodGet, base+"/api/v1/watch?types=nothing", "", http.StatusBadRequest, server.CodeInvalidParameter, "types")
	var e *server.Error
	if _, err := c.Watch(ctx, client.WatchQuery{Scope: materialize.Scope{ClusterID: "c1", Namespaces: []string{"shop"}}, Cursor: "x"}); !errors.As(err, &e) || e.Code != server.CodeInvalidCursor {
		t.Errorf("client watch with a bad cursor: %v", err)
	}
}

func containsID(text string, seq int64) bool {
	return slices.Contains(splitLines(text), "id: "+strconv.FormatInt(seq, 10))
}

func splitLines(s string) []string {
	var out []string
	start := 0
	for i := range len(s) {
		if s[i] == '\n' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

// A journal failing under an open feed ends it with an error event, which
// the client returns as the server's Error.
func TestWatchError(t *testing.T) {
	store := memory.New()
	j := &recorded{t: t, w: store, ro: store, rv: 100}
	j.append(storagetest.Baseline(cmShop, "b-shop", at(0), j.nextRV(), nil)...)
	c, _ := j.serve(server.WithPollInterval(10 * time.Millisecond))
	f, err := c.Watch(ctx, client.WatchQuery{Scope: materialize.Scope{ClusterID: "c1"}, Cursor: "0"})
	if err != nil {
		t.Fatal(err)
	}
	readFeed(t, f, 2)
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	var e *server.Error
	if _, err := f.Next(); !errors.As(err, &e) || e.Code != server.CodeInternal || !strings.Contains(e.Message, "closed") {
		t.Fatalf("feed after the journal closed: %v; want an error event naming it", err)
	}
}

// The recorder krply runs says when it appended: a feed of
// kubectl krply record --listen is woken by it.
var _ server.AppendNotifier = (*watch.Collector)(nil)

// notifyingRecorder is a recorder that says when it appended.
type notifyingRecorder struct{ server.AppendSignal }

func (*notifyingRecorder) Synced() error { return nil }

// TestWatchWokenOnAppend: with an append notifier (given by
// WithAppendNotifier, or the recorder of WithRecorder being one) a feed
// delivers a new record as soon as the writer says it appended, not at
// its next poll (an hour away here).
func TestWatchWokenOnAppend(t *testing.T) {
	for _, how := range []string{"WithAppendNotifier", "WithRecorder"} {
		t.Run(how, func(t *testing.T) {
			j := newRecorded(t)
			rec := &notifyingRecorder{}
			opt := server.WithAppendNotifier(&rec.AppendSignal)
			if how == "WithRecorder" {
				opt = server.WithRecorder(rec)
			}
			c, _ := j.serve(server.WithPollInterval(time.Hour), opt)
			q := client.WatchQuery{Scope: materialize.Scope{Namespaces: []string{"shop"}}, Name: "settings", Types: []event.RecordType{event.TypeEvent}}
			f, err := c.Watch(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for i, color := range []string{"teal", "plum", "sand"} {
				want := j.change(color, at(21+float64(i)))
				rec.Notify()
				got := readFeedWithin(t, f, 5*time.Second)
				if got.EventID != want.EventID {
					t.Fatalf("record %d of the feed: %s, want %s", i, got.EventID, want.EventID)
				}
			}
		})
	}
}

// readFeedWithin reads one record of the feed, failing after d.
func readFeedWithin(t *testing.T, f *client.Feed, d time.Duration) event.Record {
	t.Helper()
	type result struct {
		rec event.Record
		err error
	}
	ch := make(chan result, 1)
	go func() { r, err := f.Next(); ch <- result{r, err} }()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("feed: %v", r.err)
		}
		return r.rec
	case <-time.After(d):
		t.Fatalf("feed: no record %s after the append was notified", d)
	}
	return event.Record{}
}

// TestWatchMaxFeeds: past WithMaxFeeds feeds at once, one more is refused
// 429 too_many_requests naming the limit; a feed that ends frees its
// place.
func TestWatchMaxFeeds(t *testing.T) {
	j := newRecorded(t)
	c, base := j.serve(server.WithMaxFeeds(2), server.WithPollInterval(10*time.Millisecond))
	q := client.WatchQuery{Scope: materialize.Scope{Namespaces: []string{"shop"}}}
	var feeds []*client.Feed
	for range 2 {
		f, err := c.Watch(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		feeds = append(feeds, f)
	}
	_, err := c.Watch(ctx, q)
	var e *server.Error
	if !errors.As(err, &e) || e.Status != http.StatusTooManyRequests || e.Code != server.CodeTooManyRequests || !strings.Contains(e.Message, "limit of 2 change feeds") {
		t.Fatalf("a third feed: %v; want 429 too_many_requests naming the limit of 2", err)
	}
	resp, err := http.Get(base + "/api/v1/watch?namespace=shop")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("a third feed: %s, Retry-After %q", resp.Status, resp.Header.Get("Retry-After"))
	}
	feeds[0].Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		f, err := c.Watch(ctx, q)
		if err == nil {
			f.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a feed after one of two ended: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// countingStore counts the Records calls of a store.
type countingStore struct {
	storage.Store
	records atomic.Int64
}

func (s *countingStore) Records(ctx context.Context, q storage.Query) (storage.Page, error) {
	s.records.Add(1)
	return s.Store.Records(ctx, q)
}

// TestWatchWakesCoalesced: a writer notifying appends every millisecond
// does not make a feed read the journal as often: at most once per 25 ms.
func TestWatchWakesCoalesced(t *testing.T) {
	j := newRecorded(t)
	store := &countingStore{Store: j.ro}
	var sig server.AppendSignal
	srv := httptest.NewServer(server.NewHandler(store, server.WithPollInterval(time.Hour), server.WithAppendNotifier(&sig)))
	defer srv.Close()
	c, err := client.New(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.Watch(ctx, client.WatchQuery{Scope: materialize.Scope{Namespaces: []string{"shop"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	time.Sleep(50 * time.Millisecond)
	before := store.records.Load()
	start := time.Now()
	for time.Since(start) < 500*time.Millisecond {
		sig.Notify()
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	reads := store.records.Load() - before
	if most := int64(elapsed/(25*time.Millisecond)) + 2; reads > most || reads < 2 {
		t.Errorf("%d reads of the journal in %s of appends notified every millisecond; want 2 to %d", reads, elapsed, most)
	}
}

// A change feed outlives its http.Server's WriteTimeout, and its own
// request timeout, while it is idle: each write sets its own deadline.
// Before, a handler mounted in a server with a WriteTimeout (as platform
// tools set one) lost every feed at it.
func TestWatchOutlivesWriteTimeout(t *testing.T) {
	for _, tc := range []struct {
		name         string
		writeTimeout time.Duration
		opts         []server.Option
	}{
		{"server WriteTimeout", time.Second, nil},
		{"request timeout", 0, []server.Option{server.WithRequestTimeout(500 * time.Millisecond)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := newRecorded(t)
			rec := &notifyingRecorder{}
			opts := append([]server.Option{server.WithClock(clocktesting.NewFakePassiveClock(now)), server.WithPollInterval(time.Hour),
				server.WithAppendNotifier(&rec.AppendSignal)}, tc.opts...)
			srv := httptest.NewUnstartedServer(server.NewHandler(j.ro, opts...))
			srv.Config.WriteTimeout = tc.writeTimeout
			srv.Start()
			defer srv.Close()
			c, err := client.New(srv.URL)
			if err != nil {
				t.Fatal(err)
			}
			f, err := c.Watch(ctx, client.WatchQuery{Scope: materialize.Scope{Namespaces: []string{"shop"}}, Name: "settings", Types: []event.RecordType{event.TypeEvent}})
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			for i, color := range []string{"teal", "plum"} {
				time.Sleep(2 * time.Second) // idle past the timeout
				want := j.change(color, at(21+float64(i)))
				rec.Notify()
				if got := readFeedWithin(t, f, 5*time.Second); got.EventID != want.EventID {
					t.Fatalf("record %d after the feed idled past the timeout: %s, want %s", i, got.EventID, want.EventID)
				}
			}
		})
	}
}
