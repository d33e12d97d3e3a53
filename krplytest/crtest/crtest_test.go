package crtest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/krplytest/crtest"
	"github.com/krply/krply/krplytest/failrec"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/watch"
)

func web(replicas int32) *appsv1.Deployment {
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", UID: "uid-web"},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(replicas)},
	}
}

func scheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// Writes through the fake client — updates, creates, status updates,
// deletes — are in the journal, version by version, and Marks name times
// whose snapshots are complete.
func TestRecordsWritesThroughTheFakeClient(t *testing.T) {
	ctx := context.Background()
	c := crtest.New(t, fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(web(3)).WithStatusSubresource(&appsv1.Deployment{}),
		krplytest.WithResources("deploy", "cm"))
	before := c.Mark()

	var d appsv1.Deployment
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, &d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = ptr.To(int32(0))
	d.Annotations = map[string]string{"example.com/paused-replicas": "3"}
	if err := c.Client.Update(ctx, &d); err != nil {
		t.Fatal(err)
	}
	d.Status.ObservedGeneration = 2
	if err := c.Client.Status().Update(ctx, &d); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-paused"}, Data: map[string]string{"replicas": "3"}}
	if err := c.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	after := c.Mark()
	if err := c.Client.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}

	krplytest.AssertHistory(t, c.History("deploy", "shop", "web"),
		krplytest.Version{Type: event.Added, Origin: materialize.OriginBaseline},
		krplytest.Version{Type: event.Modified, Changes: map[string]any{
			"spec.replicas":        0,
			"metadata.annotations": map[string]string{"example.com/paused-replicas": "3"},
		}},
		krplytest.Version{Type: event.Modified, Changes: map[string]any{"status.observedGeneration": 2}},
	)
	krplytest.AssertHistory(t, c.History("cm", "shop", "web-paused"),
		krplytest.Version{Type: event.Added, Origin: materialize.OriginWatch},
		krplytest.Version{Type: event.Deleted},
	)
	krplytest.AssertDiff(t, c.Diff(before, after, "shop"),
		krplytest.ObjectChange{Type: materialize.ObjectChanged, Resource: "deployments", Namespace: "shop", Name: "web",
			Changes: map[string]any{"spec.replicas": 0}},
		krplytest.ObjectChange{Type: materialize.ObjectAdded, Resource: "configmaps", Namespace: "shop", Name: "web-paused"},
	)
	krplytest.AssertComplete(t, c.Snapshot(before, "shop"))
	krplytest.AssertComplete(t, c.Snapshot(after, "shop"))
	krplytest.AssertGolden(t, "testdata/web.history.json", c.History("deploy", "shop", "web"))
}

// Without WithResources, every kind of the scheme is recorded (Secrets
// aside), custom resources registered as unstructured kinds included.
func TestRecordsEveryKindOfTheScheme(t *testing.T) {
	s := scheme(t)
	widgets := schema.GroupVersion{Group: "example.com", Version: "v1"}
	s.AddKnownTypeWithName(widgets.WithKind("Widget"), &unstructured.Unstructured{})
	s.AddKnownTypeWithName(widgets.WithKind("WidgetList"), &unstructured.UnstructuredList{})
	w := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"namespace": "shop", "name": "w1"},
		"spec":     map[string]any{"size": int64(1)},
	}}
	start := time.Now()
	c := crtest.New(t, fake.NewClientBuilder().WithScheme(s).WithObjects(w, web(1)))
	t.Logf("New recorded %d streams in %s", len(c.Collector.Status()), time.Since(start))

	resources := map[string]bool{}
	for _, st := range c.Collector.Status() {
		resources[st.Stream.Resource] = true
	}
	for _, want := range []string{"deployments", "configmaps", "namespaces", "widgets", "clusterroles", "jobs"} {
		if !resources[want] {
			t.Errorf("%s not recorded", want)
		}
	}
	if resources["secrets"] {
		t.Error("Secrets recorded by default")
	}

	ctx := context.Background()
	_ = unstructured.SetNestedField(w.Object, int64(2), "spec", "size")
	if err := c.Client.Update(ctx, w); err != nil {
		t.Fatal(err)
	}
	krplytest.AssertHistory(t, c.History("widgets.example.com", "shop", "w1"),
		krplytest.Version{Type: event.Added, Origin: materialize.OriginBaseline},
		krplytest.Version{Type: event.Modified, Changes: map[string]any{"spec.size": 2}},
	)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "extra"}}
	if err := c.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	if st := c.ObjectAt("ns", "", "extra", c.Mark()); !st.Exists || !st.Covered {
		t.Errorf("namespace extra: exists=%v covered=%v, want both", st.Exists, st.Covered)
	}
}

// recorder is a krplytest.TestingT that keeps failures instead of failing.
type recorder = failrec.T

// A wrong expectation fails with the whole history; a write the
// Collector cannot see (after Stop) makes Sync fail naming the object;
// New refuses what it cannot do.
func TestFailures(t *testing.T) {
	ctx := context.Background()
	r := &recorder{}
	defer r.Done()
	c := crtest.New(r, fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(web(3)),
		krplytest.WithResources("deploy"), krplytest.WithTimeout(time.Second))
	if len(r.Errors) > 0 {
		t.Fatalf("New: %q", r.Errors)
	}
	var d appsv1.Deployment
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, &d); err != nil {
		t.Fatal(err)
	}
	d.Spec.Replicas = ptr.To(int32(1))
	if err := c.Client.Update(ctx, &d); err != nil {
		t.Fatal(err)
	}
	if krplytest.AssertHistory(r, c.History("deploy", "shop", "web"), krplytest.Version{}, krplytest.Version{Changes: map[string]any{"spec.replicas": 0}}) {
		t.Fatal("a wrong expectation passed")
	}
	if len(r.Errors) != 1 || !strings.Contains(r.Errors[0], "version #2: spec.replicas changed to 1, want 0") ||
		!strings.Contains(r.Errors[0], "#2 MODIFIED watch") {
		t.Fatalf("failures %q", r.Errors)
	}

	r.Errors = nil
	c.Stop()
	if err := c.Client.Delete(ctx, &d); err != nil {
		t.Fatal(err)
	}
	c.Sync()
	if len(r.Errors) != 1 || !strings.Contains(r.Errors[0], "deletion of shop/web not recorded yet") {
		t.Fatalf("Sync after Stop: failures %q", r.Errors)
	}

	for _, tc := range []struct {
		name string
		run  func(krplytest.TestingT)
		want string
	}{
		{"nil builder", func(r krplytest.TestingT) { crtest.New(r, nil) }, "crtest: New: nil *fake.ClientBuilder"},
		{"WithObjects", func(r krplytest.TestingT) {
			crtest.New(r, fake.NewClientBuilder(), krplytest.WithObjects(web(1)))
		}, "give them to your fake's builder"},
		{"unknown resource", func(r krplytest.TestingT) {
			crtest.New(r, fake.NewClientBuilder().WithScheme(scheme(t)), krplytest.WithResources("gadgets"), krplytest.WithTimeout(time.Second))
		}, `"gadgets"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{}
			defer r.Done()
			tc.run(r)
			if len(r.Errors) == 0 || !strings.Contains(strings.Join(r.Errors, "\n"), tc.want) {
				t.Fatalf("failures %q, want one saying %q", r.Errors, tc.want)
			}
		})
	}
}

// A label selector filters what is recorded, as on an API server: an
// object that stops matching is deleted from the stream's point of view,
// one that starts matching added.
func TestLabelSelector(t *testing.T) {
	ctx := context.Background()
	d1, d2 := web(1), web(2)
	d1.Labels = map[string]string{"app": "web"}
	d2.Name, d2.UID = "other", "uid-other"
	c := crtest.New(t, fake.NewClientBuilder().WithScheme(scheme(t)).WithObjects(d1, d2),
		krplytest.WithResources("deploy"), krplytest.WithCollectorOptions(watch.WithLabelSelector("app=web")))
	for _, d := range []*appsv1.Deployment{d1, d2} {
		if err := c.Client.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			t.Fatal(err)
		}
		d.Spec.Replicas = ptr.To(int32(5))
		if err := c.Client.Update(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(c.History("deploy", "shop", "other").Versions()); n != 0 {
		t.Errorf("the filtered-out Deployment has %d versions, want 0", n)
	}
	d1.Labels, d2.Labels = nil, map[string]string{"app": "web"}
	for _, d := range []*appsv1.Deployment{d1, d2} {
		if err := c.Client.Update(ctx, d); err != nil {
			t.Fatal(err)
		}
	}
	krplytest.AssertHistory(t, c.History("deploy", "shop", "web"),
		krplytest.Version{Type: event.Added, Origin: materialize.OriginBaseline},
		krplytest.Version{Type: event.Modified, Changes: map[string]any{"spec.replicas": 5}},
		krplytest.Version{Type: event.Deleted},
	)
	krplytest.AssertHistory(t, c.History("deploy", "shop", "other"), krplytest.Version{Type: event.Added, Origin: materialize.OriginWatch})
}
