package replay_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/readonly"
	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/replay"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/watch"
)

// The integration tests share one control plane (the source cluster); tests
// that need an independent target start their own.
func TestMain(m *testing.M) { os.Exit(testenv.RunMain(m)) }

func dynFor(t *testing.T, cfg *rest.Config) dynamic.Interface {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return dyn
}

func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// clusterUID is the kube-system namespace UID, the Collector's default
// cluster ID.
func clusterUID(t *testing.T, ctx context.Context, dyn dynamic.Interface) string {
	t.Helper()
	ns, err := dyn.Resource(nsKind.gvr).Get(ctx, "kube-system", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return string(ns.GetUID())
}

func unstr(s string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON([]byte(s)); err != nil {
		panic(err) // test literals only
	}
	return u
}

// seed creates the source objects of namespace ns: a ConfigMap carrying a
// client-side apply annotation, a Service (the server allocates its IP), a
// Deployment and a Secret.
func seed(t *testing.T, ctx context.Context, dyn dynamic.Interface, ns string) {
	t.Helper()
	objs := []struct {
		k   kindInfo
		obj string
	}{
		{cmKind, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}","team":"shop"}},"data":{"color":"blue"}}`},
		{svcKind, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"web"},"spec":{"selector":{"app":"web"},"ports":[{"port":80,"targetPort":8080}]}}`},
		{deployKind, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"app":"web"}},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"nginx:1.27","ports":[{"containerPort":8080}]}]}}}}`},
		{secretKind, `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db-pass"},"stringData":{"password":"hunter2"}}`},
	}
	for _, o := range objs {
		if _, err := dyn.Resource(o.k.gvr).Namespace(ns).Create(ctx, unstr(o.obj), metav1.CreateOptions{FieldManager: "seed"}); err != nil {
			t.Fatalf("create %s in %s: %v", o.k.kind, ns, err)
		}
	}
}

// recordBaselines lists the given kinds in ns (and every namespace) from the
// real API server and writes them to the journal exactly as the Collector
// does: one complete baseline per stream, with the list's resourceVersion.
func recordBaselines(t testing.TB, ctx context.Context, dyn dynamic.Interface, j *journal, ns string, kinds ...kindInfo) {
	t.Helper()
	at := time.Now()
	list := func(k kindInfo, namespace string) {
		l, err := dyn.Resource(k.gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var bodies [][]byte
		for _, item := range l.Items {
			raw, err := item.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			bodies = append(bodies, raw)
		}
		j.baseline(k, namespace, at, l.GetResourceVersion(), bodies...)
	}
	list(nsKind, "")
	for _, k := range kinds {
		list(k, ns)
	}
}

// recordChange reads an object back and records it as a MODIFIED watch event.
func recordChange(t *testing.T, ctx context.Context, dyn dynamic.Interface, j *journal, k kindInfo, ns, name string) {
	t.Helper()
	u, err := dyn.Resource(k.gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	j.watchEvent(k, ns, event.Modified, time.Now(), raw)
}

var sourceKinds = []kindInfo{cmKind, svcKind, deployKind, secretKind}

// sourceJournal seeds namespace ns of env and records it.
func sourceJournal(t *testing.T, ctx context.Context, env *testenv.Env) (*journal, dynamic.Interface, string) {
	t.Helper()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	return sourceJournalIn(t, ctx, env, store)
}

// sourceJournalIn is sourceJournal recording into store.
func sourceJournalIn(t *testing.T, ctx context.Context, env *testenv.Env, store storage.Store) (*journal, dynamic.Interface, string) {
	t.Helper()
	dyn := dynFor(t, env.Config())
	ns := env.CreateNamespace(t)
	seed(t, ctx, dyn, ns)
	j := &journal{t: t, store: store, cluster: clusterUID(t, ctx, dyn)}
	recordBaselines(t, ctx, dyn, j, ns, sourceKinds...)
	return j, dyn, ns
}

// planNow plans namespace ns of the journal's cluster, as it is now, into
// namespace target, and saves the plan (only a saved plan is dry-run and
// applied).
func planNow(t *testing.T, ctx context.Context, p *replay.Planner, j *journal, ns, target string) *replay.Plan {
	t.Helper()
	plan, err := p.Plan(ctx, replay.Source{ClusterID: j.cluster, Namespaces: []string{ns}, At: j.healthyNow()},
		replay.Target{Namespaces: map[string]string{ns: target}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SavePlan(ctx, plan); err != nil {
		t.Fatal(err)
	}
	return plan
}

func clusterOf(t *testing.T, cfg *rest.Config, opts ...replay.ClusterOption) *replay.Cluster {
	t.Helper()
	c, err := replay.NewClusterForConfig(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func results(r *replay.DryRunReport) map[string]replay.ObjectResult {
	out := map[string]replay.ObjectResult{}
	for _, res := range r.Results {
		out[res.Ref.String()] = res
	}
	return out
}

func get(t *testing.T, ctx context.Context, dyn dynamic.Interface, k kindInfo, ns, name string) *unstructured.Unstructured {
	t.Helper()
	u, err := dyn.Resource(k.gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get %s %s/%s: %v", k.kind, ns, name, err)
	}
	return u
}

func managers(u *unstructured.Unstructured) []string {
	var out []string
	for _, m := range u.GetManagedFields() {
		out = append(out, m.Manager+"/"+string(m.Operation))
	}
	return out
}

// TestReplayIntoIndependentCluster records a namespace of one control plane,
// replays it into a second, independent one (a different cluster identity)
// through the missing-namespace flow, checks the result, then replays a later
// state of the same source into the same target.
func TestReplayIntoIndependentCluster(t *testing.T) {
	src := testenv.Shared(t)
	ctx := testCtx(t)
	j, srcDyn, ns := sourceJournal(t, ctx, src)
	dst := testenv.Start(t)
	dstDyn := dynFor(t, dst.Config())

	p, err := replay.NewPlanner(j.store)
	if err != nil {
		t.Fatal(err)
	}
	target := ns + "-restored"
	plan := planNow(t, ctx, p, j, ns, target)
	if got, want := refs(plan.Objects), []string{"namespaces " + target, "configmaps " + target + "/settings",
		"services " + target + "/web", "apps/deployments " + target + "/web"}; !slices.Equal(got, want) {
		t.Fatalf("plan objects = %q, want %q", got, want)
	}
	if len(plan.Exclusions) != 1 || plan.Exclusions[0].Rule != replay.RuleSecrets || !strings.Contains(plan.Exclusions[0].Reason, "credentials") {
		t.Errorf("exclusions = %+v, want the Secret with its reason", plan.Exclusions)
	}

	srcCluster := clusterOf(t, src.Config())
	var srcErr *replay.SourceClusterError
	if _, err := p.DryRun(ctx, plan, srcCluster); !errors.As(err, &srcErr) {
		t.Errorf("DryRun into the source cluster = %v, want *SourceClusterError", err)
	}
	if _, err := p.Apply(ctx, plan, srcCluster, replay.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash}); !errors.As(err, &srcErr) {
		t.Errorf("Apply into the source cluster = %v, want *SourceClusterError", err)
	}

	dstCluster := clusterOf(t, dst.Config())
	report, err := p.DryRun(ctx, plan, dstCluster)
	if err != nil {
		t.Fatal(err)
	}
	// The target namespace does not exist: only the Namespace itself could
	// be validated, and the plan must not claim OK.
	if report.Status != replay.StatusDryRunNeedsNamespaces || plan.Status != replay.StatusDryRunNeedsNamespaces {
		t.Fatalf("dry run status = %s (plan %s), want %s; %s", report.Status, plan.Status, replay.StatusDryRunNeedsNamespaces, report.Summary())
	}
	for _, res := range report.Results {
		wantAction, validated := replay.ActionNotValidated, false
		if res.Ref.Resource == "namespaces" {
			wantAction, validated = replay.ActionCreate, true
		}
		if res.Action != wantAction || res.Validated != validated {
			t.Errorf("%s: %s (validated %v), want %s", res.Ref, res.Action, res.Validated, wantAction)
		}
		if !validated && res.MissingNamespace != target {
			t.Errorf("%s: missing namespace %q, want %q", res.Ref, res.MissingNamespace, target)
		}
	}
	loaded, err := p.LoadPlan(ctx, plan.ID)
	if err != nil || loaded.Status != replay.StatusDryRunNeedsNamespaces || loaded.LastDryRun == nil || loaded.LastDryRun.ID != report.ID {
		t.Fatalf("LoadPlan after the dry run: %v, %+v", err, loaded)
	}

	// Another process applies the loaded plan.
	p2, err := replay.NewPlanner(j.store)
	if err != nil {
		t.Fatal(err)
	}
	applied, err := p2.Apply(ctx, loaded, dstCluster, replay.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash})
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if applied.Status != replay.StatusApplied || len(applied.DryRuns) != 2 {
		t.Errorf("apply status %s after dry runs %q; want applied after two dry runs", applied.Status, applied.DryRuns)
	}
	for _, r := range applied.Results {
		if r.Outcome != replay.OutcomeCreated {
			t.Errorf("%s: %s %s, want created", r.Ref, r.Outcome, r.Message)
		}
	}

	cm := get(t, ctx, dstDyn, cmKind, target, "settings")
	if !strings.HasPrefix(cm.GetAnnotations()[replay.AnnotationSource], j.cluster+" configmaps "+ns+"/settings at resourceVersion ") || cm.GetAnnotations()["team"] != "shop" {
		t.Errorf("configmap annotations = %v", cm.GetAnnotations())
	}
	if _, ok := cm.GetAnnotations()["kubectl.kubernetes.io/last-applied-configuration"]; ok {
		t.Errorf("the last-applied annotation was replayed")
	}
	if color, _, _ := unstructured.NestedString(cm.Object, "data", "color"); color != "blue" {
		t.Errorf("configmap color = %q", color)
	}
	if got := managers(cm); !slices.Equal(got, []string{replay.DefaultFieldManager + "/Apply"}) {
		t.Errorf("configmap managers = %q, want only %s", got, replay.DefaultFieldManager)
	}
	srcSvc := get(t, ctx, srcDyn, svcKind, ns, "web")
	svc := get(t, ctx, dstDyn, svcKind, target, "web")
	if ip, _, _ := unstructured.NestedString(svc.Object, "spec", "clusterIP"); ip == "" {
		t.Errorf("the target did not allocate a cluster IP")
	}
	if svc.GetUID() == srcSvc.GetUID() {
		t.Errorf("the service kept its source UID")
	}
	deploy := get(t, ctx, dstDyn, deployKind, target, "web")
	srcDeploy := get(t, ctx, srcDyn, deployKind, ns, "web")
	wantTemplate, _, _ := unstructured.NestedMap(srcDeploy.Object, "spec", "template")
	gotTemplate, _, _ := unstructured.NestedMap(deploy.Object, "spec", "template")
	if !equalJSON(t, wantTemplate, gotTemplate) {
		t.Errorf("deployment template\n got %v\nwant %v", gotTemplate, wantTemplate)
	}
	if replicas, _, _ := unstructured.NestedInt64(deploy.Object, "spec", "replicas"); replicas != 2 {
		t.Errorf("deployment replicas = %d", replicas)
	}
	if _, err := dstDyn.Resource(secretKind.gvr).Namespace(target).Get(ctx, "db-pass", metav1.GetOptions{}); err == nil {
		t.Errorf("the excluded Secret exists in the target")
	}

	// A later state of the same source, replayed into the same target: no
	// conflict with krply's own earlier fields, and the target follows.
	if _, err := srcDyn.Resource(cmKind.gvr).Namespace(ns).Patch(ctx, "settings", types.MergePatchType,
		[]byte(`{"data":{"color":"green","size":"L"}}`), metav1.PatchOptions{FieldManager: "seed"}); err != nil {
		t.Fatal(err)
	}
	if _, err := srcDyn.Resource(deployKind.gvr).Namespace(ns).Patch(ctx, "web", types.MergePatchType,
		[]byte(`{"spec":{"replicas":3}}`), metav1.PatchOptions{FieldManager: "seed"}); err != nil {
		t.Fatal(err)
	}
	recordChange(t, ctx, srcDyn, j, cmKind, ns, "settings")
	recordChange(t, ctx, srcDyn, j, deployKind, ns, "web")
	later := planNow(t, ctx, p, j, ns, target)
	report, err = p.DryRun(ctx, later, dstCluster)
	if err != nil {
		t.Fatal(err)
	}
	if report.Status != replay.StatusDryRunOK {
		t.Fatalf("dry run of the later plan = %s (%s), want OK", report.Status, report.Summary())
	}
	cmRes := results(report)["configmaps "+target+"/settings"]
	if cmRes.Action != replay.ActionChange || !hasChange(cmRes, `data.color`) || !hasChange(cmRes, `data.size`) {
		t.Errorf("configmap dry run = %s %+v, want a change of data.color and data.size", cmRes.Action, cmRes.Changes)
	}
	if _, err := p.Apply(ctx, later, dstCluster, replay.Confirmation{PlanID: later.ID, PlanHash: later.Hash}); err != nil {
		t.Fatalf("Apply of the later plan: %v", err)
	}
	cm = get(t, ctx, dstDyn, cmKind, target, "settings")
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	if data["color"] != "green" || data["size"] != "L" ||
		cm.GetAnnotations()[replay.AnnotationSource] != j.cluster+" configmaps "+ns+"/settings at resourceVersion "+get(t, ctx, srcDyn, cmKind, ns, "settings").GetResourceVersion() {
		t.Errorf("target configmap after the later replay: data %v, annotations %v", data, cm.GetAnnotations())
	}
	if replicas, _, _ := unstructured.NestedInt64(get(t, ctx, dstDyn, deployKind, target, "web").Object, "spec", "replicas"); replicas != 3 {
		t.Errorf("target deployment replicas = %d, want 3", replicas)
	}

	// The target holds every field of every object of the later plan.
	for _, o := range later.Objects {
		k := kindInfo{gvr: o.Ref.GVR(), kind: o.Ref.Kind}
		live := get(t, ctx, dstDyn, k, o.Ref.Namespace, o.Ref.Name)
		if path, ok := subset(decode(t, o.Object), live.Object); !ok {
			t.Errorf("%s in the target differs from the later plan at %s", o.Ref, path)
		}
	}

	// The same plan again: nothing left to change.
	report, err = p.DryRun(ctx, later, dstCluster)
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range report.Results {
		if res.Action != replay.ActionUnchanged {
			t.Errorf("re-dry-run of an applied plan: %s is %s %+v", res.Ref, res.Action, res.Changes)
		}
	}
}

// subset reports whether every field of want is in got with the same value
// (numbers compared as JSON), and where it is not.
func subset(want, got any) (string, bool) {
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return "", false
		}
		for k, v := range w {
			if path, ok := subset(v, g[k]); !ok {
				return "." + k + path, false
			}
		}
		return "", true
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(w) {
			return "", false
		}
		for i := range w {
			if path, ok := subset(w[i], g[i]); !ok {
				return fmt.Sprintf("[%d]%s", i, path), false
			}
		}
		return "", true
	}
	return "", fmt.Sprint(want) == fmt.Sprint(got)
}

func hasChange(res replay.ObjectResult, path string) bool {
	for _, c := range res.Changes {
		if c.Path == path {
			return true
		}
	}
	return false
}

func equalJSON(t *testing.T, a, b any) bool {
	t.Helper()
	return mustMarshal(t, a) == mustMarshal(t, b)
}

func mustMarshal(t *testing.T, v any) string {
	t.Helper()
	u := unstructured.Unstructured{Object: map[string]any{"v": v}}
	raw, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// TestReplayConflictIsReportedNeverForced replays into a namespace where
// another field manager owns a field the plan sets to another value.
func TestReplayConflictIsReportedNeverForced(t *testing.T) {
	env := testenv.Shared(t)
	ctx := testCtx(t)
	j, dyn, ns := sourceJournal(t, ctx, env)
	target := env.CreateNamespace(t)
	other := unstr(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"color":"red"}}`)
	if _, err := dyn.Resource(cmKind.gvr).Namespace(target).Apply(ctx, "settings", other, metav1.ApplyOptions{FieldManager: "other-tool"}); err != nil {
		t.Fatal(err)
	}

	p, err := replay.NewPlanner(j.store, replay.WithPolicy(replay.Policy{AllowSourceCluster: true}))
	if err != nil {
		t.Fatal(err)
	}
	plan := planNow(t, ctx, p, j, ns, target)
	c := clusterOf(t, env.Config())
	report, err := p.DryRun(ctx, plan, c)
	if err != nil {
		t.Fatal(err)
	}
	if report.Status != replay.StatusDryRunFailed {
		t.Fatalf("dry run status = %s, want failed", report.Status)
	}
	res := results(report)["configmaps "+target+"/settings"]
	if res.Action != replay.ActionConflict || len(res.Conflicts) != 1 || res.Conflicts[0].Manager != "other-tool" || res.Conflicts[0].Field != ".data.color" {
		t.Fatalf("configmap result = %+v, want a conflict with other-tool on .data.color", res)
	}
	if r := results(report)["apps/deployments "+target+"/web"]; !r.Clean() || r.Action != replay.ActionCreate {
		t.Errorf("deployment result = %+v, want a clean create", r)
	}

	var notClean *replay.DryRunNotCleanError
	_, err = p.Apply(ctx, plan, c, replay.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash})
	if !errors.As(err, &notClean) || !errors.Is(err, replay.ErrRefused) || !strings.Contains(err.Error(), "1 conflict") {
		t.Fatalf("Apply after a conflicting dry run = %v, want *DryRunNotCleanError", err)
	}
	cm := get(t, ctx, dyn, cmKind, target, "settings")
	if color, _, _ := unstructured.NestedString(cm.Object, "data", "color"); color != "red" {
		t.Errorf("the conflicting field was overwritten: %q", color)
	}
	if _, err := dyn.Resource(deployKind.gvr).Namespace(target).Get(ctx, "web", metav1.GetOptions{}); err == nil {
		t.Errorf("Apply wrote the Deployment although it refused")
	}
}

// TestReplayIntoMissingNamespaceSameCluster follows the documented flow in
// the source cluster itself, which the policy allows here.
func TestReplayIntoMissingNamespaceSameCluster(t *testing.T) {
	env := testenv.Shared(t)
	ctx := testCtx(t)
	j, dyn, ns := sourceJournal(t, ctx, env)
	target := ns + "-copy"
	p, err := replay.NewPlanner(j.store, replay.WithPolicy(replay.Policy{AllowSourceCluster: true}))
	if err != nil {
		t.Fatal(err)
	}
	plan := planNow(t, ctx, p, j, ns, target)
	c := clusterOf(t, env.Config(), replay.WithPerPlanFieldManager())
	var notClean *replay.DryRunNotCleanError
	if _, err := p.Apply(ctx, plan, c, replay.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash}); !errors.As(err, &notClean) {
		t.Fatalf("Apply before any dry run = %v", err)
	}
	report, err := p.DryRun(ctx, plan, c)
	if err != nil {
		t.Fatal(err)
	}
	if report.Status == replay.StatusDryRunOK {
		t.Fatalf("the dry run claims OK although %d objects could not be validated", len(report.Results)-1)
	}
	if _, err := p.Apply(ctx, plan, c, replay.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash}); err != nil {
		t.Fatal(err)
	}
	cm := get(t, ctx, dyn, cmKind, target, "settings")
	if got, want := managers(cm), []string{replay.PlanFieldManagerPrefix + plan.ID + "/Apply"}; !slices.Equal(got, want) {
		t.Errorf("managers = %q, want %q", got, want)
	}
}

// TestReplayOfHeldStateWritesNothing plans the same recorded state twice
// and applies both plans into one target: the second plan's dry run finds
// every object unchanged, and its apply reports every object unchanged and
// leaves every resourceVersion as the first apply left it.
func TestReplayOfHeldStateWritesNothing(t *testing.T) {
	env := testenv.Shared(t)
	ctx := testCtx(t)
	j, dyn, ns := sourceJournal(t, ctx, env)
	target := ns + "-again"
	p, err := replay.NewPlanner(j.store, replay.WithPolicy(replay.Policy{AllowSourceCluster: true}))
	if err != nil {
		t.Fatal(err)
	}
	c := clusterOf(t, env.Config())
	apply := func(plan *replay.Plan) (*replay.DryRunReport, *replay.ApplyReport) {
		t.Helper()
		dry, err := p.DryRun(ctx, plan, c)
		if err != nil {
			t.Fatal(err)
		}
		applied, err := p.Apply(ctx, plan, c, replay.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash})
		if err != nil {
			t.Fatalf("Apply of plan %s: %v", plan.ID, err)
		}
		return dry, applied
	}
	liveVersions := func(plan *replay.Plan) map[string]string {
		t.Helper()
		out := map[string]string{}
		for _, o := range plan.Objects {
			ri := dyn.Resource(o.Ref.GVR())
			var u *unstructured.Unstructured
			if o.Ref.Namespace != "" {
				u, err = ri.Namespace(o.Ref.Namespace).Get(ctx, o.Ref.Name, metav1.GetOptions{})
			} else {
				u, err = ri.Get(ctx, o.Ref.Name, metav1.GetOptions{})
			}
			if err != nil {
				t.Fatalf("get %s: %v", o.Ref, err)
			}
			out[o.Ref.String()] = u.GetResourceVersion()
		}
		return out
	}

	first := planNow(t, ctx, p, j, ns, target)
	apply(first)
	before := liveVersions(first)

	second := planNow(t, ctx, p, j, ns, target)
	if second.ID == first.ID || len(second.Objects) != len(first.Objects) {
		t.Fatalf("second plan %s with %d objects, want a new plan of the first's %d objects", second.ID, len(second.Objects), len(first.Objects))
	}
	dry, applied := apply(second)
	for _, r := range dry.Results {
		if r.Action != replay.ActionUnchanged || !r.Validated {
			t.Errorf("dry run of the second plan: %s is %s (validated %v) %+v, want unchanged", r.Ref, r.Action, r.Validated, r.Changes)
		}
	}
	for _, r := range applied.Results {
		if r.Outcome != replay.OutcomeUnchanged {
			t.Errorf("apply of the second plan: %s %s, want unchanged", r.Ref, r.Outcome)
		}
	}
	if after := liveVersions(second); !maps.Equal(after, before) {
		t.Errorf("resourceVersions after the second apply = %v, want those of the first %v", after, before)
	}

	cm := get(t, ctx, dyn, cmKind, target, "settings")
	srcCM := get(t, ctx, dyn, cmKind, ns, "settings")
	if got, want := cm.GetAnnotations()[replay.AnnotationSource], j.cluster+" configmaps "+ns+"/settings at resourceVersion "+srcCM.GetResourceVersion(); got != want {
		t.Errorf("%s = %q, want %q", replay.AnnotationSource, got, want)
	}
}

// TestPlanRefusesGapRecordedFromRealObjects records a real namespace, then a
// gap, and plans inside it.
func TestPlanRefusesGapRecordedFromRealObjects(t *testing.T) {
	env := testenv.Shared(t)
	ctx := testCtx(t)
	j, _, ns := sourceJournal(t, ctx, env)
	from := time.Now()
	j.gap(cmKind, ns, from, from.Add(time.Minute), "")
	p, err := replay.NewPlanner(j.store)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Plan(ctx, replay.Source{ClusterID: j.cluster, Namespaces: []string{ns}, At: from.Add(30 * time.Second)}, replay.Target{})
	var cov *replay.CoverageIncompleteError
	if !errors.As(err, &cov) {
		t.Fatalf("Plan inside a gap = %v, want *CoverageIncompleteError", err)
	}
}

// TestExportedYAMLPassesKubectl checks the rendered plan with kubectl's
// server-side dry run.
func TestExportedYAMLPassesKubectl(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatalf("kubectl is not on the PATH: %v", err)
	}
	env := testenv.Shared(t)
	ctx := testCtx(t)
	j, _, ns := sourceJournal(t, ctx, env)
	target := env.CreateNamespace(t) // kubectl's dry run cannot create it
	p, err := replay.NewPlanner(j.store)
	if err != nil {
		t.Fatal(err)
	}
	plan := planNow(t, ctx, p, j, ns, target)
	doc, err := plan.YAML()
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "plan.yaml")
	if err := os.WriteFile(file, doc, 0o600); err != nil {
		t.Fatal(err)
	}
	kubeconfig := env.Kubeconfig()
	out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", kubeconfig, "apply", "--server-side", "--dry-run=server",
		"--field-manager", replay.DefaultFieldManager, "-f", file).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply --server-side --dry-run=server: %v\n%s\n%s", err, out, doc)
	}
	for _, want := range []string{"namespace/" + target, "configmap/settings", "service/web", "deployment.apps/web"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("kubectl output lacks %s:\n%s", want, out)
		}
	}
}

// TestReplayFromCollectorRecording records a namespace with the real
// Collector, changes it, and replays the recorded state into a new namespace
// of the same cluster (allowed by the policy here).
func TestReplayFromCollectorRecording(t *testing.T) {
	env := testenv.Shared(t)
	ctx := testCtx(t)
	dyn := dynFor(t, env.Config())
	ns := env.CreateNamespace(t)
	seed(t, ctx, dyn, ns)
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	col, err := watch.NewCollectorForConfig(env.Config(), store, watch.WithResources("ns", "cm", "svc", "deploy"), watch.WithNamespaces(ns),
		watch.WithProgressInterval(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	krplytest.StartCollector(t, col, 3*time.Minute)
	changed, err := dyn.Resource(cmKind.gvr).Namespace(ns).Patch(ctx, "settings", types.MergePatchType,
		[]byte(`{"data":{"color":"green"}}`), metav1.PatchOptions{FieldManager: "seed"})
	if err != nil {
		t.Fatal(err)
	}
	// Wait until the change is in the journal.
	obj := storage.ObjectID{ClusterID: col.ClusterID(), Resource: "configmaps", Namespace: ns, Name: "settings"}
	var at time.Time
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		rec, err := store.LatestAt(ctx, obj, time.Now())
		if err == nil && rec.Resource.ResourceVersion == changed.GetResourceVersion() {
			at = rec.ObservedAt
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the collector did not record resourceVersion %s: %v %+v", changed.GetResourceVersion(), err, rec.Resource)
		}
	}

	// Coverage at that time needs every stream's evidence after it.
	if err := col.WaitForProgress(ctx, at); err != nil {
		t.Fatal(err)
	}
	p, err := replay.NewPlanner(store, replay.WithPolicy(replay.Policy{AllowSourceCluster: true}))
	if err != nil {
		t.Fatal(err)
	}
	target := ns + "-rec"
	plan, err := p.Plan(ctx, replay.Source{ClusterID: col.ClusterID(), Namespaces: []string{ns}, At: at},
		replay.Target{Namespaces: map[string]string{ns: target}})
	if err != nil {
		t.Fatal(err)
	}
	if !plan.Coverage.Complete || plan.Objects[0].Synthesized || plan.SourceClusterUID != col.ClusterID() {
		t.Errorf("complete %v, namespace synthesized %v, source UID %q (collector %q)",
			plan.Coverage.Complete, plan.Objects[0].Synthesized, plan.SourceClusterUID, col.ClusterID())
	}
	if got, want := refs(plan.Objects), []string{"namespaces " + target, "configmaps " + target + "/settings",
		"services " + target + "/web", "apps/deployments " + target + "/web"}; !slices.Equal(got, want) {
		t.Fatalf("plan objects = %q, want %q", got, want)
	}
	if err := p.SavePlan(ctx, plan); err != nil {
		t.Fatal(err)
	}
	c := clusterOf(t, env.Config())
	if _, err := p.DryRun(ctx, plan, c); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Apply(ctx, plan, c, replay.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash}); err != nil {
		t.Fatal(err)
	}
	cm := get(t, ctx, dyn, cmKind, target, "settings")
	if color, _, _ := unstructured.NestedString(cm.Object, "data", "color"); color != "green" {
		t.Errorf("replayed color = %q, want the recorded green", color)
	}
}

// TestApplyOnAReadOnlyJournal: with a clean dry run in the journal, Apply
// through a journal opened read-only fails with storage.ErrReadOnly when it
// saves its own dry run, before it writes anything to the cluster.
func TestApplyOnAReadOnlyJournal(t *testing.T) {
	env := testenv.Shared(t)
	ctx := testCtx(t)
	w, ro := readonly.Journal(t)
	j, dyn, ns := sourceJournalIn(t, ctx, env, w)
	target := env.CreateNamespace(t)
	pw, err := replay.NewPlanner(w, replay.WithPolicy(replay.Policy{AllowSourceCluster: true}))
	if err != nil {
		t.Fatal(err)
	}
	plan := planNow(t, ctx, pw, j, ns, target)
	c := clusterOf(t, env.Config())
	if report, err := pw.DryRun(ctx, plan, c); err != nil || report.Status != replay.StatusDryRunOK {
		t.Fatalf("dry run: %v, %s", err, report.Summary())
	}

	p, err := replay.NewPlanner(ro, replay.WithPolicy(replay.Policy{AllowSourceCluster: true}))
	if err != nil {
		t.Fatal(err)
	}
	report, err := p.Apply(ctx, plan, c, replay.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash})
	if !errors.Is(err, storage.ErrReadOnly) || !errors.Is(err, replay.ErrReadOnly) || report != nil {
		t.Fatalf("Apply through a read-only journal = %+v, %v; want storage.ErrReadOnly and no report", report, err)
	}
	for _, k := range []kindInfo{cmKind, svcKind, deployKind} {
		list, err := dyn.Resource(k.gvr).Namespace(target).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 0 {
			t.Errorf("Apply through a read-only journal wrote %d %s into %s", len(list.Items), k.gvr.Resource, target)
		}
	}
}

// TestApplyRefusesAnOldDryRun: a clean dry run older than the max age no
// longer vouches for the target.
func TestApplyRefusesAnOldDryRun(t *testing.T) {
	env := testenv.Shared(t)
	ctx := testCtx(t)
	j, dyn, ns := sourceJournal(t, ctx, env)
	target := env.CreateNamespace(t)
	clk := clocktesting.NewFakePassiveClock(time.Now())
	p, err := replay.NewPlanner(j.store, replay.WithClock(clk), replay.WithMaxDryRunAge(time.Hour),
		replay.WithPolicy(replay.Policy{AllowSourceCluster: true}))
	if err != nil {
		t.Fatal(err)
	}
	plan := planNow(t, ctx, p, j, ns, target)
	c := clusterOf(t, env.Config())
	report, err := p.DryRun(ctx, plan, c)
	if err != nil || report.Status != replay.StatusDryRunOK {
		t.Fatalf("dry run: %v, %s", err, report.Summary())
	}
	clk.SetTime(clk.Now().Add(2 * time.Hour))
	var stale *replay.StalePlanError
	if _, err := p.Apply(ctx, plan, c, replay.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash}); !errors.As(err, &stale) {
		t.Fatalf("Apply after an old dry run = %v, want *StalePlanError", err)
	}
	if _, err := dyn.Resource(cmKind.gvr).Namespace(target).Get(ctx, "settings", metav1.GetOptions{}); err == nil {
		t.Errorf("Apply wrote although it refused")
	}
	if _, err := p.DryRun(ctx, plan, c); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Apply(ctx, plan, c, replay.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash}); err != nil {
		t.Fatalf("Apply after a fresh dry run: %v", err)
	}
}

// TestApplyPartialFailureIsPreciseAndRetriable makes the real write of the
// Deployment fail after a clean dry run (an admission policy that denies
// everything but dry runs in the target namespace), then lifts it and
// applies again.
func TestApplyPartialFailureIsPreciseAndRetriable(t *testing.T) {
	env := testenv.Shared(t)
	ctx := testCtx(t)
	j, dyn, ns := sourceJournal(t, ctx, env)
	target := env.CreateNamespace(t)

	policies := dyn.Resource(schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"})
	bindings := dyn.Resource(schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"})
	name := "deny-real-writes-" + target
	policy := unstr(`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicy","metadata":{"name":"` + name + `"},
		"spec":{"failurePolicy":"Fail","matchConstraints":{"resourceRules":[{"apiGroups":["apps"],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["deployments"]}]},
		"validations":[{"expression":"request.dryRun == true || object.metadata.namespace != '` + target + `'","message":"real writes are denied here"}]}}`)
	binding := unstr(`{"apiVersion":"admissionregistration.k8s.io/v1","kind":"ValidatingAdmissionPolicyBinding","metadata":{"name":"` + name + `"},
		"spec":{"policyName":"` + name + `","validationActions":["Deny"]}}`)
	if _, err := policies.Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = policies.Delete(context.Background(), name, metav1.DeleteOptions{}) })
	if _, err := bindings.Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The policy takes effect once the apiserver has loaded it.
	deployments := dyn.Resource(deployKind.gvr).Namespace(target)
	probe := func(i int) error {
		d := unstr(fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"probe-%d"},"spec":{"selector":{"matchLabels":{"p":"x"}},"template":{"metadata":{"labels":{"p":"x"}},"spec":{"containers":[{"name":"c","image":"x"}]}}}}`, i))
		_, err := deployments.Create(ctx, d, metav1.CreateOptions{})
		return err
	}
	for i := 0; probe(i) == nil; i++ {
		if i > 200 {
			t.Fatal("the admission policy never took effect")
		}
		time.Sleep(100 * time.Millisecond)
	}

	p, err := replay.NewPlanner(j.store, replay.WithPolicy(replay.Policy{AllowSourceCluster: true}))
	if err != nil {
		t.Fatal(err)
	}
	plan := planNow(t, ctx, p, j, ns, target)
	c := clusterOf(t, env.Config())
	if report, err := p.DryRun(ctx, plan, c); err != nil || report.Status != replay.StatusDryRunOK {
		t.Fatalf("dry run: %v, %s", err, report.Summary())
	}
	report, err := p.Apply(ctx, plan, c, replay.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash})
	var applyErr *replay.ApplyError
	if !errors.As(err, &applyErr) || applyErr.Failed.Ref.Resource != "deployments" || report == nil || report.Status != replay.StatusApplyFailed {
		t.Fatalf("Apply = %v, report %+v; want an *ApplyError at the Deployment", err, report)
	}
	outcomes := map[string]replay.Outcome{}
	for _, r := range report.Results {
		outcomes[r.Ref.Resource] = r.Outcome
	}
	want := map[string]replay.Outcome{"namespaces": replay.OutcomeUpdated, "configmaps": replay.OutcomeCreated,
		"services": replay.OutcomeCreated, "deployments": replay.OutcomeFailed}
	if !reflect.DeepEqual(outcomes, want) {
		t.Errorf("outcomes = %v, want %v", outcomes, want)
	}
	if last := report.Results[len(report.Results)-1]; last.Code == 0 || !strings.Contains(last.Message, "real writes are denied") {
		t.Errorf("the failure is not described: %+v", last.Failure)
	}
	if loaded, err := p.LoadPlan(ctx, plan.ID); err != nil || loaded.Status != replay.StatusApplyFailed {
		t.Errorf("LoadPlan after the failed apply: %v, status %v", err, loaded)
	}

	if err := bindings.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 1000; probe(i) != nil; i++ {
		if i > 1200 {
			t.Fatal("the admission policy was never lifted")
		}
		time.Sleep(100 * time.Millisecond)
	}
	report, err = p.Apply(ctx, plan, c, replay.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash})
	if err != nil {
		t.Fatalf("retry: %v", err)
	}
	outcomes = map[string]replay.Outcome{}
	for _, r := range report.Results {
		outcomes[r.Ref.Resource] = r.Outcome
	}
	want = map[string]replay.Outcome{"namespaces": replay.OutcomeUnchanged, "configmaps": replay.OutcomeUnchanged,
		"services": replay.OutcomeUnchanged, "deployments": replay.OutcomeCreated}
	if !reflect.DeepEqual(outcomes, want) {
		t.Errorf("retry outcomes = %v, want %v", outcomes, want)
	}
}
