package krplytest_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/watch"
)

// The Record tests share one local control plane, started on first use.
func TestMain(m *testing.M) { os.Exit(testenv.RunMain(m)) }

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// realCluster returns a namespace of the shared control plane and a
// dynamic client of it, as a downstream test has from envtest.
func realCluster(t *testing.T) (*testenv.Env, string, dynamic.Interface) {
	t.Helper()
	env := testenv.Shared(t)
	ns := env.CreateNamespace(t)
	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	return env, ns, dyn
}

func setData(t *testing.T, dyn dynamic.Interface, ns, name, value string) {
	t.Helper()
	ctx := context.Background()
	cm, err := dyn.Resource(configMaps).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s: %v", name, err)
	}
	_ = unstructured.SetNestedField(cm.Object, value, "data", "key")
	if _, err := dyn.Resource(configMaps).Namespace(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update %s: %v", name, err)
	}
}

// Record records a real API server: what the test writes through its own
// client is in the journal once Sync (or a query) returns, and Mark names
// times the journal covers, so snapshots of them are complete.
func TestRecordRealCluster(t *testing.T) {
	env, ns, dyn := realCluster(t)
	ctx := context.Background()
	if _, err := dyn.Resource(configMaps).Namespace(ns).Create(ctx, configMap(ns, "before", "a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	r := krplytest.Record(t, env.Config(), krplytest.WithResources("cm"),
		krplytest.WithCollectorOptions(watch.WithNamespaces(ns)))
	t1 := r.Mark()
	if _, err := dyn.Resource(configMaps).Namespace(ns).Create(ctx, configMap(ns, "settings", "a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	setData(t, dyn, ns, "settings", "b")
	if err := dyn.Resource(configMaps).Namespace(ns).Delete(ctx, "before", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	t2 := r.Mark()

	krplytest.AssertHistory(t, r.History("cm", ns, "settings"),
		krplytest.Version{Type: event.Added, Origin: materialize.OriginWatch},
		krplytest.Version{Type: event.Modified, Changes: map[string]any{"data.key": "b"}},
	)
	krplytest.AssertHistory(t, r.History("cm", ns, "before"),
		krplytest.Version{Type: event.Added, Origin: materialize.OriginBaseline},
		krplytest.Version{Type: event.Deleted, Origin: materialize.OriginWatch},
	)
	krplytest.AssertDiff(t, r.Diff(t1, t2, ns),
		krplytest.ObjectChange{Type: materialize.ObjectAdded, Resource: "configmaps", Namespace: ns, Name: "settings"},
		krplytest.ObjectChange{Type: materialize.ObjectRemoved, Resource: "configmaps", Namespace: ns, Name: "before"},
	)
	krplytest.AssertComplete(t, r.Snapshot(t1, ns))
	krplytest.AssertComplete(t, r.Snapshot(t2, ns))
	if st := r.ObjectAt("cm", ns, "settings", t2); !st.Exists || !st.Covered {
		t.Errorf("settings at the second mark: exists=%v covered=%v, want both", st.Exists, st.Covered)
	}
	if r.ClusterID != krplytest.DefaultClusterID {
		t.Errorf("ClusterID %q, want %q", r.ClusterID, krplytest.DefaultClusterID)
	}
}

// EventuallyHistory waits for writes another goroutine (a controller)
// makes later, without a sleep in the test, and fails with the last
// mismatch and the history when they do not come.
func TestRecordEventuallyWaitsForAController(t *testing.T) {
	env, ns, dyn := realCluster(t)
	r := krplytest.Record(t, env.Config(), krplytest.WithResources("configmaps"),
		krplytest.WithCollectorOptions(watch.WithNamespaces(ns)))

	// The "controller": creates the object, then changes it twice, a while
	// after the test started waiting.
	done := make(chan error, 1)
	go func() {
		ctx := context.Background()
		cms := dyn.Resource(configMaps).Namespace(ns)
		if _, err := cms.Create(ctx, configMap(ns, "owned", "1"), metav1.CreateOptions{}); err != nil {
			done <- err
			return
		}
		for _, v := range []string{"2", "3"} {
			time.Sleep(100 * time.Millisecond)
			cm, err := cms.Get(ctx, "owned", metav1.GetOptions{})
			if err != nil {
				done <- err
				return
			}
			_ = unstructured.SetNestedField(cm.Object, v, "data", "key")
			if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	ok := r.EventuallyHistory("cm", ns, "owned",
		krplytest.Version{Type: event.Added},
		krplytest.Version{Type: event.Modified, Changes: map[string]any{"data.key": "2"}},
		krplytest.Version{Type: event.Modified, Changes: map[string]any{"data.key": "3"}},
	)
	if err := <-done; err != nil {
		t.Fatalf("controller: %v", err)
	}
	if !ok {
		return
	}

	// A history that never comes fails after the timeout, saying why.
	rec := &recorder{}
	defer rec.Done()
	r2 := krplytest.Record(rec, env.Config(), krplytest.WithResources("configmaps"), krplytest.WithTimeout(2*time.Second),
		krplytest.WithCollectorOptions(watch.WithNamespaces(ns)))
	if len(rec.Errors) > 0 {
		t.Fatalf("Record failed: %q", rec.Errors)
	}
	if r2.EventuallyHistory("cm", ns, "owned", krplytest.Version{}, krplytest.Version{Changes: map[string]any{"data.key": "4"}}) {
		t.Fatal("EventuallyHistory passed for a change that never happens")
	}
	if len(rec.Errors) != 1 {
		t.Fatalf("%d failures, want 1: %q", len(rec.Errors), rec.Errors)
	}
	for _, want := range []string{"krplytest: not so after", "1 versions, want 2", "#1 ADDED    baseline"} {
		if !strings.Contains(rec.Errors[0], want) {
			t.Errorf("failure %q does not say %q", rec.Errors[0], want)
		}
	}
}

// Record refuses what only the fake cluster can do, and a nil config,
// saying what to do instead.
func TestRecordRefusesFakeOnlyOptions(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(krplytest.TestingT)
		want string
	}{
		{"nil config", func(r krplytest.TestingT) { krplytest.Record(r, nil) }, "Record: nil *rest.Config"},
		{"WithObjects", func(r krplytest.TestingT) {
			krplytest.RecordClient(r, nil, nil, krplytest.WithObjects(configMap("ns", "x", "v")))
		}, "create the objects with your own client (or give them to your fake's builder) before recording"},
		{"bad timeout", func(r krplytest.TestingT) {
			krplytest.RecordClient(r, nil, nil, krplytest.WithTimeout(-time.Second))
		}, "timeout -1s must be positive"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			defer rec.Done()
			tc.run(rec)
			if len(rec.Errors) != 1 || !strings.Contains(rec.Errors[0], tc.want) {
				t.Fatalf("failures %q, want one saying %q", rec.Errors, tc.want)
			}
		})
	}
}

// On a real cluster too, Sync fails, naming the objects, when the journal
// cannot catch up (here: the Collector stopped).
func TestRecordSyncFailsWhenTheJournalCannotCatchUp(t *testing.T) {
	env, ns, dyn := realCluster(t)
	rec := &recorder{}
	defer rec.Done()
	r := krplytest.Record(rec, env.Config(), krplytest.WithResources("cm"), krplytest.WithTimeout(2*time.Second),
		krplytest.WithCollectorOptions(watch.WithNamespaces(ns)))
	if len(rec.Errors) > 0 {
		t.Fatalf("Record: %q", rec.Errors)
	}
	r.Stop()
	if _, err := dyn.Resource(configMaps).Namespace(ns).Create(context.Background(), configMap(ns, "late", "a"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.Sync()
	if len(rec.Errors) != 1 || !strings.Contains(rec.Errors[0], "journal did not catch up with the cluster within 2s") ||
		!strings.Contains(rec.Errors[0], ns+"/late not recorded yet") {
		t.Fatalf("Sync after Stop: failures %q", rec.Errors)
	}
}

// With a label selector, Sync compares the journal with what the selector
// lets through, so objects it filters out do not hold Sync up.
func TestRecordWithALabelSelector(t *testing.T) {
	env, ns, dyn := realCluster(t)
	r := krplytest.Record(t, env.Config(), krplytest.WithResources("cm"),
		krplytest.WithCollectorOptions(watch.WithNamespaces(ns), watch.WithLabelSelector("app=web")))
	ctx := context.Background()
	for _, name := range []string{"web", "other"} {
		cm := configMap(ns, name, "a")
		cm.SetUID("")
		if name == "web" {
			cm.SetLabels(map[string]string{"app": "web"})
		}
		if _, err := dyn.Resource(configMaps).Namespace(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	setData(t, dyn, ns, "other", "b")
	setData(t, dyn, ns, "web", "b")
	krplytest.AssertHistory(t, r.History("cm", ns, "web"),
		krplytest.Version{Type: event.Added},
		krplytest.Version{Type: event.Modified, Changes: map[string]any{"data.key": "b"}},
	)
	if n := len(r.History("cm", ns, "other").Versions()); n != 0 {
		t.Errorf("the filtered-out ConfigMap has %d versions, want 0", n)
	}
}
