package watch

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage/memory"
)

// stopEndedDynamic makes every watch of the fake end the way a watch of
// client-go ends when the stop cancels its request: once the watch's
// context ended, its result channel yields the events end (none, or the
// error event of a failed decode) and closes.
type stopEndedDynamic struct {
	*dynamicfake.FakeDynamicClient
	end []apiwatch.Event
}

func (d stopEndedDynamic) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return stopEndedResource{d.FakeDynamicClient.Resource(gvr), d.end}
}

type stopEndedResource struct {
	dynamic.NamespaceableResourceInterface
	end []apiwatch.Event
}

func (r stopEndedResource) Watch(ctx context.Context, opts metav1.ListOptions) (apiwatch.Interface, error) {
	w, err := r.NamespaceableResourceInterface.Watch(ctx, opts)
	if err != nil {
		return nil, err
	}
	ended := make(chan apiwatch.Event, len(r.end))
	for _, ev := range r.end {
		ended <- ev
	}
	close(ended)
	return stopEndedWatch{Interface: w, ctx: ctx, ended: ended}, nil
}

type stopEndedWatch struct {
	apiwatch.Interface
	ctx   context.Context
	ended chan apiwatch.Event
}

func (w stopEndedWatch) ResultChan() <-chan apiwatch.Event {
	if w.ctx.Err() != nil {
		return w.ended
	}
	return w.Interface.ResultChan()
}

// decodeFailure is the error event client-go's watch sends when it cannot
// decode the stream (client-go's rest.Request.Watch and StreamWatcher).
func decodeFailure(err error) apiwatch.Event {
	reporter := apierrors.NewClientErrorReporter(http.StatusInternalServerError, "GET", "ClientWatchDecoding")
	return apiwatch.Event{Type: apiwatch.Error, Object: reporter.AsObject(fmt.Errorf("unable to decode an event from the watch stream: %v", err))}
}

// At a clean stop, a healthy watch keeps its last evidence (here an
// unchanged bookmark, too soon after the last event to be written while
// the Collector ran) in a stop checkpoint whichever way the cancel ends
// the watch: its result channel closes, or it fails to decode because its
// request was canceled. An error the server sent, or a decode failure of
// something the server sent, is a real failure even at the stop: events
// may be missing, and no checkpoint vouches past them. An event the watch
// delivered at the stop is recorded, and is the last evidence itself.
func TestStopCheckpointWhicheverWayTheCancelEndsTheWatch(t *testing.T) {
	for _, tc := range []struct {
		name       string
		end        []apiwatch.Event
		checkpoint bool
	}{
		{"result channel closed", nil, true},
		{"decode failed: context canceled", []apiwatch.Event{decodeFailure(context.Canceled)}, true},
		{"decode failed: deadline exceeded", []apiwatch.Event{decodeFailure(context.DeadlineExceeded)}, true},
		{"decode failed: request canceled", []apiwatch.Event{decodeFailure(fmt.Errorf("net/http: request canceled"))}, true},
		{"server error: 410 Gone", []apiwatch.Event{{Type: apiwatch.Error, Object: statusErrorObject(gone410())}}, false},
		{"server error: 500", []apiwatch.Event{{Type: apiwatch.Error, Object: statusErrorObject(apierrors.NewInternalError(fmt.Errorf("etcd unavailable")))}}, false},
		{"decode failed: a bad object", []apiwatch.Event{decodeFailure(fmt.Errorf("json: cannot unmarshal number into Go value of type map[string]interface {}"))}, false},
		{"decode failed: canceled after an event", []apiwatch.Event{
			{Type: apiwatch.Modified, Object: withRV(configMap("a", "one", "3"), "60")},
			decodeFailure(context.Canceled),
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			watches, st, stop := startModifiedTo50(t, func(dyn *dynamicfake.FakeDynamicClient) dynamic.Interface { return stopEndedDynamic{dyn, tc.end} })
			sent := time.Now()
			vouch(watches.last(t, 1), "50")
			beforeStop := time.Now()
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			stoppedAt := time.Now()

			recs := streamRecords(t, st, cmStreamID("c1"))
			last := recs[len(recs)-1]
			events := ofType(recs, event.TypeEvent)
			if len(events) == 3 {
				if e := events[2]; last.EventID != e.EventID || e.Resource.ResourceVersion != "60" || e.ObservedAt.Before(beforeStop) || e.ObservedAt.After(stoppedAt) {
					t.Fatalf("last record %s %+v at %s; want the event to 60 the stop delivered, at the stop", last.Type, last.Resource, last.ObservedAt)
				}
			}
			got := last.Type == event.TypeCheckpoint
			if got != tc.checkpoint {
				t.Fatalf("last record %s %+v; want a stop checkpoint: %v", last.Type, last.Checkpoint, tc.checkpoint)
			}
			if got && (last.Checkpoint.ResourceVersion != "50" || last.ObservedAt.Before(sent) || last.ObservedAt.After(beforeStop)) {
				t.Fatalf("stop checkpoint %+v at %s; want at 50 at the bookmark, between %s and %s", last.Checkpoint, last.ObservedAt, sent, beforeStop)
			}
			if cps := ofType(recs, event.TypeCheckpoint); len(cps) > 1 {
				t.Fatalf("checkpoints %+v; want only the stop's", cps)
			}
		})
	}
}

// A decode failure that looks like the stop's, but comes while the
// Collector runs, is a real failure: the stream reconnects from its
// resourceVersion and writes no checkpoint for it.
func TestDecodeCanceledBeforeTheStopIsAFailure(t *testing.T) {
	watches, st, stop := startModifiedTo50(t, func(dyn *dynamicfake.FakeDynamicClient) dynamic.Interface { return stopEndedDynamic{dyn, nil} })
	ev := decodeFailure(context.Canceled)
	watches.last(t, 1).Error(ev.Object)
	watches.last(t, 2)
	if rv := watches.rv(2); rv != "50" {
		t.Fatalf("second watch from %q, want 50", rv)
	}
	if cps := ofType(streamRecords(t, st, cmStreamID("c1")), event.TypeCheckpoint); len(cps) != 0 {
		t.Fatalf("checkpoints %+v after a decode failure while running", cps)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func withRV(o interface {
	runtime.Object
	SetResourceVersion(string)
}, rv string) runtime.Object {
	o.SetResourceVersion(rv)
	return o
}

// startModifiedTo50 records the ConfigMap a/one through wrap(the fake)
// until the test ends, changes it to resourceVersion 50 through the first
// watch, and returns once that MODIFIED event is recorded.
func startModifiedTo50(t *testing.T, wrap func(*dynamicfake.FakeDynamicClient) dynamic.Interface) (*controlledWatches, *memory.Store, func() error) {
	t.Helper()
	dyn := fakeDynamic(configMap("a", "one", "1"))
	watches := controlWatches(dyn, "configmaps")
	st := newMemory(t)
	_, stop := startCollector(t, wrap(dyn), st)
	watches.last(t, 1).Modify(withRV(configMap("a", "one", "2"), "50"))
	eventually(t, 30*time.Second, "the MODIFIED event", func() bool {
		return len(ofType(streamRecords(t, st, cmStreamID("c1")), event.TypeEvent)) == 2
	})
	return watches, st, stop
}

// A clean stop vouches only for what the server sent. The last evidence
// here is the MODIFIED event to 50; whatever the server sent after it and
// the process never read (an event in flight when the stop canceled the
// watch) is the next run's to record, so time between that event and the
// stop is not yet observed: a snapshot then is not Complete, one at the
// event is. An unchanged bookmark after the event, too soon after it to be
// written while the Collector ran, is evidence the stop keeps: a
// checkpoint at the bookmark's time, not the stop's.
func TestCleanStopVouchesOnlyForWhatTheServerSent(t *testing.T) {
	for _, vouched := range []bool{false, true} {
		t.Run(fmt.Sprintf("unchanged bookmark %v", vouched), func(t *testing.T) {
			watches, st, stop := startModifiedTo50(t, func(dyn *dynamicfake.FakeDynamicClient) dynamic.Interface { return dyn })
			id := cmStreamID("c1")
			evidence := ofType(streamRecords(t, st, id), event.TypeEvent)[1].ObservedAt
			sent := time.Now()
			if vouched {
				vouch(watches.last(t, 1), "50")
			}
			beforeStop := time.Now()
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			recs := streamRecords(t, st, id)
			last := recs[len(recs)-1]
			if vouched {
				if last.Type != event.TypeCheckpoint || last.Checkpoint.ResourceVersion != "50" || last.ObservedAt.Before(sent) || !last.ObservedAt.Before(beforeStop) {
					t.Fatalf("last record %s %+v at %s; want the bookmark's checkpoint at 50, observed between %s and %s", last.Type, last.Checkpoint, last.ObservedAt, sent, beforeStop)
				}
				evidence = last.ObservedAt
			} else if last.Type != event.TypeEvent || !last.ObservedAt.Equal(evidence) {
				t.Fatalf("last record %s %+v at %s; want the MODIFIED event at %s: nothing vouched after it", last.Type, last.Checkpoint, last.ObservedAt, evidence)
			}
			m, err := materialize.New(st)
			if err != nil {
				t.Fatal(err)
			}
			scope := materialize.Scope{ClusterID: "c1"}
			// Evidence at a time covers the time before it.
			snap, err := m.Snapshot(context.Background(), scope, evidence.Add(-time.Nanosecond))
			if err != nil || !snap.Complete || len(snap.Objects) != 1 || vouched && snap.Objects[0].Ref.ResourceVersion != "50" {
				t.Fatalf("snapshot just before the last evidence: complete=%v missing %+v, %v; want Complete (with 50 after the bookmark)", snap.Complete, snap.Missing, err)
			}
			snap, err = m.Snapshot(context.Background(), scope, beforeStop)
			if err != nil {
				t.Fatal(err)
			}
			want := "not yet observed: evidence reaches to " + evidence.UTC().Format(time.RFC3339Nano)
			if snap.Complete || len(snap.Missing) != 1 || snap.Missing[0].Reason != want {
				t.Fatalf("snapshot just before the stop: complete=%v missing %+v; want incomplete: %q", snap.Complete, snap.Missing, want)
			}
		})
	}
}

// vouch sends an unchanged bookmark at rv through w and returns once the
// stream handled it: w's channel is unbuffered, and the stream reads the
// next event (one of a type it ignores) only after it handled the one
// before.
func vouch(w *apiwatch.FakeWatcher, rv string) {
	w.Action(apiwatch.Bookmark, bookmark(rv))
	w.Action(apiwatch.EventType("IGNORED"), bookmark(rv))
}
