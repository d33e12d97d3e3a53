package faultproxy_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/krplytest/testenv/faultproxy"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunMain(m)) }

var (
	configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets    = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
)

// setup starts a proxy in front of the shared apiserver and returns it, a
// namespace of the test's own, and an admin client that goes through the
// proxy.
func setup(t *testing.T) (*faultproxy.Proxy, string, dynamic.NamespaceableResourceInterface, context.Context) {
	t.Helper()
	env := testenv.Shared(t)
	ns := env.CreateNamespace(t)
	p := faultproxy.Start(t, env.Config())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return p, ns, client(t, p.Config()).Resource(configMaps), ctx
}

func client(t *testing.T, cfg *rest.Config) *dynamic.DynamicClient {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

func configMap(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "ConfigMap",
		"metadata":   map[string]any{"name": name, "namespace": ns},
	}}
}

func nextEvent(t *testing.T, w watch.Interface, timeout time.Duration) (watch.Event, bool) {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		return ev, ok
	case <-time.After(timeout):
		t.Fatalf("no watch event within %v", timeout)
		return watch.Event{}, false
	}
}

// The proxy forwards requests unchanged — each user's own credentials
// included — and counts them by verb and resource.
func TestForwardsAndCounts(t *testing.T) {
	p, ns, cms, ctx := setup(t)
	created, err := cms.Namespace(ns).Create(ctx, configMap(ns, "one"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Namespace(ns).Get(ctx, "one", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := cms.Namespace(ns).List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w, err := cms.Namespace(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: created.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	w.Stop()

	for _, tc := range []struct {
		m    faultproxy.Match
		want int
	}{
		{faultproxy.Match{Verb: "create", Resource: "configmaps"}, 1},
		{faultproxy.Match{Verb: "get", Resource: "configmaps", Namespace: ns}, 1},
		{faultproxy.Match{Verb: "list", Resource: "configmaps"}, 2},
		{faultproxy.Match{Verb: "watch", Resource: "configmaps"}, 1},
		{faultproxy.Match{Resource: "configmaps", Namespace: ns}, 5},
		{faultproxy.Match{Resource: "secrets"}, 0},
	} {
		if got := p.Count(tc.m); got != tc.want {
			t.Errorf("Count(%v) = %d, want %d", tc.m, got, tc.want)
		}
	}
	watches := p.Requests(faultproxy.Match{Verb: "watch"})
	if len(watches) != 1 || watches[0].Query.Get("resourceVersion") != created.GetResourceVersion() || watches[0].Injected != "" {
		t.Errorf("watch requests: %+v, want one forwarded from resourceVersion %s", watches, created.GetResourceVersion())
	}

	// A limited user stays limited through the proxy.
	viewer := client(t, p.Wrap(testenv.Shared(t).ConfigFor(testenv.UserViewer)))
	if _, err := viewer.Resource(configMaps).Namespace(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("viewer lists ConfigMaps through the proxy: %v", err)
	}
	if _, err := viewer.Resource(secrets).Namespace(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("viewer lists Secrets through the proxy: got %v, want 403 from the apiserver", err)
	}

	p.ResetCounts()
	if got := p.Count(faultproxy.Match{}); got != 0 {
		t.Errorf("after ResetCounts: Count = %d", got)
	}
}

// CutWatches and EndWatches stop client-go watches, and only the watches they
// select. client-go reports a cut stream as an ERROR event with a 500 Status
// (cause ClientWatchDecoding) before closing the result channel; an ended
// stream just closes it. Neither is a 410: a client reconnects from its last
// resourceVersion without a gap.
func TestCutAndEndWatches(t *testing.T) {
	p, ns, cms, ctx := setup(t)
	secretWatch, err := client(t, p.Config()).Resource(secrets).Namespace(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer secretWatch.Stop()
	for _, tc := range []struct {
		name          string
		stop          func(faultproxy.Match) int
		wantDecodeErr bool
	}{
		{"CutWatches", p.CutWatches, true},
		{"EndWatches", p.EndWatches, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list, err := cms.Namespace(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// From the list's resourceVersion: no initial ADDED events.
			cmWatch, err := cms.Namespace(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
			if err != nil {
				t.Fatal(err)
			}
			defer cmWatch.Stop()
			if err := p.WaitForWatches(ctx, faultproxy.Match{Verb: "watch"}, 2); err != nil {
				t.Fatal(err)
			}
			// The stream is live: a change arrives through it.
			name := strings.ToLower(tc.name)
			if _, err := cms.Namespace(ns).Create(ctx, configMap(ns, name), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if ev, _ := nextEvent(t, cmWatch, 10*time.Second); ev.Type != watch.Added || ev.Object.(*unstructured.Unstructured).GetName() != name {
				t.Fatalf("got %s %v, want ADDED %s", ev.Type, ev.Object, name)
			}

			if n := tc.stop(faultproxy.Match{Resource: "configmaps"}); n != 1 {
				t.Fatalf("stopped %d watches, want 1", n)
			}
			ev, ok := nextEvent(t, cmWatch, 10*time.Second)
			if tc.wantDecodeErr {
				err := apierrors.FromObject(ev.Object)
				if !ok || ev.Type != watch.Error || !apierrors.IsInternalError(err) ||
					!apierrors.HasStatusCause(err, metav1.CauseType("ClientWatchDecoding")) {
					t.Fatalf("after the cut: %s %v (open %v), want an ERROR event with a 500 ClientWatchDecoding Status", ev.Type, ev.Object, ok)
				}
				t.Logf("client-go reports the cut as: %v", err)
				ev, ok = nextEvent(t, cmWatch, 10*time.Second)
			}
			if ok {
				t.Fatalf("watch delivered %s %v, want its channel closed", ev.Type, ev.Object)
			}
			if got := p.OpenWatches(faultproxy.Match{}); got != 1 {
				t.Errorf("OpenWatches = %d, want 1 (the Secret watch)", got)
			}
			select {
			case ev, ok := <-secretWatch.ResultChan():
				t.Fatalf("the Secret watch was disturbed: %v %v", ev, ok)
			case <-time.After(200 * time.Millisecond):
			}
		})
	}
}

// StallWatches makes a watch a half-open connection: a change does not
// reach it, nor does the end of the stream at the watch's timeout; it stays
// open and silent until the client stops it. A new watch is not stalled.
func TestStallWatches(t *testing.T) {
	p, ns, cms, ctx := setup(t)
	list, err := cms.Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	timeout := int64(1)
	stalled, err := cms.Namespace(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion(), TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Stop()
	watchCM := faultproxy.Match{Verb: "watch", Resource: "configmaps"}
	if err := p.WaitForWatches(ctx, watchCM, 1); err != nil {
		t.Fatal(err)
	}
	if n := p.StallWatches(watchCM); n != 1 {
		t.Fatalf("stalled %d watches, want 1", n)
	}
	if _, err := cms.Namespace(ns).Create(ctx, configMap(ns, "unseen"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev, ok := <-stalled.ResultChan():
		t.Fatalf("the stalled watch delivered %s %v (open %v), want silence past its 1s timeout", ev.Type, ev.Object, ok)
	case <-time.After(2500 * time.Millisecond):
	}
	if got := p.OpenWatches(watchCM); got != 1 {
		t.Fatalf("OpenWatches = %d, want the stalled one", got)
	}
	fresh, err := cms.Namespace(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: list.GetResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Stop()
	if ev, _ := nextEvent(t, fresh, 10*time.Second); ev.Type != watch.Added || ev.Object.(*unstructured.Unstructured).GetName() != "unseen" {
		t.Fatalf("a new watch got %s %v, want ADDED unseen", ev.Type, ev.Object)
	}
	stalled.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for p.OpenWatches(watchCM) != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the stalled watch is still open after the client stopped it: %d open", p.OpenWatches(watchCM))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// At the HTTP level, CutWatches aborts the stream (a read error) while
// EndWatches ends it cleanly (EOF), as an apiserver's watch timeout does.
func TestCutAndEndWatchesOnTheWire(t *testing.T) {
	p, ns, _, ctx := setup(t)
	httpClient, err := rest.HTTPClientFor(p.Config())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		stop    func(faultproxy.Match) int
		wantEOF bool
	}{
		{"CutWatches", p.CutWatches, false},
		{"EndWatches", p.EndWatches, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.Host()+"/api/v1/namespaces/"+ns+"/configmaps?watch=true", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := httpClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("watch: %s", resp.Status)
			}
			read := make(chan error, 1)
			go func() {
				_, err := io.Copy(io.Discard, resp.Body)
				read <- err
			}()
			if err := p.WaitForWatches(ctx, faultproxy.Match{Verb: "watch"}, 1); err != nil {
				t.Fatal(err)
			}
			if n := tc.stop(faultproxy.Match{}); n != 1 {
				t.Fatalf("stopped %d watches, want 1", n)
			}
			select {
			case err := <-read:
				if tc.wantEOF && err != nil {
					t.Errorf("body ended with %v, want a clean EOF", err)
				}
				if !tc.wantEOF && err == nil {
					t.Errorf("body ended cleanly, want a read error")
				}
				t.Logf("%s: body read ended with %v", tc.name, err)
			case <-time.After(10 * time.Second):
				t.Fatal("the stream did not end")
			}
		})
	}
}

// Each injected failure reaches client-go as the error the real apiserver
// would cause, hits only the requests it selects, and only as often as asked.
func TestInjectedFailures(t *testing.T) {
	p, ns, cms, ctx := setup(t)
	lists := faultproxy.Match{Verb: "list", Resource: "configmaps", Namespace: ns}
	watches := faultproxy.Match{Verb: "watch", Resource: "configmaps", Namespace: ns}
	for _, tc := range []struct {
		code int
		is   func(error) bool
	}{
		{403, apierrors.IsForbidden},
		{404, apierrors.IsNotFound},
		{410, func(err error) bool { return apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) }},
		{429, apierrors.IsTooManyRequests},
		{500, apierrors.IsInternalError},
		{503, apierrors.IsServiceUnavailable},
	} {
		t.Run(http.StatusText(tc.code), func(t *testing.T) {
			p.FailNext(2, lists, faultproxy.Status(tc.code))
			// Another resource is not affected.
			if _, err := client(t, p.Config()).Resource(secrets).Namespace(ns).List(ctx, metav1.ListOptions{}); err != nil {
				t.Fatalf("list Secrets: %v", err)
			}
			for i := range 2 {
				_, err := cms.Namespace(ns).List(ctx, metav1.ListOptions{})
				if !tc.is(err) || apierrors.ReasonForError(err) == metav1.StatusReasonUnknown {
					t.Fatalf("list %d: got %v (reason %q), want %d", i+1, err, apierrors.ReasonForError(err), tc.code)
				}
			}
			if _, err := cms.Namespace(ns).List(ctx, metav1.ListOptions{}); err != nil {
				t.Fatalf("third list: %v, want success", err)
			}

			p.FailNext(1, watches, faultproxy.Status(tc.code))
			if w, err := cms.Namespace(ns).Watch(ctx, metav1.ListOptions{}); !tc.is(err) {
				if w != nil {
					w.Stop()
				}
				t.Fatalf("watch: got %v, want HTTP %d", err, tc.code)
			}
			if p.PendingFaults() != 0 {
				t.Errorf("%d faults still pending", p.PendingFaults())
			}
		})
	}
	if got := len(p.Requests(faultproxy.Match{Verb: "list", Resource: "configmaps"})); got != 18 {
		t.Errorf("proxy saw %d ConfigMap lists, want 18", got)
	}
}

// WatchError(410) is how a real apiserver reports an expired resourceVersion
// to a watch: HTTP 200 and one ERROR event with a 410 Expired Status.
func TestWatchErrorEvent(t *testing.T) {
	p, ns, cms, ctx := setup(t)
	p.FailNext(1, faultproxy.Match{Verb: "watch", Resource: "configmaps"}, faultproxy.WatchError(410))
	w, err := cms.Namespace(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatalf("watch: %v, want an ERROR event instead", err)
	}
	defer w.Stop()
	ev, ok := nextEvent(t, w, 10*time.Second)
	if !ok || ev.Type != watch.Error {
		t.Fatalf("got %s %v (open %v), want ERROR", ev.Type, ev.Object, ok)
	}
	if err := apierrors.FromObject(ev.Object); !apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		t.Fatalf("ERROR event carries %v, want 410 Expired", err)
	}
	if _, ok := nextEvent(t, w, 10*time.Second); ok {
		t.Fatal("the stream goes on after the ERROR event")
	}
	// The next watch is forwarded and works.
	w2, err := cms.Namespace(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	if _, err := cms.Namespace(ns).Create(ctx, configMap(ns, "after"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if ev, _ := nextEvent(t, w2, 10*time.Second); ev.Type != watch.Added {
		t.Fatalf("second watch got %s %v, want ADDED", ev.Type, ev.Object)
	}
}

// A 429 with Retry-After, as the apiserver's priority and fairness sends it,
// is retried by client-go itself: the caller sees success, the proxy two
// requests.
func TestRetryAfterIsRetriedByClientGo(t *testing.T) {
	p, ns, cms, ctx := setup(t)
	lists := faultproxy.Match{Verb: "list", Resource: "configmaps", Namespace: ns}
	p.FailNext(1, lists, faultproxy.Status(429).WithRetryAfter(1))
	begin := time.Now()
	if _, err := cms.Namespace(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list: %v, want client-go to retry the 429", err)
	}
	if elapsed := time.Since(begin); elapsed < time.Second {
		t.Errorf("list took %v, want at least the 1s Retry-After", elapsed)
	}
	if got := p.Count(lists); got != 2 {
		t.Errorf("proxy saw %d lists, want 2 (the 429 and the retry)", got)
	}
}

// Abort gives the client a transport error, not an API status.
func TestAbort(t *testing.T) {
	p, ns, cms, ctx := setup(t)
	p.FailNext(1, faultproxy.Match{Verb: "get"}, faultproxy.Abort())
	_, err := cms.Namespace(ns).Get(ctx, "any", metav1.GetOptions{})
	var status apierrors.APIStatus
	if err == nil || errors.As(err, &status) {
		t.Fatalf("get: got %v, want a transport error without a Status", err)
	}
	t.Logf("aborted get: %v", err)
	if _, err := cms.Namespace(ns).Get(ctx, "any", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("second get: got %v, want the apiserver's 404", err)
	}
}

// SetLatency slows every request; Delay slows the requests it selects.
func TestLatency(t *testing.T) {
	p, ns, cms, ctx := setup(t)
	timed := func() time.Duration {
		begin := time.Now()
		if _, err := cms.Namespace(ns).List(ctx, metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
		return time.Since(begin)
	}
	const latency = 500 * time.Millisecond
	p.SetLatency(latency)
	if d := timed(); d < latency {
		t.Errorf("with latency %v a list took %v", latency, d)
	}
	p.SetLatency(0)
	p.FailNext(1, faultproxy.Match{Verb: "list"}, faultproxy.Delay(latency))
	if d := timed(); d < latency {
		t.Errorf("with a %v delay a list took %v", latency, d)
	}
	if d := timed(); d >= latency {
		t.Errorf("without latency a list took %v", d)
	}
	if got := p.Requests(faultproxy.Match{Verb: "list"}); len(got) != 3 || got[1].Injected != "" {
		t.Errorf("requests: %+v, want 3 lists, all forwarded", got)
	}
}

// When the apiserver cannot be reached, the proxy answers 503 with a Status.
func TestUpstreamUnreachable(t *testing.T) {
	p := faultproxy.Start(t, &rest.Config{Host: "https://127.0.0.1:1"}) // nothing listens on port 1
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := client(t, p.Config()).Resource(configMaps).List(ctx, metav1.ListOptions{})
	if !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("list: got %v, want 503 ServiceUnavailable", err)
	}
}
