package testenv_test

import (
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/krply/krply/krplytest/testenv"
)

// Each user of the token file gets exactly the rights the package documents:
// the viewer and nobody are refused with 403, an unknown user with 401.
func TestUsersAndRBAC(t *testing.T) {
	t.Parallel()
	env := testenv.Shared(t)
	ctx := testContext(t, time.Minute)
	ns := env.CreateNamespace(t)

	admin := client(t, env.Config())
	mustCreate(t, ctx, admin, configMap(ns, "by-admin", map[string]any{"k": "v"}))

	alice := client(t, env.ConfigFor(testenv.UserAlice))
	created := mustCreate(t, ctx, alice, configMap(ns, "by-alice", nil))
	if created.GetUID() == "" {
		t.Fatalf("alice's ConfigMap has no uid: %v", created.Object)
	}

	viewer := client(t, env.ConfigFor(testenv.UserViewer))
	list, err := viewer.Resource(configMaps).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("viewer lists ConfigMaps: %v", err)
	}
	if len(list.Items) != 2 {
		t.Errorf("viewer sees %d ConfigMaps, want 2", len(list.Items))
	}
	_, err = viewer.Resource(configMaps).Namespace(ns).Create(ctx, configMap(ns, "by-viewer", nil), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("viewer creates a ConfigMap: got %v, want 403 Forbidden", err)
	}
	_, err = viewer.Resource(secrets).Namespace(ns).List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("viewer lists Secrets: got %v, want 403 Forbidden", err)
	}
	_, err = viewer.Resource(secrets).Namespace(ns).Watch(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("viewer watches Secrets: got %v, want 403 Forbidden", err)
	}

	nobody := client(t, env.ConfigFor(testenv.UserNobody))
	_, err = nobody.Resource(configMaps).Namespace(ns).List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("nobody lists ConfigMaps: got %v, want 403 Forbidden", err)
	}
	if err != nil && !containsAll(err.Error(), `User "nobody"`, "configmaps") {
		t.Errorf("403 does not name the user and resource: %v", err)
	}

	// A user from WithUser is authenticated (403, not 401) and has no rights.
	carol := client(t, env.ConfigFor(userCarol))
	_, err = carol.Resource(configMaps).Namespace(ns).List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `User "carol"`) {
		t.Errorf("carol lists ConfigMaps: got %v, want 403 Forbidden for User \"carol\"", err)
	}

	stranger := client(t, env.ConfigFor("stranger"))
	_, err = stranger.Resource(configMaps).Namespace(ns).List(ctx, metav1.ListOptions{})
	if !apierrors.IsUnauthorized(err) {
		t.Errorf("unknown user lists ConfigMaps: got %v, want 401 Unauthorized", err)
	}
}

// The kubeconfig file works with client-go's loader, as admin by default and
// as any user through its context.
func TestKubeconfig(t *testing.T) {
	t.Parallel()
	env := testenv.Shared(t)
	ctx := testContext(t, time.Minute)
	ns := env.CreateNamespace(t)
	path := env.Kubeconfig()
	for _, tc := range []struct {
		context     string
		wantAllowed bool
	}{
		{"", true}, // current context: admin
		{testenv.UserViewer, true},
		{testenv.UserNobody, false},
	} {
		cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: path},
			&clientcmd.ConfigOverrides{CurrentContext: tc.context},
		).ClientConfig()
		if err != nil {
			t.Fatalf("load %s (context %q): %v", path, tc.context, err)
		}
		_, err = client(t, cfg).Resource(configMaps).Namespace(ns).List(ctx, metav1.ListOptions{})
		if allowed := err == nil; allowed != tc.wantAllowed || (err != nil && !apierrors.IsForbidden(err)) {
			t.Errorf("context %q lists ConfigMaps: %v, want allowed=%v", tc.context, err, tc.wantAllowed)
		}
	}
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
