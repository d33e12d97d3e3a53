package truth

// Focused tests for bugs TestTruth found in the packages it exercises. Each
// isolates one bug on the real control plane and names the seed of the run
// that found it; they failed until the watch package was fixed (commits
// "watch: a relist infers deletions from the journal …" and "watch: a
// WatchList baseline's initial-events-end checkpoint is observed at its
// end's time …"), and keep the bugs from coming back.

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/krplytest/testenv/faultproxy"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/watch"
	"k8s.io/client-go/rest"
)

// TestEmptyInitialBaselineInfersDeletions: a stream whose initial baseline
// is empty (a new namespace) records an object from its watch, loses it
// during an outage that ends with 410, and must infer its deletion after
// the relist. Found by TestTruth (seed 418094381): the relist after the
// 410 said "initial" and inferred nothing, because the stream remembers
// having history only from baseline items, never from watch events — so
// ObjectAt kept the deleted object alive forever.
func TestEmptyInitialBaselineInfersDeletions(t *testing.T) {
	env := testenv.Start(t)
	ns := env.CreateNamespace(t)
	p := faultproxy.Start(t, env.Config())
	o := &Oracle{}
	w, err := newWriter(o, clusterID, writerUser{testenv.UserAdmin, env.Config()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st := memory.New()
	t.Cleanup(func() { _ = st.Close() }) // after the Collector stopped (cleanups run last first)
	c := configMapCollector(t, p.Config(), st, ns)
	runSynced(t, c)
	cm := workloadKinds()[0]
	created, err := w.create(ctx, cm, ns, "doomed", rand.New(rand.NewSource(1)))
	if err != nil {
		t.Fatal(err)
	}
	obj := created.Object
	stream := event.Stream{ClusterID: clusterID, Version: "v1", Resource: "configmaps", Namespace: ns}.ID()
	eventually(t, "the create is recorded", func() bool {
		r, err := st.LatestAt(ctx, obj, time.Now())
		return err == nil && r.Resource.ResourceVersion == created.ResourceVersion
	})

	watches := faultproxy.Match{Verb: "watch", Resource: "configmaps", Namespace: ns}
	p.FailNext(-1, watches, faultproxy.Status(503))
	p.CutWatches(watches)
	if _, err := w.delete(ctx, cm, created, rand.New(rand.NewSource(2))); err != nil {
		t.Fatal(err)
	}
	p.ClearFaults()
	p.FailNext(1, watches, faultproxy.WatchError(410))
	eventually(t, "a relist after the 410", func() bool {
		s, err := st.StreamStatus(ctx, stream)
		return err == nil && s.Gaps == 1 && s.LastBaselineEndAt.After(s.LastGapAt)
	})
	m, err := materialize.New(st)
	if err != nil {
		t.Fatal(err)
	}
	// A time is covered once the stream's evidence passed it: wait for the
	// next progress checkpoint after now.
	now := time.Now()
	wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := c.WaitForProgress(wctx, now); err != nil {
		t.Fatalf("waiting for the stream's evidence to pass %s: %v", now, err)
	}
	state, err := m.ObjectAt(ctx, obj, now)
	if err != nil {
		t.Fatal(err)
	}
	if state.Exists || !state.Covered {
		t.Fatalf("ObjectAt after the relist: exists=%v covered=%v (last record %s %s rv=%s synthetic=%v); the deletion during the gap was not inferred",
			state.Exists, state.Covered, state.Record.WatchType, state.Record.Resource.ObjectKey(), state.Record.Resource.ResourceVersion, state.Record.Synthetic)
	}
	if state.Inferred == nil {
		t.Fatalf("the deletion is not marked inferred: %s synthetic=%v", state.Record.WatchType, state.Record.Synthetic)
	}
}

// slowStore delays every Append, so a Collector always holds records that
// are not yet committed.
type slowStore struct {
	storage.Store
	delay   time.Duration
	appends atomic.Int64
}

func (s *slowStore) Append(ctx context.Context, recs []event.Record) (storage.AppendResult, error) {
	s.appends.Add(1)
	select {
	case <-time.After(s.delay):
	case <-ctx.Done():
		return storage.AppendResult{}, ctx.Err()
	}
	return s.Store.Append(ctx, recs)
}

// TestCleanStopLongAfterStart: a Collector stopped cleanly while it commits
// (here more than ten seconds after Start) must commit what it holds and
// return nil. Found by TestTruth (seed 418094381, a collector restart 16 s
// into the run): Start returned "watch: store failed: append 2 records:
// sqlite: append: begin: context deadline exceeded". Two causes in
// watch/collector.go and watch/committer.go: the ten-second budget of the
// final commit (drainCtx) is counted from Start, not from the stop; and an
// Append in flight when the stop comes runs on the committer's context,
// which the stop cancels, so it fails with "context canceled" — reported
// as a store failure although the store is fine.
func TestCleanStopLongAfterStart(t *testing.T) {
	env := testenv.Start(t)
	ns := env.CreateNamespace(t)
	o := &Oracle{}
	w, err := newWriter(o, clusterID, writerUser{testenv.UserAdmin, env.Config()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st := &slowStore{Store: memory.New(), delay: 200 * time.Millisecond}
	t.Cleanup(func() { _ = st.Close() }) // after the Collector stopped (cleanups run last first)
	stop := runSynced(t, configMapCollector(t, env.Config(), st, ns))
	time.Sleep(11 * time.Second)
	before := st.appends.Load()
	cm := workloadKinds()[0]
	rnd := rand.New(rand.NewSource(1))
	for i := 0; i < 20; i++ {
		if _, err := w.create(ctx, cm, ns, fmt.Sprintf("cm-%d", i), rnd); err != nil {
			t.Fatal(err)
		}
	}
	// The watch received some, and the slow store is committing them.
	eventually(t, "an Append of the new events", func() bool { return st.appends.Load() > before })
	if err := stop(); err != nil {
		t.Fatalf("clean stop %v after Start: %v", 11*time.Second, err)
	}
	stream := event.Stream{ClusterID: clusterID, Version: "v1", Resource: "configmaps", Namespace: ns}.ID()
	recs, err := st.Records(ctx, storage.Query{StreamID: stream, Types: []event.RecordType{event.TypeEvent}})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs.Records) == 0 {
		t.Fatal("nothing committed")
	}
}

// runSynced starts c, waits until it synced, and stops it when the test
// ends; stop stops it earlier and returns what Start returned.
func runSynced(t *testing.T, c *watch.Collector) (stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- c.Start(ctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			err = <-done
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	syncCtx, cancelSync := context.WithTimeout(context.Background(), time.Minute)
	defer cancelSync()
	if err := c.WaitForSync(syncCtx); err != nil {
		t.Fatal(err)
	}
	return stop
}

// configMapCollector records the ConfigMaps of one namespace.
func configMapCollector(t *testing.T, cfg *rest.Config, st storage.Store, ns string) *watch.Collector {
	t.Helper()
	c, err := watch.NewCollectorForConfig(cfg, st, watch.WithClusterID(clusterID), watch.WithResources("configmaps"), watch.WithNamespaces(ns),
		watch.WithBackoff(20*time.Millisecond, 500*time.Millisecond), watch.WithRediscoveryInterval(0), watch.WithLogger(logr.Discard()))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting until %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestWatchListBaselineCheckpointStampedAtItsEnd: a baseline taken with a
// WatchList writes its end and the initial-events-end checkpoint in one
// batch; the checkpoint, which becomes the stream's durable progress, must
// not be observed before the end of the baseline it belongs to. Found by
// TestTruth (seed 725112559, under -race): the checkpoint is stamped a few
// microseconds before the end record, so ObservedAt runs backwards within
// the batch, StreamStatus.CheckpointAt precedes LastBaselineEndAt, and a
// Collector restarted during the next outage bounds its inferred deletions
// from the checkpoint (10:10:55.232878) rather than from the gap's start
// (10:10:55.232912). (watch/stream.go: watchListBaseline takes its own
// clock reading for the checkpoint; finishBaseline another for the end.)
func TestWatchListBaselineCheckpointStampedAtItsEnd(t *testing.T) {
	env := testenv.Start(t)
	ns := env.CreateNamespace(t)
	ctx := context.Background()
	st := memory.New()
	t.Cleanup(func() { _ = st.Close() }) // after the Collector stopped (cleanups run last first)
	c, err := watch.NewCollectorForConfig(env.Config(), st, watch.WithClusterID(clusterID), watch.WithResources("configmaps"),
		watch.WithNamespaces(ns), watch.WithWatchList(watch.WatchListOn), watch.WithRediscoveryInterval(0), watch.WithLogger(logr.Discard()))
	if err != nil {
		t.Fatal(err)
	}
	runSynced(t, c)
	stream := event.Stream{ClusterID: clusterID, Version: "v1", Resource: "configmaps", Namespace: ns}.ID()
	recs, err := allRecords(ctx, st, storage.Query{StreamID: stream})
	if err != nil {
		t.Fatal(err)
	}
	var end, checkpoint *event.Record
	for i, r := range recs {
		switch {
		case r.Baseline != nil && r.Baseline.Phase == event.BaselineEnd:
			end = &recs[i]
		case r.Checkpoint != nil && r.Checkpoint.InitialEventsEnd:
			checkpoint = &recs[i]
		}
	}
	if end == nil || checkpoint == nil {
		t.Fatalf("no WatchList baseline: end %v, initial-events-end checkpoint %v", end != nil, checkpoint != nil)
	}
	if checkpoint.ObservedAt.Before(end.ObservedAt) {
		t.Errorf("the initial-events-end checkpoint is observed at %s, %v before the end of its baseline (%s)",
			stamp(checkpoint.ObservedAt), end.ObservedAt.Sub(checkpoint.ObservedAt), stamp(end.ObservedAt))
	}
	status, err := st.StreamStatus(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	if status.CheckpointAt.Before(status.LastBaselineEndAt) {
		t.Errorf("StreamStatus: CheckpointAt %s is before LastBaselineEndAt %s", stamp(status.CheckpointAt), stamp(status.LastBaselineEndAt))
	}
}
