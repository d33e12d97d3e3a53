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

// At a clean stop, a healthy watch gets its stop checkpoint whichever way
// the cancel ends it: its result channel closes, or it fails to decode
// because its request was canceled. An error the server sent, or a decode
// failure of something the server sent, is a real failure even at the
// stop: events may be missing, and no checkpoint vouches past them.
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
		}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, st, stop := startModifiedTo50(t, func(dyn *dynamicfake.FakeDynamicClient) dynamic.Interface { return stopEndedDynamic{dyn, tc.end} })
			beforeStop := time.Now()
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			stoppedAt := time.Now()

			recs := streamRecords(t, st, cmStreamID("c1"))
			wantRV := "50"
			if n := len(ofType(recs, event.TypeEvent)); n == 3 {
				wantRV = "60"
			}
			last := recs[len(recs)-1]
			got := last.Type == event.TypeCheckpoint
			if got != tc.checkpoint {
				t.Fatalf("last record %s %+v; want a stop checkpoint: %v", last.Type, last.Checkpoint, tc.checkpoint)
			}
			if got && (last.Checkpoint.ResourceVersion != wantRV || last.ObservedAt.Before(beforeStop) || last.ObservedAt.After(stoppedAt)) {
				t.Fatalf("stop checkpoint %+v at %s; want at %s between %s and %s", last.Checkpoint, last.ObservedAt, wantRV, beforeStop, stoppedAt)
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
	c, err := NewCollector(wrap(dyn), fakeDiscovery(), st, testOpts(t)...)
	if err != nil {
		t.Fatal(err)
	}
	stop := run(t, c)
	waitSync(t, c)
	watches.last(t, 1).Modify(withRV(configMap("a", "one", "2"), "50"))
	eventually(t, 30*time.Second, "the MODIFIED event", func() bool {
		return len(ofType(streamRecords(t, st, cmStreamID("c1")), event.TypeEvent)) == 2
	})
	return watches, st, stop
}
