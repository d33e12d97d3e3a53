package ui

import (
	"embed"
	"io/fs"
	"net/http"
	"path"
	"strings"
)

//go:embed assets
var assets embed.FS

// FS returns the UI's files: index.html at its root, with the scripts and
// styles it loads beside it.
func FS() fs.FS { return assetsFS{} }

// assetsFS is the embedded folder "assets" as the root of a file system.
type assetsFS struct{}

func (assetsFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	return assets.Open(path.Join("assets", name))
}

// Handler serves the UI's files. A path that names no file (a view's deep
// link) gets index.html. Every response forbids loads from anywhere but the
// serving origin (Content-Security-Policy), so the UI cannot depend on the
// internet by accident.
func Handler() http.Handler {
	files := http.FileServerFS(FS())
	root := FS()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "no-referrer")
		h.Set("Cache-Control", "no-cache")
		name := strings.TrimPrefix(r.URL.Path, "/")
		if name != "" {
			if _, err := fs.Stat(root, name); err != nil {
				r2 := r.Clone(r.Context())
				r2.URL.Path = "/"
				files.ServeHTTP(w, r2)
				return
			}
		}
		files.ServeHTTP(w, r)
	})
}

// ContentSecurityPolicy is the policy the UI is served with: scripts,
// styles, images and API calls from its own origin only; no frames, no
// plugins, no forms posted elsewhere.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; frame-ancestors 'self'; base-uri 'none'; form-action 'self'"
