package server

import (
	"context"
	"net/http"
	"time"

	"github.com/krply/krply/watch"
)

// metricsPath is where WithMetrics serves its handler, and the
// non-resource URL that WithDelegatedAuth authorizes it by.
const metricsPath = "/metrics"

// WithMetrics serves h (a Prometheus handler, e.g. package metrics') at
// GET /metrics, beside /healthz and /readyz, behind the handler's own
// authentication, as kube-apiserver serves its /metrics: open without an
// authentication option; with WithTokenFile, to any token of the file;
// with WithDelegatedAuth, to a user whom a SubjectAccessReview allows
// verb get on the non-resource URL /metrics (a ClusterRole rule
// nonResourceURLs: ["/metrics"], verbs: ["get"], which Prometheus's
// ServiceAccount usually has), decisions cached like the others
// (WithAuthCacheTTL). A refused scrape is answered 401 or 403 with an
// Error. The metrics name the recorded namespaces, so they are guarded as
// the history is. A nil h is a configuration error.
func WithMetrics(h http.Handler) Option {
	return optionFunc(func(c *config) { c.metrics, c.metricsSet = h, true })
}

// mountMetrics registers /metrics: method check, timeout, authentication,
// authorization on the non-resource URL. Like the health checks, a scrape
// takes no turn among the requests in flight.
func (h *handler) mountMetrics() {
	h.mux.HandleFunc(metricsPath, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeJSON(w, http.StatusMethodNotAllowed, newError(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "", "%s %s: use GET", r.Method, r.URL.Path))
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), h.cfg.timeout)
		defer cancel()
		r = r.WithContext(ctx)
		u, err := h.auth.authenticate(r)
		if err == nil {
			err = h.auth.authorizePath(ctx, u, "get", metricsPath)
		}
		if err != nil {
			h.fail(w, r, err)
			return
		}
		h.cfg.metrics.ServeHTTP(w, r)
	})
}

// RequestMetricsProvider makes the histograms of the query API's request
// durations, one per method and route (the route as registered, e.g.
// "/api/v1/snapshots/{id}", so that its values are bounded), in the
// manner of client-go's workqueue.MetricsProvider. metrics.Histograms
// implements it; a Prometheus HistogramVec's WithLabelValues does the
// same work.
type RequestMetricsProvider interface {
	// NewRequestSeconds is called once per method and route, when the
	// handler is built.
	NewRequestSeconds(method, route string) watch.Histogram
}

// WithRequestMetrics observes the seconds each request of /api/v1 takes,
// from its arrival (its wait for a turn among the requests in flight included) until its answer is written, in p's histograms by
// method and route; the change feed (/api/v1/watch), which lasts as long
// as its client, is not observed. A nil p is a configuration error.
func WithRequestMetrics(p RequestMetricsProvider) Option {
	return optionFunc(func(c *config) { c.requestMetrics, c.requestMetricsSet = p, true })
}

// requestTimers are the histograms of a route's methods, by method; nil
// without WithRequestMetrics and for the change feed.
func (h *handler) requestTimers(route string, methods route) map[string]watch.Histogram {
	if h.cfg.requestMetrics == nil || route == Prefix+"watch" {
		return nil
	}
	timers := map[string]watch.Histogram{}
	for m := range methods {
		timers[m] = h.cfg.requestMetrics.NewRequestSeconds(m, route)
	}
	return timers
}

// observeSince observes the seconds since start in timer, when there is one.
func (h *handler) observeSince(timer watch.Histogram, start time.Time) {
	if timer != nil {
		timer.Observe(h.cfg.clock.Since(start).Seconds())
	}
}
