package recorder

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/krply/krply/server/apiv1"
	"github.com/krply/krply/storage/sqlite"
)

// While the journal migrates, /livez answers ok, /readyz fails its
// journal check with the percent (text with ?verbose and on
// --metrics-addr, the query API's JSON error on --listen), and the query
// API answers 503 not_ready saying why.
func TestHealthWhileMigrating(t *testing.T) {
	h := newHealth(false)
	h.migrating(sqlite.MigrationProgress{From: 5, To: 6, Written: 42, Expected: 100})
	e := &endpoints{health: h}
	listen, metrics := http.NewServeMux(), http.NewServeMux()
	h.mount(listen, true)
	listen.Handle("/", e.pending(&e.api, "the query API"))
	h.mount(metrics, false)
	const migrating = "migrating the journal's schema from version 5 to 6, about 42% done"
	for _, tc := range []struct {
		mux        *http.ServeMux
		path       string
		code       int
		body, also string
	}{
		{metrics, "/livez", 200, "ok\n", ""},
		{listen, "/livez", 200, `{"status":"ok"}`, ""},
		{metrics, "/healthz?verbose", 200, "[+]ping ok\nhealthz check passed\n", ""},
		{metrics, "/readyz", 503, "[-]journal failed: " + migrating, "readyz check failed"},
		{metrics, "/readyz?verbose", 503, "[-]journal failed: " + migrating, "[+]retention ok"},
		{metrics, "/readyz/journal", 503, "[-]journal failed: " + migrating, ""},
		{metrics, "/readyz/retention", 200, "ok\n", ""},
		{metrics, "/readyz?exclude=journal&exclude=synced", 200, "ok\n", ""},
		{metrics, "/readyz?exclude=journal&exclude=synced&exclude=nonesuch&verbose", 200, "[+]journal excluded: ok", `no matches for ["nonesuch"]`},
		{listen, "/readyz", 503, `"code":"not_ready"`, migrating},
		{listen, "/readyz?verbose", 503, "[-]journal failed: " + migrating, ""},
		{listen, "/api/v1/clusters", 503, `"code":"not_ready"`, "the query API is not served yet: " + migrating},
	} {
		w := httptest.NewRecorder()
		tc.mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, tc.path, nil))
		body, _ := io.ReadAll(w.Result().Body)
		if w.Code != tc.code || !strings.Contains(string(body), tc.body) || !strings.Contains(string(body), tc.also) {
			t.Errorf("GET %s: %d %q; want %d with %q and %q", tc.path, w.Code, body, tc.code, tc.body, tc.also)
		}
		if strings.HasPrefix(tc.body, "{") || strings.HasPrefix(tc.body, `"code"`) {
			var v map[string]any
			if err := json.Unmarshal(body, &v); err != nil {
				t.Errorf("GET %s: %q is not JSON: %v", tc.path, body, err)
			}
		}
	}
	w := httptest.NewRecorder()
	listen.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/readyz", nil))
	var apiErr apiv1.Error
	if err := json.NewDecoder(w.Body).Decode(&apiErr); err != nil || apiErr.Status != 503 || apiErr.Code != apiv1.CodeNotReady {
		t.Errorf("--listen /readyz: %+v, %v; want the query API's 503 not_ready", apiErr, err)
	}
	if got := w.Header().Get("Cache-Control"); got != "no-store" {
		t.Errorf("Cache-Control %q", got)
	}
}
