package main

import (
	"bytes"
	"context"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/krply/krply/examples/internal/clitest"
	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/replay"
)

func TestReplayFlags(t *testing.T) {
	for _, o := range []options{{}, {apply: "p"}, {confirm: "sha256:x", namespace: "shop"}} {
		if err := run(&bytes.Buffer{}, o); err == nil || !strings.Contains(err.Error(), "--apply ID with --confirm HASH") {
			t.Errorf("%+v: %v, want the usage", o, err)
		}
	}
}

// The whole flow on a real API server: the first run saves and dry-runs
// the plan and prints its ID and hash; another hash applies nothing; the
// printed hash applies exactly that plan.
func TestReplaySaveThenApply(t *testing.T) {
	env := testenv.Start(t)
	r := clitest.Record(t, krplytest.WithObjects(clitest.Object("v1", "Namespace", "", "shop", nil),
		clitest.Object("v1", "ConfigMap", "shop", "settings", map[string]any{"data": map[string]any{"color": "blue"}}),
		clitest.Object("v1", "Pod", "shop", "debug", map[string]any{"spec": map[string]any{}})))
	at := r.Mark()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	target := "restore-" + strings.ToLower(strings.ReplaceAll(time.Now().Format("150405.000000"), ".", ""))
	o := options{journal: r.Path, kubeconfig: env.Kubeconfig(), namespace: "shop", at: at.Format(time.RFC3339Nano), toNamespace: target}

	var out bytes.Buffer
	if err := run(&out, o); err != nil {
		t.Fatalf("plan: %v\n%s", err, out.String())
	}
	m := regexp.MustCompile(`--apply (\S+) --confirm (\S+)`).FindStringSubmatch(out.String())
	for _, want := range []string{"ConfigMap " + target + "/settings", "excluded Pod shop/debug", "dry run: " + string(replay.StatusDryRunNeedsNamespaces)} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("first run lacks %q:\n%s", want, out.String())
		}
	}
	if m == nil {
		t.Fatalf("first run does not print how to apply:\n%s", out.String())
	}
	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	cms := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(target)
	ctx := context.Background()

	err = run(&out, options{journal: r.Path, kubeconfig: env.Kubeconfig(), apply: m[1], confirm: "sha256:0"})
	var confirmErr *replay.ConfirmationRequiredError
	if !errors.As(err, &confirmErr) {
		t.Fatalf("another hash: %v, want a refusal", err)
	}
	if _, err := cms.Get(ctx, "settings", metav1.GetOptions{}); err == nil {
		t.Fatal("a refused apply wrote the ConfigMap")
	}
	out.Reset()
	if err := run(&out, options{journal: r.Path, kubeconfig: env.Kubeconfig(), apply: m[1], confirm: m[2]}); err != nil {
		t.Fatalf("apply: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "apply: "+string(replay.StatusApplied)) {
		t.Errorf("apply output:\n%s", out.String())
	}
	cm, err := cms.Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if src := cm.GetAnnotations()[replay.AnnotationSource]; src != "test-cluster configmaps shop/settings" {
		t.Errorf("the applied ConfigMap says it comes from %q, want shop's settings", src)
	}
}

func TestReplayRefusesAnUncoveredTime(t *testing.T) {
	r, before, _ := clitest.Shop(t)
	err := run(&bytes.Buffer{}, options{journal: r.Path, namespace: "shop", at: before.Add(-time.Hour).Format(time.RFC3339Nano)})
	var cover *replay.CoverageIncompleteError
	if !errors.As(err, &cover) {
		t.Fatalf("a plan from before the recording began: %v, want a refusal over incomplete coverage", err)
	}
}
