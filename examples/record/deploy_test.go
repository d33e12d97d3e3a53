package main

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"

	"github.com/krply/krply/internal/testenv"
	"github.com/krply/krply/watch"
)

// manifests returns the documents of a deploy/ file.
func manifests(t *testing.T, file string) []*unstructured.Unstructured {
	t.Helper()
	raw, err := os.ReadFile("deploy/" + file)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, doc := range bytes.Split(raw, []byte("\n---\n")) {
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &u.Object); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	return out
}

func clusterRole(t *testing.T, name string) rbacv1.ClusterRole {
	t.Helper()
	for _, u := range manifests(t, "rbac.yaml") {
		if u.GetKind() == "ClusterRole" && u.GetName() == name {
			var role rbacv1.ClusterRole
			raw, _ := u.MarshalJSON()
			if err := yaml.Unmarshal(raw, &role); err != nil {
				t.Fatal(err)
			}
			return role
		}
	}
	t.Fatalf("no ClusterRole %s in rbac.yaml", name)
	return rbacv1.ClusterRole{}
}

func TestRolesAreNarrow(t *testing.T) {
	for _, tc := range []struct {
		role  string
		verbs []string
	}{
		{"krply-recorder", []string{"get", "list", "watch"}},
		{"krply-replay", []string{"get", "list", "create", "patch"}},
	} {
		role := clusterRole(t, tc.role)
		if len(role.Rules) == 0 {
			t.Errorf("%s has no rules", tc.role)
		}
		for _, r := range role.Rules {
			for _, v := range r.Verbs {
				if !slices.Contains(tc.verbs, v) {
					t.Errorf("%s grants %q; allowed verbs are %q", tc.role, v, tc.verbs)
				}
			}
			for _, s := range append(append(slices.Clone(r.APIGroups), r.Resources...), r.Verbs...) {
				if strings.Contains(s, "*") {
					t.Errorf("%s has a wildcard: %+v", tc.role, r)
				}
			}
			if slices.Contains(r.Resources, "secrets") || len(r.NonResourceURLs) > 0 || len(r.ResourceNames) > 0 {
				t.Errorf("%s grants more than named resources: %+v", tc.role, r)
			}
		}
	}
}

// The recorder's role lets it read every resource it records by default.
func TestRecorderRoleCoversDefaultResources(t *testing.T) {
	role := clusterRole(t, "krply-recorder")
	for _, spec := range watch.DefaultResources() {
		resource, group, _ := strings.Cut(spec, ".")
		ok := slices.ContainsFunc(role.Rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) &&
				slices.Contains(r.Verbs, "list") && slices.Contains(r.Verbs, "watch")
		})
		if !ok {
			t.Errorf("krply-recorder cannot list and watch %s", spec)
		}
	}
}

// The manifests are accepted by a real apiserver, and the service accounts
// get exactly the access they need.
func TestManifestsOnAControlPlane(t *testing.T) {
	env := testenv.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	resources := map[string]schema.GroupVersionResource{
		"Namespace":          {Version: "v1", Resource: "namespaces"},
		"ServiceAccount":     {Version: "v1", Resource: "serviceaccounts"},
		"ClusterRole":        {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
		"ClusterRoleBinding": {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	}
	for _, u := range manifests(t, "rbac.yaml") {
		if _, err := dyn.Resource(resources[u.GetKind()]).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	// The workload manifests pass the server's validation.
	for _, u := range manifests(t, "recorder.yaml") {
		gvr := schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
		if u.GetKind() == "Deployment" {
			gvr = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
		}
		if _, err := dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(ctx, u, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
			t.Errorf("dry-run create %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}

	sar := schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "subjectaccessreviews"}
	for _, tc := range []struct {
		account, verb, group, resource string
		allowed                        bool
	}{
		{"krply-recorder", "watch", "apps", "deployments", true},
		{"krply-recorder", "list", "", "configmaps", true},
		{"krply-recorder", "get", "", "namespaces", true},
		{"krply-recorder", "list", "", "secrets", false},
		{"krply-recorder", "update", "", "configmaps", false},
		{"krply-replay", "patch", "apps", "deployments", true},
		{"krply-replay", "create", "", "namespaces", true},
		{"krply-replay", "delete", "", "configmaps", false},
		{"krply-replay", "get", "", "secrets", false},
	} {
		review := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
			"spec": map[string]any{
				"user":               "system:serviceaccount:krply:" + tc.account,
				"groups":             []any{"system:serviceaccounts", "system:serviceaccounts:krply", "system:authenticated"},
				"resourceAttributes": map[string]any{"verb": tc.verb, "group": tc.group, "resource": tc.resource, "namespace": "shop"},
			},
		}}
		out, err := dyn.Resource(sar).Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("SubjectAccessReview: %v", err)
		}
		allowed, _, _ := unstructured.NestedBool(out.Object, "status", "allowed")
		if allowed != tc.allowed {
			t.Errorf("%s may %s %s.%s: %v, want %v", tc.account, tc.verb, tc.resource, tc.group, allowed, tc.allowed)
		}
	}
}
