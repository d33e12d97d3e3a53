package recorder_test

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/krply/krply"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/recorder"
	"github.com/krply/krply/recorder/recordertest"
	"github.com/krply/krply/storage"
)

// kube returns cfg as Config.Cluster.
func kube(cfg *rest.Config) func() (*rest.Config, error) {
	return func() (*rest.Config, error) { return cfg, nil }
}

// The recorder reports its streams while it records, stops cleanly when
// its context ends with the journal intact and covered up to the stop,
// and a stop before the first sync is not an error.
func TestRecordUntilStopped(t *testing.T) {
	env := testenv.Start(t)
	ns := env.CreateNamespace(t)
	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cms := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings", "labels": map[string]any{"app": "web"}}, "data": map[string]any{"color": "blue"}}}
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	other := cm.DeepCopy()
	other.SetName("other")
	other.SetLabels(map[string]string{"app": "db"})
	if _, err := cms.Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(t.TempDir(), "krply.db")
	rec := recordertest.Start(t, recorder.Config{Cluster: kube(env.Config()), Journal: store, Resources: []string{"cm"}, Namespaces: []string{ns}, LabelSelector: "app=web"})
	// The status printed at the sync shows the stream watching, not
	// still listing.
	row := regexp.MustCompile(`(?m)^synced: .*\n.*STATE.*\n  \S+/core/v1/configmaps/` + ns + `\S*\s+(\S+)`)
	if state := rec.WaitFor(ctx, row)[1]; state != "watching" {
		t.Errorf("state printed at the sync: %s, want watching:\n%s", state, rec.Out.String())
	}
	// Stopped a moment after its sync, before any watch reached its
	// timeout, the recorder is covered up to its stop.
	during := time.Now()
	rec.Stop(ctx)
	text := rec.Out.String()
	for _, want := range []string{"recording " + env.Config().Host + " into " + store, "stopped; final status:", "/core/v1/configmaps/" + ns} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	j, err := krply.Open(ctx, store, krply.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	streams, err := j.Store().Streams(ctx, "")
	if err != nil || len(streams) != 1 {
		t.Fatalf("streams %+v, %v; want the ConfigMaps of %s", streams, err, ns)
	}
	if cov, err := storage.CoverageAt(ctx, j.Store(), streams[0].StreamID, during); err != nil || !cov.Covered {
		t.Errorf("coverage at %s, just before the stop: %+v, %v; want covered", during, cov, err)
	}
	id := streams[0].Stream.ClusterID
	if st, err := j.ObjectAt(ctx, krply.Object(id, "configmaps", ns, "settings"), time.Now()); err != nil || !st.Exists {
		t.Errorf("settings (app=web): %+v, %v; want it recorded", st, err)
	}
	if st, err := j.ObjectAt(ctx, krply.Object(id, "configmaps", ns, "other"), time.Now()); err != nil || st.Exists {
		t.Errorf("other (app=db): %+v, %v; want it left out by -l app=web", st, err)
	}

	// Stopped before its first sync: nil, and says so.
	early := recordertest.Start(t, recorder.Config{Cluster: kube(env.Config()), Journal: filepath.Join(t.TempDir(), "early.db")})
	early.Stop(ctx)
	if text := early.Out.String(); !strings.Contains(text, "stopped before every stream had its first complete list") && !strings.Contains(text, "stopped; final status:") {
		t.Errorf("stopped at once:\n%s", text)
	}
}
