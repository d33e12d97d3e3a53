package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/krply/krply/event"
	"github.com/krply/krply/examples/internal/cli"
	"github.com/krply/krply/examples/internal/clitest"
	"github.com/krply/krply/internal/testenv"
	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/replay"
	"github.com/krply/krply/storage"
)

// Planning and -o yaml need no target cluster; the dry run and apply are
// run against a real apiserver by the demo (examples/demo).
func TestReplayWritesAPlanFile(t *testing.T) {
	r, before, _ := clitest.Shop(t)
	file := filepath.Join(t.TempDir(), "plan.yaml")
	var out bytes.Buffer
	err := run(&out, options{store: r.Path, namespaces: []string{"shop"}, at: before.Format(time.RFC3339Nano),
		toNamespace: "shop-restore", output: "yaml", file: file})
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"Namespace shop-restore", "ConfigMap shop-restore/settings", "Deployment shop-restore/web", "excluded Pod shop/debug", "kubectl apply --server-side"} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, doc := range strings.Split(string(raw), "\n---\n")[1:] {
		var obj map[string]any
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatalf("plan file: %v", err)
		}
		md, _ := obj["metadata"].(map[string]any)
		if _, ok := md["uid"]; ok || md["namespace"] == "shop" {
			t.Errorf("unsanitized or unmapped object in the plan file: %v", md)
		}
		kinds = append(kinds, obj["kind"].(string))
	}
	if got := strings.Join(kinds, " "); got != "Namespace ConfigMap Deployment" {
		t.Errorf("plan file holds %q, want Namespace ConfigMap Deployment in apply order", got)
	}
	if plans := savedPlans(t, r.Path); len(plans) != 0 {
		t.Errorf("a plan written to a file without --save was saved in the journal: %v", plans)
	}
}

// savedPlans returns the IDs of the plans saved in a journal file.
func savedPlans(t *testing.T, path string) []string {
	t.Helper()
	page, err := clitest.Open(t, path).Records(context.Background(), storage.Query{Types: []event.RecordType{event.TypePlan}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, rec := range page.Records {
		if rec.Resource.Kind == "ReplayPlan" {
			ids = append(ids, rec.EventID)
		}
	}
	return ids
}

// A preview writes nothing; --save keeps the plan, and --plan writes the
// saved plan, not a new one.
func TestReplaySavesOnlyWhenAsked(t *testing.T) {
	r, before, _ := clitest.Shop(t)
	var out bytes.Buffer
	o := options{store: r.Path, namespaces: []string{"shop"}, at: before.Format(time.RFC3339Nano), toNamespace: "shop-restore"}
	if err := run(&out, o); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "preview: nothing was saved") {
		t.Errorf("preview output:\n%s", out.String())
	}
	if plans := savedPlans(t, r.Path); len(plans) != 0 {
		t.Fatalf("a preview saved plans %v", plans)
	}

	// --save with -o yaml saves the plan and writes the file, without a
	// target cluster.
	o.save, o.output, o.file = true, "yaml", filepath.Join(t.TempDir(), "saved.yaml")
	out.Reset()
	if err := run(&out, o); err != nil {
		t.Fatal(err)
	}
	plans := savedPlans(t, r.Path)
	if len(plans) != 1 || !strings.Contains(out.String(), "saved plan "+plans[0]) {
		t.Fatalf("saved plans %v after --save:\n%s", plans, out.String())
	}
	again := filepath.Join(t.TempDir(), "again.yaml")
	out.Reset()
	if err := run(&out, options{store: r.Path, planID: plans[0], at: "now", output: "yaml", file: again}); err != nil {
		t.Fatal(err)
	}
	first, err := os.ReadFile(o.file)
	if err != nil {
		t.Fatal(err)
	}
	second, err := os.ReadFile(again)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Errorf("--plan %s wrote another plan than the saved one:\n%s\n---\n%s", plans[0], first, second)
	}
	if got := savedPlans(t, r.Path); len(got) != 1 {
		t.Errorf("loading a saved plan saved plans: %v", got)
	}
}

func TestReplayFlags(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    options
		want string
	}{
		{"no namespace", options{}, "--namespace"},
		{"confirm without plan", options{namespaces: []string{"shop"}, confirm: "sha256:x"}, "--confirm applies a saved plan"},
		{"plan with namespace", options{planID: "p", namespaces: []string{"shop"}}, "--plan loads a saved plan"},
		{"plan with save", options{planID: "p", save: true}, "--plan loads a saved plan"},
		{"bad output", options{namespaces: []string{"shop"}, output: "json"}, "want yaml"},
	} {
		if err := run(&bytes.Buffer{}, tc.o); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error about %q", tc.name, err, tc.want)
		}
	}
}

// The whole flow on a real API server: --save dry-runs the saved plan and
// prints how to apply it; --plan with a wrong hash applies nothing; --plan
// with the printed hash applies exactly that plan.
func TestReplaySaveThenApply(t *testing.T) {
	env := testenv.Start(t)
	r := clitest.Record(t, krplytest.WithObjects(clitest.Object("v1", "Namespace", "", "shop", nil),
		clitest.Object("v1", "ConfigMap", "shop", "settings", map[string]any{"data": map[string]any{"color": "blue"}})))
	at := r.Mark()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	target := "restore-" + strings.ToLower(strings.ReplaceAll(time.Now().Format("150405.000000"), ".", ""))
	kube := cli.Cluster{Kubeconfig: env.Kubeconfig()}

	var out bytes.Buffer
	err := run(&out, options{store: r.Path, namespaces: []string{"shop"}, at: at.Format(time.RFC3339Nano), toNamespace: target, save: true, target: kube})
	if err != nil {
		t.Fatalf("--save: %v\n%s", err, out.String())
	}
	m := regexp.MustCompile(`--plan (\S+) --confirm (\S+)`).FindStringSubmatch(out.String())
	if m == nil || !strings.Contains(out.String(), "dry run on "+env.Host()+": "+string(replay.StatusDryRunNeedsNamespaces)) {
		t.Fatalf("--save output lacks a needs-namespaces dry run or the apply command:\n%s", out.String())
	}
	planID, hash := m[1], m[2]

	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	cms := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(target)
	ctx := context.Background()

	out.Reset()
	err = run(&out, options{store: r.Path, planID: planID, confirm: "sha256:0", at: "now", target: kube})
	var confirmErr *replay.ConfirmationRequiredError
	if !errors.As(err, &confirmErr) {
		t.Fatalf("--confirm with another hash: %v, want a refusal\n%s", err, out.String())
	}
	if _, err := cms.Get(ctx, "settings", metav1.GetOptions{}); err == nil {
		t.Fatal("a refused apply wrote the ConfigMap")
	}

	out.Reset()
	if err := run(&out, options{store: r.Path, planID: planID, confirm: hash, at: "now", target: kube}); err != nil {
		t.Fatalf("--plan %s --confirm %s: %v\n%s", planID, hash, err, out.String())
	}
	if !strings.Contains(out.String(), "apply: "+string(replay.StatusApplied)) {
		t.Errorf("apply output:\n%s", out.String())
	}
	cm, err := cms.Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.GetAnnotations()[replay.AnnotationPlanID] != planID {
		t.Errorf("the applied ConfigMap carries plan %q, want the confirmed %s", cm.GetAnnotations()[replay.AnnotationPlanID], planID)
	}
}

func TestReplayRefusesAnUncoveredTime(t *testing.T) {
	r, before, _ := clitest.Shop(t)
	var out bytes.Buffer
	err := run(&out, options{store: r.Path, namespaces: []string{"shop"}, at: before.Add(-time.Hour).Format(time.RFC3339Nano), output: "yaml",
		file: filepath.Join(t.TempDir(), "plan.yaml")})
	if err == nil || !strings.Contains(err.Error(), "incomplete") {
		t.Fatalf("a plan from before the recording began: %v, want a refusal over incomplete coverage", err)
	}
}
