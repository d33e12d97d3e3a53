package server_test

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/krply/krply/replay"
	"github.com/krply/krply/server"
	"github.com/krply/krply/server/ui"
)

// fetch GETs u and reads its body.
func fetch(t *testing.T, u string) (*http.Response, string) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestWithUI: the UI is served at the handler's root, the API beside it is
// unchanged, and ui-config.json tells the UI which writes the handler allows.
func TestWithUI(t *testing.T) {
	j := newRecorded(t)
	_, base := j.serve(server.WithUI())
	for _, path := range []string{"/", "/index.html", "/timeline"} {
		resp, body := fetch(t, base+path)
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") || !strings.Contains(body, `src="app.js"`) {
			t.Errorf("GET %s: %s %s: %.120s", path, resp.Status, resp.Header.Get("Content-Type"), body)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); csp != ui.ContentSecurityPolicy {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
	}
	if resp, body := fetch(t, base+"/views/timeline.js"); resp.StatusCode != http.StatusOK || !strings.Contains(body, "export async function render") {
		t.Errorf("GET /views/timeline.js: %s", resp.Status)
	}
	wantError(t, http.MethodGet, base+"/api/v1/nothing", "", http.StatusNotFound, server.CodeNotFound, "")
	if resp, body := fetch(t, base+"/healthz"); resp.StatusCode != http.StatusOK || !strings.Contains(body, `"ok"`) {
		t.Errorf("GET /healthz beside the UI: %s %s", resp.Status, body)
	}

	config := func(base string) map[string]bool {
		t.Helper()
		resp, body := fetch(t, base+"/ui-config.json")
		var c map[string]bool
		if err := json.Unmarshal([]byte(body), &c); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /ui-config.json: %s %q: %v", resp.Status, body, err)
		}
		return c
	}
	if c := config(base); c["writes"] || c["dryRun"] || c["apply"] {
		t.Errorf("a read-only handler tells the UI %v", c)
	}
	target, err := replay.NewClusterForConfig(&rest.Config{Host: "https://127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	_, writable := j.serve(server.WithUI(), server.WithWrites(), server.WithDryRun(target))
	if c := config(writable); !c["writes"] || !c["dryRun"] || c["apply"] {
		t.Errorf("a handler with writes and dry runs tells the UI %v", c)
	}
	_, applying := j.serve(server.WithUI(), server.WithApply(target))
	if c := config(applying); !c["dryRun"] || !c["apply"] {
		t.Errorf("a handler that applies tells the UI %v", c)
	}
	wantError(t, http.MethodPost, base+"/ui-config.json", "", http.StatusMethodNotAllowed, server.CodeMethodNotAllowed, "")

	// Without the option the root is not served.
	_, bare := j.serve()
	if resp, _ := fetch(t, bare+"/"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("GET / without WithUI: %s", resp.Status)
	}
}

// TestWithUIAndTokens: the UI's files need no token (they hold no history);
// everything it shows comes from the API, which does.
func TestWithUIAndTokens(t *testing.T) {
	j := newRecorded(t)
	tokens := filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, base := j.serve(server.WithUI(), server.WithTokenFile(tokens))
	if resp, _ := fetch(t, base+"/"); resp.StatusCode != http.StatusOK {
		t.Errorf("GET / with a token file: %s", resp.Status)
	}
	wantError(t, http.MethodGet, base+"/api/v1/clusters", "", http.StatusUnauthorized, server.CodeUnauthenticated, "")
	if status, e, _ := get(t, http.MethodGet, base+"/api/v1/clusters", "", "Authorization", "Bearer s3cret"); status != http.StatusOK {
		t.Errorf("GET /api/v1/clusters with the token: %d %+v", status, e)
	}
}
