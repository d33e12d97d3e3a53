package audit

// The real thing: a kube-apiserver writing an audit log while the Collector
// records the journal (krplytest/testenv). Skips when KUBEBUILDER_ASSETS is
// missing, fails under `make test` (KRPLY_REQUIRE_TESTENV).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/krplytest/testenv/faultproxy"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/watch"
)

// bodyRules log configmaps and deployments with their bodies and everything
// else at Metadata level. integrationPolicy puts them in front of the
// harness's default rules, after its rules that log nothing (health checks,
// the apiserver's own leases); the first matching rule wins.
const bodyRules = `- level: RequestResponse
  resources:
  - group: ""
    resources: ["configmaps"]
  - group: apps
    resources: ["deployments"]
- level: Metadata
`

func integrationPolicy(t *testing.T) string {
	t.Helper()
	const writes = "- level: RequestResponse\n"
	if !strings.Contains(testenv.DefaultAuditPolicy, writes) {
		t.Fatalf("testenv.DefaultAuditPolicy changed shape; no %q rule in:\n%s", writes, testenv.DefaultAuditPolicy)
	}
	return strings.Replace(testenv.DefaultAuditPolicy, writes, bodyRules+writes, 1)
}

var (
	configMaps      = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets         = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	serviceAccounts = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	deployments     = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

func clientFor(t *testing.T, cfg *rest.Config) dynamic.Interface {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

func obj(apiVersion, kind, ns, name string, fields map[string]any) *unstructured.Unstructured {
	o := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": name, "namespace": ns}}
	for k, v := range fields {
		o[k] = v
	}
	return &unstructured.Unstructured{Object: o}
}

// must(f())(t, what) returns f's value, failing the test on f's error.
func must[T any](v T, err error) func(t *testing.T, what string) T {
	return func(t *testing.T, what string) T {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		return v
	}
}

// nsSource passes the events about one namespace: the control plane's
// other requests (namespace creation, RBAC set-up) are not recorded by the
// collector of this test.
type nsSource struct {
	src Source
	ns  string
}

func (s nsSource) Next(ctx context.Context) (Event, error) {
	for {
		evt, err := s.src.Next(ctx)
		if err != nil || (evt.ObjectRef != nil && evt.ObjectRef.Namespace == s.ns) {
			return evt, err
		}
	}
}

// record runs a Collector of the namespace ns into st until the test ends,
// and waits until it is in sync.
func record(t *testing.T, ctx context.Context, cfg *rest.Config, st storage.Store, ns string, opts ...watch.Option) {
	t.Helper()
	col, err := watch.NewCollectorForConfig(cfg, st, append([]watch.Option{
		watch.WithClusterID("it"), watch.WithNamespaces(ns), watch.WithLogger(testr.New(t)),
		watch.WithBatching(64, 1<<20, 5*time.Millisecond), watch.WithRediscoveryInterval(0),
	}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	krplytest.StartCollector(t, col, 3*time.Minute)
}

// change is a write the test made and whom it should be attributed to.
type change struct {
	what       string
	gvr        schema.GroupVersionResource
	name       string
	watchType  event.WatchType
	rv         string // "" for a deletion answered by a Status
	user       string
	rule       string
	confidence float64
}

func TestAttributesRealChanges(t *testing.T) {
	env := testenv.Start(t, testenv.WithAudit(integrationPolicy(t)))
	ns := env.CreateNamespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel) // after the collector stops (cleanups run last in, first out)

	st := memory.New()
	t.Cleanup(func() { st.Close() })
	record(t, ctx, env.Config(), st, ns, watch.WithResources("cm", "deploy", "secrets", "sa"), watch.AllowSecrets())

	admin := clientFor(t, env.Config())
	alice := clientFor(t, env.ConfigFor(testenv.UserAlice))
	bob := clientFor(t, env.ConfigFor(testenv.UserBob))
	viewer := clientFor(t, env.ConfigFor(testenv.UserViewer))
	var changes []change
	add := func(c change) { changes = append(changes, c) }

	// ConfigMaps and Deployments: RequestResponse, matched exactly.
	cm := must(alice.Resource(configMaps).Namespace(ns).Create(ctx,
		obj("v1", "ConfigMap", ns, "settings", map[string]any{"data": map[string]any{"mode": "blue"}}), metav1.CreateOptions{}))(t, "alice creates the configmap")
	add(change{"create configmap", configMaps, "settings", event.Added, cm.GetResourceVersion(), testenv.UserAlice, RuleExactResourceVersion, 1})
	_ = unstructured.SetNestedField(cm.Object, "green", "data", "mode")
	cm = must(bob.Resource(configMaps).Namespace(ns).Update(ctx, cm, metav1.UpdateOptions{}))(t, "bob updates the configmap")
	add(change{"update configmap", configMaps, "settings", event.Modified, cm.GetResourceVersion(), testenv.UserBob, RuleExactResourceVersion, 1})
	noop := must(bob.Resource(configMaps).Namespace(ns).Update(ctx, cm, metav1.UpdateOptions{}))(t, "bob updates the configmap without a change")
	if noop.GetResourceVersion() != cm.GetResourceVersion() {
		t.Fatalf("a no-op update changed the resourceVersion from %s to %s", cm.GetResourceVersion(), noop.GetResourceVersion())
	}
	must(bob.Resource(configMaps).Namespace(ns).Patch(ctx, "settings", types.MergePatchType,
		[]byte(`{"data":{"mode":"red"}}`), metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}}))(t, "bob dry-runs a patch")

	deploy := must(alice.Resource(deployments).Namespace(ns).Create(ctx, obj("apps/v1", "Deployment", ns, "web", map[string]any{
		"spec": map[string]any{
			"replicas": int64(1),
			"selector": map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "web"}},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "app", "image": "registry.example/web:1"}}},
			},
		},
	}), metav1.CreateOptions{}))(t, "alice creates the deployment")
	add(change{"create deployment", deployments, "web", event.Added, deploy.GetResourceVersion(), testenv.UserAlice, RuleExactResourceVersion, 1})
	deploy = must(bob.Resource(deployments).Namespace(ns).Patch(ctx, "web", types.MergePatchType,
		[]byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{}))(t, "bob scales the deployment")
	add(change{"patch deployment", deployments, "web", event.Modified, deploy.GetResourceVersion(), testenv.UserBob, RuleExactResourceVersion, 1})

	// Secrets and ServiceAccounts: Metadata level, matched best-effort.
	secret := must(bob.Resource(secrets).Namespace(ns).Create(ctx,
		obj("v1", "Secret", ns, "token", map[string]any{"stringData": map[string]any{"k": "v1"}}), metav1.CreateOptions{}))(t, "bob creates the secret")
	add(change{"create secret", secrets, "token", event.Added, secret.GetResourceVersion(), testenv.UserBob, RuleNearestFollowing, ConfidenceSoleCandidate})
	_ = unstructured.SetNestedField(secret.Object, "djI=", "data", "k")
	secret = must(alice.Resource(secrets).Namespace(ns).Update(ctx, secret, metav1.UpdateOptions{}))(t, "alice updates the secret")
	add(change{"update secret", secrets, "token", event.Modified, secret.GetResourceVersion(), testenv.UserAlice, RuleNearestFollowing, ConfidenceSoleCandidate})
	sa := must(alice.Resource(serviceAccounts).Namespace(ns).Create(ctx,
		obj("v1", "ServiceAccount", ns, "robot", nil), metav1.CreateOptions{}))(t, "alice creates the service account")
	add(change{"create service account", serviceAccounts, "robot", event.Added, sa.GetResourceVersion(), testenv.UserAlice, RuleNearestFollowing, ConfidenceSoleCandidate})

	// A ServiceAccount delete answers with the deleted object: what
	// resourceVersion does it carry, compared to the DELETED watch event?
	saDeleted := deleteRaw(t, ctx, env.ConfigFor(testenv.UserBob), "/api/v1/namespaces/"+ns+"/serviceaccounts/robot")
	add(change{"delete service account", serviceAccounts, "robot", event.Deleted, saDeleted.GetResourceVersion(), testenv.UserBob, RuleNearestFollowing, ConfidenceSoleCandidate})

	// Reads are skipped.
	must(viewer.Resource(configMaps).Namespace(ns).Get(ctx, "settings", metav1.GetOptions{}))(t, "viewer gets")
	must(viewer.Resource(deployments).Namespace(ns).List(ctx, metav1.ListOptions{}))(t, "viewer lists")

	// ConfigMap delete answers with a Status naming the uid.
	if err := alice.Resource(configMaps).Namespace(ns).Delete(ctx, "settings", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	add(change{"delete configmap", configMaps, "settings", event.Deleted, "", testenv.UserAlice, RuleExactUIDDeletion, 1})
	last := must(admin.Resource(configMaps).Namespace(ns).Create(ctx,
		obj("v1", "ConfigMap", ns, "zz-last", nil), metav1.CreateOptions{}))(t, "admin creates the last configmap")
	add(change{"create last configmap", configMaps, "zz-last", event.Added, last.GetResourceVersion(), testenv.UserAdmin, RuleExactResourceVersion, 1})

	// Wait until the journal has every change, and check the DELETED
	// event's resourceVersion against the delete response.
	targets := make([]event.Record, len(changes))
	for i, c := range changes {
		targets[i] = waitForJournal(t, ctx, st, ns, c)
	}
	for i, c := range changes {
		if c.what == "delete service account" && targets[i].Resource.ResourceVersion != c.rv {
			t.Errorf("DELETED event at rv %s, the delete response at rv %s", targets[i].Resource.ResourceVersion, c.rv)
		}
	}
	waitForAuditLine(t, ctx, env.AuditLogPath(), "zz-last")

	corr, err := NewCorrelator(st, "it", WithLogger(testr.New(t)))
	if err != nil {
		t.Fatal(err)
	}
	files := must(RotatedFiles(env.AuditLogPath()))(t, "rotated files")
	src := must(OpenFiles(files))(t, "open")
	defer src.Close()
	sum, err := corr.Ingest(ctx, nsSource{src, ns})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("summary: %+v", sum)
	if sum.Exact != 6 || sum.Scored != 4 || sum.Unmatched != 0 || sum.SkippedDryRun != 1 || sum.SkippedNoChange != 1 ||
		sum.SkippedReadOnly < 2 || sum.Recorded != 10 {
		t.Errorf("summary %+v, want 6 exact, 4 scored, none unmatched, 1 dry run, 1 no-op, reads skipped, 10 recorded", withoutProblems(sum))
	}
	for _, p := range sum.Problems {
		t.Errorf("malformed audit line: %v", p)
	}

	got := correlationsOf(t, st, targets...)
	for i, c := range changes {
		list := got[targets[i].EventID]
		if len(list) != 1 {
			t.Errorf("%s: %d correlations, want 1: %+v", c.what, len(list), list)
			continue
		}
		a := list[0].Audit
		if a.User != c.user || a.Rule != c.rule || a.Confidence != c.confidence {
			t.Errorf("%s: attributed to %s by %s (%.1f), want %s by %s (%.1f)", c.what, a.User, a.Rule, a.Confidence, c.user, c.rule, c.confidence)
		}
		if len(a.SourceIPs) == 0 || a.UserAgent == "" || a.AuditID == "" {
			t.Errorf("%s: provenance %+v", c.what, a)
		}
	}

	// The Materializer's History shows who made each version.
	m, err := materialize.New(st)
	if err != nil {
		t.Fatal(err)
	}
	h, err := m.History(ctx, storage.ObjectID{ClusterID: "it", Resource: "configmaps", Namespace: ns, Name: "settings"})
	if err != nil {
		t.Fatal(err)
	}
	var authors []string
	for _, v := range h.Versions() {
		if v.Origin != materialize.OriginWatch {
			continue
		}
		for _, p := range v.Provenance {
			authors = append(authors, fmt.Sprintf("%s:%s:%s", v.WatchType, p.Verb, p.User))
		}
	}
	if want := []string{"ADDED:create:alice", "MODIFIED:update:bob", "DELETED:delete:alice"}; !slices.Equal(authors, want) {
		t.Errorf("History provenance = %v, want %v", authors, want)
	}

	// Ingesting the same log again adds nothing (the collector goes on
	// writing checkpoints, so count correlation records only).
	countCorrelations := func() int {
		page := must(st.Records(ctx, storage.Query{Types: []event.RecordType{event.TypeAuditCorrelation}, WithoutBodies: true}))(t, "records")
		return len(page.Records)
	}
	before := countCorrelations()
	src2 := must(OpenFiles(files))(t, "open")
	defer src2.Close()
	again, err := corr.Ingest(ctx, nsSource{src2, ns})
	if err != nil {
		t.Fatal(err)
	}
	if after := countCorrelations(); again.Recorded != 0 || again.Duplicates != 10 || after != before || before != 10 {
		t.Errorf("second ingest recorded %d (%d duplicates); correlation records %d → %d, want 10 → 10", again.Recorded, again.Duplicates, before, after)
	}

	if dir := os.Getenv("KRPLY_AUDIT_CAPTURE"); dir != "" {
		captureLines(t, env.AuditLogPath(), ns, dir)
	}
}

// deleteRaw deletes with a plain HTTP request and returns the response body.
func deleteRaw(t *testing.T, ctx context.Context, cfg *rest.Config, path string) *unstructured.Unstructured {
	t.Helper()
	client := must(rest.HTTPClientFor(cfg))(t, "http client")
	req := must(http.NewRequestWithContext(ctx, http.MethodDelete, cfg.Host+path, nil))(t, "request")
	resp := must(client.Do(req))(t, "delete "+path)
	defer resp.Body.Close()
	body := must(io.ReadAll(resp.Body))(t, "read")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("delete %s: %d %s", path, resp.StatusCode, body)
	}
	out := &unstructured.Unstructured{}
	if err := json.Unmarshal(body, &out.Object); err != nil {
		t.Fatal(err)
	}
	return out
}

func waitForJournal(t *testing.T, ctx context.Context, st storage.Reader, ns string, c change) event.Record {
	t.Helper()
	obj := storage.ObjectID{ClusterID: "it", Group: c.gvr.Group, Resource: c.gvr.Resource, Namespace: ns, Name: c.name}
	for {
		history, err := st.ObjectHistory(ctx, obj, storage.HistoryQuery{WithoutBodies: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range history {
			if !rec.Synthetic && rec.WatchType == c.watchType && (c.rv == "" || c.watchType == event.Deleted || rec.Resource.ResourceVersion == c.rv) {
				return rec
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: the journal never recorded %s rv %q; history %+v", c.what, c.watchType, c.rv, history)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitForAuditLine waits until the audit log holds the ResponseComplete
// event of the create of name.
func waitForAuditLine(t *testing.T, ctx context.Context, path, name string) {
	t.Helper()
	for {
		if f, err := OpenFiles([]string{path}); err == nil {
			for {
				evt, err := f.Next(ctx)
				if err == io.EOF {
					break
				}
				if err == nil && evt.Verb == "create" && evt.Stage == StageResponseComplete && evt.ObjectRef != nil && evt.ObjectRef.Name == name {
					f.Close()
					return
				}
				var le *LineError
				if err != nil && !errors.As(err, &le) {
					break
				}
			}
			f.Close()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the audit log %s never showed the create of %s", path, name)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// captureLines copies the test namespace's audit lines into dir, for
// refreshing the fixtures in testdata/audit.
func captureLines(t *testing.T, path, ns, dir string) {
	t.Helper()
	data := must(os.ReadFile(path))(t, "read audit log")
	var out []byte
	for _, line := range splitLines(data) {
		var probe struct {
			ObjectRef *ObjectReference `json:"objectRef"`
		}
		if json.Unmarshal(line, &probe) == nil && probe.ObjectRef != nil && probe.ObjectRef.Namespace == ns {
			out = append(append(out, line...), '\n')
		}
	}
	file := fmt.Sprintf("%s/kube-apiserver.log", dir)
	if err := os.WriteFile(file, out, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("captured %d bytes of audit lines into %s", len(out), file)
}

func splitLines(data []byte) [][]byte {
	var lines [][]byte
	for len(data) > 0 {
		i := 0
		for i < len(data) && data[i] != '\n' {
			i++
		}
		lines = append(lines, data[:i])
		if i == len(data) {
			break
		}
		data = data[i+1:]
	}
	return lines
}

// TestWebhookFromRealAPIServer points a real kube-apiserver's audit webhook
// backend at a WebhookHandler: the batches it POSTs are ingested while the
// Collector records, and each change gets its author.
func TestWebhookFromRealAPIServer(t *testing.T) {
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	corr, err := NewCorrelator(st, "it", WithLogger(testr.New(t)))
	if err != nil {
		t.Fatal(err)
	}
	handler, err := NewWebhookHandler(corr, WithSettleDelay(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu      sync.Mutex
		bodies  [][]byte
		refused []int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, body)
		mu.Unlock()
		rec := httptest.NewRecorder()
		r.Body = io.NopCloser(bytes.NewReader(body))
		handler.ServeHTTP(rec, r)
		mu.Lock()
		if rec.Code != http.StatusOK {
			refused = append(refused, rec.Code)
		}
		mu.Unlock()
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		_, _ = w.Write(rec.Body.Bytes())
	}))
	defer srv.Close()
	kubeconfig := filepath.Join(t.TempDir(), "webhook.kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters:
- name: krply
  cluster:
    server: `+srv.URL+`
contexts:
- name: krply
  context:
    cluster: krply
current-context: krply
`), 0o600); err != nil {
		t.Fatal(err)
	}

	env := testenv.Start(t, testenv.WithAudit(integrationPolicy(t)), testenv.WithAPIServerFlags(
		"--audit-webhook-config-file="+kubeconfig,
		"--audit-webhook-mode=batch",
		"--audit-webhook-batch-max-wait=200ms",
	))
	ns := env.CreateNamespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	record(t, ctx, env.Config(), st, ns, watch.WithResources("cm", "deploy"))

	alice := clientFor(t, env.ConfigFor(testenv.UserAlice))
	bob := clientFor(t, env.ConfigFor(testenv.UserBob))
	cm := must(alice.Resource(configMaps).Namespace(ns).Create(ctx, obj("v1", "ConfigMap", ns, "hooked", nil), metav1.CreateOptions{}))(t, "alice creates")
	cm2 := must(bob.Resource(configMaps).Namespace(ns).Patch(ctx, "hooked", types.MergePatchType, []byte(`{"data":{"a":"b"}}`), metav1.PatchOptions{}))(t, "bob patches")
	changes := []change{
		{"create", configMaps, "hooked", event.Added, cm.GetResourceVersion(), testenv.UserAlice, RuleExactResourceVersion, 1},
		{"patch", configMaps, "hooked", event.Modified, cm2.GetResourceVersion(), testenv.UserBob, RuleExactResourceVersion, 1},
	}
	for _, c := range changes {
		target := waitForJournal(t, ctx, st, ns, c)
		for {
			list := correlationsOf(t, st, target)[target.EventID]
			if len(list) > 0 {
				if a := list[0].Audit; len(list) != 1 || a.User != c.user || a.Rule != c.rule {
					t.Errorf("%s: correlations %+v, want one by %s", c.what, list, c.user)
				}
				break
			}
			select {
			case <-ctx.Done():
				mu.Lock()
				t.Fatalf("%s: never correlated through the webhook (%d POSTs, refused %v)", c.what, len(bodies), refused)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(refused) != 0 {
		t.Errorf("the handler refused POSTs with %v", refused)
	}
	if dir := os.Getenv("KRPLY_AUDIT_CAPTURE"); dir != "" {
		for _, b := range bodies {
			if bytes.Contains(b, []byte(`"hooked"`)) {
				file := filepath.Join(dir, "webhook-eventlist.json")
				if err := os.WriteFile(file, b, 0o600); err != nil {
					t.Fatal(err)
				}
				t.Logf("captured a webhook body into %s", file)
				break
			}
		}
	}
}

// TestAttributionAcrossRelists: changes made while the Collector watched
// are linked to their real watch events even after 410s and relists repeat
// their versions as baseline items; a change made while the watch was down
// is linked to the first relist's item (seen through the relist) and a
// delete made then to the inferred deletion, both below confidence 1;
// ingesting the same log again after a second relist stores nothing; and
// History shows users (audit) and field managers (managedFields) apart.
func TestAttributionAcrossRelists(t *testing.T) {
	env := testenv.Start(t, testenv.WithAudit(integrationPolicy(t)))
	ns := env.CreateNamespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	p := faultproxy.Start(t, env.Config())
	st := memory.New()
	t.Cleanup(func() { st.Close() })
	record(t, ctx, p.Config(), st, ns, watch.WithResources("cm"), watch.WithBackoff(20*time.Millisecond, 200*time.Millisecond))
	streamID := event.Stream{ClusterID: "it", Version: "v1", Resource: "configmaps", Namespace: ns}.ID()

	alice := clientFor(t, env.ConfigFor(testenv.UserAlice))
	bob := clientFor(t, env.ConfigFor(testenv.UserBob))
	cms := func(c dynamic.Interface) dynamic.ResourceInterface { return c.Resource(configMaps).Namespace(ns) }
	settings := must(cms(alice).Create(ctx, obj("v1", "ConfigMap", ns, "settings", map[string]any{"data": map[string]any{"mode": "blue"}}), metav1.CreateOptions{}))(t, "alice creates settings")
	created := change{"create settings", configMaps, "settings", event.Added, settings.GetResourceVersion(), testenv.UserAlice, RuleExactResourceVersion, 1}
	settings = must(cms(bob).Patch(ctx, "settings", types.MergePatchType, []byte(`{"data":{"mode":"green"}}`), metav1.PatchOptions{}))(t, "bob patches settings")
	patched := change{"patch settings", configMaps, "settings", event.Modified, settings.GetResourceVersion(), testenv.UserBob, RuleExactResourceVersion, 1}
	old := must(cms(alice).Create(ctx, obj("v1", "ConfigMap", ns, "old", nil), metav1.CreateOptions{}))(t, "alice creates old")
	oldCreated := change{"create old", configMaps, "old", event.Added, old.GetResourceVersion(), testenv.UserAlice, RuleExactResourceVersion, 1}
	watched := []event.Record{waitForJournal(t, ctx, st, ns, created), waitForJournal(t, ctx, st, ns, patched), waitForJournal(t, ctx, st, ns, oldCreated)}

	// The watch goes down; bob patches settings and alice deletes old
	// unseen; then a 410 leads to a gap and a relist.
	baselineEnds := func() int {
		n := 0
		for _, r := range must(st.Records(ctx, storage.Query{StreamID: streamID, Types: []event.RecordType{event.TypeBaseline}}))(t, "records").Records {
			if r.Baseline.Phase == event.BaselineEnd {
				n++
			}
		}
		return n
	}
	watchCM := faultproxy.Match{Verb: "watch", Resource: "configmaps", Namespace: ns}
	p.FailNext(1000, watchCM, faultproxy.Status(503))
	p.CutWatches(watchCM)
	time.Sleep(100 * time.Millisecond)
	unseen := must(cms(bob).Patch(ctx, "settings", types.MergePatchType, []byte(`{"data":{"mode":"red"}}`), metav1.PatchOptions{}))(t, "bob patches settings unseen")
	if err := cms(alice).Delete(ctx, "old", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	p.ClearFaults()
	p.FailNext(1, watchCM, faultproxy.WatchError(410))
	for baselineEnds() < 2 {
		select {
		case <-ctx.Done():
			t.Fatal("no relist after the 410")
		case <-time.After(20 * time.Millisecond):
		}
	}
	relistItem := waitForRecord(t, ctx, st, ns, "settings", func(r event.Record) bool {
		return r.Synthetic && r.WatchType == event.Added && r.Resource.ResourceVersion == unseen.GetResourceVersion()
	})
	oldGone := waitForRecord(t, ctx, st, ns, "old", func(r event.Record) bool { return r.Inferred != nil })
	must(cms(alice).Create(ctx, obj("v1", "ConfigMap", ns, "zz-last", nil), metav1.CreateOptions{}))(t, "alice creates the last configmap")
	waitForAuditLine(t, ctx, env.AuditLogPath(), "zz-last")
	files := must(RotatedFiles(env.AuditLogPath()))(t, "rotated files")
	ingest := func() Summary {
		t.Helper()
		corr := must(NewCorrelator(st, "it", WithLogger(testr.New(t))))(t, "correlator")
		src := must(OpenFiles(files))(t, "open")
		defer src.Close()
		sum := must(corr.Ingest(ctx, onlyObjects{nsSource{src, ns}, []string{"settings", "old"}}))(t, "ingest")
		t.Logf("summary: %+v", sum)
		return sum
	}
	sum := ingest()
	if sum.Exact != 3 || sum.Scored != 2 || sum.SeenThroughRelist != 2 || sum.Unmatched != 0 || sum.Recorded != 5 {
		t.Errorf("first ingest %+v, want 3 exact, 2 seen through the relist, 5 recorded", withoutProblems(sum))
	}
	want := []struct {
		target     event.Record
		user, rule string
		confidence float64
	}{
		{watched[0], testenv.UserAlice, RuleExactResourceVersion, 1},
		{watched[1], testenv.UserBob, RuleExactResourceVersion, 1},
		{watched[2], testenv.UserAlice, RuleExactResourceVersion, 1},
		{relistItem, testenv.UserBob, RuleSeenThroughRelist, ConfidenceSeenThroughRelist},
		{oldGone, testenv.UserAlice, RuleInferredDeletion, ConfidenceInferredDeletion},
	}
	checkLinks := func(when string) {
		t.Helper()
		targets := make([]event.Record, len(want))
		for i, w := range want {
			targets[i] = w.target
		}
		got := correlationsOf(t, st, targets...)
		for _, w := range want {
			list := got[w.target.EventID]
			if len(list) != 1 || list[0].Audit.User != w.user || list[0].Audit.Rule != w.rule || list[0].Audit.Confidence != w.confidence {
				t.Errorf("%s: %s %s rv %s (synthetic %v): correlations %+v, want one by %s (%s, %.1f)", when, w.target.WatchType, w.target.Resource.Name,
					w.target.Resource.ResourceVersion, w.target.Synthetic, list, w.user, w.rule, w.confidence)
			}
		}
	}
	checkLinks("after the first relist")

	// A second 410 and relist repeats settings at the unseen version;
	// ingesting the log again changes nothing.
	p.FailNext(1, watchCM, faultproxy.WatchError(410))
	p.CutWatches(watchCM)
	for baselineEnds() < 3 {
		select {
		case <-ctx.Done():
			t.Fatal("no second relist")
		case <-time.After(20 * time.Millisecond):
		}
	}
	again := ingest()
	if again.Recorded != 0 || again.Duplicates != 5 || again.Exact != 3 || again.SeenThroughRelist != 2 {
		t.Errorf("ingest after the second relist %+v, want nothing recorded, 5 duplicates", withoutProblems(again))
	}
	checkLinks("after the second relist")

	// History: users from the audit log, field managers from managedFields.
	m := must(materialize.New(st))(t, "materializer")
	h := must(m.History(ctx, storage.ObjectIDOf(watched[0])))(t, "history")
	var lines []string
	for _, v := range h.Versions() {
		line := fmt.Sprintf("%s %s", v.Origin, v.WatchType)
		for _, p := range v.Provenance {
			line += fmt.Sprintf(" user %s (%s)", p.User, p.Rule)
		}
		lines = append(lines, line)
		if v.Origin == materialize.OriginWatch && (len(v.FieldManagers) != 1 || v.FieldManagers[0].Manager == "" || v.FieldManagers[0].Time.IsZero()) {
			t.Errorf("%s version %s: field managers %+v, want the writer's entry", v.WatchType, v.ResourceVersion, v.FieldManagers)
		}
		for _, c := range v.Changes {
			if c.Path == "data.mode" && (c.FieldManager == nil || c.FieldManager.Operation != "Update") {
				t.Errorf("version %s: data.mode changed by field manager %+v, want the patch's Update entry", v.ResourceVersion, c.FieldManager)
			}
		}
	}
	wantLines := []string{
		"watch ADDED user alice (" + RuleExactResourceVersion + ")",
		"watch MODIFIED user bob (" + RuleExactResourceVersion + ")",
		"baseline ADDED user bob (" + RuleSeenThroughRelist + ")",
	}
	if !slices.Equal(lines, wantLines) {
		t.Errorf("History of settings:\n got %q\nwant %q", lines, wantLines)
	}
	// The second relist found settings unchanged: a confirmation of the
	// version the first one revealed, not a version of its own.
	if n := len(slices.DeleteFunc(slices.Clone(h.Entries), func(e materialize.Entry) bool { return e.Kind != materialize.EntryConfirmed })); n != 1 {
		t.Errorf("History of settings has %d confirmations by a relist, want 1 (the second relist's)", n)
	}
}

// onlyObjects passes the events about the named objects.
type onlyObjects struct {
	src   Source
	names []string
}

func (s onlyObjects) Next(ctx context.Context) (Event, error) {
	for {
		evt, err := s.src.Next(ctx)
		if err != nil || (evt.ObjectRef != nil && slices.Contains(s.names, evt.ObjectRef.Name)) {
			return evt, err
		}
	}
}

// waitForRecord waits until the journal holds a record of the configmap
// name that ok accepts.
func waitForRecord(t *testing.T, ctx context.Context, st storage.Reader, ns, name string, ok func(event.Record) bool) event.Record {
	t.Helper()
	obj := storage.ObjectID{ClusterID: "it", Resource: "configmaps", Namespace: ns, Name: name}
	for {
		history := must(st.ObjectHistory(ctx, obj, storage.HistoryQuery{WithoutBodies: true}))(t, "history")
		for _, rec := range history {
			if ok(rec) {
				return rec
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the journal never recorded the expected record of %s; history %+v", name, history)
		case <-time.After(20 * time.Millisecond):
		}
	}
}
