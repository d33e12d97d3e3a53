package watch

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	apiwatch "k8s.io/apimachinery/pkg/watch"
)

// gone410 ends a watch with 410 Gone.
func gone410() *apierrors.StatusError {
	return apierrors.NewResourceExpired("too old resource version: 10 (20)")
}

func inferredOf(recs []event.Record) []event.Record {
	var out []event.Record
	for _, r := range ofType(recs, event.TypeEvent) {
		if r.Inferred != nil {
			out = append(out, r)
		}
	}
	return out
}

// An empty initial baseline, an object known only from a watch event, lost
// during a gap: the relist after the 410 is a relist (the journal has the
// stream's records), infers the object's deletion, and its end closes the
// gap.
func TestEmptyInitialBaselineThenWatchEventInfersDeletion(t *testing.T) {
	dyn := fakeDynamic()
	watches := controlWatches(dyn, "configmaps")
	st, _ := startSynced(t, dyn)
	id := cmStreamID("c1")
	doomed := configMap("a", "doomed", "1")
	// No newer than the relist's list (the fake's tracker is at 1), as a
	// real server's list after the event is: a version newer than the
	// list is another recorder's, whose deletion is not inferred (see
	// TestIntegrationReplicaRelistKeepsNewerObjects).
	doomed.SetResourceVersion("1")
	watches.last(t, 1).Add(doomed) // never in the fake's tracker: absent from the relist
	eventually(t, 30*time.Second, "the ADDED event", func() bool { return len(ofType(streamRecords(t, st, id), event.TypeEvent)) == 1 })
	watches.last(t, 1).Error(statusErrorObject(gone410()))
	eventually(t, 30*time.Second, "the relist", func() bool { return len(ofType(streamRecords(t, st, id), event.TypeBaseline)) == 4 })

	recs := streamRecords(t, st, id)
	gaps := ofType(recs, event.TypeGap)
	if len(gaps) != 1 {
		t.Fatalf("%d gaps, want 1", len(gaps))
	}
	end := ofType(recs, event.TypeBaseline)[3]
	if end.Baseline.Phase != event.BaselineEnd || end.Baseline.Reason != "relist after gap" || end.Baseline.ClosesGap != gaps[0].EventID {
		t.Fatalf("relist end = %+v; want reason \"relist after gap\" closing gap %s", end.Baseline, gaps[0].EventID)
	}
	if first := ofType(recs, event.TypeBaseline)[1]; first.Baseline.Reason != "initial" || first.Baseline.ClosesGap != "" {
		t.Fatalf("initial end = %+v", first.Baseline)
	}
	dels := inferredOf(recs)
	if len(dels) != 1 || dels[0].Resource.Name != "doomed" || dels[0].Inferred.Reason != "absent from relist" ||
		!dels[0].Inferred.From.Equal(gaps[0].Gap.From) || len(dels[0].Object) == 0 {
		t.Fatalf("inferred deletions = %+v; want one of doomed, from the gap's From, with its body", dels)
	}
	coveredAfter(t, st, id, watches)
	m, err := materialize.New(st)
	if err != nil {
		t.Fatal(err)
	}
	state, err := m.ObjectAt(context.Background(), storage.ObjectIDOf(dels[0]), end.ObservedAt)
	if err != nil {
		t.Fatal(err)
	}
	if state.Exists || !state.Covered || state.Inferred == nil {
		t.Fatalf("ObjectAt after the relist: exists=%v covered=%v inferred=%v; want an inferred deletion", state.Exists, state.Covered, state.Inferred)
	}
}

// An object deleted and re-created under the same name during a gap: the
// relist writes an inferred deletion of the old UID right before the new
// object's item, so the name is alive as the new object and its history
// shows the old object's end.
func TestRelistInfersDeletionOfReplacedUID(t *testing.T) {
	dyn := fakeDynamic(configMap("a", "same", "old"), configMap("a", "other", "x"))
	watches := controlWatches(dyn, "configmaps")
	st, _ := startSynced(t, dyn)
	id := cmStreamID("c1")
	w1 := watches.last(t, 1)
	modified := configMap("a", "same", "old-2")
	modified.SetResourceVersion("10")
	w1.Modify(modified)
	eventually(t, 30*time.Second, "the MODIFIED event", func() bool { return len(ofType(streamRecords(t, st, id), event.TypeEvent)) == 3 })

	if err := dyn.Tracker().Delete(cmGVR, "a", "same"); err != nil {
		t.Fatal(err)
	}
	fresh := configMap("a", "same", "new")
	fresh.SetUID(types.UID("uid-new"))
	if err := dyn.Tracker().Create(cmGVR, fresh, "a"); err != nil {
		t.Fatal(err)
	}
	w1.Error(statusErrorObject(gone410()))
	eventually(t, 30*time.Second, "the relist", func() bool { return len(ofType(streamRecords(t, st, id), event.TypeBaseline)) == 4 })

	recs := streamRecords(t, st, id)
	gap := ofType(recs, event.TypeGap)[0]
	var del, item *event.Record
	for i := range recs {
		r := &recs[i]
		if r.Type != event.TypeEvent || r.Resource.Name != "same" {
			continue
		}
		switch {
		case r.Inferred != nil:
			del = r
		case r.BaselineID != "" && r.Resource.UID == "uid-new":
			item = r
		}
	}
	if del == nil || item == nil {
		t.Fatalf("inferred deletion %v, new item %v; want both", del, item)
	}
	if del.Resource.UID != "uid-a-same" || del.WatchType != event.Deleted || !del.Synthetic || del.Inferred.Reason != replacedReason ||
		!del.Inferred.From.Equal(gap.Gap.From) || !del.Inferred.To.Equal(item.ObservedAt) || del.Inferred.BaselineID != item.BaselineID ||
		!del.ObservedAt.Equal(item.ObservedAt) || del.IngestSeq != item.IngestSeq-1 || len(del.Object) == 0 {
		t.Fatalf("replacement deletion = %+v (inferred %+v); want DELETED of the old UID from the gap's From, right before the new item %+v", del, del.Inferred, item)
	}
	var lastBody map[string]any
	if err := json.Unmarshal(del.Object, &lastBody); err != nil || lastBody["data"].(map[string]any)["key"] != "old-2" {
		t.Fatalf("deletion body = %s, want the last known body (old-2)", del.Object)
	}
	if n := len(inferredOf(recs)); n != 1 {
		t.Fatalf("%d inferred deletions, want 1 (the replaced UID only)", n)
	}

	ctx := context.Background()
	key := storage.ObjectIDOf(*item)
	coveredAfter(t, st, id, watches)
	m, err := materialize.New(st)
	if err != nil {
		t.Fatal(err)
	}
	state, err := m.ObjectAt(ctx, key, ofType(recs, event.TypeBaseline)[3].ObservedAt) // the relist's end
	if err != nil {
		t.Fatal(err)
	}
	if !state.Exists || !state.Covered || state.Record.Resource.UID != "uid-new" {
		t.Fatalf("ObjectAt after the relist: exists=%v covered=%v record=%+v; want the new object", state.Exists, state.Covered, state.Record)
	}
	assertVersions(t, m, key, true,
		"ADDED uid-a-same baseline", "MODIFIED uid-a-same watch", "DELETED uid-a-same inferred", "ADDED uid-new baseline")
}

// coveredAfter sends a bookmark on the watch that follows a relist and
// waits for its checkpoint: evidence after the relist's end, which covers
// the times up to it.
func coveredAfter(t *testing.T, st storage.Reader, streamID string, watches *controlledWatches) {
	t.Helper()
	before := len(ofType(streamRecords(t, st, streamID), event.TypeCheckpoint))
	watches.last(t, 2).Action(apiwatch.Bookmark, bookmark("99"))
	eventually(t, 30*time.Second, "the bookmark's checkpoint", func() bool {
		return len(ofType(streamRecords(t, st, streamID), event.TypeCheckpoint)) > before
	})
}

// assertVersions fails t unless the versions in key's history are want,
// each written as its watch type and UID, then its origin when withOrigin.
func assertVersions(t *testing.T, m *materialize.Materializer, key storage.ObjectID, withOrigin bool, want ...string) {
	t.Helper()
	h, err := m.History(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range h.Entries {
		if e.Kind != materialize.EntryVersion {
			continue
		}
		v := string(e.Version.WatchType) + " " + e.Version.Ref.UID
		if withOrigin {
			v += " " + string(e.Version.Origin)
		}
		got = append(got, v)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("history versions = %q, want %q", got, want)
	}
}

// blockingStore holds Appends while block is set, until release.
type blockingStore struct {
	storage.Store
	block   chan struct{} // closed: Appends wait for release
	entered chan struct{}
	release chan struct{}
	ctxErr  chan error
}

func (s *blockingStore) Append(ctx context.Context, recs []event.Record) (storage.AppendResult, error) {
	select {
	case <-s.block:
		select {
		case s.entered <- struct{}{}:
		default:
		}
		select {
		case <-s.release:
		case <-ctx.Done():
			s.ctxErr <- ctx.Err()
			return storage.AppendResult{}, ctx.Err()
		}
	default:
	}
	return s.Store.Append(ctx, recs)
}

// A clean stop while an Append is in flight lets it finish: Start returns
// nil and the record is stored.
func TestCleanStopDoesNotCancelAppendInFlight(t *testing.T) {
	dyn := fakeDynamic()
	watches := controlWatches(dyn, "configmaps")
	st := &blockingStore{Store: newMemory(t), block: make(chan struct{}), entered: make(chan struct{}, 1),
		release: make(chan struct{}), ctxErr: make(chan error, 1)}
	_, stop := startCollector(t, dyn, st)
	close(st.block)
	cm := configMap("a", "late", "1")
	cm.SetResourceVersion("10")
	watches.last(t, 1).Add(cm)
	select {
	case <-st.entered:
	case <-time.After(10 * time.Second):
		t.Fatal("the event's Append did not start")
	}
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	time.Sleep(100 * time.Millisecond) // the stop has come; the Append is in flight
	close(st.release)
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatalf("clean stop = %v, want nil", err)
		}
	case err := <-st.ctxErr:
		t.Fatalf("the stop canceled the Append in flight: %v", err)
	}
	recs := ofType(streamRecords(t, st, cmStreamID("c1")), event.TypeEvent)
	if len(recs) != 1 || recs[0].Resource.Name != "late" {
		t.Fatalf("stored events = %d, want the one in flight at the stop", len(recs))
	}
	var ctxErr error
	select {
	case ctxErr = <-st.ctxErr:
	default:
	}
	if errors.Is(ctxErr, context.Canceled) {
		t.Fatal("an Append saw its context canceled")
	}
}
