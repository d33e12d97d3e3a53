package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/readonly"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/replay"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
)

var t0 = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// shopJournal records namespace "shop" of cluster "src" at t0 with one
// object of every interesting kind, then a change of the ConfigMap at
// t0+1m; the watches are healthy until t0+1h.
func shopJournal(t *testing.T) *journal {
	t.Helper()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	return shopJournalIn(t, store)
}

// shopJournalIn writes the shop journal into store; the caller closes it.
func shopJournalIn(t *testing.T, store storage.Store) *journal {
	t.Helper()
	j := &journal{t: t, store: store, cluster: "src"}
	j.baseline(nsKind, "", t0, "101",
		[]byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"shop","uid":"ns-shop","resourceVersion":"10","labels":{"kubernetes.io/metadata.name":"shop","team":"a"}},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}}`),
		object("v1", "Namespace", "", "kube-system", "ks-uid", "2", ""),
	)
	j.baseline(cmKind, "shop", t0, "100",
		object("v1", "ConfigMap", "shop", "settings", "cm-1", "20", `"data":{"color":"blue"}`),
		object("v1", "ConfigMap", "shop", "kube-root-ca.crt", "cm-2", "21", `"data":{"ca.crt":"x"}`),
	)
	j.baseline(secretKind, "shop", t0, "100",
		object("v1", "Secret", "shop", "db-pass", "s-1", "22", `"type":"Opaque","data":{"p":"c2VjcmV0"}`))
	j.baseline(svcKind, "shop", t0, "100",
		object("v1", "Service", "shop", "web", "svc-1", "23", `"spec":{"type":"NodePort","clusterIP":"10.96.0.12","clusterIPs":["10.96.0.12"],"selector":{"app":"web"},"ports":[{"port":80,"targetPort":8080,"nodePort":30080}]}`),
		object("v1", "Service", "shop", "edge", "svc-2", "24", `"spec":{"type":"LoadBalancer","ports":[{"port":443}]}`),
	)
	j.baseline(deployKind, "shop", t0, "100",
		object("apps/v1", "Deployment", "shop", "web", "d-1", "25", `"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"}},"template":{"metadata":{"labels":{"app":"web"}},"spec":{"containers":[{"name":"app","image":"nginx:1.27"}]}}},"status":{"replicas":2}`))
	j.baseline(rsKind, "shop", t0, "100")
	j.baseline(podKind, "shop", t0, "100")
	j.baseline(leaseKind, "shop", t0, "100",
		object("coordination.k8s.io/v1", "Lease", "shop", "leader", "l-1", "27", `"spec":{}`))
	j.watchEvent(cmKind, "shop", event.Modified, t0.Add(time.Minute),
		object("v1", "ConfigMap", "shop", "settings", "cm-1", "30", `"data":{"color":"green"}`))
	j.watchEvent(rsKind, "shop", event.Added, t0.Add(time.Minute),
		[]byte(`{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"web-abc","namespace":"shop","uid":"rs-1","resourceVersion":"31","ownerReferences":[{"apiVersion":"apps/v1","kind":"Deployment","name":"web","uid":"d-1","controller":true}]},"spec":{"replicas":2}}`))
	j.watchEvent(podKind, "shop", event.Added, t0.Add(time.Minute),
		[]byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-abc-x","namespace":"shop","uid":"p-1","resourceVersion":"32","ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-abc","uid":"rs-1","controller":true}]},"spec":{"containers":[{"name":"app","image":"nginx:1.27"}]}}`))
	j.healthyUntil(t0.Add(time.Hour))
	return j
}

func newPlanner(t *testing.T, j *journal, opts ...replay.Option) *replay.Planner {
	t.Helper()
	n := 0
	opts = append([]replay.Option{replay.WithIDGenerator(func() string { n++; return fmt.Sprintf("id-%d", n) })}, opts...)
	p, err := replay.NewPlanner(j.store, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func refs(objs []replay.Object) []string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.Ref.String()
	}
	return out
}

func decode(t *testing.T, raw []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPlanSanitizesMapsOrdersAndExcludes(t *testing.T) {
	j := shopJournal(t)
	p := newPlanner(t, j)
	ctx := context.Background()
	plan, err := p.Plan(ctx, replay.Source{ClusterID: "src", Namespaces: []string{"shop"}, At: t0.Add(2 * time.Minute)},
		replay.Target{Namespaces: map[string]string{"shop": "sandbox"}})
	if err != nil {
		t.Fatal(err)
	}

	wantObjects := []string{"namespaces sandbox", "configmaps sandbox/settings", "services sandbox/web", "apps/deployments sandbox/web"}
	if got := refs(plan.Objects); !reflect.DeepEqual(got, wantObjects) {
		t.Errorf("objects = %q, want %q", got, wantObjects)
	}
	gotExcl := map[string]replay.ExclusionRule{}
	for _, e := range plan.Exclusions {
		gotExcl[e.Ref.String()] = e.Rule
		if e.Reason == "" {
			t.Errorf("exclusion of %s has no reason", e.Ref)
		}
	}
	wantExcl := map[string]replay.ExclusionRule{
		"secrets shop/db-pass":                   replay.RuleSecrets,
		"services shop/edge":                     replay.RuleLoadBalancers,
		"configmaps shop/kube-root-ca.crt":       replay.RuleClusterPublished,
		"apps/replicasets shop/web-abc":          replay.RuleControllerOwned,
		"pods shop/web-abc-x":                    replay.RuleControllerOwned,
		"coordination.k8s.io/leases shop/leader": replay.RuleLeases,
	}
	if !reflect.DeepEqual(gotExcl, wantExcl) {
		t.Errorf("exclusions = %v, want %v", gotExcl, wantExcl)
	}

	ns := decode(t, plan.Objects[0].Object)
	wantNS := map[string]any{"apiVersion": "v1", "kind": "Namespace",
		"metadata": map[string]any{"name": "sandbox", "labels": map[string]any{"kubernetes.io/metadata.name": "sandbox", "team": "a"},
			"annotations": map[string]any{replay.AnnotationSource: "src namespaces shop at resourceVersion 10"}},
		"spec": map[string]any{"finalizers": []any{"kubernetes"}}}
	if !reflect.DeepEqual(ns, wantNS) {
		t.Errorf("namespace = %v\nwant %v", ns, wantNS)
	}
	cm := decode(t, plan.Objects[1].Object)
	wantCM := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"color": "green"},
		"metadata": map[string]any{"name": "settings", "namespace": "sandbox", "annotations": map[string]any{replay.AnnotationSource: "src configmaps shop/settings at resourceVersion 30"}}}
	if !reflect.DeepEqual(cm, wantCM) {
		t.Errorf("configmap = %v\nwant %v", cm, wantCM)
	}
	svc := decode(t, plan.Objects[2].Object)["spec"]
	wantSvc := map[string]any{"type": "NodePort", "selector": map[string]any{"app": "web"},
		"ports": []any{map[string]any{"port": 80.0, "targetPort": 8080.0}}}
	if !reflect.DeepEqual(svc, wantSvc) {
		t.Errorf("service spec = %v\nwant %v", svc, wantSvc)
	}
	if d := decode(t, plan.Objects[3].Object); d["status"] != nil || d["metadata"].(map[string]any)["uid"] != nil {
		t.Errorf("deployment kept status or uid: %v", d)
	}
	if plan.Objects[1].Source.ResourceVersion != "30" || plan.Objects[1].Source.Namespace != "shop" {
		t.Errorf("configmap source = %+v, want the version at rv 30 in shop", plan.Objects[1].Source)
	}
	if !plan.Coverage.Complete || plan.Status != replay.StatusPlanned || plan.SourceClusterUID != "ks-uid" {
		t.Errorf("complete %v, status %s, source UID %q", plan.Coverage.Complete, plan.Status, plan.SourceClusterUID)
	}
	if len(plan.Warnings) != 0 {
		t.Errorf("warnings on a complete plan: %q", plan.Warnings)
	}

	// Planning saves nothing: the plan is a preview until SavePlan.
	if _, err := p.LoadPlan(ctx, plan.ID); !errors.Is(err, replay.ErrNotFound) {
		t.Fatalf("LoadPlan of an unsaved plan = %v, want ErrNotFound", err)
	}
	if err := p.SavePlan(ctx, plan); err != nil {
		t.Fatal(err)
	}
	if err := p.SavePlan(ctx, plan); err != nil {
		t.Fatalf("saving the same plan again: %v", err)
	}
	loaded, err := p.LoadPlan(ctx, plan.ID)
	if err != nil {
		t.Fatal(err)
	}
	if loaded.Hash != plan.Hash || !reflect.DeepEqual(refs(loaded.Objects), refs(plan.Objects)) || loaded.Status != replay.StatusPlanned {
		t.Errorf("loaded plan differs: hash %s vs %s, status %s", loaded.Hash, plan.Hash, loaded.Status)
	}
	for i := range plan.Objects {
		if !bytes.Equal(loaded.Objects[i].Object, plan.Objects[i].Object) {
			t.Errorf("loaded object %d differs:\n%s\n%s", i, loaded.Objects[i].Object, plan.Objects[i].Object)
		}
	}
	if _, err := p.LoadPlan(ctx, "nope"); !errors.Is(err, replay.ErrNotFound) {
		t.Errorf("LoadPlan(nope) = %v, want ErrNotFound", err)
	}
}

func TestPlanIsDeterministic(t *testing.T) {
	src := replay.Source{ClusterID: "src", Namespaces: []string{"shop"}, At: t0.Add(2 * time.Minute)}
	tgt := replay.Target{Namespaces: map[string]string{"shop": "sandbox", "other": "x"}}
	var first *replay.Plan
	for range 3 {
		j := shopJournal(t)
		p := newPlanner(t, j, replay.WithIDGenerator(func() string { return "same-id" }),
			replay.WithClock(clocktesting.NewFakePassiveClock(t0.Add(time.Hour))))
		plan, err := p.Plan(context.Background(), src, tgt)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = plan
			continue
		}
		if plan.Hash != first.Hash {
			t.Errorf("the same journal planned twice gives hashes %s and %s", first.Hash, plan.Hash)
		}
		a, _ := first.YAML()
		b, _ := plan.YAML()
		if !bytes.Equal(a, b) {
			t.Errorf("the same journal planned twice renders different YAML:\n%s\n%s", a, b)
		}
	}
}

func TestPlanRefusesIncompleteCoverage(t *testing.T) {
	j := shopJournal(t)
	// The ConfigMap stream lost continuity after its last record (t0+1m),
	// detected at t0+5m; no relist yet.
	j.gap(cmKind, "shop", t0.Add(time.Minute), t0.Add(5*time.Minute), "30")
	src := replay.Source{ClusterID: "src", Namespaces: []string{"shop"}, At: t0.Add(3 * time.Minute)}
	tgt := replay.Target{Namespaces: map[string]string{"shop": "sandbox"}}

	_, err := newPlanner(t, j).Plan(context.Background(), src, tgt)
	var cov *replay.CoverageIncompleteError
	if !errors.As(err, &cov) || !errors.Is(err, replay.ErrRefused) {
		t.Fatalf("Plan over a gap = %v, want a *CoverageIncompleteError", err)
	}
	if len(cov.Missing) == 0 || !strings.Contains(cov.Error(), "410 Gone") {
		t.Errorf("the refusal does not say what is missing: %v", cov)
	}

	plan, err := newPlanner(t, j, replay.WithPolicy(replay.Policy{AllowGaps: true})).Plan(context.Background(), src, tgt)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Coverage.Complete || len(plan.Warnings) == 0 || !strings.Contains(plan.Warnings[0], "INCOMPLETE") {
		t.Errorf("complete = %v, warnings %q", plan.Coverage.Complete, plan.Warnings)
	}
	for _, o := range plan.Objects {
		affected := o.Ref.Resource == "configmaps"
		if affected != (len(o.Warnings) > 0) {
			t.Errorf("%s: warnings %q (affected by the gap: %v)", o.Ref, o.Warnings, affected)
		}
	}
}

func TestPlanFiltersRenamesAndSynthesizesNamespaces(t *testing.T) {
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	j := &journal{t: t, store: store, cluster: "src"}
	// No namespaces stream: the plan must create a bare namespace.
	j.baseline(cmKind, "a", t0, "5",
		object("v1", "ConfigMap", "a", "one", "u1", "3", `"data":{"k":"1"}`),
		object("v1", "ConfigMap", "a", "two", "u2", "4", `"data":{"k":"2"}`))
	j.baseline(deployKind, "a", t0, "5",
		object("apps/v1", "Deployment", "a", "web", "u3", "5", `"spec":{"replicas":1}`))
	j.healthyUntil(t0.Add(time.Hour))
	p := newPlanner(t, j, replay.WithPolicy(replay.Policy{Kinds: []string{"ConfigMap"}, Names: []string{"o*"}}))
	plan, err := p.Plan(context.Background(), replay.Source{ClusterID: "src", Namespaces: []string{"a"}, At: t0.Add(time.Minute)},
		replay.Target{Namespaces: map[string]string{"a": "b"}, Names: map[string]string{"ConfigMap/one": "uno"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := refs(plan.Objects), []string{"namespaces b", "configmaps b/uno"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("objects = %q, want %q", got, want)
	}
	if !plan.Objects[0].Synthesized || len(plan.Objects[0].Warnings) == 0 {
		t.Errorf("namespace b should be synthesized with a warning: %+v", plan.Objects[0])
	}
	if got := decode(t, plan.Objects[0].Object)["metadata"].(map[string]any)["annotations"]; !reflect.DeepEqual(got, map[string]any{replay.AnnotationSource: "src namespaces a not recorded"}) {
		t.Errorf("synthesized namespace annotations = %v", got)
	}
	if name := decode(t, plan.Objects[1].Object)["metadata"].(map[string]any)["name"]; name != "uno" {
		t.Errorf("renamed config map has name %v", name)
	}
	rules := map[string]replay.ExclusionRule{}
	for _, e := range plan.Exclusions {
		rules[e.Ref.String()] = e.Rule
	}
	want := map[string]replay.ExclusionRule{"configmaps a/two": replay.RuleNotSelected, "apps/deployments a/web": replay.RuleNotSelected}
	if !reflect.DeepEqual(rules, want) {
		t.Errorf("exclusions = %v, want %v", rules, want)
	}

	// Two source namespaces into one target: the same name would collide.
	j.baseline(cmKind, "c", t0, "6", object("v1", "ConfigMap", "c", "one", "u4", "6", `"data":{"k":"3"}`))
	j.healthyUntil(t0.Add(2 * time.Hour))
	_, err = newPlanner(t, j).Plan(context.Background(), replay.Source{ClusterID: "src", Namespaces: []string{"a", "c"}, At: t0.Add(time.Minute)},
		replay.Target{Namespaces: map[string]string{"a": "b", "c": "b"}})
	if !errors.Is(err, replay.ErrInvalidArgument) {
		t.Errorf("colliding mapping: %v, want ErrInvalidArgument", err)
	}
}

func TestPlanYAMLAndJSON(t *testing.T) {
	j := shopJournal(t)
	plan, err := newPlanner(t, j).Plan(context.Background(), replay.Source{ClusterID: "src", Namespaces: []string{"shop"}, At: t0.Add(2 * time.Minute)},
		replay.Target{Namespaces: map[string]string{"shop": "sandbox"}})
	if err != nil {
		t.Fatal(err)
	}
	out, err := plan.YAML()
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(out), "---\n")
	header := docs[0]
	for _, want := range []string{plan.ID, plan.Hash, "excluded secrets shop/db-pass"} {
		if !strings.Contains(header, want) {
			t.Errorf("header lacks %q:\n%s", want, header)
		}
	}
	docs = docs[1:]
	if len(docs) != len(plan.Objects) {
		t.Fatalf("%d YAML documents for %d objects", len(docs), len(plan.Objects))
	}
	for i, doc := range docs {
		raw, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatal(err)
		}
		if got, want := decode(t, raw), decode(t, plan.Objects[i].Object); !reflect.DeepEqual(got, want) {
			t.Errorf("document %d = %v, want %v", i, got, want)
		}
	}

	raw, err := plan.JSON()
	if err != nil {
		t.Fatal(err)
	}
	back, err := replay.ParsePlan(raw)
	if err != nil || back.Hash != plan.Hash {
		t.Fatalf("ParsePlan: %v (hash %v)", err, back)
	}
	tampered := bytes.Replace(raw, []byte(`green`), []byte(`red`), 1)
	_, err = replay.ParsePlan(tampered)
	var stale *replay.StalePlanError
	if !errors.As(err, &stale) {
		t.Errorf("ParsePlan(tampered) = %v, want *StalePlanError", err)
	}
}

// fakeCluster is a client-go fake that holds only a kube-system namespace
// with the given UID: enough for the refusals that come before any write.
func fakeCluster(t *testing.T, uid string) *replay.Cluster {
	t.Helper()
	ns := &unstructured.Unstructured{}
	ns.SetAPIVersion("v1")
	ns.SetKind("Namespace")
	ns.SetName("kube-system")
	ns.SetUID(types.UID(uid))
	c, err := replay.NewCluster(dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), ns))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestRefusals(t *testing.T) {
	ctx := context.Background()
	j := shopJournal(t)
	p := newPlanner(t, j)
	src := replay.Source{ClusterID: "src", Namespaces: []string{"shop"}, At: t0.Add(2 * time.Minute)}
	plan, err := p.Plan(ctx, src, replay.Target{Namespaces: map[string]string{"shop": "sandbox"}})
	if err != nil {
		t.Fatal(err)
	}
	other := fakeCluster(t, "other-uid")
	source := fakeCluster(t, "ks-uid") // the journal recorded this kube-system UID for "src"
	ok := replay.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash}

	// Only a saved plan is dry-run or applied.
	var unsaved *replay.UnsavedPlanError
	if _, err := p.DryRun(ctx, plan, other); !errors.As(err, &unsaved) || !errors.Is(err, replay.ErrRefused) {
		t.Errorf("DryRun of an unsaved plan = %v, want *UnsavedPlanError", err)
	}
	if _, err := p.Apply(ctx, plan, other, ok); !errors.As(err, &unsaved) {
		t.Errorf("Apply of an unsaved plan = %v, want *UnsavedPlanError", err)
	}
	if err := p.SavePlan(ctx, plan); err != nil {
		t.Fatal(err)
	}

	var confirmErr *replay.ConfirmationRequiredError
	if _, err := p.Apply(ctx, plan, other, replay.Confirmation{}); !errors.As(err, &confirmErr) {
		t.Errorf("Apply without confirmation = %v", err)
	}
	if _, err := p.Apply(ctx, plan, other, replay.Confirmation{PlanID: plan.ID, PlanHash: "sha256:0"}); !errors.As(err, &confirmErr) {
		t.Errorf("Apply with the wrong hash = %v", err)
	}
	var notClean *replay.DryRunNotCleanError
	if _, err := p.Apply(ctx, plan, other, ok); !errors.As(err, &notClean) {
		t.Errorf("Apply without a dry run = %v", err)
	}
	var srcErr *replay.SourceClusterError
	if _, err := p.DryRun(ctx, plan, source); !errors.As(err, &srcErr) || !srcErr.DryRun || !strings.Contains(err.Error(), "dry run refused") {
		t.Errorf("DryRun into the source cluster = %v, want a refused dry run", err)
	}
	if _, err := p.Apply(ctx, plan, source, ok); !errors.As(err, &srcErr) || srcErr.DryRun || !strings.Contains(err.Error(), "apply refused") {
		t.Errorf("Apply into the source cluster = %v, want a refused apply", err)
	}
	named, err := replay.NewCluster(dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), replay.WithClusterID("src"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DryRun(ctx, plan, named); !errors.Is(err, replay.ErrIdentity) {
		t.Errorf("DryRun into a cluster without kube-system = %v, want ErrIdentity", err)
	}

	pinned, err := p.Plan(ctx, src, replay.Target{ClusterID: "sandbox-uid", Namespaces: map[string]string{"shop": "sandbox"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.SavePlan(ctx, pinned); err != nil {
		t.Fatal(err)
	}
	var wrong *replay.WrongTargetError
	if _, err := p.DryRun(ctx, pinned, other); !errors.As(err, &wrong) || wrong.Want != "sandbox-uid" {
		t.Errorf("DryRun into another cluster than the target = %v", err)
	}

	tampered := *plan
	tampered.Objects = append([]replay.Object(nil), plan.Objects...)
	tampered.Objects[1].Object = json.RawMessage(bytes.Replace(plan.Objects[1].Object, []byte("green"), []byte("red"), 1))
	var stale *replay.StalePlanError
	if _, err := p.DryRun(ctx, &tampered, other); !errors.As(err, &stale) {
		t.Errorf("DryRun of a changed plan = %v", err)
	}
	if _, err := p.Apply(ctx, &tampered, other, replay.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash}); !errors.As(err, &stale) {
		t.Errorf("Apply of a changed plan = %v", err)
	}
	if err := p.SavePlan(ctx, &tampered); !errors.As(err, &stale) {
		t.Errorf("SavePlan of a changed plan = %v", err)
	}
	// Changed and hashed again, it is not the plan the journal holds.
	if tampered.Hash, err = tampered.ComputeHash(); err != nil {
		t.Fatal(err)
	}
	if _, err := p.DryRun(ctx, &tampered, other); !errors.As(err, &unsaved) || !strings.Contains(err.Error(), "holds plan "+plan.ID+" with hash "+plan.Hash) {
		t.Errorf("DryRun of a changed, re-hashed plan = %v, want *UnsavedPlanError", err)
	}
	if _, err := p.Apply(ctx, &tampered, other, replay.Confirmation{PlanID: tampered.ID, PlanHash: tampered.Hash}); !errors.As(err, &unsaved) {
		t.Errorf("Apply of a changed, re-hashed plan = %v, want *UnsavedPlanError", err)
	}
	if err := p.SavePlan(ctx, &tampered); !errors.As(err, &unsaved) {
		t.Errorf("SavePlan of another plan under a saved plan's ID = %v, want *UnsavedPlanError", err)
	}
}

// A plan preview and LoadPlan answer from a journal opened read-only;
// saving and dry-running write to the journal and fail with
// storage.ErrReadOnly (replay.ErrReadOnly is that value).
// TestApplyOnAReadOnlyJournal shows Apply failing so, with nothing written
// to the cluster.
func TestPlanOnAReadOnlyStore(t *testing.T) {
	ctx := context.Background()
	w, ro := readonly.Journal(t)
	j := shopJournalIn(t, w)
	src := replay.Source{ClusterID: "src", Namespaces: []string{"shop"}, At: t0.Add(2 * time.Minute)}
	tgt := replay.Target{Namespaces: map[string]string{"shop": "sandbox"}}
	saved, err := newPlanner(t, j).Plan(ctx, src, tgt)
	if err != nil {
		t.Fatal(err)
	}
	if err := newPlanner(t, j).SavePlan(ctx, saved); err != nil {
		t.Fatal(err)
	}

	p, err := replay.NewPlanner(ro)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := p.Plan(ctx, src, tgt)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.Objects) != 4 || !plan.Coverage.Complete {
		t.Fatalf("plan on a read-only store: %d objects, complete %v", len(plan.Objects), plan.Coverage.Complete)
	}
	if loaded, err := p.LoadPlan(ctx, saved.ID); err != nil || loaded.Hash != saved.Hash {
		t.Fatalf("LoadPlan on a read-only store: %v, %+v", err, loaded)
	}
	if err := p.SavePlan(ctx, plan); !errors.Is(err, storage.ErrReadOnly) || !errors.Is(err, replay.ErrReadOnly) {
		t.Errorf("SavePlan on a read-only store = %v, want storage.ErrReadOnly", err)
	}
	if _, err := p.DryRun(ctx, saved, fakeCluster(t, "other-uid")); !errors.Is(err, storage.ErrReadOnly) {
		t.Errorf("DryRun on a read-only store = %v, want storage.ErrReadOnly", err)
	}
}

func TestPlanFromSavedSnapshot(t *testing.T) {
	ctx := context.Background()
	j := shopJournal(t)
	m, err := materialize.New(j.store)
	if err != nil {
		t.Fatal(err)
	}
	snap, err := m.Snapshot(ctx, materialize.Scope{ClusterID: "src", Namespaces: []string{"shop"}}, t0.Add(30*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if err := m.SaveSnapshot(ctx, snap, "before the change"); err != nil {
		t.Fatal(err)
	}
	p := newPlanner(t, j)
	plan, err := p.Plan(ctx, replay.Source{SnapshotID: snap.ID}, replay.Target{Namespaces: map[string]string{"shop": "sandbox"}})
	if err != nil {
		t.Fatal(err)
	}
	if plan.Source.SnapshotID != snap.ID || !plan.Source.At.Equal(t0.Add(30*time.Second)) || plan.Source.ClusterID != "src" {
		t.Errorf("plan source = %+v, want the snapshot's", plan.Source)
	}
	if got, want := refs(plan.Objects), []string{"namespaces sandbox", "configmaps sandbox/settings", "services sandbox/web", "apps/deployments sandbox/web"}; !reflect.DeepEqual(got, want) {
		t.Errorf("objects = %q, want %q", got, want)
	}
	// The snapshot is from before the change at t0+1m.
	if color := decode(t, plan.Objects[1].Object)["data"].(map[string]any)["color"]; color != "blue" {
		t.Errorf("color = %v, want the snapshot's blue", color)
	}
	if _, err := p.LoadPlan(ctx, snap.ID); !errors.Is(err, replay.ErrNotFound) {
		t.Errorf("LoadPlan(snapshot ID) = %v, want ErrNotFound", err)
	}
	if _, err := p.Plan(ctx, replay.Source{SnapshotID: "missing"}, replay.Target{}); !errors.Is(err, materialize.ErrNotFound) {
		t.Errorf("Plan from a missing snapshot = %v, want materialize.ErrNotFound", err)
	}
}
