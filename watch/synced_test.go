package watch

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
)

// wantNotSynced fails t unless err wraps ErrNotSynced and says every part.
func wantNotSynced(t *testing.T, err error, parts ...string) {
	t.Helper()
	if !errors.Is(err, ErrNotSynced) {
		t.Fatalf("Synced = %v, want an error wrapping ErrNotSynced", err)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Fatalf("Synced = %q, want it to say %q", err, p)
		}
	}
}

// eventuallySynced waits until Synced's answer satisfies ok and returns it.
func eventuallySynced(t *testing.T, c *Collector, what string, ok func(error) bool) error {
	t.Helper()
	var err error
	eventually(t, 30*time.Second, what, func() bool {
		err = c.Synced()
		return ok(err)
	})
	return err
}

// Synced is an error before Start, while the initial baseline is listed and
// after Start returned, and nil once the stream is synced and watching; it
// is safe to call all along, concurrently with Start.
func TestSyncedFollowsTheCollectorsLife(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"))
	release := make(chan struct{})
	dyn.PrependReactor("list", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		<-release // hold the initial baseline until the test has looked
		return false, nil, nil
	})
	c, err := NewCollector(dyn, fakeDiscovery(), newMemory(t), testOpts(t)...)
	if err != nil {
		t.Fatal(err)
	}
	wantNotSynced(t, c.Synced(), "not started")

	// Probes from other goroutines all along (the race detector checks
	// them against Start).
	var probes atomic.Int64
	probeCtx, stopProbes := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for probeCtx.Err() == nil {
				_ = c.Synced()
				probes.Add(1)
				time.Sleep(time.Millisecond)
			}
		}()
	}
	defer func() { stopProbes(); wg.Wait() }()

	stop := run(t, c)
	id := cmStreamID("c1")
	err = eventuallySynced(t, c, "the stream listing", func(err error) bool { return err != nil && strings.Contains(err.Error(), "listing") })
	wantNotSynced(t, err, "1 of 1 streams", id+" is listing (taking its initial baseline)")
	close(release)

	eventuallySynced(t, c, "Synced nil", func(err error) bool { return err == nil })
	for _, s := range c.Status() {
		if !s.Synced || s.State != StateWatching {
			t.Fatalf("Synced is nil while a stream is %+v", s)
		}
	}
	if err := c.WaitForSync(context.Background()); err != nil {
		t.Fatalf("WaitForSync = %v after Synced was nil", err)
	}

	if err := stop(); err != nil {
		t.Fatalf("Start = %v", err)
	}
	err = c.Synced()
	wantNotSynced(t, err, "stopped")
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Synced = %v, want it to wrap Start's end (context.Canceled)", err)
	}
	if probes.Load() == 0 {
		t.Fatal("no concurrent probe ran")
	}
}

// A stream the server denies (403) makes Synced an error naming the stream
// and the denial, before its first baseline and again when the watch is
// denied later; Synced turns nil whenever access returns.
func TestSyncedNamesDeniedStream(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "one", "1"))
	deny := denyConfigMapLists(dyn)
	watches := controlWatches(dyn, "configmaps")
	c, _ := NewCollector(dyn, fakeDiscovery(), newMemory(t), testOpts(t)...)
	run(t, c)
	id := cmStreamID("c1")
	unavailable := func(err error) bool { return err != nil && strings.Contains(err.Error(), "unavailable") }

	err := eventuallySynced(t, c, "unavailable before the first baseline", unavailable)
	wantNotSynced(t, err, "1 of 1 streams", id+" is unavailable (403 Forbidden", "RBAC: denied")

	deny.Store(false)
	eventuallySynced(t, c, "Synced nil once access returned", func(err error) bool { return err == nil })

	deny.Store(true)
	watches.last(t, 1).Error(statusErrorObject(forbidden))
	err = eventuallySynced(t, c, "unavailable after the watch was denied", unavailable)
	wantNotSynced(t, err, id+" is unavailable (403 Forbidden")

	deny.Store(false)
	eventuallySynced(t, c, "Synced nil again", func(err error) bool { return err == nil })
}

// A configured resource the server does not serve yet keeps Synced an error
// naming it, though WaitForSync (which waits for the streams it has) is nil.
func TestSyncedNamesPendingResource(t *testing.T) {
	c, err := NewCollector(fakeDynamic(), fakeDiscovery(), newMemory(t),
		testOpts(t, WithResources("cm", "widgets.example.com"), WithRediscoveryInterval(time.Hour))...)
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	waitSync(t, c)
	eventually(t, 30*time.Second, "the configmaps stream watching", func() bool {
		for _, s := range c.Status() {
			if s.StreamID == cmStreamID("c1") {
				return s.Synced && s.State == StateWatching
			}
		}
		return false
	})
	wantNotSynced(t, c.Synced(), "1 of 2 streams", `pending: resource "widgets.example.com" is not served by the API server`)
}

// Each state a stream can be in without recording has its own reason: a
// stream whose baseline is durable but whose watch is not open yet is not
// relisting after a gap (Synced said so right after WaitForSync).
func TestNotRecordingReasons(t *testing.T) {
	since := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		st   StreamStatus
		want string
	}{
		{StreamStatus{StreamID: "s", State: StateWatching, Synced: true}, ""},
		{StreamStatus{StreamID: "s", State: StateRemoved}, ""},
		{StreamStatus{StreamID: "s", State: StateStarting}, "s is starting (reading its durable state)"},
		{StreamStatus{StreamID: "s", State: StateListing}, "s is listing (taking its initial baseline)"},
		{StreamStatus{StreamID: "s", State: StateListing, Synced: true, Covered: true, CoveredSince: since}, "s is listing (opening its watch after its baseline)"},
		{StreamStatus{StreamID: "s", State: StateListing, Synced: true}, "s is listing (relisting after a gap)"},
		{StreamStatus{StreamID: "s", State: StateWatching}, "s is watching (watch resumed from the checkpoint, not confirmed yet)"},
		{StreamStatus{StreamID: "s", State: StateBackoff, DegradedReason: "500"}, "s is backoff (500)"},
	} {
		if got := notRecording(tc.st); got != tc.want {
			t.Errorf("notRecording(%s synced=%v covered=%v) = %q, want %q", tc.st.State, tc.st.Synced, tc.st.Covered, got, tc.want)
		}
	}
}
