package krplytest_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/krplytest/failrec"
	"github.com/krply/krply/materialize"
)

func configMap(ns, name, value string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": ns, "name": name, "uid": "uid-" + name},
		"data":     map[string]any{"key": value},
	}}
}

func deployment(ns, name string, replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": ns, "name": name, "uid": "uid-" + name},
		"spec":     map[string]any{"replicas": replicas},
	}}
}

func TestClusterRecordsWritesAndAnswers(t *testing.T) {
	c := krplytest.NewCluster(t, krplytest.WithObjects(configMap("shop", "settings", "a"), deployment("shop", "web", 1)))

	before := c.Mark()
	c.Modify("deploy", "shop", "web", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(3), "spec", "replicas")
	})
	c.Create(configMap("shop", "extra", "x"))
	c.Delete("cm", "shop", "settings")
	after := c.Mark()

	h := c.History("deploy", "shop", "web")
	if !krplytest.AssertHistory(t, h,
		krplytest.Version{Type: event.Added, Origin: materialize.OriginBaseline},
		krplytest.Version{Type: event.Modified, Origin: materialize.OriginWatch, Changes: map[string]any{"spec.replicas": 3}},
	) {
		return
	}

	krplytest.AssertDiff(t, c.Diff(before, after, "shop"),
		krplytest.ObjectChange{Type: materialize.ObjectChanged, Resource: "deployments", Namespace: "shop", Name: "web", Changes: map[string]any{"spec.replicas": 3}},
		krplytest.ObjectChange{Type: materialize.ObjectAdded, Resource: "configmaps", Namespace: "shop", Name: "extra"},
		krplytest.ObjectChange{Type: materialize.ObjectRemoved, Resource: "configmaps", Namespace: "shop", Name: "settings"},
	)

	snapBefore := c.Snapshot(before, "shop")
	krplytest.AssertComplete(t, snapBefore)
	if got := names(snapBefore); got != "configmaps/settings deployments/web" {
		t.Errorf("objects at the first mark = %q", got)
	}
	if got := names(c.Snapshot(after, "shop")); got != "configmaps/extra deployments/web" {
		t.Errorf("objects at the second mark = %q", got)
	}

	st := c.ObjectAt("cm", "shop", "settings", before)
	if !st.Exists || !st.Covered {
		t.Errorf("settings at the first mark: exists=%v covered=%v, want both", st.Exists, st.Covered)
	}
	if st := c.ObjectAt("cm", "shop", "settings", after); st.Exists {
		t.Errorf("settings still exists after its deletion")
	}
}

func names(s *materialize.Snapshot) string {
	var out []string
	for _, o := range s.Objects {
		out = append(out, o.Ref.Resource+"/"+o.Ref.Name)
	}
	return strings.Join(out, " ")
}

// Cluster-scoped objects are synced and answered like namespaced ones.
func TestClusterScopedObjects(t *testing.T) {
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop"}}}
	c := krplytest.NewCluster(t, krplytest.WithResources("ns"), krplytest.WithObjects(ns))
	c.Modify("ns", "", "shop", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"team": "a"}) })
	krplytest.AssertHistory(t, c.History("ns", "", "shop"),
		krplytest.Version{Type: event.Added},
		krplytest.Version{Type: event.Modified, Changes: map[string]any{"metadata.labels": map[string]string{"team": "a"}}},
	)
	c.Delete("ns", "", "shop")
	if st := c.ObjectAt("ns", "", "shop", c.Mark()); st.Exists {
		t.Error("the deleted namespace still exists")
	}
}

func TestSyncSeesEveryWriteOfABurst(t *testing.T) {
	c := krplytest.NewCluster(t, krplytest.WithResources("cm"))
	for i := range 50 {
		c.Create(configMap("ns", fmt.Sprintf("cm-%02d", i), "v"))
	}
	c.Sync()
	alive := c.Snapshot(time.Now(), "ns")
	if len(alive.Objects) != 50 {
		t.Fatalf("snapshot holds %d objects after Sync, want 50", len(alive.Objects))
	}
	for _, r := range c.Records() {
		if r.ClusterID != krplytest.DefaultClusterID {
			t.Fatalf("record %s has cluster %q", r.EventID, r.ClusterID)
		}
	}
}

// recorder is a TestingT that records failures instead of failing.
type recorder = failrec.T

func TestAssertionsFailOnMismatch(t *testing.T) {
	c := krplytest.NewCluster(t, krplytest.WithResources("deploy"), krplytest.WithObjects(deployment("shop", "web", 1)))
	before := c.Mark()
	c.Modify("deploy", "shop", "web", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, int64(2), "spec", "replicas")
	})
	after := c.Mark()
	h := c.History("deploy", "shop", "web")
	d := c.Diff(before, after)

	cases := []struct {
		name string
		run  func(krplytest.TestingT) bool
		want string
	}{
		{"too few versions", func(r krplytest.TestingT) bool {
			return krplytest.AssertHistory(r, h, krplytest.Version{Type: event.Added})
		}, "2 versions, want 1"},
		{"wrong type", func(r krplytest.TestingT) bool {
			return krplytest.AssertHistory(r, h, krplytest.Version{Type: event.Added}, krplytest.Version{Type: event.Deleted})
		}, "version #2 is MODIFIED, want DELETED"},
		{"wrong value", func(r krplytest.TestingT) bool {
			return krplytest.AssertHistory(r, h, krplytest.Version{}, krplytest.Version{Changes: map[string]any{"spec.replicas": 5}})
		}, "spec.replicas changed to 2, want 5"},
		{"unchanged path", func(r krplytest.TestingT) bool {
			return krplytest.AssertHistory(r, h, krplytest.Version{}, krplytest.Version{Changes: map[string]any{"spec.paused": true}})
		}, "spec.paused did not change"},
		{"not removed", func(r krplytest.TestingT) bool {
			return krplytest.AssertHistory(r, h, krplytest.Version{}, krplytest.Version{Changes: map[string]any{"spec.replicas": krplytest.Removed}})
		}, "want removed"},
		{"missing object", func(r krplytest.TestingT) bool {
			return krplytest.AssertDiff(r, d, krplytest.ObjectChange{Namespace: "shop", Name: "web"}, krplytest.ObjectChange{Namespace: "shop", Name: "db"})
		}, "no difference for * shop/db"},
		{"unexpected object", func(r krplytest.TestingT) bool {
			return krplytest.AssertDiff(r, d)
		}, "unexpected: deployments.apps shop/web changed"},
		{"wrong object type", func(r krplytest.TestingT) bool {
			return krplytest.AssertDiff(r, d, krplytest.ObjectChange{Type: materialize.ObjectAdded, Namespace: "shop", Name: "web"})
		}, "is changed, want added"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{}
			if tc.run(r) {
				t.Fatalf("assertion passed, want a failure containing %q", tc.want)
			}
			if len(r.Errors) != 1 || !strings.Contains(r.Errors[0], tc.want) {
				t.Fatalf("failures = %q, want one containing %q", r.Errors, tc.want)
			}
		})
	}

	// And the right expectations pass.
	r := &recorder{}
	ok := krplytest.AssertHistory(r, h, krplytest.Version{Type: event.Added}, krplytest.Version{Type: event.Modified, Changes: map[string]any{"spec.replicas": 2.0}}) &&
		krplytest.AssertDiff(r, d, krplytest.ObjectChange{Type: materialize.ObjectChanged, Namespace: "shop", Name: "web"})
	if !ok || len(r.Errors) > 0 {
		t.Fatalf("matching expectations failed: %q", r.Errors)
	}
}

func TestSyncFailsWhenTheJournalCannotCatchUp(t *testing.T) {
	r := &recorder{}
	defer r.Done()
	c := krplytest.NewCluster(r, krplytest.WithResources("cm"), krplytest.WithTimeout(300*time.Millisecond),
		krplytest.WithObjects(configMap("shop", "settings", "a")))
	if len(r.Errors) > 0 {
		t.Fatalf("NewCluster failed: %q", r.Errors)
	}
	c.Sync()
	if len(r.Errors) > 0 {
		t.Fatalf("Sync failed while recording: %q", r.Errors)
	}
	c.Stop()
	c.Create(configMap("shop", "late", "b"))
	c.Delete("cm", "shop", "settings")
	c.Sync()
	if len(r.Errors) != 1 {
		t.Fatalf("Sync after Stop reported %d failures, want 1: %q", len(r.Errors), r.Errors)
	}
	for _, want := range []string{"shop/late not recorded yet", "deletion of shop/settings not recorded yet"} {
		if !strings.Contains(r.Errors[0], want) {
			t.Errorf("Sync failure %q does not say %q", r.Errors[0], want)
		}
	}
}

// A path inside a map added or removed whole is checked against the value
// inside it, and a mismatch says so.
func TestAssertionsInsideWholeChanges(t *testing.T) {
	d := deployment("shop", "web", 1)
	d.SetLabels(map[string]string{"example.com/paused": "true"})
	c := krplytest.NewCluster(t, krplytest.WithResources("deploy"), krplytest.WithObjects(d))
	c.Modify("deploy", "shop", "web", func(u *unstructured.Unstructured) {
		u.SetLabels(nil)
		u.SetAnnotations(map[string]string{"example.com/paused-replicas": "1"})
	})
	h := c.History("deploy", "shop", "web")
	check := func(changes map[string]any) []string {
		r := &recorder{}
		krplytest.AssertHistory(r, h, krplytest.Version{}, krplytest.Version{Changes: changes})
		return r.Errors
	}
	if errs := check(map[string]any{
		`metadata.annotations["example.com/paused-replicas"]`: "1",
		`metadata.labels["example.com/paused"]`:               krplytest.Removed,
	}); len(errs) > 0 {
		t.Fatalf("paths inside the maps changed whole: %q", errs)
	}
	for _, tc := range []struct {
		changes map[string]any
		want    string
	}{
		{map[string]any{`metadata.annotations["example.com/paused-replicas"]`: "2"}, `version #2: metadata.annotations["example.com/paused-replicas"] changed to "1", want "2"`},
		{map[string]any{`metadata.annotations["example.com/other"]`: "2"}, `version #2: metadata.annotations["example.com/other"] did not change (metadata.annotations changed whole, without it)`},
		{map[string]any{`metadata.annotations["example.com/paused-replicas"]`: krplytest.Removed}, `version #2: metadata.annotations["example.com/paused-replicas"]: add to "1", want removed`},
		{map[string]any{`metadata.labels["example.com/paused"]`: "true"}, `version #2: metadata.labels["example.com/paused"] was removed, want "true"`},
		{map[string]any{`metadata.labels[bad`: "x"}, `version #2: metadata.labels[bad did not change`},
	} {
		errs := check(tc.changes)
		if len(errs) != 1 || !strings.Contains(errs[0], tc.want) {
			t.Errorf("%v: failures %q, want one saying %q", tc.changes, errs, tc.want)
		}
	}
}
