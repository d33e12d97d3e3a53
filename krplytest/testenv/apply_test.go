package testenv_test

import (
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/krply/krply/krplytest/testenv"
)

// A second field manager applying a field the first one owns, without
// force, gets 409 Conflict naming the first manager; with force it takes the
// field over.
func TestServerSideApplyConflict(t *testing.T) {
	t.Parallel()
	env := testenv.Shared(t)
	ctx := testContext(t, time.Minute)
	ns := env.CreateNamespace(t)
	cms := client(t, env.Config()).Resource(configMaps).Namespace(ns)

	if _, err := cms.Apply(ctx, "shared", configMap(ns, "shared", map[string]any{"owner": "first"}),
		metav1.ApplyOptions{FieldManager: "first-manager"}); err != nil {
		t.Fatalf("first apply: %v", err)
	}
	_, err := cms.Apply(ctx, "shared", configMap(ns, "shared", map[string]any{"owner": "second"}),
		metav1.ApplyOptions{FieldManager: "second-manager"})
	if !apierrors.IsConflict(err) {
		t.Fatalf("second manager without force: got %v, want 409 Conflict", err)
	}
	if !strings.Contains(err.Error(), "first-manager") || !strings.Contains(err.Error(), ".data.owner") {
		t.Errorf("conflict does not name the first manager and the field: %v", err)
	}
	t.Logf("conflict: %v", err)

	got, err := cms.Apply(ctx, "shared", configMap(ns, "shared", map[string]any{"owner": "second"}),
		metav1.ApplyOptions{FieldManager: "second-manager", Force: true})
	if err != nil {
		t.Fatalf("second manager with force: %v", err)
	}
	if owner, _, _ := unstructured.NestedString(got.Object, "data", "owner"); owner != "second" {
		t.Errorf("after forced apply data.owner = %q, want second", owner)
	}
}

// dryRun=All validates and answers like the real request but persists
// nothing: no create, no update, no server-side apply.
func TestDryRunPersistsNothing(t *testing.T) {
	t.Parallel()
	env := testenv.Shared(t)
	ctx := testContext(t, time.Minute)
	ns := env.CreateNamespace(t)
	cms := client(t, env.Config()).Resource(configMaps).Namespace(ns)
	dryRun := []string{metav1.DryRunAll}

	answered, err := cms.Create(ctx, configMap(ns, "dry-created", nil), metav1.CreateOptions{DryRun: dryRun})
	if err != nil {
		t.Fatalf("dry-run create: %v", err)
	}
	if answered.GetName() != "dry-created" || answered.GetUID() == "" {
		t.Errorf("dry-run create answered %v, want the object as it would be stored", answered.Object)
	}
	if _, err := cms.Get(ctx, "dry-created", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after dry-run create: get = %v, want NotFound", err)
	}

	if _, err := cms.Apply(ctx, "dry-applied", configMap(ns, "dry-applied", nil),
		metav1.ApplyOptions{FieldManager: "krply-test", DryRun: dryRun}); err != nil {
		t.Fatalf("dry-run apply: %v", err)
	}
	if _, err := cms.Get(ctx, "dry-applied", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after dry-run apply: get = %v, want NotFound", err)
	}

	real := mustCreate(t, ctx, client(t, env.Config()), configMap(ns, "kept", map[string]any{"k": "before"}))
	changed := real.DeepCopy()
	_ = unstructured.SetNestedField(changed.Object, "after", "data", "k")
	answered, err = cms.Update(ctx, changed, metav1.UpdateOptions{DryRun: dryRun})
	if err != nil {
		t.Fatalf("dry-run update: %v", err)
	}
	if v, _, _ := unstructured.NestedString(answered.Object, "data", "k"); v != "after" {
		t.Errorf("dry-run update answered data.k = %q, want after", v)
	}
	stored, err := cms.Get(ctx, "kept", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if v, _, _ := unstructured.NestedString(stored.Object, "data", "k"); v != "before" || stored.GetResourceVersion() != real.GetResourceVersion() {
		t.Errorf("after dry-run update: data.k = %q at %s, want before at %s", v, stored.GetResourceVersion(), real.GetResourceVersion())
	}
}
