package server_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/metrics"
	"github.com/krply/krply/server"
)

// scrape asks GET u with the headers and returns the status and body.
func scrape(t *testing.T, u string, header ...string) (int, string) {
	t.Helper()
	status, body, _ := request(t, http.MethodGet, u, "", header...)
	return status, string(body)
}

// journalMetrics returns the metrics handler of j's store and the sample
// line a scrape of it must show.
func journalMetrics(t *testing.T, j *recorded) (http.Handler, string) {
	t.Helper()
	st, err := j.ro.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Records == 0 {
		t.Fatal("the fixture journal has no records")
	}
	return metrics.NewHandler(metrics.WithStore(j.ro)), fmt.Sprintf("\nkrply_journal_records %d\n", st.Records)
}

// WithMetrics serves /metrics behind the handler's authentication: open
// without one, to the token file's tokens with WithTokenFile (401 with
// an Error otherwise); without WithMetrics there is no /metrics.
func TestMetrics(t *testing.T) {
	j := newRecorded(t)
	h, want := journalMetrics(t, j)

	_, open := j.serve(server.WithMetrics(h))
	if status, body := scrape(t, open+"/metrics"); status != http.StatusOK || !strings.Contains(body, want) {
		t.Errorf("/metrics without authentication: %d\n%s\nwant 200 with %q", status, body, want)
	}
	wantError(t, http.MethodPost, open+"/metrics", "", http.StatusMethodNotAllowed, server.CodeMethodNotAllowed, "")

	path := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(path, []byte("scraper-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, guarded := j.serve(server.WithTokenFile(path), server.WithMetrics(h))
	wantError(t, http.MethodGet, guarded+"/metrics", "", http.StatusUnauthorized, server.CodeUnauthenticated, "")
	wantError(t, http.MethodGet, guarded+"/metrics", "", http.StatusUnauthorized, server.CodeUnauthenticated, "", "Authorization", "Bearer wrong-token")
	if _, _, hdr := get(t, http.MethodGet, guarded+"/metrics", ""); !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Bearer") {
		t.Errorf("401 without WWW-Authenticate: Bearer: %v", hdr)
	}
	if status, body := scrape(t, guarded+"/metrics", "Authorization", "Bearer scraper-token"); status != http.StatusOK || !strings.Contains(body, want) {
		t.Errorf("/metrics with the file's token: %d\n%s\nwant 200 with %q", status, body, want)
	}

	// Without WithMetrics, /metrics is not served, with or without a token.
	_, without := j.serve()
	if status, body := scrape(t, without+"/metrics"); status != http.StatusNotFound || strings.Contains(body, "krply_") {
		t.Errorf("/metrics without WithMetrics: %d %q; want 404", status, body)
	}
	_, withoutGuarded := j.serve(server.WithTokenFile(path))
	if status, body := scrape(t, withoutGuarded+"/metrics", "Authorization", "Bearer scraper-token"); status != http.StatusNotFound || strings.Contains(body, "krply_") {
		t.Errorf("/metrics without WithMetrics, with a token: %d %q; want 404", status, body)
	}
}

// With delegated authentication, /metrics is authorized as kube-apiserver
// authorizes its own: verb get on the non-resource URL /metrics, which a
// ClusterRole's nonResourceURLs rule grants (alice); without it 403
// (bob), without a token 401.
func TestDelegatedAuthMetrics(t *testing.T) {
	env, admin := sharedAdmin(t)
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "krply-test-metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "krply-test-alice-scrapes"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: testenv.UserAlice}}}
	if _, err := admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.RbacV1().ClusterRoles().Delete(ctx, role.Name, metav1.DeleteOptions{}) })
	if _, err := admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{}) })

	j := newRecorded(t)
	h, want := journalMetrics(t, j)
	_, base := j.serve(server.WithDelegatedAuth(admin.AuthenticationV1().TokenReviews(), admin.AuthorizationV1().SubjectAccessReviews()),
		server.WithAuthCacheTTL(time.Minute), server.WithLogger(testLogger(t)), server.WithMetrics(h))
	bearer := func(user string) string { return "Bearer " + env.ConfigFor(user).BearerToken }

	// RBAC is read from an informer: the new binding may take a moment.
	deadline := time.Now().Add(30 * time.Second)
	for {
		status, body := scrape(t, base+"/metrics", "Authorization", bearer(testenv.UserAlice))
		if status == http.StatusOK {
			if !strings.Contains(body, want) {
				t.Errorf("alice's scrape lacks %q:\n%s", want, body)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice, granted get on /metrics: %d %s; want 200", status, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
	status, e, _ := get(t, http.MethodGet, base+"/metrics", "", "Authorization", bearer(testenv.UserBob))
	if status != http.StatusForbidden || e.Code != server.CodeForbidden || !strings.Contains(e.Message, `"bob"`) || !strings.Contains(e.Message, "nonResourceURLs [/metrics]") {
		t.Errorf("bob, without get on /metrics: %d %+v; want 403 forbidden naming bob and the rule that grants it", status, e)
	}
	// The admin may (system:masters may do everything); the viewer, bound
	// to the view role, may not.
	if status, body := scrape(t, base+"/metrics", "Authorization", bearer(testenv.UserAdmin)); status != http.StatusOK || !strings.Contains(body, want) {
		t.Errorf("admin: %d %s; want 200", status, body)
	}
	wantError(t, http.MethodGet, base+"/metrics", "", http.StatusForbidden, server.CodeForbidden, "", "Authorization", bearer(testenv.UserViewer))
	wantError(t, http.MethodGet, base+"/metrics", "", http.StatusUnauthorized, server.CodeUnauthenticated, "")
	wantError(t, http.MethodGet, base+"/metrics", "", http.StatusUnauthorized, server.CodeUnauthenticated, "", "Authorization", "Bearer not-a-token")

	// The decision is cached like the API's: with the binding gone, alice
	// still scrapes within the TTL, and a handler without a cache refuses
	// her once RBAC has seen the deletion.
	if err := admin.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if status, body := scrape(t, base+"/metrics", "Authorization", bearer(testenv.UserAlice)); status != http.StatusOK {
		t.Errorf("alice within the cache TTL: %d %s; want the cached allow", status, body)
	}
	_, uncached := j.serve(server.WithDelegatedAuth(admin.AuthenticationV1().TokenReviews(), admin.AuthorizationV1().SubjectAccessReviews()),
		server.WithAuthCacheTTL(0), server.WithMetrics(h))
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		status, body := scrape(t, uncached+"/metrics", "Authorization", bearer(testenv.UserAlice))
		if status == http.StatusForbidden {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("alice after her binding was deleted, without a cache: %d %s; want 403", status, body)
		}
	}
}

// WithRequestMetrics observes each request of /api/v1 in the histogram of
// its method and route (the route as registered, not the path asked), and
// the change feed in none.
func TestRequestMetrics(t *testing.T) {
	j := newRecorded(t)
	hs := metrics.NewHistograms()
	_, u := j.serve(server.WithRequestMetrics(hs), server.WithMetrics(metrics.NewHandler(metrics.WithHistograms(hs))))
	for _, path := range []string{"/api/v1/clusters", "/api/v1/clusters", "/api/v1/snapshots/no-such-id", "/api/v1/watch?cursor=0"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close() // the feed's first answer is enough
	}
	wantError(t, http.MethodPost, u+"/api/v1/snapshots/x", "", http.StatusMethodNotAllowed, server.CodeMethodNotAllowed, "")
	_, body := scrape(t, u+"/metrics")
	for _, want := range []string{
		`krply_api_request_duration_seconds_count{method="GET",route="/api/v1/clusters"} 2` + "\n",
		`krply_api_request_duration_seconds_count{method="GET",route="/api/v1/snapshots/{id}"} 1` + "\n",
		`krply_api_request_duration_seconds_count{method="POST",route="/api/v1/snapshots"} 0` + "\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
	for _, not := range []string{`route="/api/v1/watch"`, `route="/api/v1/snapshots/x"`, `method="POST",route="/api/v1/snapshots/{id}"`} {
		if strings.Contains(body, not) {
			t.Errorf("metrics have %q:\n%s", not, body)
		}
	}
}
