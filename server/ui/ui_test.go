package ui

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, h http.Handler, method, path string) *http.Response {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, nil))
	return rec.Result()
}

func TestHandlerServesTheAssets(t *testing.T) {
	h := Handler()
	for path, want := range map[string]string{
		"/":               "text/html",
		"/app.js":         "text/javascript",
		"/views/plan.js":  "text/javascript",
		"/views/why.js":   "text/javascript",
		"/style.css":      "text/css",
		"/icon.svg":       "image/svg+xml",
		"/no/such/view":   "text/html", // a deep link gets the page
		"/index.html.bak": "text/html",
	} {
		res := get(t, h, http.MethodGet, path)
		body, _ := io.ReadAll(res.Body)
		if res.StatusCode != http.StatusOK {
			t.Errorf("GET %s: %s", path, res.Status)
			continue
		}
		if ct := res.Header.Get("Content-Type"); !strings.HasPrefix(ct, want) {
			t.Errorf("GET %s: Content-Type %q, want %s", path, ct, want)
		}
		if csp := res.Header.Get("Content-Security-Policy"); csp != ContentSecurityPolicy {
			t.Errorf("GET %s: Content-Security-Policy %q", path, csp)
		}
		if want == "text/html" && !strings.Contains(string(body), `<script type="module" src="app.js">`) {
			t.Errorf("GET %s: not the UI's page: %.200s", path, body)
		}
	}
	if res := get(t, h, http.MethodPost, "/"); res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Allow") != "GET, HEAD" {
		t.Errorf("POST /: %s, Allow %q", res.Status, res.Header.Get("Allow"))
	}
}

// TestPolicyAllowsOnlyTheServer pins what the Content-Security-Policy
// allows: nothing but the serving origin, for every kind of load.
func TestPolicyAllowsOnlyTheServer(t *testing.T) {
	for _, d := range strings.Split(ContentSecurityPolicy, ";") {
		f := strings.Fields(d)
		if len(f) < 2 {
			t.Fatalf("directive %q has no source", d)
		}
		for _, src := range f[1:] {
			switch src {
			case "'self'", "'none'", "data:":
				if src == "data:" && f[0] != "img-src" {
					t.Errorf("%s allows data:", f[0])
				}
			default:
				t.Errorf("%s allows %s", f[0], src)
			}
		}
	}
}

// TestAssetsLoadNothingFromElsewhere reads every asset for addresses of
// other hosts, imports or styles from elsewhere, and inline scripts or
// styles the policy would block.
func TestAssetsLoadNothingFromElsewhere(t *testing.T) {
	remote := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	inline := regexp.MustCompile(`(?i)<script>|<style|\sstyle="|\son[a-z]+="|javascript:`)
	var files int
	err := fs.WalkDir(FS(), ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := fs.ReadFile(FS(), path)
		if err != nil {
			return err
		}
		s := string(b)
		for _, m := range remote.FindAllString(s, -1) {
			if m == "http://www.w3.org" || strings.HasSuffix(m, "//www.w3.org") {
				continue // the SVG namespace is a name, not a load
			}
			t.Errorf("%s names another host: %s", path, m)
		}
		if strings.HasSuffix(path, ".html") || strings.HasSuffix(path, ".svg") {
			if m := inline.FindString(s); m != "" {
				t.Errorf("%s has inline code or style the policy blocks: %q", path, m)
			}
		}
		if strings.HasSuffix(path, ".js") {
			for _, imp := range regexp.MustCompile(`(?m)^import .* from '([^']+)'`).FindAllStringSubmatch(s, -1) {
				if !strings.HasPrefix(imp[1], "./") && !strings.HasPrefix(imp[1], "../") {
					t.Errorf("%s imports %s, not a file of its own", path, imp[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 10 {
		t.Errorf("%d assets embedded, want the page, its scripts, views and style", files)
	}
}

func TestFSRefusesInvalidPaths(t *testing.T) {
	for _, p := range []string{"../ui.go", "/index.html", "assets/../ui.go"} {
		if _, err := FS().Open(p); err == nil {
			t.Errorf("Open(%q) succeeded", p)
		}
	}
}
