package deploy_test

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/recorder"
	"github.com/krply/krply/recorder/recordertest"
	"github.com/krply/krply/server"
	"github.com/krply/krply/server/client"
	"github.com/krply/krply/storage"
)

// The recorder as the manifests run it (--listen, --delegated-auth), with
// nothing but the recorder's ClusterRole of rbac.yaml: it records, and its
// query API lets a user bound to krply-history-reader in a namespace read
// that namespace's history, and refuses everyone else.
func TestQueryAPIWithTheRecordersRole(t *testing.T) {
	env := testenv.Start(t, testenv.WithUser(recorderUser))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	ns := env.CreateNamespace(t)
	if err := env.ApplyManifests(ctx, manifests(t, "recorder/rbac.yaml"), false); err != nil {
		t.Fatal(err)
	}
	bindings := []*unstructured.Unstructured{
		{Object: map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
			"metadata": map[string]any{"name": "krply-recorder-test"},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "krply-recorder"},
			"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": recorderUser}},
		}},
		{Object: map[string]any{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
			"metadata": map[string]any{"name": "history-readers", "namespace": ns},
			"roleRef":  map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "krply-history-reader"},
			"subjects": []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": testenv.UserAlice}},
		}},
	}
	if err := env.ApplyManifests(ctx, bindings, false); err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "settings"}, "data": map[string]any{"color": "blue"}}}
	if _, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	rec := recordertest.Start(t, recorder.Config{
		Cluster: func() (*rest.Config, error) { return env.ConfigFor(recorderUser), nil },
		Journal: filepath.Join(t.TempDir(), "krply.db"), Resources: []string{"cm"}, Namespaces: []string{ns},
		Listen: "127.0.0.1:0", DelegatedAuth: true,
	})
	defer rec.Stop(ctx)
	base := rec.Serving(ctx)
	as := func(user string) *client.Client {
		c, err := client.New(base, client.WithToken(env.ConfigFor(user).BearerToken))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	alice := as(testenv.UserAlice)
	for alice.Ready(ctx) != nil {
		if ctx.Err() != nil {
			t.Fatalf("never ready:\n%s", rec.Out.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	clusterID := rec.WaitFor(ctx, regexp.MustCompile(`\(cluster (\S+)\)`))
	settings := storage.ObjectID{ClusterID: clusterID[1], Resource: "configmaps", Namespace: ns, Name: "settings"}
	h, err := alice.History(ctx, settings)
	if err != nil || len(h.Versions()) != 1 {
		t.Fatalf("alice, a history reader in %s: %v; want the ConfigMap's one version", ns, err)
	}
	var e *server.Error
	if _, err := as(testenv.UserBob).History(ctx, settings); !errors.As(err, &e) || e.Status != http.StatusForbidden {
		t.Errorf("bob, bound to nothing: %v; want 403", err)
	}
	if _, err := as(testenv.UserNobody).History(ctx, settings); !errors.As(err, &e) || e.Status != http.StatusForbidden {
		t.Errorf("nobody: %v; want 403", err)
	}
	stranger, _ := client.New(base, client.WithToken("not-a-token"))
	if _, err := stranger.History(ctx, settings); !errors.As(err, &e) || e.Status != http.StatusUnauthorized {
		t.Errorf("an unknown token: %v; want 401", err)
	}
}
