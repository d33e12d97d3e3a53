package main

import (
	"context"
	"io"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/replay"
)

var (
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// startRecord runs `kubectl krply record` until the returned function
// stops it (as Ctrl-C does) and returns its exit code and output.
func startRecord(t *testing.T, args ...string) (out *testenv.Buffer, stop func() result) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	out, errOut := &testenv.Buffer{}, &testenv.Buffer{}
	done := make(chan int, 1)
	go func() {
		e := newEnv(streams(out, errOut))
		done <- e.execute(ctx, append([]string{"record"}, args...))
	}()
	var once sync.Once
	var r result
	stop = func() result {
		once.Do(func() {
			cancel()
			select {
			case code := <-done:
				r = result{code: code, stdout: out.String(), stderr: errOut.String()}
			case <-time.After(time.Minute):
				t.Fatalf("record did not stop within a minute of its context:\n%s\n%s", out.String(), errOut.String())
			}
		})
		return r
	}
	t.Cleanup(func() { stop() })
	return out, stop
}

// waitFor polls ok; last, when given, is the last try's result, shown on
// failure.
func waitFor(t *testing.T, what string, timeout time.Duration, ok func() bool, last ...*result) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			for _, r := range last {
				t.Logf("last try: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			t.Fatalf("no %s within %s", what, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func object(apiVersion, kind, namespace, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: fields}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

func deploymentObject(namespace, name string, replicas int64) *unstructured.Unstructured {
	labels := map[string]any{"app": name}
	return object("apps/v1", "Deployment", namespace, name, map[string]any{"spec": map[string]any{
		"replicas": replicas,
		"selector": map[string]any{"matchLabels": labels},
		"template": map[string]any{
			"metadata": map[string]any{"labels": labels},
			"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "registry.example.com/web:1.0"}}},
		},
	}})
}

func dynClient(t *testing.T, cfg *rest.Config) *dynamic.DynamicClient {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

// The whole story on a real API server: record, who changed what (audit
// log), blame, a replay plan, its dry run, a wrong hash refused, and the
// apply of exactly the reviewed plan into a sandbox namespace.
func TestEndToEnd(t *testing.T) {
	env := testenv.Start(t, testenv.WithAudit(""))
	ns := env.CreateNamespace(t)
	ctx := context.Background()
	alice, bob := dynClient(t, env.ConfigFor(testenv.UserAlice)), dynClient(t, env.ConfigFor(testenv.UserBob))
	if _, err := alice.Resource(configMaps).Namespace(ns).Create(ctx, object("v1", "ConfigMap", ns, "settings", map[string]any{"data": map[string]any{"color": "blue"}}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Resource(deployments).Namespace(ns).Create(ctx, deploymentObject(ns, "web", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	journal := filepath.Join(t.TempDir(), "krply.db")
	kube := []string{"--kubeconfig", env.Kubeconfig(), "--journal", journal}
	out, stop := startRecord(t, append(kube, "--resource", "deploy,cm", "-n", ns, "--status-every", "0", "--listen", "127.0.0.1:0")...)
	waitFor(t, "sync", 2*time.Minute, func() bool { return strings.Contains(out.String(), "synced:") })
	synced := time.Now()

	// bob scales web, alice changes settings.
	web, err := bob.Resource(deployments).Namespace(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(web.Object, int64(3), "spec", "replicas")
	if _, err := bob.Resource(deployments).Namespace(ns).Update(ctx, web, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	settings, err := alice.Resource(configMaps).Namespace(ns).Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(settings.Object, "green", "data", "color")
	green, err := alice.Resource(configMaps).Namespace(ns).Update(ctx, settings, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	changedRV := green.GetResourceVersion()
	// Once the journal holds both changes (ObservedAt is when krply saw
	// them), a time after them; events after that time vouch for it in
	// both streams.
	waitFor(t, "the changes in the journal", time.Minute, func() bool {
		a := runLive(t, append(kube, "get", "cm/settings", "-n", ns, "-o", "jsonpath={.data.color}")...)
		b := runLive(t, append(kube, "get", "deploy/web", "-n", ns, "-o", "jsonpath={.spec.replicas}")...)
		return a.stdout == "green" && b.stdout == "3"
	})
	changed := time.Now()
	time.Sleep(10 * time.Millisecond)
	if _, err := alice.Resource(configMaps).Namespace(ns).Create(ctx, object("v1", "ConfigMap", ns, "marker", map[string]any{}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.Resource(deployments).Namespace(ns).Create(ctx, deploymentObject(ns, "marker", 1), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var last result
	waitFor(t, "markers in the journal", time.Minute, func() bool {
		a := runLive(t, append(kube, "get", "cm/marker", "-n", ns)...)
		last = runLive(t, append(kube, "get", "deploy/marker", "-n", ns)...)
		if a.code != exitOK {
			last = a
		}
		return a.code == exitOK && last.code == exitOK
	}, &last)
	// The recorder serves the query API (--listen): it answers as the
	// journal does.
	listen := regexp.MustCompile(`--server (http://\S+)\)`).FindStringSubmatch(out.String())
	if listen == nil {
		t.Fatalf("record --listen does not say where it serves:\n%s", out.String())
	}
	live := runLive(t, "--server", listen[1], "history", "deploy/web", "-n", ns)
	if want := runLive(t, append(kube, "history", "deploy/web", "-n", ns)...); live != want || live.code != exitOK {
		t.Errorf("history through record --listen:\n%s%s\nthrough the journal:\n%s%s", live.stdout, live.stderr, want.stdout, want.stderr)
	}
	// Its /metrics are served by the Prometheus client library: krply's
	// beside the Go runtime's and the process's, the request just made
	// in its route's histogram.
	resp, err := http.Get(listen[1] + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	metricsText, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{"\ngo_goroutines ", "\nprocess_resident_memory_bytes ", "\nkrply_build_info{", `krply_stream_covered{group="apps",namespace="` + ns + `"`,
		`krply_api_request_duration_seconds_count{method="GET",route="/api/v1/history"} `, "\nkrply_relist_duration_seconds_count 2\n"} {
		if !strings.Contains(string(metricsText), want) {
			t.Errorf("record --listen's /metrics lack %q:\n%s", strings.TrimSpace(want), metricsText)
		}
	}
	if r := stop(); r.code != exitOK || !strings.Contains(r.stdout, "stopped; final status:") {
		t.Fatalf("record stopped with exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	// Who: the audit log's writes reach the file moments after the
	// response.
	waitFor(t, "bob's update linked from the audit log", time.Minute, func() bool {
		r := runLive(t, append(kube, "audit", "ingest", env.AuditLogPath(), "-o", "jsonpath={.exact}")...)
		if r.code != exitOK {
			t.Fatalf("audit ingest: exit %d\n%s", r.code, r.stderr)
		}
		h := runLive(t, append(kube, "history", "deploy/web", "-n", ns)...)
		return strings.Contains(h.stdout, "bob (update)")
	})
	h := runLive(t, append(kube, "history", "deploy/web", "-n", ns)...)
	if h.code != exitOK || !regexp.MustCompile(`MODIFIED\s+\d+\s+watch\s+bob \(update\)\s+spec.replicas: 1 → 3`).MatchString(h.stdout) {
		t.Errorf("history deploy/web: exit %d, want bob's scale 1 → 3:\n%s%s", h.code, h.stdout, h.stderr)
	}
	b := runLive(t, append(kube, "blame", "deployments.apps/web", "-n", ns)...)
	if b.code != exitOK || !regexp.MustCompile(`spec.replicas\s+3\s+\S+\s+\d+\s+MODIFIED\s+bob \(update\)`).MatchString(b.stdout) {
		t.Errorf("blame: exit %d, want spec.replicas 3 by bob:\n%s%s", b.code, b.stdout, b.stderr)
	}

	// Replay into a sandbox namespace of the same cluster: refused unless
	// the plan allows the source cluster, and a refused dry run says so.
	sandbox := ns + "-restore"
	at := changed.Format(time.RFC3339Nano)
	p := runLive(t, append(kube, "replay", "plan", "-n", ns, "--at", at, "--to-namespace", sandbox)...)
	m := regexp.MustCompile(`saved plan (\S+) with hash (\S+)`).FindStringSubmatch(p.stdout)
	if p.code != exitOK || m == nil {
		t.Fatalf("replay plan: exit %d:\n%s%s", p.code, p.stdout, p.stderr)
	}
	if d := runLive(t, append(kube, "replay", "dry-run", m[1])...); d.code != exitError ||
		!strings.Contains(d.stderr, "dry run of plan "+m[1]+" refused: the target cluster") || strings.Contains(d.stderr, "applied") {
		t.Errorf("replay dry-run on the source cluster: exit %d, want a refused dry run:\n%s%s", d.code, d.stdout, d.stderr)
	}
	p = runLive(t, append(kube, "replay", "plan", "-n", ns, "--at", at, "--to-namespace", sandbox, "--allow-source-cluster", "--kind", "ConfigMap,Deployment,Namespace", "--name", "settings,web,"+ns)...)
	m = regexp.MustCompile(`saved plan (\S+) with hash (\S+)`).FindStringSubmatch(p.stdout)
	if p.code != exitOK || m == nil {
		t.Fatalf("replay plan: exit %d:\n%s%s", p.code, p.stdout, p.stderr)
	}
	planID, hash := m[1], m[2]
	d := runLive(t, append(kube, "replay", "dry-run", planID)...)
	if d.code != exitOK || !strings.Contains(d.stdout, string(replay.StatusDryRunNeedsNamespaces)) || !strings.Contains(d.stdout, "replay apply "+planID+" --confirm "+hash) {
		t.Fatalf("replay dry-run: exit %d:\n%s%s", d.code, d.stdout, d.stderr)
	}
	target := dynClient(t, env.Config()).Resource(configMaps).Namespace(sandbox)
	wrong := runLive(t, append(kube, "replay", "apply", planID, "--confirm", "sha256:0")...)
	if wrong.code != exitError || !strings.Contains(wrong.stderr, "was not applied") || !strings.Contains(wrong.stderr, "--confirm "+hash) {
		t.Errorf("apply with a wrong hash: exit %d:\n%s%s", wrong.code, wrong.stdout, wrong.stderr)
	}
	if _, err := target.Get(ctx, "settings", metav1.GetOptions{}); err == nil {
		t.Fatal("an apply refused for its hash wrote the ConfigMap")
	}
	a := runLive(t, append(kube, "replay", "apply", planID, "--confirm", hash)...)
	if a.code != exitOK || !strings.Contains(a.stdout, string(replay.StatusApplied)) {
		t.Fatalf("replay apply: exit %d:\n%s%s", a.code, a.stdout, a.stderr)
	}
	cm, err := target.Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if color, _, _ := unstructured.NestedString(cm.Object, "data", "color"); color != "green" ||
		!strings.HasSuffix(cm.GetAnnotations()[replay.AnnotationSource], " configmaps "+ns+"/settings at resourceVersion "+changedRV) {
		t.Errorf("the applied ConfigMap has color %q and source %q, want green from resourceVersion %s", color, cm.GetAnnotations()[replay.AnnotationSource], changedRV)
	}

	// The same state planned again is a new plan, but its dry run and its
	// apply find every object unchanged, and the server keeps every
	// resourceVersion the first apply left.
	again := runLive(t, append(kube, "replay", "plan", "-n", ns, "--at", at, "--to-namespace", sandbox, "--allow-source-cluster", "--kind", "ConfigMap,Deployment,Namespace", "--name", "settings,web,"+ns)...)
	m = regexp.MustCompile(`saved plan (\S+) with hash (\S+)`).FindStringSubmatch(again.stdout)
	if again.code != exitOK || m == nil || m[1] == planID {
		t.Fatalf("replay plan again: exit %d, want a new plan:\n%s%s", again.code, again.stdout, again.stderr)
	}
	d = runLive(t, append(kube, "replay", "dry-run", m[1])...)
	if rows := tableRows(d.stdout); d.code != exitOK || len(rows) != 3 || slices.ContainsFunc(rows, func(r []string) bool { return r[2] != "unchanged" }) {
		t.Errorf("replay dry-run of the same state again: exit %d, want 3 objects unchanged:\n%s%s", d.code, d.stdout, d.stderr)
	}
	a2 := runLive(t, append(kube, "replay", "apply", m[1], "--confirm", m[2])...)
	first, second := tableRows(a.stdout), tableRows(a2.stdout)
	if a2.code != exitOK || len(second) != len(first) || len(first) != 3 {
		t.Fatalf("replay apply of the same state again: exit %d:\n%s%s", a2.code, a2.stdout, a2.stderr)
	}
	for i, r := range second {
		if r[2] != "unchanged" || r[3] != first[i][3] {
			t.Errorf("second apply: %s %s at resourceVersion %s, want unchanged at the first apply's %s", r[1], r[2], r[3], first[i][3])
		}
	}
	dep, err := dynClient(t, env.Config()).Resource(deployments).Namespace(sandbox).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if replicas, _, _ := unstructured.NestedInt64(dep.Object, "spec", "replicas"); replicas != 3 {
		t.Errorf("the applied Deployment has %d replicas, want 3", replicas)
	}
	if _, err := dynClient(t, env.Config()).Resource(configMaps).Namespace(sandbox).Get(ctx, "marker", metav1.GetOptions{}); err == nil {
		t.Error("the marker created after --at was applied")
	}

	// The recorder's query API answers as the journal does.
	url := serveFile(t, journal)
	for _, args := range [][]string{
		{"history", "deploy/web", "-n", ns}, {"blame", "cm/settings", "-n", ns, "-o", "json"},
		{"diff", "-n", ns, "--from", synced.Format(time.RFC3339Nano), "--to", at}, {"replay", "dry-run", planID},
	} {
		want := runLive(t, append([]string{"--journal", journal}, args...)...)
		got := runLive(t, append([]string{"--server", url, "--token", "secret"}, args...)...)
		if args[0] == "replay" {
			// The query API dry-runs on its own target, if it has one.
			if got.code != exitError || !strings.Contains(got.stderr, "dry") {
				t.Errorf("dry run through an API without a target: exit %d\n%s", got.code, got.stderr)
			}
			continue
		}
		if got != want {
			t.Errorf("%v: --server answers differently from --journal:\n%s%s\n---\n%s%s", args, got.stdout, got.stderr, want.stdout, want.stderr)
		}
	}

	// Ctrl-C before the first sync is not an error.
	_, stopEarly := startRecord(t, "--kubeconfig", env.Kubeconfig(), "--journal", filepath.Join(t.TempDir(), "early.db"))
	if r := stopEarly(); r.code != exitOK {
		t.Errorf("record stopped before its first sync: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// tableRows splits the rows of the first table in out (after its header,
// up to the first empty line) into their columns.
func tableRows(out string) [][]string {
	var rows [][]string
	for i, line := range strings.Split(out, "\n") {
		if i == 0 {
			continue
		}
		if strings.TrimSpace(line) == "" {
			break
		}
		rows = append(rows, strings.Fields(line))
	}
	return rows
}
