package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/krply/krply/examples/internal/clitest"
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
