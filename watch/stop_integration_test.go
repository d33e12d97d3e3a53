package watch

import (
	"context"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/storage"
)

// A clean stop of a Collector recording every resource of a real API
// server has the server confirm every watching stream (a watch of a second
// that the server ends at its timeout) and writes each its stop
// checkpoint, at the stop, though the cancel ends many of the watches
// (their request canceled: client-go closes them or reports a decode
// failure) before the stream sees the stop. Each round resumes the same
// journal.
func TestIntegrationStopCheckpointsEveryWatchingStream(t *testing.T) {
	env := testenv.Shared(t)
	st := newMemory(t)
	for round := range 3 {
		// The server ends each watch at its timeout of 4 s (the interval
		// less a second): once every stream saw that, the stop asks the
		// server to confirm it.
		c := newReal(t, env.Config(), st, WithClusterID("stop"), WithAllResources(), WithExclude("pods"), WithLogger(testr.New(t)),
			WithBackoff(20*time.Millisecond, 300*time.Millisecond), WithRediscoveryInterval(0), WithProgressInterval(5*time.Second))
		started := time.Now()
		stop := run(t, c)
		waitSync(t, c)
		waitWatching(t, c)
		watching := c.Status()
		eventually(t, time.Minute, "a progress checkpoint of every stream", func() bool {
			for _, s := range watching {
				cps := progressOf(streamRecords(t, st, s.StreamID))
				if len(cps) == 0 || cps[len(cps)-1].ObservedAt.Before(started) {
					return false
				}
			}
			return true
		})
		beforeStop := time.Now()
		if err := stop(); err != nil {
			t.Fatalf("round %d: Start returned %v", round, err)
		}
		stoppedAt := time.Now()
		var missing []string
		for _, s := range watching {
			recs := streamRecords(t, st, s.StreamID)
			last := recs[len(recs)-1]
			// The confirming watch lasts a second (the server's timer
			// starts after the Collector's, so at least that).
			if last.Type != event.TypeCheckpoint || last.ObservedAt.Before(beforeStop.Add(stopConfirmTimeout-timeoutSlack)) || last.ObservedAt.After(stoppedAt) {
				missing = append(missing, s.Resource.String())
				continue
			}
			if last.Checkpoint.ResourceVersion != s.LastResourceVersion && s.LastResourceVersion != "" {
				// Events and bookmarks recorded at the stop (the
				// confirming watch's, as other tests write to the
				// shared server) move the resourceVersion on; the
				// checkpoint is at the last one recorded.
				var before string
				for _, r := range recs[:len(recs)-1] {
					if rv, ok := storage.ProgressRV(r); ok {
						before = rv
					}
				}
				if before != last.Checkpoint.ResourceVersion {
					t.Errorf("round %d: %s: stop checkpoint at %s; want at the last recorded resourceVersion, %s", round, s.Resource, last.Checkpoint.ResourceVersion, before)
				}
			}
		}
		if len(missing) > 0 {
			t.Fatalf("round %d: %d of %d watching streams got no stop checkpoint: %v", round, len(missing), len(watching), missing)
		}
		t.Logf("round %d: %d streams, each with its stop checkpoint; the stop took %s", round, len(watching), stoppedAt.Sub(beforeStop))
	}
}

// A Collector stopped within its first seconds, before any watch ended at
// its timeout (so before the server showed that it honors timeouts), still
// has the server confirm the stop: its run is covered up to the stop, not
// "not yet observed" from the baseline on. Nothing in the run waits on
// the clock: the stop comes as soon as the watch is open.
func TestIntegrationShortRunCoveredToItsStop(t *testing.T) {
	env := testenv.Shared(t)
	ns := env.CreateNamespace(t)
	st := newMemory(t)
	c := newReal(t, env.Config(), st, WithClusterID("short"), WithResources("cm"), WithNamespaces(ns), WithLogger(testr.New(t)),
		WithRediscoveryInterval(0))
	stop := run(t, c)
	waitSync(t, c)
	waitWatching(t, c)
	during := time.Now()
	if err := stop(); err != nil {
		t.Fatalf("Start returned %v", err)
	}
	stoppedAt := time.Now()
	id := c.Status()[0].StreamID
	recs := streamRecords(t, st, id)
	last := recs[len(recs)-1]
	if last.Type != event.TypeCheckpoint || !last.ObservedAt.After(during) || last.ObservedAt.After(stoppedAt) {
		t.Fatalf("last record %s at %s; want the stop checkpoint, after %s", last.Type, last.ObservedAt, during)
	}
	cov, err := storage.CoverageAt(context.Background(), st, id, during)
	if err != nil || !cov.Covered {
		t.Errorf("coverage at %s, in the run before its stop: %+v, %v; want covered", during, cov, err)
	}
	t.Logf("stop took %s", stoppedAt.Sub(during))
}
