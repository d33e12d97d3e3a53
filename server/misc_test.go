package server_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/krply/krply/audit"
	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/server"
	"github.com/krply/krply/server/client"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/storagetest"
	"github.com/krply/krply/watch"
)

// A configuration that cannot work answers every request 500 with the
// reason instead of panicking.
func TestBrokenConfiguration(t *testing.T) {
	j := newRecorded(t)
	cases := map[string]struct {
		journal storage.ReadWriter
		opts    []server.Option
		want    string
	}{
		"nil journal":     {nil, nil, "nil journal"},
		"nil option":      {j.ro, []server.Option{nil}, "nil Option"},
		"nil clock":       {j.ro, []server.Option{server.WithClock(nil)}, "WithClock(nil)"},
		"page size":       {j.ro, []server.Option{server.WithMaxPageSize(0)}, "WithMaxPageSize(0)"},
		"range":           {j.ro, []server.Option{server.WithMaxRange(-time.Hour)}, "WithMaxRange"},
		"body":            {j.ro, []server.Option{server.WithMaxBodyBytes(0)}, "WithMaxBodyBytes(0)"},
		"timeout":         {j.ro, []server.Option{server.WithRequestTimeout(0)}, "WithRequestTimeout"},
		"poll":            {j.ro, []server.Option{server.WithPollInterval(0)}, "WithPollInterval"},
		"in flight":       {j.ro, []server.Option{server.WithMaxInFlight(0)}, "WithMaxInFlight(0)"},
		"auth cache":      {j.ro, []server.Option{server.WithAuthCacheTTL(-time.Second)}, "WithAuthCacheTTL"},
		"half delegation": {j.ro, []server.Option{server.WithDelegatedAuth(nil, nil), server.WithDelegatedAuth(fakeTokenReviews{}, nil)}, "both"},
		"nil correlator":  {j.ro, []server.Option{server.WithAuditWebhook(nil)}, "audit"},
		"nil metrics":     {j.ro, []server.Option{server.WithMetrics(nil)}, "WithMetrics(nil)"},
	}
	for name, tc := range cases {
		srv := httptest.NewServer(server.NewHandler(tc.journal, tc.opts...))
		for _, path := range []string{"/healthz", "/api/v1/clusters"} {
			status, e, _ := get(t, http.MethodGet, srv.URL+path, "")
			if status != http.StatusInternalServerError || e.Code != server.CodeInternal || !strings.Contains(e.Message, tc.want) {
				t.Errorf("%s: %s answers %d %+v; want 500 naming %q", name, path, status, e, tc.want)
			}
		}
		srv.Close()
	}
}

// fakeTokenReviews is only ever half of a configuration that is refused.
type fakeTokenReviews struct{}

func (fakeTokenReviews) Create(context.Context, *authnv1.TokenReview, metav1.CreateOptions) (*authnv1.TokenReview, error) {
	return nil, errors.New("not called")
}

// slowStore answers Records only when the request's context ends.
type slowStore struct{ storage.Store }

func (s slowStore) Records(ctx context.Context, q storage.Query) (storage.Page, error) {
	<-ctx.Done()
	return storage.Page{}, ctx.Err()
}

// Every request but the feed ends at the request timeout, with 503
// timeout, and the failure is logged: one reading the journal, and one
// whose body came whole before.
func TestRequestTimeout(t *testing.T) {
	for _, c := range []struct{ method, path, body string }{
		{http.MethodGet, "/api/v1/records", ""},
		{http.MethodPost, "/api/v1/snapshots", `{"scope":{"clusterID":"c1"},"at":"2026-03-01T12:20:00Z"}`},
	} {
		t.Run(c.method, func(t *testing.T) {
			j := newRecorded(t)
			var mu sync.Mutex
			var logged []string
			log := funcr.New(func(_, args string) { mu.Lock(); logged = append(logged, args); mu.Unlock() }, funcr.Options{Verbosity: 1})
			slow := &recorded{t: t, ro: slowStore{j.ro}}
			_, base := slow.serve(server.WithRequestTimeout(50*time.Millisecond), server.WithLogger(log), server.WithWrites())
			start := time.Now()
			wantError(t, c.method, base+c.path, c.body, http.StatusServiceUnavailable, server.CodeTimeout, "")
			if took := time.Since(start); took > 5*time.Second {
				t.Errorf("the timed-out request took %s", took)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(logged) != 1 || !strings.Contains(logged[0], `"code"="timeout"`) || !strings.Contains(logged[0], c.path) {
				t.Errorf("logged %q; want one line for the timed-out request", logged)
			}
		})
	}
}

// blockingStore answers Records only once release is closed.
type blockingStore struct {
	storage.Store
	entered chan struct{}
	release chan struct{}
}

func (s blockingStore) Records(ctx context.Context, q storage.Query) (storage.Page, error) {
	s.entered <- struct{}{}
	<-s.release
	return s.Store.Records(ctx, q)
}

// With one request in flight at most, a second waits for its turn and
// times out while the first holds it.
func TestMaxInFlight(t *testing.T) {
	j := newRecorded(t)
	blocking := blockingStore{Store: j.ro, entered: make(chan struct{}, 100), release: make(chan struct{})}
	slow := &recorded{t: t, ro: blocking}
	_, base := slow.serve(server.WithMaxInFlight(1), server.WithRequestTimeout(300*time.Millisecond))
	first := make(chan int, 1)
	go func() {
		status, _, _ := get(t, http.MethodGet, base+"/api/v1/snapshots", "")
		first <- status
	}()
	<-blocking.entered // the first holds the slot
	_, second, _ := get(t, http.MethodGet, base+"/api/v1/clusters", "")
	if second.Code != server.CodeTimeout || !strings.Contains(second.Message, "waiting for a turn among 1 requests") {
		t.Errorf("a second request while one is in flight: %+v; want 503 timeout waiting for a turn", second)
	}
	// Health is not counted.
	if status, _, _ := get(t, http.MethodGet, base+"/healthz", ""); status != http.StatusOK {
		t.Errorf("healthz: %d", status)
	}
	close(blocking.release)
	<-first
}

// A small maximum page size caps limit and still pages through everything.
func TestMaxPageSize(t *testing.T) {
	j := newRecorded(t)
	_, base := j.serve(server.WithMaxPageSize(2))
	wantError(t, http.MethodGet, base+"/api/v1/records?limit=3", "", http.StatusBadRequest, server.CodeInvalidParameter, "limit")
	var page server.RecordList
	getJSON(t, base+"/api/v1/records", &page)
	if len(page.Items) != 2 || page.Next == "" {
		t.Errorf("records with a maximum page of 2: %d items, next %q; want 2 and a next page", len(page.Items), page.Next)
	}
}

// The audit webhook correlates an EventList the apiserver posts, only when
// enabled, into a writable journal.
func TestAuditWebhook(t *testing.T) {
	j := newRecorded(t)
	_, base := j.serve()
	wantError(t, http.MethodPost, base+"/api/v1/audit", `{"kind":"EventList","items":[]}`, http.StatusForbidden, server.CodeReadOnly, "")

	corr, err := audit.NewCorrelator(j.w, "c1")
	if err != nil {
		t.Fatal(err)
	}
	writable := &recorded{t: t, ro: j.w}
	_, base = writable.serve(server.WithAuditWebhook(corr, audit.WithSettleDelay(0)))
	green := j.changes[0]
	rv := green.Resource.ResourceVersion
	ev := audit.Event{Level: audit.LevelRequestResponse, AuditID: "a-1", Stage: audit.StageResponseComplete,
		RequestURI: "/api/v1/namespaces/shop/configmaps/settings", Verb: "update",
		User:                     authnv1.UserInfo{Username: "carol"},
		ObjectRef:                &audit.ObjectReference{Resource: "configmaps", Namespace: "shop", Name: "settings", APIVersion: "v1"},
		ResponseStatus:           &metav1.Status{Code: 200},
		ResponseObject:           json.RawMessage(fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"settings","namespace":"shop","uid":"uid-shop-settings","resourceVersion":%q}}`, rv)),
		RequestReceivedTimestamp: metav1.NewMicroTime(green.ObservedAt.Add(-time.Second)),
		StageTimestamp:           metav1.NewMicroTime(green.ObservedAt),
	}
	body, err := json.Marshal(audit.EventList{Kind: "EventList", APIVersion: audit.APIVersion, Items: []audit.Event{ev}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.Post(base+"/api/v1/audit", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	var sum audit.Summary
	if err := json.NewDecoder(resp.Body).Decode(&sum); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || sum.Events != 1 || sum.Exact != 1 {
		t.Fatalf("audit webhook: %d %+v; want 200, the event matched exactly", resp.StatusCode, sum)
	}
	corrs, err := j.w.Correlations(ctx, []string{green.EventID})
	if err != nil || len(corrs[green.EventID]) != 1 || corrs[green.EventID][0].Audit.User != "carol" {
		t.Fatalf("correlations of the change to green: %v, %v; want carol's", corrs, err)
	}
}

// statusRecorder is a Recorder that tells its streams.
type statusRecorder struct{ fakeRecorder }

func (statusRecorder) Status() []watch.StreamStatus {
	return []watch.StreamStatus{{StreamID: cmShop.ID(), Stream: cmShop, State: watch.StateWatching, Synced: true, Covered: true, Events: 4}}
}

// With a recorder that tells its streams' status, streams carry it.
func TestStreamsWithRecorder(t *testing.T) {
	j := newRecorded(t)
	_, base := j.serve(server.WithRecorder(&statusRecorder{}))
	var list server.StreamList
	getJSON(t, base+"/api/v1/streams?namespace=shop&resource=configmaps", &list)
	if len(list.Items) != 1 || list.Items[0].Collector == nil || list.Items[0].Collector.State != watch.StateWatching || list.Items[0].Collector.Events != 4 {
		t.Fatalf("streams with a recorder: %+v; want shop's ConfigMaps with the recorder's status", list.Items)
	}
}

// The handler works under a prefix, and the client follows it.
func TestMountedUnderPrefix(t *testing.T) {
	j := newRecorded(t)
	mux := http.NewServeMux()
	mux.Handle("/tools/krply/", http.StripPrefix("/tools/krply", server.NewHandler(j.ro)))
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c, err := client.New(srv.URL + "/tools/krply/")
	if err != nil {
		t.Fatal(err)
	}
	if clusters, err := c.Clusters(ctx); err != nil || len(clusters) != 1 {
		t.Fatalf("clusters under a prefix: %+v, %v", clusters, err)
	}
	if err := c.Healthy(ctx); err != nil {
		t.Fatalf("healthz under a prefix: %v", err)
	}
	for _, bad := range []string{"ftp://x", "not a url", "http://"} {
		if _, err := client.New(bad); !errors.Is(err, client.ErrInvalidArgument) {
			t.Errorf("client.New(%q): %v; want ErrInvalidArgument", bad, err)
		}
	}
	if _, err := client.New(srv.URL, client.WithHTTPClient(nil)); !errors.Is(err, client.ErrInvalidArgument) {
		t.Errorf("WithHTTPClient(nil): %v; want ErrInvalidArgument", err)
	}
}

// stallServer serves a journal with twelve ConfigMaps of 900 KB in shop
// (answers of some 11 MB, more than the socket buffers of both ends hold)
// with the options and a request timeout of timeout, and reports the
// remote address of each connection it closes on closed.
func stallServer(t *testing.T, timeout time.Duration, opts ...server.Option) (srv *httptest.Server, closed <-chan string) {
	t.Helper()
	j := newRecorded(t)
	blob := strings.Repeat("x", 900<<10)
	for i := range 12 {
		rv := j.nextRV()
		name := fmt.Sprintf("big-%02d", i)
		ref := storagetest.Ref(cmShop, "ConfigMap", "shop", name, "uid-"+name, rv)
		j.append(storagetest.Event(cmShop, event.Added, ref, storagetest.ConfigMap("shop", name, "uid-"+name, rv, map[string]string{"blob": blob}), at(9+float64(i)/100)))
	}
	opts = append([]server.Option{server.WithClock(clocktesting.NewFakePassiveClock(now)), server.WithRequestTimeout(timeout)}, opts...)
	srv = httptest.NewUnstartedServer(server.NewHandler(j.ro, opts...))
	ch := make(chan string, 100)
	srv.Config.ConnState = func(c net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			ch <- c.RemoteAddr().String()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv, ch
}

// stall asks srv for path on a connection of its own and stops reading
// once the answer's status line came (200 wanted). It returns the
// connection and when it asked (the server cannot have cut it off
// sooner than the timeout after that).
func stall(t *testing.T, srv *httptest.Server, path string) (net.Conn, time.Time) {
	t.Helper()
	addr := srv.Listener.Addr().String()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.(*net.TCPConn).SetReadBuffer(4 << 10); err != nil {
		t.Fatal(err)
	}
	asked := time.Now()
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr); err != nil {
		t.Fatal(err)
	}
	status := make([]byte, len("HTTP/1.1 200"))
	if _, err := io.ReadFull(conn, status); err != nil || string(status) != "HTTP/1.1 200" {
		t.Fatalf("GET %s: %q, %v", path, status, err)
	}
	return conn, asked
}

// waitClosed waits for srv to close conn, at least timeout after it was
// asked and at most 5 timeouts after.
func waitClosed(t *testing.T, closed <-chan string, conn net.Conn, asked time.Time, timeout time.Duration) {
	t.Helper()
	give := time.After(5 * timeout)
	for {
		select {
		case a := <-closed:
			if a != conn.LocalAddr().String() {
				continue // another request's connection
			}
			if d := time.Since(asked); d < timeout {
				t.Errorf("the stalled connection was closed %v after its request, before the timeout %v", d, timeout)
			}
			return
		case <-give:
			t.Fatalf("the connection of a client that stopped reading is still open %v later", 5*timeout)
		}
	}
}

// A client that stops reading holds nothing for ever. An answer waiting
// in the socket holds no turn: another request is answered at once. A
// change feed keeps its place (the only one of WithMaxFeeds(1)) while it
// stalls. Either is cut off, its connection closed, once it made no
// progress for the request timeout; the feed then gives its place to the
// next.
func TestStalledReader(t *testing.T) {
	const timeout = time.Second
	for _, c := range []struct {
		name, path, other string
		opt               server.Option
		want              int
	}{
		{"answer", "/api/v1/records?cluster=c1&namespace=shop&limit=100", "/api/v1/clusters", server.WithMaxInFlight(1), http.StatusOK},
		{"feed", "/api/v1/watch?cluster=c1&cursor=0", "/api/v1/watch?cluster=c1", server.WithMaxFeeds(1), http.StatusTooManyRequests},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, closed := stallServer(t, timeout, c.opt)
			conn, asked := stall(t, srv, c.path)
			start := time.Now()
			if code, e, _ := get(t, http.MethodGet, srv.URL+c.other, ""); code != c.want {
				t.Errorf("GET %s while another client stalls reading: %d %+v; want %d", c.other, code, e, c.want)
			}
			if d := time.Since(start); d > timeout/2 {
				t.Errorf("GET %s waited %v while another client stalled", c.other, d)
			}
			waitClosed(t, closed, conn, asked, timeout)
			if c.name == "feed" {
				feedStarts(t, srv.URL+c.other, timeout)
			}
		})
	}
}

// A client that stops sending a request's body holds its turn for the
// request timeout at most: it is then answered 408, and the next request
// is answered at once.
func TestStalledBody(t *testing.T) {
	const timeout = time.Second
	srv, _ := stallServer(t, timeout, server.WithMaxInFlight(1), server.WithWrites())
	addr := srv.Listener.Addr().String()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := fmt.Fprintf(conn, "POST /api/v1/snapshots HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"scope\":", addr); err != nil {
		t.Fatal(err)
	}
	time.Sleep(timeout + timeout/4)
	start := time.Now()
	if code, e, _ := get(t, http.MethodGet, srv.URL+"/api/v1/clusters", ""); code != http.StatusOK {
		t.Errorf("a request %v after another client stalled sending its body: %d %+v; want 200", timeout+timeout/4, code, e)
	}
	if d := time.Since(start); d > timeout/2 {
		t.Errorf("the request waited %v for a turn", d)
	}
	if err := conn.SetReadDeadline(time.Now().Add(5 * timeout)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("the stalled request's answer: %v", err)
	}
	defer resp.Body.Close()
	var e server.Error
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != http.StatusRequestTimeout || e.Code != server.CodeTimeout || !strings.Contains(e.Message, "body") {
		t.Errorf("the stalled request's answer: %s %+v (%v); want 408 %s about the body", resp.Status, e, err, server.CodeTimeout)
	}
}

// feedStarts checks that a change feed starts at u within 5 timeouts (a
// feed's place is given back as its handler returns, just after its
// connection closed), and closes it.
func feedStarts(t *testing.T, u string, timeout time.Duration) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * timeout)
	for {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			break
		}
		if resp.StatusCode != http.StatusTooManyRequests || time.Now().After(deadline) {
			t.Fatalf("a feed after the stalled one was cut off: %s; want it to start", resp.Status)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// An answer of 128 KiB or more is sent gzip-compressed to a client that
// accepts it, and decompresses to the answer sent to one that does not;
// smaller answers, and clients refusing gzip (q=0), get it plain.
func TestGzipLargeAnswers(t *testing.T) {
	srv, _ := stallServer(t, time.Minute)
	raw := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	fetch := func(path, acceptEncoding string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if acceptEncoding != "" {
			req.Header.Set("Accept-Encoding", acceptEncoding)
		}
		resp, err := raw.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %s %v", path, resp.Status, err)
		}
		return resp, body
	}
	const big = "/api/v1/records?cluster=c1&namespace=shop&limit=100"
	plainResp, plain := fetch(big, "")
	if enc := plainResp.Header.Get("Content-Encoding"); enc != "" || len(plain) < 10<<20 {
		t.Fatalf("the answer without Accept-Encoding: encoding %q, %d bytes; want plain, over 10 MiB", enc, len(plain))
	}
	for _, accept := range []string{"gzip", "deflate, gzip, br", "br;q=1.0, gzip;q=0.5"} {
		resp, body := fetch(big, accept)
		if resp.Header.Get("Content-Encoding") != "gzip" || resp.ContentLength != int64(len(body)) || len(body) > len(plain)/10 {
			t.Errorf("Accept-Encoding %q: encoding %q, length %d of %d bytes; want gzip, its length said, under a tenth of %d", accept, resp.Header.Get("Content-Encoding"), resp.ContentLength, len(body), len(plain))
			continue
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(got, plain) {
			t.Errorf("Accept-Encoding %q: decompressed %d bytes (%v); want the plain answer's %d", accept, len(got), err, len(plain))
		}
	}
	for _, accept := range []string{"gzip;q=0", "identity"} {
		if resp, _ := fetch(big, accept); resp.Header.Get("Content-Encoding") != "" {
			t.Errorf("Accept-Encoding %s: encoding %q; want plain", accept, resp.Header.Get("Content-Encoding"))
		}
	}
	if resp, _ := fetch("/api/v1/clusters", "gzip"); resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("a small answer: encoding %q; want plain", resp.Header.Get("Content-Encoding"))
	}
	// The Go client asks for gzip, unless WithoutCompression, and reads
	// the answer as ever.
	var asked atomic.Value
	seen := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Store(r.Header.Get("Accept-Encoding"))
		srv.Config.Handler.ServeHTTP(w, r)
	}))
	defer seen.Close()
	for _, tc := range []struct {
		opts []client.Option
		want string
	}{{nil, "gzip"}, {[]client.Option{client.WithoutCompression()}, "identity"}} {
		c, err := client.New(seen.URL, tc.opts...)
		if err != nil {
			t.Fatal(err)
		}
		page, err := c.Records(ctx, client.RecordQuery{Scope: materialize.Scope{ClusterID: "c1", Namespaces: []string{"shop"}}, Limit: 100})
		if err != nil || len(page.Items) < 12 {
			t.Errorf("the Go client's records of shop: %v, %d records; want the 12 big ConfigMaps and more", err, len(page.Items))
		}
		if got, _ := asked.Load().(string); got != tc.want {
			t.Errorf("the Go client with %d options asked Accept-Encoding %q, want %q", len(tc.opts), got, tc.want)
		}
	}
}
