package watch

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest/testenv/faultproxy"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// Tests of the options no other test exercises, each asserting its effect.

// recordUntilWatching records dyn's ConfigMaps with paginated lists until
// the watch is open, stops, and returns the options of the fake's list and
// watch calls on configmaps, in order, and the stream's ID.
func recordUntilWatching(t *testing.T, dyn *dynamicfake.FakeDynamicClient, opts ...Option) (lists, watches []metav1.ListOptions, streamID string) {
	t.Helper()
	c, stop := startCollector(t, dyn, newMemory(t), append(opts, WithWatchList(WatchListOff))...)
	waitWatching(t, c)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, a := range dyn.Actions() {
		if a.GetResource().Resource != "configmaps" {
			continue
		}
		switch a := a.(type) {
		case clienttesting.ListActionImpl:
			lists = append(lists, a.ListOptions)
		case clienttesting.WatchActionImpl:
			watches = append(watches, a.ListOptions)
		}
	}
	return lists, watches, c.Status()[0].StreamID
}

// WithBookmarks(false) turns allowWatchBookmarks off in the watch requests;
// it is on by default.
func TestWithBookmarksInWatchRequests(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts []Option
		want bool
	}{
		{"default", nil, true},
		{"on", []Option{WithBookmarks(true)}, true},
		{"off", []Option{WithBookmarks(false)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, watches, _ := recordUntilWatching(t, fakeDynamic(configMap("a", "one", "1")), tc.opts...)
			if len(watches) == 0 {
				t.Fatal("no watch request")
			}
			for i, w := range watches {
				if w.AllowWatchBookmarks != tc.want {
					t.Errorf("watch %d: allowWatchBookmarks %v, want %v", i, w.AllowWatchBookmarks, tc.want)
				}
			}
		})
	}
}

// WithFieldSelector goes into every list and watch request and into the
// stream's identity.
func TestWithFieldSelectorInRequests(t *testing.T) {
	lists, watches, streamID := recordUntilWatching(t, fakeDynamic(configMap("a", "keep", "1"), configMap("a", "drop", "1")),
		WithFieldSelector("metadata.name=keep"))
	if len(lists) == 0 || len(watches) == 0 {
		t.Fatalf("%d lists, %d watches: want both", len(lists), len(watches))
	}
	for i, o := range append(lists, watches...) {
		if o.FieldSelector != "metadata.name=keep" {
			t.Errorf("request %d: fieldSelector %q, want metadata.name=keep", i, o.FieldSelector)
		}
	}
	want := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Selector: "labels:;fields:metadata.name=keep"}.ID()
	if streamID != want {
		t.Errorf("stream %q, want %q", streamID, want)
	}
}

// Against a real apiserver, a field selector restricts what is recorded:
// the baseline and the events hold only the matching object, in both
// baseline modes, and the requests carry the selector.
func TestIntegrationWithFieldSelector(t *testing.T) {
	for _, mode := range []WatchListMode{WatchListOff, WatchListOn} {
		t.Run(string(mode), func(t *testing.T) {
			n := newNSTest(t, "keep", "drop")
			ns, dyn, st := n.ns, n.dyn, n.st
			p := faultproxy.Start(t, n.env.Config())
			c := n.record(t, p.Config(), WithWatchList(mode), WithFieldSelector("metadata.name=keep"))
			waitWatching(t, c)
			// drop changes first: had the selector let it through, its
			// event would be recorded before keep's.
			mustUpdateCM(t, dyn, ns, "drop", "1")
			mustCreateCM(t, dyn, ns, "drop-2", "1")
			last := mustUpdateCM(t, dyn, ns, "keep", "1")
			id := c.Status()[0].StreamID
			eventually(t, 20*time.Second, "keep's update recorded", func() bool {
				return slices.ContainsFunc(streamRecords(t, st, id), func(r event.Record) bool {
					return r.Resource.ResourceVersion == last.GetResourceVersion()
				})
			})
			var names []string
			for _, r := range ofType(streamRecords(t, st, id), event.TypeEvent) {
				names = append(names, string(r.WatchType)+" "+r.Resource.Name)
			}
			if want := []string{"ADDED keep", "MODIFIED keep"}; !slices.Equal(names, want) {
				t.Errorf("recorded %q, want %q", names, want)
			}
			if want := (event.Stream{ClusterID: "it", Version: "v1", Resource: "configmaps", Namespace: ns, Selector: "labels:;fields:metadata.name=keep"}.ID()); id != want {
				t.Errorf("stream %s, want %s", id, want)
			}
			streams, err := st.Streams(context.Background(), "it")
			if err != nil || len(streams) != 1 || streams[0].Stream.ID() != id {
				t.Errorf("streams %+v, %v: want only %s", streams, err, id)
			}
			reqs := append(p.Requests(faultproxy.Match{Verb: "list", Resource: "configmaps"}), p.Requests(faultproxy.Match{Verb: "watch", Resource: "configmaps"})...)
			if len(reqs) == 0 {
				t.Fatal("no list or watch request went through the proxy")
			}
			for _, r := range reqs {
				if got := r.Query.Get("fieldSelector"); got != "metadata.name=keep" {
					t.Errorf("%s: fieldSelector %q, want metadata.name=keep", r, got)
				}
			}
		})
	}
}
