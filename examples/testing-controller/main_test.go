package main

import (
	"context"
	"os"
	"strconv"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/krplytest/crtest"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/watch"
)

func deployment(ns, name string, replicas int32, labels, annotations map[string]string) *appsv1.Deployment {
	match := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, Annotations: annotations},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: match},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: match},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "example.com/app:1"}}},
			},
		},
	}
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func reconcile(t *testing.T, p *Pauser, ns, name string) {
	t.Helper()
	if _, err := p.Reconcile(context.Background(), ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}); err != nil {
		t.Fatalf("reconcile %s/%s: %v", ns, name, err)
	}
}

var paused = map[string]string{PausedLabel: "true"}

// TestPauseAndResume checks, through controller-runtime's fake client,
// every write the reconciler makes — not only the state it leaves — and
// that a second reconcile writes nothing.
func TestPauseAndResume(t *testing.T) {
	ctx := context.Background()
	c := crtest.New(t, fake.NewClientBuilder().WithScheme(newScheme(t)).WithObjects(
		deployment("shop", "web", 3, paused, map[string]string{"team": "shop"}),
		deployment("shop", "api", 2, paused, nil),
		deployment("shop", "db", 1, nil, nil),
	), krplytest.WithResources("deploy"))
	p := &Pauser{Client: c.Client}

	for _, name := range []string{"web", "api", "db"} {
		reconcile(t, p, "shop", name)
	}
	// web had annotations: one key was added. Its name has dots and a
	// slash, so the path quotes it.
	krplytest.AssertHistory(t, c.History("deploy", "shop", "web"),
		krplytest.Version{Type: event.Added, Origin: materialize.OriginBaseline},
		krplytest.Version{Type: event.Modified, Changes: map[string]any{
			"spec.replicas": 0,
			`metadata.annotations["example.com/paused-replicas"]`: "3",
		}},
	)
	// api had none: the whole map was added.
	krplytest.AssertHistory(t, c.History("deploy", "shop", "api"),
		krplytest.Version{Type: event.Added},
		krplytest.Version{Type: event.Modified, Changes: map[string]any{
			"spec.replicas":        0,
			"metadata.annotations": map[string]string{PausedReplicasAnnotation: "2"},
		}},
	)
	// db is not paused: never written.
	krplytest.AssertHistory(t, c.History("deploy", "shop", "db"), krplytest.Version{Type: event.Added})

	// A second reconcile of everything writes nothing.
	before := c.Mark()
	for _, name := range []string{"web", "api", "db"} {
		reconcile(t, p, "shop", name)
	}
	krplytest.AssertDiff(t, c.Diff(before, c.Mark(), "shop"))

	// Unlabelled, web is resumed: its count restored, the annotation gone.
	var web appsv1.Deployment
	if err := c.Client.Get(ctx, client.ObjectKey{Namespace: "shop", Name: "web"}, &web); err != nil {
		t.Fatal(err)
	}
	delete(web.Labels, PausedLabel)
	if err := c.Client.Update(ctx, &web); err != nil {
		t.Fatal(err)
	}
	reconcile(t, p, "shop", "web")
	h := c.History("deploy", "shop", "web")
	krplytest.AssertHistory(t, h,
		krplytest.Version{Type: event.Added},
		krplytest.Version{Type: event.Modified},
		krplytest.Version{Type: event.Modified, Changes: map[string]any{`metadata.labels["example.com/paused"]`: krplytest.Removed}},
		krplytest.Version{Type: event.Modified, Changes: map[string]any{
			"spec.replicas": 3,
			`metadata.annotations["example.com/paused-replicas"]`: krplytest.Removed,
		}},
	)
	// The whole history, kept as a golden file: rewrite it with
	// KRPLYTEST_UPDATE=1 go test . after a deliberate change.
	krplytest.AssertGolden(t, "testdata/web.history.json", h)
}

// TestPauserOnEnvtest runs the reconciler in a manager against envtest's
// API server and waits, without a sleep, for the history it should write.
func TestPauserOnEnvtest(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		if require, _ := strconv.ParseBool(os.Getenv("KRPLY_REQUIRE_TESTENV")); require {
			t.Fatal("KUBEBUILDER_ASSETS is not set: export KUBEBUILDER_ASSETS=$(hack/testbin.sh | tail -n 1)")
		}
		t.Skip("KUBEBUILDER_ASSETS is not set: export KUBEBUILDER_ASSETS=$(hack/testbin.sh | tail -n 1) to run this test")
	}
	env := &envtest.Environment{}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("start envtest: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("stop envtest: %v", err)
		}
	})
	ctx := context.Background()
	cl, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}); err != nil {
		t.Fatal(err)
	}

	// Record before anything happens; the test's end stops it.
	r := krplytest.Record(t, cfg, krplytest.WithResources("deploy"), krplytest.WithCollectorOptions(watch.WithNamespaces("shop")))

	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: newScheme(t), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := (&Pauser{Client: mgr.GetClient()}).SetupWithManager(mgr); err != nil {
		t.Fatal(err)
	}
	mctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})

	if err := cl.Create(ctx, deployment("shop", "web", 3, paused, nil)); err != nil {
		t.Fatal(err)
	}
	// The manager reconciles on its own time: wait for the history.
	r.EventuallyHistory("deploy", "shop", "web",
		krplytest.Version{Type: event.Added, Origin: materialize.OriginWatch},
		krplytest.Version{Type: event.Modified, Changes: map[string]any{
			"spec.replicas":        0,
			"metadata.annotations": map[string]string{PausedReplicasAnnotation: "3"},
		}},
	)
}
