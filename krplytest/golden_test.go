package krplytest_test

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/watch"
)

// The golden files of testdata/golden hold a history, a diff and a
// snapshot of the same writes to a fake cluster, as a downstream test keeps
// them.
func TestAssertGoldenHistoryDiffSnapshot(t *testing.T) {
	c := krplytest.NewCluster(t, krplytest.WithResources("deploy", "cm"),
		krplytest.WithObjects(deployment("shop", "web", 1), configMap("shop", "settings", "a")))
	before := c.Mark()
	c.Modify("deploy", "shop", "web", func(u *unstructured.Unstructured) {
		u.SetAnnotations(map[string]string{"example.com/paused-replicas": "1"})
		_ = unstructured.SetNestedField(u.Object, int64(0), "spec", "replicas")
	})
	c.Delete("cm", "shop", "settings")
	after := c.Mark()

	krplytest.AssertGolden(t, "testdata/golden/web.history.json", c.History("deploy", "shop", "web"))
	krplytest.AssertGolden(t, "testdata/golden/shop.diff.json", c.Diff(before, after, "shop"))
	krplytest.AssertGolden(t, "testdata/golden/shop.snapshot.json", c.Snapshot(before, "shop"))
}

// A golden file that differs fails with a line diff and the way to update
// it; a missing one fails too; the update flag or variable writes it.
func TestAssertGoldenFailsAndUpdates(t *testing.T) {
	c := krplytest.NewCluster(t, krplytest.WithResources("cm"), krplytest.WithObjects(configMap("shop", "settings", "a")))
	c.Modify("cm", "shop", "settings", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "b", "data", "key")
	})
	h := c.History("cm", "shop", "settings")
	path := filepath.Join(t.TempDir(), "testdata", "settings.json")

	// Missing.
	r := &recorder{}
	if krplytest.AssertGolden(r, path, h) || len(r.Errors) != 1 ||
		!strings.Contains(r.Errors[0], "settings.json does not exist: run the test with -krplytest.update or KRPLYTEST_UPDATE=1") {
		t.Fatalf("missing golden file: failures %q", r.Errors)
	}
	if _, err := os.Stat(path); err == nil {
		t.Fatal("a missing golden file was written without the update flag")
	}

	// Written under KRPLYTEST_UPDATE=1, then equal.
	t.Setenv(krplytest.UpdateEnv, "1")
	r = &recorder{}
	if !krplytest.AssertGolden(r, path, h) || len(r.Errors) > 0 {
		t.Fatalf("update: failures %q", r.Errors)
	}
	t.Setenv(krplytest.UpdateEnv, "")
	if !krplytest.AssertGolden(r, path, h) || len(r.Errors) > 0 {
		t.Fatalf("the file just written differs: %q", r.Errors)
	}

	// Changed by hand: the failure shows the lines that differ.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(data), `"after": "b"`, `"after": "c"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if krplytest.AssertGolden(r, path, h) || len(r.Errors) != 1 {
		t.Fatalf("changed golden file: passed or failures %q", r.Errors)
	}
	for _, want := range []string{"settings.json differs from the result (- golden, + now)", `-            "after": "c",`, `+            "after": "b",`, "rerun with -krplytest.update or KRPLYTEST_UPDATE=1"} {
		if !strings.Contains(r.Errors[0], want) {
			t.Errorf("failure does not say %q:\n%s", want, r.Errors[0])
		}
	}

	// The flag does what the variable does.
	if err := flag.Set(krplytest.UpdateFlag, "true"); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = flag.Set(krplytest.UpdateFlag, "false") }()
	r = &recorder{}
	if !krplytest.AssertGolden(r, path, h) || len(r.Errors) > 0 {
		t.Fatalf("update by flag: failures %q", r.Errors)
	}
	if data, _ := os.ReadFile(path); !strings.Contains(string(data), `"after": "b"`) {
		t.Fatalf("-krplytest.update did not rewrite the file:\n%s", data)
	}

	// A result that is not JSON fails.
	r = &recorder{}
	if krplytest.AssertGolden(r, path, func() {}) || len(r.Errors) != 1 || !strings.Contains(r.Errors[0], "marshal func()") {
		t.Fatalf("unmarshalable result: failures %q", r.Errors)
	}
}

// What an API server makes different in every run — UIDs,
// resourceVersions, creation and observation times, event IDs — is
// replaced, so the same writes give the same golden JSON twice.
func TestGoldenJSONIsStableOnARealCluster(t *testing.T) {
	env, _, dyn := realCluster(t)
	run := func() string {
		ns := env.CreateNamespace(t)
		r := krplytest.Record(t, env.Config(), krplytest.WithResources("cm"), krplytest.WithCollectorOptions(watch.WithNamespaces(ns)))
		if _, err := dyn.Resource(configMaps).Namespace(ns).Create(context.Background(), configMap(ns, "settings", "a"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		setData(t, dyn, ns, "settings", "b")
		h := r.History("cm", ns, "settings")
		got, err := krplytest.GoldenJSON(h)
		if err != nil {
			t.Fatal(err)
		}
		r.Stop()
		return strings.ReplaceAll(string(got), ns, "<namespace>")
	}
	first, second := run(), run()
	if first != second {
		t.Fatalf("two runs differ:\n%s\n----\n%s", first, second)
	}
	for _, want := range []string{`"uid": "<uid 1>"`, `"resourceVersion": "<rv 1>"`, `"resourceVersion": "<rv 2>"`, `"creationTimestamp": "<time>"`, `"eventID": "<id 1>"`, `"observedAt": "<time>"`} {
		if !strings.Contains(first, want) {
			t.Errorf("golden JSON has no %s:\n%s", want, first)
		}
	}
}
