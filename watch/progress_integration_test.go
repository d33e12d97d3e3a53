package watch

// Progress checkpoints and the relist after an outage, against a real
// kube-apiserver (krplytest/testenv), with the fault proxy where a fault is
// needed.

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/krplytest/testenv/faultproxy"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
	"k8s.io/client-go/rest"
)

// A quiet stream on a real apiserver: the server ends each watch at the
// timeout it asked for, and each end is a progress checkpoint, one interval
// or less after the evidence before it. WaitForProgress then makes a
// snapshot of "now" complete. It runs in parallel with the other tests.
func TestIntegrationQuietStreamProgress(t *testing.T) {
	t.Parallel()
	n := newNSTest(t, "idle")
	ns, st, id := n.ns, n.st, n.id
	c := n.record(t, n.env.Config(), WithProgressInterval(2*time.Second))
	eventually(t, 30*time.Second, "three progress checkpoints", func() bool { return len(progressOf(streamRecords(t, st, id))) >= 3 })

	recs := streamRecords(t, st, id)
	evidence := []event.Record{ofType(recs, event.TypeBaseline)[1]}
	evidence = append(evidence, progressOf(recs)...)
	for i := 1; i < len(evidence); i++ {
		if d := evidence[i].ObservedAt.Sub(evidence[i-1].ObservedAt); d > 2*time.Second {
			t.Fatalf("evidence %d came %s after the one before, want at most the interval (2s)", i, d)
		}
	}
	if n := len(realEvents(recs)); n != 0 {
		t.Fatalf("%d events on a quiet stream", n)
	}
	if n := len(ofType(recs, event.TypeGap)); n != 0 {
		t.Fatalf("%d gaps on a quiet stream", n)
	}

	now := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitForProgress(ctx, now); err != nil {
		t.Fatal(err)
	}
	m, err := materialize.New(st)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := m.Snapshot(ctx, materialize.Scope{ClusterID: "it", Namespaces: []string{ns}}, now)
	if err != nil || !snap.Complete || len(snap.Objects) != 1 {
		t.Fatalf("snapshot of now after WaitForProgress: %+v, %v; want complete with one object", snap, err)
	}
}

// A half-open connection vouches for nothing: while the fault proxy
// swallows everything the apiserver sends on the watch (its end at the
// timeout included), no checkpoint is written; the Collector abandons the
// silent watch after its timeout plus a grace period and the evidence
// resumes on a new one. It runs in parallel with the other tests.
func TestIntegrationHalfOpenWatchVouchesNothing(t *testing.T) {
	t.Parallel()
	n := newNSTest(t, "idle")
	ns, st, id := n.ns, n.st, n.id
	p := faultproxy.Start(t, n.env.Config())
	n.record(t, p.Config(), WithProgressInterval(2*time.Second))
	// The server has ended a watch at its timeout: the Collector knows it
	// honors timeouts.
	eventually(t, 30*time.Second, "a progress checkpoint", func() bool { return len(progressOf(streamRecords(t, st, id))) >= 1 })

	watchCM := faultproxy.Match{Verb: "watch", Resource: "configmaps", Namespace: ns}
	var stalledAt time.Time
	var watchesBefore int
	eventually(t, 30*time.Second, "a watch to stall", func() bool {
		watchesBefore = p.Count(watchCM)
		stalledAt = time.Now()
		return p.StallWatches(watchCM) == 1
	})
	// The stalled watch asked for a 1s timeout; it is abandoned 1s + 2s
	// after it opened. Meanwhile nothing advances the evidence.
	time.Sleep(1500 * time.Millisecond)
	if ss, err := st.StreamStatus(context.Background(), id); err != nil || ss.CheckpointAt.After(stalledAt) {
		t.Fatalf("during the stall: stream status %+v, %v; want no evidence after the stall began at %s", ss, err, stalledAt)
	}
	cov, err := storage.CoverageAt(context.Background(), st, id, stalledAt)
	if err != nil || cov.Covered || !strings.Contains(cov.Reason, "not yet observed") {
		t.Fatalf("coverage at the stall = %+v, %v; want not yet observed", cov, err)
	}
	var reconnectedAt time.Time
	eventually(t, 30*time.Second, "a new watch", func() bool {
		reconnectedAt = time.Now()
		return p.Count(watchCM) > watchesBefore
	})
	if d := reconnectedAt.Sub(stalledAt); d > 4*time.Second {
		t.Errorf("the silent watch was abandoned %s after the stall, want within its timeout plus 2s", d)
	}
	eventually(t, 30*time.Second, "progress after the stall", func() bool {
		ss, err := st.StreamStatus(context.Background(), id)
		return err == nil && ss.CheckpointAt.After(reconnectedAt)
	})
	for _, cp := range ofType(streamRecords(t, st, id), event.TypeCheckpoint) {
		if cp.ObservedAt.After(stalledAt) && cp.ObservedAt.Before(reconnectedAt.Add(-100*time.Millisecond)) {
			t.Fatalf("checkpoint %+v at %s, during the stall (%s to %s)", cp.Checkpoint, cp.ObservedAt, stalledAt, reconnectedAt)
		}
	}
	if n := len(ofType(streamRecords(t, st, id), event.TypeGap)); n != 0 {
		t.Fatalf("%d gaps: the watch resumed from its resourceVersion, nothing was lost", n)
	}
}

// requestLog records the configmaps requests a client sends: when each
// began and when its answer (status line and headers) came.
type requestLog struct {
	mu      sync.Mutex
	entries []loggedRequest
}

type loggedRequest struct {
	start, answered time.Time
	query           url.Values
	status          int
}

// relist reports whether the request takes a baseline: a list, or a
// WatchList (a watch with sendInitialEvents).
func (r loggedRequest) relist() bool {
	return r.query.Get("watch") != "true" || r.query.Get("sendInitialEvents") == "true"
}

func (r loggedRequest) String() string {
	return fmt.Sprintf("%s %s -> %d at %s", r.start.Format("15:04:05.000"), r.query.Encode(), r.status, r.answered.Format("15:04:05.000"))
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func (l *requestLog) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	prev := cfg.WrapTransport
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		if prev != nil {
			rt = prev(rt)
		}
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			start := time.Now()
			resp, err := rt.RoundTrip(req)
			if strings.HasSuffix(req.URL.Path, "/configmaps") {
				e := loggedRequest{start: start, answered: time.Now(), query: req.URL.Query()}
				if err == nil {
					e.status = resp.StatusCode
				}
				l.mu.Lock()
				l.entries = append(l.entries, e)
				l.mu.Unlock()
			}
			return resp, err
		})
	}
	return cfg
}

func (l *requestLog) all() []loggedRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]loggedRequest(nil), l.entries...)
}

// relistsAfter returns the baseline requests that began after since, and
// the last watch (not a WatchList) that began before the first of them:
// the one answered with 410.
func (l *requestLog) relistsAfter(since time.Time) (gone loggedRequest, relists []loggedRequest) {
	all := l.all()
	first := -1
	for i, e := range all {
		if e.relist() && e.start.After(since) {
			if first < 0 {
				first = i
			}
			relists = append(relists, e)
		}
	}
	for i := first - 1; i >= 0; i-- {
		if !all[i].relist() {
			return all[i], relists
		}
	}
	return gone, relists
}

// After an outage that grew the backoff, the 410 that greets the
// Collector when the apiserver answers again makes it relist at once (the
// old code waited another backoff step: 12-17s measured); lists that keep
// failing still back off. It runs in parallel with the other tests:
// mostly it waits for the backoff to grow.
func TestIntegrationRelistAtOnceAfterOutage(t *testing.T) {
	t.Parallel()
	n := newNSTest(t, "a")
	ns, dyn, st, id := n.ns, n.dyn, n.st, n.id
	p := faultproxy.Start(t, n.env.Config())
	log := &requestLog{}
	n.record(t, log.wrap(p.Config()), WithBackoff(DefaultBackoffMin, DefaultBackoffMax), WithWatchList(WatchListOff))
	mustUpdateCM(t, dyn, ns, "a", "1")
	waitJournalMatchesServer(t, dyn, st, ns)
	ss, err := st.StreamStatus(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}

	// The outage: every watch fails for 6s; the backoff grows to 4-8s.
	watchCM := faultproxy.Match{Verb: "watch", Resource: "configmaps", Namespace: ns}
	listCM := faultproxy.Match{Verb: "list", Resource: "configmaps", Namespace: ns}
	outage := time.Now()
	p.FailNext(-1, watchCM, faultproxy.Status(503))
	p.CutWatches(watchCM)
	time.Sleep(6 * time.Second)
	failed := p.Count(watchCM)
	// Back: the first watch gets 410, the first two relists fail.
	p.ClearFaults()
	p.FailNext(1, watchCM, faultproxy.WatchError(410))
	p.FailNext(2, listCM, faultproxy.Status(500))
	eventually(t, 60*time.Second, "the relist", func() bool {
		s, err := st.StreamStatus(context.Background(), id)
		return err == nil && s.Gaps == 1 && s.OpenBaselineID == "" && s.LastBaselineEndAt.After(ss.CheckpointAt)
	})
	t.Logf("%d watches failed during the outage", failed)
	gone, relists := log.relistsAfter(outage)
	if gone.start.IsZero() || gone.query.Get("resourceVersion") != ss.CheckpointRV || len(relists) < 3 {
		t.Fatalf("requests %v: want the 410 watch from %s, then three relists (two failing)", log.all(), ss.CheckpointRV)
	}
	if d := relists[0].start.Sub(gone.answered); d > time.Second {
		t.Fatalf("the relist began %s after the 410; want within 1s", d)
	}
	t.Logf("the relist began %s after the 410", relists[0].start.Sub(gone.answered).Round(time.Millisecond))
	for i := 1; i < 3; i++ {
		if d := relists[i].start.Sub(relists[i-1].answered); d < DefaultBackoffMin/2-10*time.Millisecond {
			t.Fatalf("relist %d began %s after the failed one; want a backoff (at least %s)", i, d, DefaultBackoffMin/2)
		}
	}
}

// A real apiserver restart: the Collector's requests fail while it is
// down (the backoff grows), then the restarted apiserver's watch cache
// answers the watch from the old resourceVersion with 410, and the relist
// begins within 1s of that answer.
func TestIntegrationAPIServerRestartRelistsAtOnce(t *testing.T) {
	env := testenv.Start(t)
	ns := env.CreateNamespace(t)
	dyn := dynFor(t, env.Config())
	mustCreateCM(t, dyn, ns, "a", "0")
	log := &requestLog{}
	st := newMemory(t)
	c := newReal(t, log.wrap(env.Config()), st, realOpts(t, ns, WithBackoff(DefaultBackoffMin, DefaultBackoffMax))...)
	run(t, c)
	waitSync(t, c)
	id := nsStreamID("it", ns)
	mustUpdateCM(t, dyn, ns, "a", "1")
	waitJournalMatchesServer(t, dyn, st, ns)
	// A later write elsewhere, so that the restarted watch cache starts
	// past the Collector's resourceVersion.
	other := env.CreateNamespace(t)
	mustCreateCM(t, dyn, other, "later", "0")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	begin := time.Now()
	if err := env.APIServer.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("apiserver restarted in %s", time.Since(begin).Round(time.Millisecond))
	eventually(t, 90*time.Second, "the relist", func() bool {
		s, err := st.StreamStatus(context.Background(), id)
		return err == nil && s.Gaps == 1 && s.OpenBaselineID == "" && s.LastBaselineEndAt.After(begin)
	})
	gone, relists := log.relistsAfter(begin)
	if gone.start.IsZero() || gone.status != http.StatusOK || len(relists) == 0 {
		t.Fatalf("requests %v: want a watch answered (with 410), then a relist", log.all())
	}
	d := relists[0].start.Sub(gone.answered)
	if d > time.Second {
		t.Fatalf("the relist began %s after the restarted apiserver answered the watch with 410; want within 1s", d)
	}
	for _, e := range log.all() {
		if e.start.After(begin) {
			t.Logf("request %s", e)
		}
	}
	t.Logf("the relist began %s after the 410 (the watch was answered %s after the restart began)", d.Round(time.Millisecond), gone.answered.Sub(begin).Round(time.Millisecond))
	// The gap begins where the Collector's evidence ends: no later than
	// when the apiserver stopped answering (its first refused request). The
	// old watch may end cleanly, with evidence, just after the restart
	// began, as the apiserver shuts down and closes it.
	down := begin
	for _, e := range log.all() { // in the order they ended
		if e.start.After(begin) && e.status == 0 && (down.Equal(begin) || e.start.Before(down)) {
			down = e.start
		}
	}
	gaps := ofType(streamRecords(t, st, id), event.TypeGap)
	if len(gaps) != 1 || !strings.Contains(gaps[0].Gap.Reason, "410") || gaps[0].Gap.From.After(down) {
		t.Fatalf("gaps %+v, want one 410 gap from no later than the apiserver's first refused request (%s)", gaps, down.Format("15:04:05.000000"))
	}
}
