package testenv_test

import (
	"strconv"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/krply/krply/krplytest/testenv"
)

const initialEventsEnd = "k8s.io/initial-events-end"

// With the watch cache on, an idle watch that allows bookmarks gets a
// periodic BOOKMARK (about once a minute) carrying a resourceVersion newer
// than the watch's and no object change, once the watch cache of the
// resource moved on: ConfigMaps written in another namespace
// (TouchConfigMaps). In a cluster where nothing changes the resource, none
// comes: the apiserver sends no bookmark of the watch's own
// resourceVersion. This test takes a little over a minute, so it runs in
// parallel with the others and not at all with -short.
func TestPeriodicBookmark(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a periodic bookmark, about a minute")
	}
	t.Parallel()
	env := testenv.Shared(t)
	ctx := testContext(t, 3*time.Minute)
	ns := env.CreateNamespace(t)
	dyn := client(t, env.Config())
	created := mustCreate(t, ctx, dyn, configMap(ns, "idle", nil))

	env.TouchConfigMaps(t, 5*time.Second)
	begin := time.Now()
	w, err := dyn.Resource(configMaps).Namespace(ns).Watch(ctx, metav1.ListOptions{
		ResourceVersion:     created.GetResourceVersion(),
		AllowWatchBookmarks: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	ev, ok := nextEvent(t, w, 100*time.Second)
	if !ok {
		t.Fatal("watch ended before a bookmark")
	}
	elapsed := time.Since(begin)
	if ev.Type != watch.Bookmark {
		t.Fatalf("got %s %v on an idle watch, want BOOKMARK", ev.Type, ev.Object)
	}
	obj := ev.Object.(*unstructured.Unstructured)
	if rv, err := strconv.ParseInt(obj.GetResourceVersion(), 10, 64); err != nil || rv <= mustRV(t, created) {
		t.Errorf("bookmark at resourceVersion %q, want one after the watch's %s: %v", obj.GetResourceVersion(), created.GetResourceVersion(), obj.Object)
	}
	if obj.GetAnnotations()[initialEventsEnd] != "" {
		t.Errorf("periodic bookmark is annotated %s: %v", initialEventsEnd, obj.GetAnnotations())
	}
	if elapsed < 30*time.Second || elapsed > 90*time.Second {
		t.Errorf("first periodic bookmark after %v, want about a minute", elapsed)
	}
	t.Logf("periodic bookmark after %v at resourceVersion %s (watch started at %s)",
		elapsed.Round(100*time.Millisecond), obj.GetResourceVersion(), created.GetResourceVersion())
}

// A watch that asks for initial events gets the current objects as ADDED and
// then a BOOKMARK annotated k8s.io/initial-events-end, the streaming
// alternative to a list. So does a watch without a resourceVersion that
// allows bookmarks (in an empty namespace: the bookmark comes at once).
func TestInitialEventsEndBookmark(t *testing.T) {
	t.Parallel()
	env := testenv.Shared(t)
	ctx := testContext(t, time.Minute)
	ns := env.CreateNamespace(t)
	dyn := client(t, env.Config())
	for _, name := range []string{"a", "b"} {
		mustCreate(t, ctx, dyn, configMap(ns, name, nil))
	}
	sendInitialEvents := true
	for _, tc := range []struct {
		name string
		opts metav1.ListOptions
	}{
		{"sendInitialEvents", metav1.ListOptions{
			SendInitialEvents:    &sendInitialEvents,
			ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
			AllowWatchBookmarks:  true,
		}},
		{"no resourceVersion", metav1.ListOptions{AllowWatchBookmarks: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := dyn.Resource(configMaps).Namespace(ns).Watch(ctx, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			added := map[string]bool{}
			for {
				ev, ok := nextEvent(t, w, 10*time.Second)
				if !ok {
					t.Fatal("watch ended before the initial-events-end bookmark")
				}
				obj := ev.Object.(*unstructured.Unstructured)
				if ev.Type == watch.Added {
					added[obj.GetName()] = true
					continue
				}
				if ev.Type != watch.Bookmark || obj.GetAnnotations()[initialEventsEnd] != "true" || obj.GetResourceVersion() == "" {
					t.Fatalf("got %s %v, want ADDED events, then a BOOKMARK annotated %s", ev.Type, obj.Object, initialEventsEnd)
				}
				break
			}
			if !added["a"] || !added["b"] || len(added) != 2 {
				t.Errorf("initial events: %v, want exactly a and b", added)
			}
		})
	}
}

func mustRV(t *testing.T, obj *unstructured.Unstructured) int64 {
	t.Helper()
	rv, err := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q of %s: %v", obj.GetResourceVersion(), obj.GetName(), err)
	}
	return rv
}
