package server

import (
	"net/http"

	"github.com/krply/krply/server/ui"
)

// WithUI serves krply's web UI (package server/ui) at the handler's root:
// every path outside /api/v1/, /healthz and /readyz. The UI's pages and
// scripts are embedded in the binary and load nothing from elsewhere; they
// call this handler's API, with the same authentication and authorization
// as any client, and offer a dry run or an apply only when the handler
// allows them (WithDryRun, WithApply).
func WithUI() Option {
	return optionFunc(func(c *config) { c.ui = true })
}

// uiConfig is what ui-config.json tells the UI about the handler: which of
// the writes it allows, so that the UI offers no button the API refuses.
type uiConfig struct {
	Writes bool `json:"writes"`
	DryRun bool `json:"dryRun"`
	Apply  bool `json:"apply"`
}

// mountUI registers the UI's routes: its configuration and its files.
func (h *handler) mountUI() {
	cfg := uiConfig{Writes: h.cfg.writes, DryRun: h.cfg.dryRun != nil, Apply: h.cfg.apply != nil}
	h.mux.HandleFunc("/ui-config.json", func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeJSON(w, http.StatusMethodNotAllowed, newError(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "", "%s %s: use GET", r.Method, r.URL.Path))
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, cfg)
	})
	h.mux.Handle("/", ui.Handler())
}
