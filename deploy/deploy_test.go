package deploy_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/recorder"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/watch"
)

// manifests returns the documents of a file under deploy/.
func manifests(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := testenv.Manifests(raw)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return objs
}

func clusterRole(t *testing.T, file, name string) rbacv1.ClusterRole {
	t.Helper()
	for _, u := range manifests(t, file) {
		if u.GetKind() == "ClusterRole" && u.GetName() == name {
			var role rbacv1.ClusterRole
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &role); err != nil {
				t.Fatal(err)
			}
			return role
		}
	}
	t.Fatalf("no ClusterRole %s in %s", name, file)
	return rbacv1.ClusterRole{}
}

// CheckNarrow fails t when role grants a verb outside verbs, a wildcard,
// Secrets, resource names or non-resource URLs. creates names the
// resources (resource.group) on which it may create besides.
func checkNarrow(t *testing.T, role rbacv1.ClusterRole, verbs []string, creates ...string) {
	t.Helper()
	if len(role.Rules) == 0 || role.AggregationRule != nil {
		t.Errorf("%s has no rules of its own (or aggregates others)", role.Name)
	}
	for _, r := range role.Rules {
		for _, v := range r.Verbs {
			if slices.Contains(verbs, v) {
				continue
			}
			if v != "create" || len(creates) == 0 {
				t.Errorf("%s grants %q; allowed verbs are %q", role.Name, v, verbs)
				continue
			}
			for _, g := range r.APIGroups {
				for _, res := range r.Resources {
					if !slices.Contains(creates, res+"."+g) {
						t.Errorf("%s grants create on %s.%s; it may create only %q", role.Name, res, g, creates)
					}
				}
			}
		}
		for _, s := range append(append(slices.Clone(r.APIGroups), r.Resources...), r.Verbs...) {
			if strings.Contains(s, "*") {
				t.Errorf("%s has a wildcard: %+v", role.Name, r)
			}
		}
		if slices.Contains(r.Resources, "secrets") || len(r.NonResourceURLs) > 0 || len(r.ResourceNames) > 0 {
			t.Errorf("%s grants more than named resources: %+v", role.Name, r)
		}
	}
}

func TestRolesAreNarrow(t *testing.T) {
	// The recorder reads, and asks the cluster about the query API's
	// callers (--delegated-auth): create on the two reviews, nothing else.
	checkNarrow(t, clusterRole(t, "recorder/rbac.yaml", "krply-recorder"), []string{"get", "list", "watch"},
		"tokenreviews.authentication.k8s.io", "subjectaccessreviews.authorization.k8s.io")
	checkNarrow(t, clusterRole(t, "recorder/rbac.yaml", "krply-history-reader"), []string{"get"})
	checkNarrow(t, clusterRole(t, "replay/rbac.yaml", "krply-replay"), []string{"get", "list", "create", "patch"})
	checkNarrow(t, clusterRole(t, "replay/rbac.yaml", "krply-replay-namespaces"), []string{"get", "list", "create", "patch"})
	for _, u := range manifests(t, "replay/rbac.yaml") {
		if u.GetKind() == "ClusterRoleBinding" && u.GetName() != "krply-replay-namespaces" {
			t.Errorf("replay binds %s cluster-wide; bind krply-replay per target namespace (RoleBinding)", u.GetName())
		}
	}
}

// The recorder's role lets it read every resource it records by default,
// Events included, and none of the other default exclusions.
func TestRecorderRoleCoversDefaultResources(t *testing.T) {
	role := clusterRole(t, "recorder/rbac.yaml", "krply-recorder")
	grants := func(group, resource string) bool {
		return slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) &&
				slices.Contains(r.Verbs, "list") && slices.Contains(r.Verbs, "watch")
		})
	}
	for _, spec := range append(recorder.DefaultResources(), recorder.EventResources()...) {
		resource, group, _ := strings.Cut(spec, ".")
		if !grants(group, resource) {
			t.Errorf("krply-recorder cannot list and watch %s", spec)
		}
	}
	for _, e := range watch.DefaultExclusions() {
		if slices.Contains(recorder.EventResources(), e.Resource) {
			continue
		}
		resource, group, _ := strings.Cut(e.Resource, ".")
		if grants(group, resource) {
			t.Errorf("krply-recorder may read %s, a default exclusion (%s)", e.Resource, e.Reason)
		}
	}
}

// recorderUser is bound to the recorder's ClusterRole in the tests.
const recorderUser = "krply-recorder-test"

// The manifests are accepted by a real apiserver, the recorder's pod
// passes Pod Security "restricted", the service accounts get exactly the
// access they need, and a Collector recording every resource with the
// recorder's role syncs.
func TestManifestsOnAControlPlane(t *testing.T) {
	env := testenv.Start(t, testenv.WithUser(recorderUser))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	sandbox := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "sandbox"}}}
	if _, err := dyn.Resource(nsGVR).Create(ctx, sandbox, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rbac := append(manifests(t, "recorder/rbac.yaml"), manifests(t, "replay/rbac.yaml")...)
	if err := env.ApplyManifests(ctx, rbac, false); err != nil {
		t.Fatal(err)
	}
	recorder := manifests(t, "recorder/recorder.yaml")
	if err := env.ApplyManifests(ctx, recorder, true); err != nil {
		t.Errorf("server-side dry run of recorder.yaml: %v", err)
	}
	restricted := env.RestrictedNamespace(t)
	if err := env.AdmitPods(ctx, recorder, restricted); err != nil {
		t.Errorf("recorder.yaml under Pod Security restricted: %v", err)
	}
	// The check has teeth: without a seccomp profile the pod is refused.
	loose := recorder[1].DeepCopy()
	unstructured.RemoveNestedField(loose.Object, "spec", "template", "spec", "securityContext", "seccompProfile")
	containers, _, _ := unstructured.NestedSlice(loose.Object, "spec", "template", "spec", "containers")
	for _, c := range containers {
		unstructured.RemoveNestedField(c.(map[string]any), "securityContext", "seccompProfile")
	}
	_ = unstructured.SetNestedSlice(loose.Object, containers, "spec", "template", "spec", "containers")
	if err := env.AdmitPods(ctx, []*unstructured.Unstructured{loose}, restricted); err == nil || !strings.Contains(err.Error(), "seccompProfile") {
		t.Errorf("a pod without a seccomp profile: %v, want it refused by Pod Security", err)
	}

	sar := schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "subjectaccessreviews"}
	for _, tc := range []struct {
		account, verb, group, resource, namespace string
		allowed                                   bool
	}{
		{"krply-recorder", "watch", "apps", "deployments", "shop", true},
		{"krply-recorder", "list", "", "configmaps", "", true},
		{"krply-recorder", "get", "", "namespaces", "", true},
		{"krply-recorder", "list", "apiextensions.k8s.io", "customresourcedefinitions", "", true},
		{"krply-recorder", "list", "", "secrets", "shop", false},
		{"krply-recorder", "update", "", "configmaps", "shop", false},
		{"krply-recorder", "list", "coordination.k8s.io", "leases", "", false},
		{"krply-recorder", "create", "authentication.k8s.io", "tokenreviews", "", true},
		{"krply-recorder", "create", "authorization.k8s.io", "subjectaccessreviews", "", true},
		{"krply-recorder", "create", "authorization.k8s.io", "localsubjectaccessreviews", "shop", false},
		{"krply-recorder", "create", "", "configmaps", "shop", false},
		{"krply-recorder", "get", "krply.io", "history", "shop", false},
		{"krply-replay", "patch", "apps", "deployments", "sandbox", true},
		{"krply-replay", "create", "", "configmaps", "sandbox", true},
		{"krply-replay", "patch", "apps", "deployments", "kube-system", false},
		{"krply-replay", "patch", "apps", "deployments", "shop", false},
		{"krply-replay", "create", "", "namespaces", "", true},
		{"krply-replay", "delete", "", "configmaps", "sandbox", false},
		{"krply-replay", "get", "", "secrets", "sandbox", false},
	} {
		review := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
			"spec": map[string]any{
				"user":               "system:serviceaccount:krply:" + tc.account,
				"groups":             []any{"system:serviceaccounts", "system:serviceaccounts:krply", "system:authenticated"},
				"resourceAttributes": map[string]any{"verb": tc.verb, "group": tc.group, "resource": tc.resource, "namespace": tc.namespace},
			},
		}}
		out, err := dyn.Resource(sar).Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SubjectAccessReview: %v", err)
		}
		allowed, _, _ := unstructured.NestedBool(out.Object, "status", "allowed")
		if allowed != tc.allowed {
			t.Errorf("%s may %s %s.%s in %q: %v, want %v", tc.account, tc.verb, tc.resource, tc.group, tc.namespace, allowed, tc.allowed)
		}
	}

	// A Collector recording every resource, with the recorder's role: it
	// records what the role lets it read, and is synced.
	binding := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
		"metadata": map[string]any{"name": "krply-recorder-test"},
		"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "krply-recorder"},
		"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": recorderUser}},
	}}
	if err := env.ApplyManifests(ctx, []*unstructured.Unstructured{binding}, false); err != nil {
		t.Fatal(err)
	}
	c, err := watch.NewCollectorForConfig(env.ConfigFor(recorderUser), memory.New(), watch.WithAllResources())
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Start(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Start: %v", err)
		}
	}()
	if err := c.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	// Synced once every stream's watch is open, a moment after WaitForSync.
	deadline := time.Now().Add(30 * time.Second)
	for c.Synced() != nil {
		if time.Now().After(deadline) {
			t.Fatalf("Synced = %v", c.Synced())
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, st := range c.Status() {
		if st.Gaps != 0 || st.Relists != 0 {
			t.Errorf("%s: %d gaps, %d relists on a quiet cluster", st.StreamID, st.Gaps, st.Relists)
		}
	}
	var recorded []string
	for _, st := range c.Status() {
		recorded = append(recorded, st.Resource.String())
	}
	for _, want := range []string{"configmaps", "deployments.apps", "customresourcedefinitions.apiextensions.k8s.io", "clusterroles.rbac.authorization.k8s.io"} {
		if !slices.Contains(recorded, want) {
			t.Errorf("%s not recorded with the recorder's role: %v", want, recorded)
		}
	}
	if slices.Contains(recorded, "secrets") {
		t.Errorf("secrets recorded: %v", recorded)
	}
}
