package watch

import (
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/utils/clock"

	"github.com/krply/krply/event"
)

// steppingClock is the real clock shifted by an offset the test changes,
// like a wall clock stepped by NTP.
type steppingClock struct {
	clock.RealClock
	offset atomic.Int64
}

func (c *steppingClock) Now() time.Time {
	return time.Now().Add(time.Duration(c.offset.Load()))
}

// A wall clock that steps backwards must not make a stream's ObservedAt
// decrease: the store's time-bounded queries rely on it never doing so.
func TestObservedAtNeverDecreasesWhenTheClockStepsBack(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "keep", "1"))
	watches := controlWatches(dyn, "configmaps")
	st := newMemory(t)
	clk := &steppingClock{}
	c, err := NewCollector(dyn, fakeDiscovery(), st, testOpts(t, WithClock(clk))...)
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	waitSync(t, c)
	id := cmStreamID("c1")
	w := watches.last(t, 1)

	first := configMap("a", "keep", "2")
	first.SetResourceVersion("50")
	w.Modify(first)
	eventually(t, 30*time.Second, "the first MODIFIED event", func() bool { return len(ofType(streamRecords(t, st, id), event.TypeEvent)) == 2 })

	clk.offset.Store(int64(-time.Hour))
	second := configMap("a", "keep", "3")
	second.SetResourceVersion("51")
	w.Modify(second)
	eventually(t, 30*time.Second, "the second MODIFIED event", func() bool { return len(ofType(streamRecords(t, st, id), event.TypeEvent)) == 3 })

	recs := streamRecords(t, st, id)
	for i := 1; i < len(recs); i++ {
		if recs[i].ObservedAt.Before(recs[i-1].ObservedAt) {
			t.Fatalf("record %d (%s %s) observed at %s, before record %d at %s", i, recs[i].Type, recs[i].WatchType,
				recs[i].ObservedAt, i-1, recs[i-1].ObservedAt)
		}
	}
	events := ofType(recs, event.TypeEvent)
	if got := events[2].Resource.ResourceVersion; got != "51" {
		t.Fatalf("last event resourceVersion = %q, want 51", got)
	}
}
