package watch

import (
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/testenv"
)

// A clean stop of a Collector recording every resource of a real API
// server gives every stream watching at the stop its stop checkpoint,
// though the cancel ends many of the watches (their request canceled:
// client-go closes them or reports a decode failure) before the stream
// sees the stop. Each round resumes the same journal.
func TestIntegrationStopCheckpointsEveryWatchingStream(t *testing.T) {
	env := testenv.Shared(t)
	st := newMemory(t)
	for round := range 3 {
		// An interval long enough that no progress checkpoint comes
		// before the stop: every checkpoint after beforeStop is the stop's.
		c := newReal(t, env.Config(), st, WithClusterID("stop"), WithAllResources(), WithExclude("pods"), WithLogger(testr.New(t)),
			WithBackoff(20*time.Millisecond, 300*time.Millisecond), WithRediscoveryInterval(0), WithProgressInterval(time.Minute))
		stop := run(t, c)
		waitSync(t, c)
		waitWatching(t, c)
		watching := c.Status()
		beforeStop := time.Now()
		if err := stop(); err != nil {
			t.Fatalf("round %d: Start returned %v", round, err)
		}
		stoppedAt := time.Now()
		var missing []string
		for _, s := range watching {
			recs := streamRecords(t, st, s.StreamID)
			last := recs[len(recs)-1]
			if last.Type != event.TypeCheckpoint || last.ObservedAt.Before(beforeStop) || last.ObservedAt.After(stoppedAt) {
				missing = append(missing, s.Resource.String())
				continue
			}
			if last.Checkpoint.ResourceVersion != s.LastResourceVersion && s.LastResourceVersion != "" {
				// Events recorded at the stop move the resourceVersion
				// on; the checkpoint is at the last one recorded.
				if events := ofType(recs, event.TypeEvent); len(events) == 0 || events[len(events)-1].Resource.ResourceVersion != last.Checkpoint.ResourceVersion {
					t.Errorf("round %d: %s: stop checkpoint at %s; want at the last recorded resourceVersion", round, s.Resource, last.Checkpoint.ResourceVersion)
				}
			}
		}
		if len(missing) > 0 {
			t.Fatalf("round %d: %d of %d watching streams got no stop checkpoint: %v", round, len(missing), len(watching), missing)
		}
		t.Logf("round %d: %d streams, each with its stop checkpoint", round, len(watching))
	}
}
