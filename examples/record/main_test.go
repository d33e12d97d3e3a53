package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/krply/krply"
	"github.com/krply/krply/krplytest/testenv"
)

// The recorder records through a kubeconfig, reports its streams, and
// stops cleanly on SIGINT with the journal intact.
func TestRecordUntilSIGINT(t *testing.T) {
	env := testenv.Start(t)
	ns := env.CreateNamespace(t)
	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings"}, "data": map[string]any{"color": "blue"}}}
	cms := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)
	if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	store := filepath.Join(t.TempDir(), "krply.db")
	var out testenv.Buffer
	done := make(chan error, 1)
	go func() {
		done <- run(&out, env.Config(), []string{"cm"}, []string{ns}, store)
	}()
	for !strings.Contains(out.String(), "synced:") {
		select {
		case err := <-done:
			t.Fatalf("record returned before syncing: %v\n%s", err, out.String())
		case <-ctx.Done():
			t.Fatalf("record did not sync:\n%s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	// A time is covered once the stream's evidence passed it. Right after
	// sync the watch may not be open yet, so a stop then cannot vouch for
	// anything after the baseline: an event after beforeStop does.
	beforeStop := time.Now()
	marker := cm.DeepCopy()
	marker.SetName("marker")
	if _, err := cms.Create(ctx, marker, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRecorded(ctx, t, store, ns, "marker")
	stopBySIGINT(ctx, t, done, &out)
	text := out.String()
	for _, want := range []string{"stopped; final status:", "/core/v1/configmaps/" + ns, "2 events, 0 gaps"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}

	// The journal is closed and complete up to the stop (its checkpoint
	// vouches for the time before it): the ConfigMap is in it. After the
	// stop, time is not yet observed.
	j, err := krply.Open(ctx, store)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	clusterID := onlyCluster(ctx, t, j)
	settings := krply.Object(clusterID, "configmaps", ns, "settings")
	st, err := j.ObjectAt(ctx, settings, beforeStop)
	if err != nil || !st.Exists || !st.Covered {
		t.Fatalf("settings in the journal before the stop: %+v, %v; want it, covered", st, err)
	}
	st, err = j.ObjectAt(ctx, settings, time.Now())
	if err != nil || !st.Exists || st.Covered || len(st.Coverage) != 1 || !strings.Contains(st.Coverage[0].Reason, "not yet observed") {
		t.Fatalf("settings in the journal after the stop: %+v, %v; want it, not yet observed", st, err)
	}
}

// stopBySIGINT sends the process SIGINT and waits for run to return
// without an error.
func stopBySIGINT(ctx context.Context, t *testing.T, done <-chan error, out *testenv.Buffer) {
	t.Helper()
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("record after SIGINT: %v\n%s", err, out.String())
		}
	case <-ctx.Done():
		t.Fatalf("record did not stop on SIGINT:\n%s", out.String())
	}
}

// waitRecorded waits until a ConfigMap of ns is in the journal at store,
// read through a read-only open as a query process would.
func waitRecorded(ctx context.Context, t *testing.T, store, ns, name string) {
	t.Helper()
	for {
		if found := func() bool {
			j, err := krply.Open(ctx, store, krply.WithReadOnly())
			if err != nil {
				return false
			}
			defer j.Close()
			streams, err := j.Store().Streams(ctx, "")
			if err != nil || len(streams) != 1 {
				return false
			}
			st, err := j.ObjectAt(ctx, krply.Object(streams[0].Stream.ClusterID, "configmaps", ns, name), time.Now())
			return err == nil && st.Exists
		}(); found {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s/%s never reached the journal", ns, name)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// onlyCluster returns the cluster of the journal's only stream.
func onlyCluster(ctx context.Context, t *testing.T, j *krply.Journal) string {
	t.Helper()
	streams, err := j.Store().Streams(ctx, "")
	if err != nil || len(streams) != 1 {
		t.Fatalf("streams %+v, %v; want one", streams, err)
	}
	return streams[0].Stream.ClusterID
}
