package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/krply/krply/audit"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/server/apiv1"
	"github.com/krply/krply/storage"
)

// Prefix is the path prefix of the versioned routes (apiv1.Prefix).
const Prefix = apiv1.Prefix

// handler serves the query API over one journal.
type handler struct {
	cfg  *config
	j    storage.ReadWriter
	m    *materialize.Materializer
	mux  *http.ServeMux
	auth *authenticator
	// slots holds a token per request being answered (WithMaxInFlight).
	slots chan struct{}
	// feeds holds a token per change feed being served (WithMaxFeeds).
	feeds   chan struct{}
	webhook http.Handler
	// broken is the configuration error every request answers with.
	broken error
	// served are the methods of each route of /api/v1 registered, by path
	// (for the test that holds the OpenAPI document equal to them).
	served map[string][]string

	streamsMu sync.Mutex
	streamsAt time.Time
	streams   []storage.StreamStatus
	// found remembers the answers of paged finds.
	found foundCache
}

// NewHandler returns the query API over journal j (a storage.ReadWriter:
// what krply.Journal.Store() returns, or any store; one opened read-only
// answers every read). Mount it under any prefix with http.StripPrefix.
// It serves /healthz, /readyz, /api/v1/… and, given WithMetrics,
// /metrics; see the package documentation and docs/query-api.md for the
// routes.
//
// A configuration that cannot work (a nil journal, an option out of
// range) does not panic: every request is answered 500 with the reason,
// and /healthz reports it too, so the mistake shows at the first request.
func NewHandler(j storage.ReadWriter, opts ...Option) http.Handler {
	h := &handler{j: j}
	h.mux = http.NewServeMux()
	cfg, err := newConfig(opts)
	if err == nil && j == nil {
		err = fmt.Errorf("server: %w: a nil journal: give the journal's store (krply.Journal.Store())", ErrInvalidArgument)
	}
	if err == nil {
		h.cfg = cfg
		h.m, err = materialize.New(j, materialize.WithClock(cfg.clock), materialize.WithLogger(cfg.log))
	}
	if err == nil && cfg.auditor != nil {
		h.webhook, err = audit.NewWebhookHandler(cfg.auditor, cfg.auditOpts...)
	}
	if err != nil {
		h.broken = err
		return h
	}
	h.auth = newAuthenticator(cfg)
	h.slots = make(chan struct{}, cfg.inFlight)
	h.feeds = make(chan struct{}, cfg.maxFeeds)
	h.routes()
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if h.broken != nil {
		writeJSON(w, http.StatusInternalServerError, newError(http.StatusInternalServerError, CodeInternal, "", "%v", h.broken))
		return
	}
	h.mux.ServeHTTP(w, r)
}

// route is one path's methods.
type route map[string]func(w http.ResponseWriter, r *http.Request, u *user)

func (h *handler) routes() {
	h.mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, Health{Status: "ok"})
	})
	h.mux.HandleFunc("/readyz", h.ready)
	h.handle("clusters", route{http.MethodGet: h.jsonRoute(h.clusters)})
	h.handle("streams", route{http.MethodGet: h.jsonRoute(h.listStreams)})
	h.handle("records", route{http.MethodGet: h.jsonRoute(h.records)})
	h.handle("object", route{http.MethodGet: h.jsonRoute(h.object)})
	h.handle("history", route{http.MethodGet: h.jsonRoute(h.history)})
	h.handle("snapshot", route{http.MethodGet: h.jsonRoute(h.snapshot)})
	h.handle("snapshots", route{http.MethodGet: h.jsonRoute(h.listSnapshots), http.MethodPost: h.jsonRoute(h.saveSnapshot)})
	h.handle("snapshots/{id}", route{http.MethodGet: h.jsonRoute(h.getSnapshot)})
	h.handle("diff", route{http.MethodGet: h.jsonRoute(h.diff)})
	h.handle("why", route{http.MethodGet: h.jsonRoute(h.why)})
	h.handle("find", route{http.MethodGet: h.jsonRoute(h.find)})
	h.handle("plans", route{http.MethodGet: h.jsonRoute(h.listPlans), http.MethodPost: h.jsonRoute(h.createPlan)})
	h.handle("plans/{id}", route{http.MethodGet: h.getPlan})
	h.handle("plans/{id}/dryrun", route{http.MethodPost: h.jsonRoute(h.dryRun)})
	h.handle("plans/{id}/apply", route{http.MethodPost: h.jsonRoute(h.applyPlan)})
	h.handle("audit", route{http.MethodPost: h.auditWebhook})
	h.handle("watch", route{http.MethodGet: h.watch})
	h.handle("openapi.json", route{http.MethodGet: h.jsonRoute(h.openAPI)}) // openapi.go
	if h.cfg.metrics != nil {
		h.mountMetrics() // metrics.go
	}
	if h.cfg.ui {
		h.mountUI() // ui.go
	}
	h.mux.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusNotFound, notFound("no route %s %s: see docs/query-api.md for the routes", r.Method, r.URL.Path))
	})
}

// handle registers a versioned route: method check, timeout (but for the
// change feed), authentication.
func (h *handler) handle(path string, methods route) {
	var allow []string
	for m := range methods {
		allow = append(allow, m)
	}
	if h.served == nil {
		h.served = map[string][]string{}
	}
	h.served[path] = slices.Sorted(maps.Keys(methods))
	feed := path == "watch"
	timers := h.requestTimers(Prefix+path, methods)
	h.mux.HandleFunc(Prefix+path, func(w http.ResponseWriter, r *http.Request) {
		fn, ok := methods[r.Method]
		if timer := timers[r.Method]; timer != nil {
			defer h.observeSince(timer, h.cfg.clock.Now())
		}
		if !ok {
			w.Header().Set("Allow", strings.Join(allow, ", "))
			writeJSON(w, http.StatusMethodNotAllowed, newError(http.StatusMethodNotAllowed, CodeMethodNotAllowed, "", "%s %s: use %s", r.Method, r.URL.Path, strings.Join(allow, " or ")))
			return
		}
		if !feed {
			ctx, cancel := context.WithTimeout(r.Context(), h.cfg.timeout)
			defer cancel()
			r = r.WithContext(ctx)
			t := &turn{slots: h.slots, w: w}
			select {
			case h.slots <- struct{}{}:
				t.held = true
				defer t.release()
			case <-ctx.Done():
				h.fail(w, r, fmt.Errorf("waiting for a turn among %d requests in flight: %w", cap(h.slots), ctx.Err()))
				return
			}
			r = withTurn(r, t)
		}
		u, err := h.auth.authenticate(r)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		fn(w, r, u)
	})
}

// jsonRoute adapts a function answering a value or an error.
func (h *handler) jsonRoute(fn func(r *http.Request, u *user) (int, any, error)) func(http.ResponseWriter, *http.Request, *user) {
	return func(w http.ResponseWriter, r *http.Request, u *user) {
		status, v, err := fn(r, u)
		if err != nil {
			h.fail(w, r, err)
			return
		}
		h.answer(w, r, status, v)
	}
}

// fail answers err as an Error.
func (h *handler) fail(w http.ResponseWriter, r *http.Request, err error) {
	e := asError(err)
	if e.Status >= 500 {
		h.cfg.log.V(1).Info("request failed", "method", r.Method, "path", r.URL.Path, "status", e.Status, "code", e.Code, "error", e.Message)
	}
	if e.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="krply"`)
	}
	h.answer(w, r, e.Status, e)
}

// ready answers /readyz.
func (h *handler) ready(w http.ResponseWriter, r *http.Request) {
	if h.cfg.recorder != nil {
		if err := h.cfg.recorder.Synced(); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, newError(http.StatusServiceUnavailable, CodeNotReady, "", "the recorder is not synced: %v", err))
			return
		}
	} else {
		ctx, cancel := context.WithTimeout(r.Context(), h.cfg.timeout)
		defer cancel()
		if _, err := h.j.Stats(ctx); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, newError(http.StatusServiceUnavailable, CodeNotReady, "", "the journal does not answer: %v", err))
			return
		}
	}
	writeJSON(w, http.StatusOK, Health{Status: "ok"})
}

// allStreams returns every stream of the journal, read at most once a
// second (cluster and resource resolution ask for it on every request).
func (h *handler) allStreams(ctx context.Context) ([]storage.StreamStatus, error) {
	h.streamsMu.Lock()
	defer h.streamsMu.Unlock()
	now := time.Now()
	if h.streams != nil && now.Sub(h.streamsAt) < time.Second {
		return h.streams, nil
	}
	sts, err := h.j.Streams(ctx, "")
	if err != nil {
		return nil, err
	}
	if sts == nil {
		sts = []storage.StreamStatus{}
	}
	h.streams, h.streamsAt = sts, now
	return sts, nil
}

// readBy sets the read deadline of w's connection to r's deadline, so
// that a client that stops sending r's body ends the request (and its
// turn) instead of holding it until it goes away. The func it returns
// lifts the deadline once the body was read to its end: the server then
// watches the connection for the client going away, and a deadline would
// cancel the request early. A body not read to its end keeps it, so that
// the server's reading of the rest (before it answers) ends by then too.
func readBy(w http.ResponseWriter, r *http.Request) (lift func()) {
	deadline, ok := r.Context().Deadline()
	rc := http.NewResponseController(w)
	if !ok || rc.SetReadDeadline(deadline) != nil {
		return func() {}
	}
	b := &watchedBody{ReadCloser: r.Body}
	r.Body = b
	return func() {
		if b.ended {
			_ = rc.SetReadDeadline(time.Time{})
		}
	}
}

// watchedBody is a request body that tells whether it was read to its
// end.
type watchedBody struct {
	io.ReadCloser
	ended bool
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err == io.EOF {
		b.ended = true
	}
	return n, err
}

// errEmptyBody answers a request without the body it needs.
var errEmptyBody = newError(http.StatusBadRequest, CodeInvalidBody, "", "the body is empty: send the JSON the route takes (docs/query-api.md)")

// decodeBody reads a JSON body of at most the configured size into v, by
// the request's deadline (readBy), and what follows the JSON to the
// body's end.
func (h *handler) decodeBody(r *http.Request, v any) error {
	if t := turnOf(r); t != nil {
		defer readBy(t.w, r)()
	}
	body := http.MaxBytesReader(nil, r.Body, h.cfg.maxBody)
	dec := json.NewDecoder(body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return newError(http.StatusRequestEntityTooLarge, CodeBodyTooLarge, "", "the body exceeds %d bytes", h.cfg.maxBody)
		}
		if errors.Is(err, io.EOF) {
			return errEmptyBody
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return newError(http.StatusRequestTimeout, CodeTimeout, "", "the body did not come within the server's timeout of %v: send it whole", h.cfg.timeout)
		}
		return newError(http.StatusBadRequest, CodeInvalidBody, "", "the body is not the expected JSON: %v", err)
	}
	_, _ = io.Copy(io.Discard, body) // to its end, or the error that keeps the deadline
	return nil
}
