package server_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/krply/krply/krplytest/incident"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/server"
	"github.com/krply/krply/server/client"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/why"
)

func TestTokenFile(t *testing.T) {
	j := newRecorded(t)
	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("# readers\nfirst-token\n\n  second-token  \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, base := j.serve(server.WithTokenFile(path))
	u := base + "/api/v1/clusters"
	wantError(t, http.MethodGet, u, "", http.StatusUnauthorized, server.CodeUnauthenticated, "")
	_, _, hdr := get(t, http.MethodGet, u, "")
	if !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("401 without WWW-Authenticate: Bearer: %v", hdr)
	}
	wantError(t, http.MethodGet, u, "", http.StatusUnauthorized, server.CodeUnauthenticated, "", "Authorization", "Bearer wrong")
	wantError(t, http.MethodGet, u, "", http.StatusUnauthorized, server.CodeUnauthenticated, "", "Authorization", "Basic Zmlyc3QtdG9rZW4=")
	for _, token := range []string{"first-token", "second-token"} {
		if status, e, _ := get(t, http.MethodGet, u, "", "Authorization", "Bearer "+token); status != http.StatusOK {
			t.Errorf("token %s: %d %+v; want 200", token, status, e)
		}
	}
	// Health stays open.
	if status, _, _ := get(t, http.MethodGet, base+"/healthz", ""); status != http.StatusOK {
		t.Errorf("healthz with a token file: %d; want 200 without a token", status)
	}
	// Rotation: the file is read again when it changes.
	if err := os.WriteFile(path, []byte("third-token-of-another-length\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	wantError(t, http.MethodGet, u, "", http.StatusUnauthorized, server.CodeUnauthenticated, "", "Authorization", "Bearer first-token")
	c, err := client.New(base, client.WithToken("third-token-of-another-length"), client.WithHTTPClient(&http.Client{Timeout: time.Minute}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Clusters(ctx); err != nil {
		t.Errorf("the rotated token: %v", err)
	}
	// A file that cannot be read refuses everything, saying why.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	var e *server.Error
	if _, err := c.Clusters(ctx); !errors.As(err, &e) || e.Status != http.StatusInternalServerError || !strings.Contains(e.Message, "token file") {
		t.Errorf("a missing token file: %v; want 500 naming the token file", err)
	}
}

// The client's WithTokenFile sends the file's token, read again when the
// file changes (a ServiceAccount token the kubelet rotates), with the same
// client; a file it cannot use fails New or the request, saying why.
func TestClientTokenFile(t *testing.T) {
	j := newRecorded(t)
	dir := t.TempDir()
	served, mine := filepath.Join(dir, "tokens"), filepath.Join(dir, "token")
	write := func(path, s string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(served, "first-token\n")
	write(mine, "first-token\n")
	_, base := j.serve(server.WithTokenFile(served))
	c, err := client.New(base, client.WithTokenFile(mine))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Clusters(ctx); err != nil {
		t.Errorf("the file's token: %v", err)
	}
	// Rotated on both sides: the same client sends the new token.
	write(served, "second-token-of-another-length\n")
	write(mine, "  second-token-of-another-length\n")
	if _, err := c.Clusters(ctx); err != nil {
		t.Errorf("the rotated token: %v", err)
	}
	if err := os.Remove(mine); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Clusters(ctx); err == nil || !strings.Contains(err.Error(), "token file") {
		t.Errorf("a request once the token file is gone: %v; want an error naming the token file", err)
	}
	write(filepath.Join(dir, "empty"), " \n")
	for name, opts := range map[string][]client.Option{
		"missing file": {client.WithTokenFile(mine)},
		"empty file":   {client.WithTokenFile(filepath.Join(dir, "empty"))},
		"both":         {client.WithToken("t"), client.WithTokenFile(served)},
	} {
		if _, err := client.New(base, opts...); !errors.Is(err, client.ErrInvalidArgument) {
			t.Errorf("New with a %s: %v; want ErrInvalidArgument", name, err)
		}
	}
}

// Delegated authentication and authorization against the real control
// plane: TokenReview says who, SubjectAccessReview on history.krply.io per
// namespace says what.
func TestDelegatedAuth(t *testing.T) {
	env, admin := sharedAdmin(t)
	// alice may read the history of shop, and nothing else.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "krply-history-reader", Namespace: "shop"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{server.AuthGroup}, Resources: []string{server.ResourceHistory}, Verbs: []string{"get"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-reads-shop", Namespace: "shop"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: testenv.UserAlice}}}
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1Namespace, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().Roles("shop").Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.RbacV1().RoleBindings("shop").Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	j := newRecorded(t)
	_, base := j.serve(server.WithDelegatedAuth(admin.AuthenticationV1().TokenReviews(), admin.AuthorizationV1().SubjectAccessReviews()),
		server.WithAuthCacheTTL(time.Minute), server.WithLogger(testLogger(t)))
	as := func(user string) *client.Client {
		c, err := client.New(base, client.WithToken(env.ConfigFor(user).BearerToken))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	alice, bob := as(testenv.UserAlice), as(testenv.UserBob)
	settings := storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: "settings"}
	flags := storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "other", Name: "flags"}

	if st, err := alice.ObjectAt(ctx, settings, at(2)); err != nil || !st.Exists {
		t.Fatalf("alice reads shop: %+v, %v", st, err)
	}
	var e *server.Error
	if _, err := alice.ObjectAt(ctx, flags, at(2)); !errors.As(err, &e) || e.Status != http.StatusForbidden || e.Code != server.CodeForbidden || !strings.Contains(e.Message, "namespace other") {
		t.Fatalf("alice reads other: %v; want 403 forbidden naming namespace other", err)
	}
	if _, err := bob.ObjectAt(ctx, settings, at(2)); !errors.As(err, &e) || e.Code != server.CodeForbidden || !strings.Contains(e.Message, `"bob"`) {
		t.Fatalf("bob reads shop: %v; want 403 naming bob", err)
	}
	// Every namespace is cluster scope, which alice lacks.
	if _, err := alice.Snapshot(ctx, materialize.Scope{ClusterID: "c1"}, at(2)); !errors.As(err, &e) || e.Code != server.CodeForbidden || !strings.Contains(e.Message, "cluster scope") {
		t.Fatalf("alice snapshots every namespace: %v; want 403 for cluster scope", err)
	}
	if snap, err := alice.Snapshot(ctx, materialize.Scope{ClusterID: "c1", Namespaces: []string{"shop"}}, at(2)); err != nil || len(snap.Objects) == 0 {
		t.Fatalf("alice snapshots shop: %+v, %v", snap, err)
	}
	// The admin (system:masters) reads everything.
	if _, err := as(testenv.UserAdmin).Snapshot(ctx, materialize.Scope{ClusterID: "c1"}, at(2)); err != nil {
		t.Fatalf("admin snapshots every namespace: %v", err)
	}
	// why: alice, who may read shop but not cluster scope, gets the answer
	// without the Node, and is told so; the admin gets the Node.
	incidentStore := memory.New()
	t.Cleanup(func() { incidentStore.Close() })
	if err := (&incident.Journal{Cluster: "c1", Namespace: "shop", Pods: 1, Events: true}).Write(ctx, incidentStore); err != nil {
		t.Fatal(err)
	}
	whySrv := httptest.NewServer(server.NewHandler(incidentStore, server.WithDelegatedAuth(admin.AuthenticationV1().TokenReviews(), admin.AuthorizationV1().SubjectAccessReviews())))
	t.Cleanup(whySrv.Close)
	whyQuery := why.Query{Object: storage.ObjectID{ClusterID: "c1", Resource: "pods", Namespace: "shop", Name: "web-1-0"}, From: incident.T0}
	hasNode := func(a *why.Answer) bool {
		for _, n := range a.Nodes {
			if n.ID.Resource == "nodes" {
				return true
			}
		}
		return false
	}
	for _, tc := range []struct {
		user     string
		node     bool
		complete bool
	}{{testenv.UserAlice, false, false}, {testenv.UserAdmin, true, true}} {
		c, err := client.New(whySrv.URL, client.WithToken(env.ConfigFor(tc.user).BearerToken))
		if err != nil {
			t.Fatal(err)
		}
		a, err := c.Why(ctx, whyQuery)
		if err != nil {
			t.Fatalf("%s asks why: %v", tc.user, err)
		}
		left := strings.Contains(strings.Join(a.Warnings, "\n"), "left out the cluster-scoped dependencies you may not read (nodes node-1)")
		if hasNode(a) != tc.node || a.Complete != tc.complete || left == tc.node || len(a.Candidates) == 0 || a.Changes[a.Candidates[0].Change].Object.Name != "settings" {
			t.Errorf("%s asks why: node %v, complete %v, warnings %q, candidates %+v", tc.user, hasNode(a), a.Complete, a.Warnings, a.Candidates)
		}
	}
	// Unauthenticated and unknown tokens are refused.
	wantError(t, http.MethodGet, base+"/api/v1/clusters", "", http.StatusUnauthorized, server.CodeUnauthenticated, "")
	wantError(t, http.MethodGet, base+"/api/v1/clusters", "", http.StatusUnauthorized, server.CodeUnauthenticated, "", "Authorization", "Bearer not-a-token")
	// A cached decision is reused: revoking alice's binding does not take
	// effect within the TTL, and a new handler asks again.
	if err := admin.RbacV1().RoleBindings("shop").Delete(ctx, binding.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := alice.ObjectAt(ctx, settings, at(2)); err != nil {
		t.Errorf("alice within the cache TTL: %v; want the cached allow", err)
	}
	_, base2 := j.serve(server.WithDelegatedAuth(admin.AuthenticationV1().TokenReviews(), admin.AuthorizationV1().SubjectAccessReviews()), server.WithAuthCacheTTL(0))
	c2, _ := client.New(base2, client.WithToken(env.ConfigFor(testenv.UserAlice).BearerToken))
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := c2.ObjectAt(ctx, settings, at(2))
		if errors.As(err, &e) && e.Code == server.CodeForbidden {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice after the binding was deleted, without a cache: %v; want 403", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sharedAdmin returns the shared control plane and a clientset of its
// admin.
func sharedAdmin(t *testing.T) (*testenv.Env, *kubernetes.Clientset) {
	t.Helper()
	env := testenv.Shared(t)
	admin, err := kubernetes.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	return env, admin
}

var corev1Namespace = corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}

// testLogger logs to t.
func testLogger(t *testing.T) logr.Logger {
	return funcr.New(func(prefix, args string) { t.Log(prefix, args) }, funcr.Options{Verbosity: 1})
}
