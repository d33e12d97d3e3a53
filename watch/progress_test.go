package watch

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// timedWatches makes every watch of a resource on the fake end the way the
// apiserver ends one: cleanly (its result channel closes), once its
// TimeoutSeconds have passed. It records the options of each call.
type timedWatches struct {
	mu      sync.Mutex
	opts    []metav1.ListOptions
	watches []*apiwatch.FakeWatcher
	gone    int // the next this many watches fail with 410 at once
	// hold: watches that ask for this many timeoutSeconds are left open,
	// for the test to end (0: none).
	hold int64
}

func timeWatches(dyn *dynamicfake.FakeDynamicClient, resource string) *timedWatches {
	tw := &timedWatches{}
	dyn.PrependWatchReactor(resource, func(a clienttesting.Action) (bool, apiwatch.Interface, error) {
		lo := a.(clienttesting.WatchActionImpl).ListOptions
		w := apiwatch.NewFakeWithChanSize(1, false)
		tw.mu.Lock()
		tw.opts = append(tw.opts, lo)
		tw.watches = append(tw.watches, w)
		gone := tw.gone > 0
		if gone {
			tw.gone--
		}
		held := lo.TimeoutSeconds != nil && *lo.TimeoutSeconds == tw.hold
		tw.mu.Unlock()
		if gone {
			w.Error(statusErrorObject(gone410()))
			return true, w, nil
		}
		if lo.TimeoutSeconds != nil && !held {
			time.AfterFunc(time.Duration(*lo.TimeoutSeconds)*time.Second, w.Stop)
		}
		return true, w, nil
	})
	return tw
}

func (tw *timedWatches) count() int {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return len(tw.opts)
}

func (tw *timedWatches) options(n int) metav1.ListOptions {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return tw.opts[n-1]
}

func (tw *timedWatches) failNext(n int) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.gone = n
}

// progressOf returns the checkpoints of recs that repeat the stream's
// resourceVersion (progress checkpoints), without bookmarks'.
func progressOf(recs []event.Record) []event.Record {
	var out []event.Record
	for _, r := range ofType(recs, event.TypeCheckpoint) {
		if !r.Checkpoint.Bookmark {
			out = append(out, r)
		}
	}
	return out
}

// A quiet stream (no events) gets a progress checkpoint each time the
// server ends its watch at the timeout the watch asked for, and its
// coverage follows them: evidence at least every interval.
func TestQuietStreamGetsProgressCheckpoints(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"))
	watches := timeWatches(dyn, "configmaps")
	st, c := startSynced(t, dyn, WithProgressInterval(2*time.Second))
	id := cmStreamID("c1")
	eventually(t, 30*time.Second, "three progress checkpoints", func() bool { return len(progressOf(streamRecords(t, st, id))) >= 3 })

	recs := streamRecords(t, st, id)
	for n := 1; n <= watches.count(); n++ {
		if o := watches.options(n); o.TimeoutSeconds == nil || *o.TimeoutSeconds != 1 {
			t.Fatalf("watch %d asked for timeoutSeconds %v, want 1 (the interval 2s less 1s)", n, o.TimeoutSeconds)
		}
	}
	// Evidence: the baseline's end, then the progress checkpoints, each
	// one interval or less after the one before.
	evidence := []event.Record{ofType(recs, event.TypeBaseline)[1]}
	evidence = append(evidence, progressOf(recs)...)
	for i := 1; i < len(evidence); i++ {
		cp := evidence[i]
		if cp.Checkpoint.ResourceVersion != evidence[0].Baseline.ResourceVersion {
			t.Fatalf("progress checkpoint at %q, want the stream's resourceVersion %q", cp.Checkpoint.ResourceVersion, evidence[0].Baseline.ResourceVersion)
		}
		if d := cp.ObservedAt.Sub(evidence[i-1].ObservedAt); d < 900*time.Millisecond || d > 2*time.Second {
			t.Fatalf("progress checkpoint %d came %s after the evidence before it, want about the watch timeout (1s), at most the interval (2s)", i, d)
		}
	}
	last := evidence[len(evidence)-1].ObservedAt
	cov, err := storage.CoverageAt(context.Background(), st, id, last.Add(-time.Millisecond))
	if err != nil || !cov.Covered || !cov.EvidenceUntil.Equal(last) {
		t.Fatalf("coverage just before the last checkpoint = %+v, %v", cov, err)
	}
	if s := c.Status()[0]; s.LastDurableAt.Before(last) {
		t.Fatalf("status LastDurableAt %s, want at least %s", s.LastDurableAt, last)
	}
}

// A watch the server never ends (a fake that ignores timeoutSeconds, as a
// half-open connection) vouches for nothing: no progress checkpoint is
// written by a timer of the Collector's own.
func TestNoProgressWithoutTheServer(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"))
	watches := controlWatches(dyn, "configmaps")
	st, _ := startSynced(t, dyn, WithProgressInterval(time.Second))
	watches.last(t, 1)
	time.Sleep(2500 * time.Millisecond)
	id := cmStreamID("c1")
	if cps := ofType(streamRecords(t, st, id), event.TypeCheckpoint); len(cps) != 0 {
		t.Fatalf("checkpoints %+v written while the server said nothing", cps)
	}
	end := ofType(streamRecords(t, st, id), event.TypeBaseline)[1]
	cov, err := storage.CoverageAt(context.Background(), st, id, time.Now())
	if err != nil || cov.Covered || !cov.EvidenceUntil.Equal(end.ObservedAt) || !strings.Contains(cov.Reason, "not yet observed") {
		t.Fatalf("coverage now = %+v, %v; want not yet observed, evidence at the baseline's end", cov, err)
	}
}

// A bookmark whose resourceVersion did not change is the server saying
// "nothing changed, as of now": a progress checkpoint, at most two per
// interval.
func TestUnchangedBookmarkIsProgress(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"))
	watches := controlWatches(dyn, "configmaps")
	clk := &steppingClock{}
	st, _ := startSynced(t, dyn, WithClock(clk))
	id := cmStreamID("c1")
	w := watches.last(t, 1)
	w.Action(apiwatch.Bookmark, bookmark("777"))
	eventually(t, 30*time.Second, "the bookmark's checkpoint", func() bool { return len(ofType(streamRecords(t, st, id), event.TypeCheckpoint)) == 1 })
	// Again at once: too soon after the last evidence, nothing new.
	w.Action(apiwatch.Bookmark, bookmark("777"))
	time.Sleep(50 * time.Millisecond)
	if n := len(ofType(streamRecords(t, st, id), event.TypeCheckpoint)); n != 1 {
		t.Fatalf("%d checkpoints after a repeated bookmark at once, want 1", n)
	}
	// Half the default interval later, the same bookmark is progress.
	clk.offset.Store(int64(DefaultProgressInterval/2 + time.Second))
	w.Action(apiwatch.Bookmark, bookmark("777"))
	eventually(t, 30*time.Second, "the progress checkpoint", func() bool { return len(ofType(streamRecords(t, st, id), event.TypeCheckpoint)) == 2 })
	cps := ofType(streamRecords(t, st, id), event.TypeCheckpoint)
	if cp := cps[1]; cp.Checkpoint.ResourceVersion != "777" || !cp.Checkpoint.Bookmark || !cp.ObservedAt.After(cps[0].ObservedAt.Add(DefaultProgressInterval/2)) {
		t.Fatalf("progress checkpoint %+v at %s, want 777 from a bookmark, later than %s", cp.Checkpoint, cp.ObservedAt, cps[0].ObservedAt)
	}
	ss, err := st.StreamStatus(context.Background(), id)
	if err != nil || !ss.CheckpointAt.Equal(cps[1].ObservedAt) {
		t.Fatalf("stream status %+v, %v: the checkpoint did not advance the evidence", ss, err)
	}
}

// A clean stop the server cannot confirm (this fake never ends a watch at
// its timeout) leaves the evidence where the server's ended. An hour later
// the snapshot of "now" is not complete: that time was never observed.
func TestCleanStopThenSnapshotAnHourLaterIsNotYetObserved(t *testing.T) {
	_, st, stop := startModifiedTo50(t, func(dyn *dynamicfake.FakeDynamicClient) dynamic.Interface { return dyn })
	id := cmStreamID("c1")
	beforeStop := time.Now()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()

	// The fake never ends a watch at its timeout: the stop cannot have the
	// server confirm it, and the MODIFIED event is the last evidence.
	recs := streamRecords(t, st, id)
	last := recs[len(recs)-1]
	if last.Type != event.TypeEvent || last.Resource.ResourceVersion != "50" || !last.ObservedAt.Before(beforeStop) {
		t.Fatalf("last record %s %+v at %s, want the event to 50 before the stop at %s", last.Type, last.Resource, last.ObservedAt, beforeStop)
	}
	later := stoppedAt.Add(time.Hour)
	m, err := materialize.New(st, materialize.WithClock(clocktesting.NewFakePassiveClock(later)))
	if err != nil {
		t.Fatal(err)
	}
	scope := materialize.Scope{ClusterID: "c1"}
	snap, err := m.Snapshot(context.Background(), scope, later)
	if err != nil {
		t.Fatal(err)
	}
	want := "not yet observed: evidence reaches to " + last.ObservedAt.UTC().Format(time.RFC3339Nano)
	if snap.Complete || len(snap.Missing) != 1 || snap.Missing[0].StreamID != id || snap.Missing[0].Reason != want {
		t.Fatalf("snapshot an hour after the stop: complete=%v missing %+v; want incomplete, %s: %q", snap.Complete, snap.Missing, id, want)
	}
}

// A clean stop long after the server last vouched for the watch writes no
// checkpoint: the stop cannot vouch for time the server did not.
func TestCleanStopWithoutRecentEvidenceWritesNoCheckpoint(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"))
	watches := controlWatches(dyn, "configmaps")
	st := newMemory(t)
	clk := &steppingClock{}
	_, stop := startCollector(t, dyn, st, WithClock(clk))
	watches.last(t, 1)
	clk.offset.Store(int64(DefaultProgressInterval + time.Second))
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if cps := ofType(streamRecords(t, st, cmStreamID("c1")), event.TypeCheckpoint); len(cps) != 0 {
		t.Fatalf("checkpoints %+v at a stop %s after the last evidence", cps, DefaultProgressInterval+time.Second)
	}
}

// A gap starts at the last durable evidence, progress checkpoints
// included: a time a checkpoint covered stays covered after the 410.
func TestGapStartsAtTheLastProgressCheckpoint(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"))
	watches := timeWatches(dyn, "configmaps")
	st, _ := startSynced(t, dyn, WithProgressInterval(2*time.Second))
	id := cmStreamID("c1")
	eventually(t, 30*time.Second, "two progress checkpoints", func() bool { return len(progressOf(streamRecords(t, st, id))) >= 2 })
	watches.failNext(1)
	eventually(t, 30*time.Second, "the gap", func() bool { return len(ofType(streamRecords(t, st, id), event.TypeGap)) == 1 })
	recs := streamRecords(t, st, id)
	gap := ofType(recs, event.TypeGap)[0]
	var lastBefore event.Record
	for _, r := range recs {
		if r.IngestSeq > gap.IngestSeq {
			break
		}
		if _, ok := storage.ProgressRV(r); ok {
			lastBefore = r
		}
	}
	if lastBefore.Type != event.TypeCheckpoint || !gap.Gap.From.Equal(lastBefore.ObservedAt) {
		t.Fatalf("gap from %s; want from the last progress checkpoint before it (%s at %s)", gap.Gap.From, lastBefore.Type, lastBefore.ObservedAt)
	}
	cov, err := storage.CoverageAt(context.Background(), st, id, gap.Gap.From.Add(-time.Nanosecond))
	if err != nil || !cov.Covered {
		t.Fatalf("coverage just before the gap's From = %+v, %v; want covered", cov, err)
	}
}

// WaitForProgress returns once every stream has evidence after the time,
// so that a snapshot of that time is complete; with a server that never
// vouches it gives up when ctx ends, naming the stream.
func TestWaitForProgress(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"))
	timeWatches(dyn, "configmaps")
	st, c := startSynced(t, dyn, WithProgressInterval(2*time.Second))
	now := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitForProgress(ctx, now); err != nil {
		t.Fatal(err)
	}
	if s := c.Status()[0]; !s.LastDurableAt.After(now) {
		t.Fatalf("status %+v: evidence not after %s", s, now)
	}
	m, err := materialize.New(st)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := m.Snapshot(context.Background(), materialize.Scope{ClusterID: "c1"}, now)
	if err != nil || !snap.Complete {
		t.Fatalf("snapshot at %s after WaitForProgress: %+v, %v; want complete", now, snap, err)
	}

	quiet := fakeDynamic(configMap("a", "one", "1"))
	controlWatches(quiet, "configmaps")
	_, c2 := startSynced(t, quiet, WithProgressInterval(time.Second))
	short, cancelShort := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancelShort()
	err = c2.WaitForProgress(short, time.Now())
	if err == nil || !strings.Contains(err.Error(), cmStreamID("c1")) || !strings.Contains(err.Error(), "evidence reaches to") {
		t.Fatalf("WaitForProgress with a silent server = %v; want ctx's error naming the stream", err)
	}
}

// After an outage (connection failures grew the backoff), the first 410
// relists at once; lists that keep failing still back off.
func TestRelistAfterOutageStartsAtOnce(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"))
	watches := controlWatches(dyn, "configmaps")
	var mu sync.Mutex
	var lists []time.Time
	failLists := 0
	dyn.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		lists = append(lists, time.Now())
		if failLists > 0 {
			failLists--
			return true, nil, apierrors.NewInternalError(errors.New("etcd is sad"))
		}
		return false, nil, nil
	})
	// The outage: watches fail with a network error for a while.
	var outage atomic.Int64
	dyn.PrependWatchReactor("configmaps", func(clienttesting.Action) (bool, apiwatch.Interface, error) {
		if outage.Load() > 0 {
			outage.Add(-1)
			return true, nil, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
		}
		return false, nil, nil
	})
	startSynced(t, dyn, WithBackoff(100*time.Millisecond, 5*time.Second))
	w1 := watches.last(t, 1)
	outage.Store(5) // backoff 100ms, 200ms, 400ms, 800ms, 1.6s (jittered down by up to half)
	w1.Stop()
	eventually(t, 30*time.Second, "the outage to pass", func() bool { return outage.Load() == 0 })
	w2 := watches.last(t, 2)
	mu.Lock()
	before := len(lists)
	mu.Unlock()
	goneAt := time.Now()
	w2.Error(statusErrorObject(gone410()))
	eventually(t, 30*time.Second, "the relist", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(lists) > before
	})
	mu.Lock()
	relistAfter := lists[before].Sub(goneAt)
	mu.Unlock()
	if relistAfter > 100*time.Millisecond {
		t.Fatalf("the relist began %s after the 410; want at once, not after the backoff the outage grew", relistAfter)
	}

	// A 410 again, then lists that fail: they back off.
	mu.Lock()
	failLists = 3
	before = len(lists)
	mu.Unlock()
	watches.last(t, 3).Error(statusErrorObject(gone410()))
	eventually(t, 30*time.Second, "four lists", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(lists) >= before+4
	})
	mu.Lock()
	defer mu.Unlock()
	for i := before + 1; i < before+4; i++ {
		if d := lists[i].Sub(lists[i-1]); d < 45*time.Millisecond {
			t.Fatalf("list %d came %s after the failed one before it; want a backoff (at least half of 100ms)", i-before, d)
		}
	}
}

// A clean stop has a server known to end watches at their timeout confirm
// it: a watch from the stream's resourceVersion with a timeout of a
// second, whose events (here one the canceled watch never delivered) are
// recorded, and whose end at its timeout vouches for the time up to the
// stop: a checkpoint then, after the event.
func TestCleanStopConfirmedByTheServerCoversTheStop(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"))
	watches := timeWatches(dyn, "configmaps")
	st := newMemory(t)
	c, stop := startCollector(t, dyn, st, WithProgressInterval(3*time.Second))
	id := cmStreamID("c1")
	// A progress checkpoint: the server ended a watch at its timeout.
	eventually(t, 30*time.Second, "a progress checkpoint", func() bool { return len(progressOf(streamRecords(t, st, id))) >= 1 })
	rv := c.Status()[0].LastResourceVersion
	// The test ends the confirming watch itself, after its event: a timer
	// could end it first.
	watches.mu.Lock()
	watches.hold = 1
	watches.mu.Unlock()
	beforeStop := time.Now()
	opened := watches.count()
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	// The confirming watch is the first with a timeout of one second (the
	// Collector's own ask for two).
	var confirm int
	var confirmOpened time.Time
	eventually(t, 30*time.Second, "the confirming watch", func() bool {
		for n := opened + 1; n <= watches.count(); n++ {
			if o := watches.options(n); o.TimeoutSeconds != nil && *o.TimeoutSeconds == 1 {
				confirm, confirmOpened = n, time.Now()
				return true
			}
		}
		return false
	})
	if o := watches.options(confirm); o.ResourceVersion != rv || !o.AllowWatchBookmarks {
		t.Fatalf("confirming watch %+v; want from %s with bookmarks", o, rv)
	}
	watches.mu.Lock()
	w := watches.watches[confirm-1]
	watches.mu.Unlock()
	w.Modify(withRV(configMap("a", "one", "2"), "70"))
	// The server ends it at its timeout of a second.
	time.Sleep(time.Until(confirmOpened.Add(stopConfirmTimeout)))
	w.Stop()
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	recs := streamRecords(t, st, id)
	ev, last := recs[len(recs)-2], recs[len(recs)-1]
	if ev.Type != event.TypeEvent || ev.Resource.ResourceVersion != "70" || ev.ObservedAt.Before(beforeStop) {
		t.Fatalf("record before the last %s %+v at %s; want the event to 70 the confirming watch delivered, after %s", ev.Type, ev.Resource, ev.ObservedAt, beforeStop)
	}
	if last.Type != event.TypeCheckpoint || last.Checkpoint.ResourceVersion != "70" || last.ObservedAt.Before(ev.ObservedAt.Add(500*time.Millisecond)) || last.ObservedAt.After(stoppedAt) {
		t.Fatalf("last record %s %+v at %s; want the stop's checkpoint at 70, when the confirming watch ended (after %s, by %s)", last.Type, last.Checkpoint, last.ObservedAt, ev.ObservedAt, stoppedAt)
	}
	cov, err := storage.CoverageAt(context.Background(), st, id, ev.ObservedAt.Add(100*time.Millisecond))
	if err != nil || !cov.Covered || cov.Watermark != "70" {
		t.Fatalf("coverage after the event, before the stop = %+v, %v; want covered at 70", cov, err)
	}
}

// Appended is closed once the Collector made a new record durable: the
// record is in the store when a reader woken by it looks.
func TestAppendedWakesAfterDurable(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"))
	watches := controlWatches(dyn, "configmaps")
	st, c := startSynced(t, dyn)
	id := cmStreamID("c1")
	w := watches.last(t, 1)
	for i, rv := range []string{"50", "51"} {
		before := len(ofType(streamRecords(t, st, id), event.TypeEvent))
		appended := c.Appended()
		modified := configMap("a", "one", "v"+rv)
		modified.SetResourceVersion(rv)
		w.Modify(modified)
		// Woken without polling until the event's record is there (an
		// earlier wake may be another record, a progress checkpoint).
		deadline := time.After(30 * time.Second)
		for len(ofType(streamRecords(t, st, id), event.TypeEvent)) != before+1 {
			select {
			case <-appended:
				appended = c.Appended()
			case <-deadline:
				t.Fatalf("change %d: Appended not closed with the event's record durable 30 s after the event", i)
			}
		}
	}
}

// A stop that comes between two watches — the last one ended at its
// timeout, the request of the next is still opening — is a clean stop
// too: the server confirms it, and the stream gets its stop checkpoint.
func TestCleanStopBetweenTwoWatches(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"))
	var mu sync.Mutex
	calls := 0
	opening, release := make(chan struct{}), make(chan struct{})
	dyn.PrependWatchReactor("configmaps", func(a clienttesting.Action) (bool, apiwatch.Interface, error) {
		mu.Lock()
		calls++
		n := calls
		mu.Unlock()
		if n == 2 {
			close(opening)
			<-release
			return true, nil, context.Canceled // as client-go's request, canceled by the stop
		}
		w := apiwatch.NewFakeWithChanSize(1, false)
		if lo := a.(clienttesting.WatchActionImpl).ListOptions; lo.TimeoutSeconds != nil {
			time.AfterFunc(time.Duration(*lo.TimeoutSeconds)*time.Second, w.Stop)
		}
		return true, w, nil
	})
	st := newMemory(t)
	_, stop := startCollector(t, dyn, st, WithProgressInterval(2*time.Second))
	select {
	case <-opening: // the first watch ended at its timeout
	case <-time.After(30 * time.Second):
		t.Fatal("no second watch")
	}
	beforeStop := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	time.Sleep(50 * time.Millisecond)
	close(release)
	if err := <-stopped; err != nil {
		t.Fatal(err)
	}
	stoppedAt := time.Now()
	recs := streamRecords(t, st, cmStreamID("c1"))
	last := recs[len(recs)-1]
	if last.Type != event.TypeCheckpoint || last.ObservedAt.Before(beforeStop.Add(stopConfirmTimeout-timeoutSlack)) || last.ObservedAt.After(stoppedAt) {
		t.Fatalf("last record %s %+v at %s; want the stop's checkpoint, confirmed a second after %s", last.Type, last.Checkpoint, last.ObservedAt, beforeStop)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 3 {
		t.Fatalf("%d watches; want 3, the third the stop's confirmation", calls)
	}
}
