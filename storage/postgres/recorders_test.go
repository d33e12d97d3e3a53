package postgres_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/krply/krply"
	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/postgres"
)

// The tests of this file run real recorders as separate processes: the
// test binary re-executed in a role named by these variables.
const (
	childRoleEnv       = "KRPLY_PG_CHILD_ROLE"
	childDSNEnv        = "KRPLY_PG_CHILD_DSN"
	childSchemaEnv     = "KRPLY_PG_CHILD_SCHEMA"
	childKubeconfigEnv = "KRPLY_PG_CHILD_KUBECONFIG"
	childNamespaceEnv  = "KRPLY_PG_CHILD_NAMESPACE"
)

func init() {
	role := os.Getenv(childRoleEnv)
	if role == "" {
		return
	}
	var err error
	switch role {
	case "recorder":
		err = recorderChild()
	default:
		err = fmt.Errorf("unknown child role %q", role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", role, err)
		os.Exit(2)
	}
	os.Exit(0)
}

// recorderChild records the configmaps of one namespace into the journal
// until SIGTERM, printing "synced" once its baseline is complete.
func recorderChild() error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv(childKubeconfigEnv))
	if err != nil {
		return err
	}
	store, err := postgres.Open(ctx, os.Getenv(childDSNEnv), postgres.WithSchema(os.Getenv(childSchemaEnv)))
	if err != nil {
		return err
	}
	defer store.Close()
	j, err := krply.NewJournal(store, krply.WithClusterID("c1"), krply.WithResources("configmaps"),
		krply.WithNamespaces(os.Getenv(childNamespaceEnv)))
	if err != nil {
		return err
	}
	col, err := j.NewCollectorForConfig(cfg)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- col.Start(ctx) }()
	if err := col.WaitForSync(ctx); err != nil {
		return err
	}
	fmt.Println("synced")
	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// recorder is a running recorder process.
type recorder struct {
	cmd    *exec.Cmd
	synced chan error
}

func startRecorder(t *testing.T, dsn, schema, kubeconfig, ns string) *recorder {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childRoleEnv+"=recorder", childDSNEnv+"="+dsn, childSchemaEnv+"="+schema,
		childKubeconfigEnv+"="+kubeconfig, childNamespaceEnv+"="+ns)
	cmd.Stderr = &testWriter{t}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &recorder{cmd: cmd, synced: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "synced" {
				r.synced <- nil
			}
		}
		_, _ = io.Copy(io.Discard, out)
		r.synced <- errors.New("recorder exited before it synced")
	}()
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return r
}

type testWriter struct{ t *testing.T }

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Logf("recorder: %s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// TestTwoRecordersOneKilled runs two recorders of one cluster as separate
// processes into one database, kills one of them (SIGKILL) in the middle
// of a workload, and checks the journal: every write of the workload is
// there once as a real watch event (no duplicate although both recorders
// saw it, nothing lost although one died), and the journal is covered
// with the exact state of the namespace after the last write.
func TestTwoRecordersOneKilled(t *testing.T) {
	t.Parallel()
	env := testenv.Start(t)
	ns := env.CreateNamespace(t)
	dsn := database(t)
	const schema = "two_recorders"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	store, err := postgres.Open(ctx, dsn, postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()

	a := startRecorder(t, dsn, schema, env.Kubeconfig(), ns)
	b := startRecorder(t, dsn, schema, env.Kubeconfig(), ns)
	for _, r := range []*recorder{a, b} {
		select {
		case err := <-r.synced:
			if err != nil {
				t.Fatal(err)
			}
		case <-ctx.Done():
			t.Fatal("recorders did not sync")
		}
	}

	cs, err := kubernetes.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	cms := cs.CoreV1().ConfigMaps(ns)
	alive := map[string]string{} // name -> resourceVersion
	var writes []struct{ name, rv string }
	deleted := map[string]bool{}
	const ops = 90
	for i := range ops {
		if i == ops/2 {
			// Kill a while the writes flow.
			if err := a.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = a.cmd.Wait()
		}
		name := fmt.Sprintf("cm-%d", i%15)
		var obj *corev1.ConfigMap
		switch _, exists := alive[name]; {
		case !exists:
			obj, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": fmt.Sprint(i)}}, metav1.CreateOptions{})
			delete(deleted, name)
		case i%7 == 3:
			err = cms.Delete(ctx, name, metav1.DeleteOptions{})
			delete(alive, name)
			deleted[name] = true
		default:
			obj, err = cms.Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": fmt.Sprint(i)}}, metav1.UpdateOptions{})
		}
		if err != nil {
			t.Fatalf("op %d on %s: %v", i, name, err)
		}
		if obj != nil {
			alive[name] = obj.ResourceVersion
			writes = append(writes, struct{ name, rv string }{name, obj.ResourceVersion})
		}
	}
	// Two markers written after the workload: once the second is
	// recorded, so is everything before it (a watch delivers in order);
	// the state is checked when the first was observed, and the second
	// is the evidence of continuity after that time.
	obj := func(name string) storage.ObjectID {
		return storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: ns, Name: name}
	}
	var markers []event.Record
	for _, name := range []string{"marker-1", "marker-2"} {
		m, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for {
			rec, err := store.EventByResourceVersion(ctx, obj(name), "", m.ResourceVersion)
			if err == nil {
				markers = append(markers, rec)
				break
			} else if !errors.Is(err, storage.ErrNotFound) {
				t.Fatal(err)
			}
			if ctx.Err() != nil {
				t.Fatalf("the surviving recorder did not record %s", name)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	last := markers[0].ObservedAt
	alive["marker-1"] = markers[0].Resource.ResourceVersion
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := b.cmd.Wait(); err != nil {
		t.Fatalf("the surviving recorder: %v", err)
	}

	streams, err := store.Streams(ctx, "c1")
	if err != nil || len(streams) != 1 {
		t.Fatalf("Streams = %v, %v; want the configmaps stream", streams, err)
	}
	streamID := streams[0].StreamID
	var recs []event.Record
	for q := (storage.Query{StreamID: streamID, WithoutBodies: true}); ; {
		page, err := store.Records(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, page.Records...)
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	// No duplicates: each real change is stored once, although both
	// recorders saw the first half.
	seen := map[string]int{}
	baselines := map[string]bool{}
	for _, r := range recs {
		if r.IsObjectChange() && !r.Synthetic {
			seen[r.Resource.Name+"@"+r.Resource.ResourceVersion+"/"+string(r.WatchType)]++
		}
		if r.Type == event.TypeBaseline && r.Baseline.Phase == event.BaselineEnd {
			baselines[r.BaselineID] = true
		}
	}
	for k, n := range seen {
		if n != 1 {
			t.Errorf("change %s stored %d times", k, n)
		}
	}
	// The second recorder lists too, or resumes from the first one's
	// checkpoint when it finds the stream covered already.
	if len(baselines) == 0 {
		t.Errorf("no complete baseline in the stream")
	}
	// Nothing lost: every write is there as a real watch event.
	for _, w := range writes {
		rec, err := store.EventByResourceVersion(ctx, obj(w.name), "", w.rv)
		if err != nil || rec.Synthetic {
			t.Errorf("write %s@%s: %v (synthetic %v)", w.name, w.rv, err, rec.Synthetic)
		}
	}
	for name := range deleted {
		rec, err := store.LatestAt(ctx, obj(name), last)
		if err != nil || rec.WatchType != event.Deleted || rec.Synthetic {
			t.Errorf("%s was deleted: LatestAt = %s %s (synthetic %v), %v", name, rec.WatchType, rec.Resource.ResourceVersion, rec.Synthetic, err)
		}
	}
	// Coverage right: covered after the last write, with its exact state.
	cov, err := storage.CoverageAt(ctx, store, streamID, last)
	if err != nil || !cov.Covered {
		t.Fatalf("coverage after the last write: %+v, %v", cov, err)
	}
	state, err := store.AliveAt(ctx, storage.AliveQuery{StreamID: streamID, At: last, WithoutBodies: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range state {
		got[r.Resource.Name] = r.Resource.ResourceVersion
	}
	if fmt.Sprint(got) != fmt.Sprint(alive) {
		t.Fatalf("state after the last write:\n got %v\nwant %v", got, alive)
	}
	t.Logf("%d records in the stream, %d real changes, %d writes, %d complete baselines", len(recs), len(seen), len(writes), len(baselines))
}
