package recorder

// The recorder's health endpoints, served as kube-apiserver serves its
// own: /livez and /healthz (alive), /readyz (ready), each a list of named
// checks; /readyz/<check> asks one, ?verbose lists them all with their
// state, ?exclude=<check> (repeatable) leaves checks out. They answer
// from the recorder's first moment, before the journal is open, so that
// a long schema migration is never taken for a dead process.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/krply/krply"
	"github.com/krply/krply/retention"
	"github.com/krply/krply/server/apiv1"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/watch"
)

// The names of the readiness checks. ServingChecks is the subset that
// serving answers needs; the others say what an operator alerts on.
const (
	// CheckJournal: the journal is open and answers (not while it opens
	// or migrates).
	CheckJournal = "journal"
	// CheckSynced: every stream is recording now (watch.Collector.Synced:
	// its baseline complete and its watch open); it fails while the
	// first lists run, while a stream relists after a gap, and while one
	// is degraded.
	CheckSynced = "synced"
	// CheckStreams: no stream is degraded (denied with a 403, its
	// resource gone, backing off after errors), naming those that are.
	CheckStreams = "streams"
	// CheckRetention: retention within its bounds (no pressure).
	CheckRetention = "retention"
)

// ReadyzServing is the readiness path of a recorder whose pod serves
// answers: /readyz with every check that is not needed to answer queries
// excluded. Answers say how complete they are, so a recorder still taking
// its first lists, with a degraded stream, or under retention pressure
// still serves them. The Helm chart's readiness probe asks it.
const ReadyzServing = "/readyz?exclude=" + CheckSynced + "&exclude=" + CheckStreams + "&exclude=" + CheckRetention

// healthCheckTimeout bounds how long the journal check waits for the
// journal: less than a kubelet probe's default timeout (1s).
const healthCheckTimeout = 800 * time.Millisecond

// health holds what the checks look at, set as the recorder comes up.
type health struct {
	mu sync.Mutex
	// opening says why the journal is not open yet ("" once open).
	opening string
	j       *krply.Journal
	rec     *krply.Collector
	keeper  *retention.Keeper
	// serveOnly serves a journal read-only, without recording.
	serveOnly bool
}

func newHealth(serveOnly bool) *health {
	return &health{opening: "opening the journal", serveOnly: serveOnly}
}

// migrating records a migration's progress (sqlite.WithMigrationProgress).
func (h *health) migrating(p sqlite.MigrationProgress) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !p.Done {
		h.opening = fmt.Sprintf("migrating the journal's schema from version %d to %d, about %d%% done", p.From, p.To, p.Percent())
	}
}

func (h *health) opened(j *krply.Journal) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.j, h.opening = j, ""
}

func (h *health) recording(rec *krply.Collector, keeper *retention.Keeper) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.rec, h.keeper = rec, keeper
}

// check is a named check; fn returns nil when it passes.
type check struct {
	name string
	fn   func(ctx context.Context) error
}

// readyChecks are /readyz's checks, in the order they are listed.
func (h *health) readyChecks() []check {
	return []check{
		{CheckJournal, h.journalReady},
		{CheckSynced, h.syncedReady},
		{CheckStreams, h.streamsReady},
		{CheckRetention, h.retentionReady},
	}
}

// liveChecks are /livez's (and /healthz's): the process answers.
func (h *health) liveChecks() []check {
	return []check{{"ping", func(context.Context) error { return nil }}}
}

func (h *health) journalReady(ctx context.Context) error {
	h.mu.Lock()
	opening, j := h.opening, h.j
	h.mu.Unlock()
	if opening != "" {
		return errors.New(opening)
	}
	ctx, cancel := context.WithTimeout(ctx, healthCheckTimeout)
	defer cancel()
	if _, err := j.Store().Stats(ctx); err != nil {
		return fmt.Errorf("the journal does not answer: %w", err)
	}
	return nil
}

func (h *health) syncedReady(context.Context) error {
	h.mu.Lock()
	rec := h.rec
	h.mu.Unlock()
	switch {
	case h.serveOnly:
		return nil
	case rec == nil:
		return errors.New("not recording yet: the journal is opening")
	}
	return rec.Synced()
}

func (h *health) streamsReady(context.Context) error {
	h.mu.Lock()
	rec := h.rec
	h.mu.Unlock()
	if rec == nil {
		return nil // serving only, or not recording yet: synced says why
	}
	var degraded []string
	for _, st := range rec.Status() {
		if st.DegradedReason != "" && st.State != watch.StateRemoved {
			degraded = append(degraded, fmt.Sprintf("%s is %s (%s)", st.StreamID, st.State, st.DegradedReason))
		}
	}
	if len(degraded) > 0 {
		return fmt.Errorf("%d streams degraded: %s", len(degraded), strings.Join(degraded, "; "))
	}
	return nil
}

func (h *health) retentionReady(context.Context) error {
	h.mu.Lock()
	keeper := h.keeper
	h.mu.Unlock()
	if keeper == nil {
		return nil
	}
	return keeper.Ready()
}

// mount serves /livez, /healthz and /readyz (and their checks) on mux.
// With jsonAnswers a plain /healthz or /readyz answers the query API's
// JSON (apiv1.Health, or an apiv1.Error not_ready), as its Go client
// reads it; otherwise, and with ?verbose or a check's path, text as
// kube-apiserver's.
func (h *health) mount(mux *http.ServeMux, jsonAnswers bool) {
	for _, ep := range []struct {
		name   string
		checks func() []check
	}{{"livez", h.liveChecks}, {"healthz", h.liveChecks}, {"readyz", h.readyChecks}} {
		serve := func(w http.ResponseWriter, r *http.Request) { h.serve(w, r, ep.name, ep.checks(), jsonAnswers) }
		mux.HandleFunc("GET /"+ep.name, serve)
		mux.HandleFunc("GET /"+ep.name+"/{check}", serve)
	}
}

// serve answers one health endpoint.
func (h *health) serve(w http.ResponseWriter, r *http.Request, endpoint string, checks []check, jsonAnswers bool) {
	w.Header().Set("Cache-Control", "no-store")
	if name := r.PathValue("check"); name != "" {
		i := slices.IndexFunc(checks, func(c check) bool { return c.name == name })
		if i < 0 {
			http.Error(w, fmt.Sprintf("no check %q: /%s has %s", name, endpoint, names(checks)), http.StatusNotFound)
			return
		}
		if err := checks[i].fn(r.Context()); err != nil {
			http.Error(w, fmt.Sprintf("[-]%s failed: %v", name, err), http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
		return
	}
	q := r.URL.Query()
	exclude := q["exclude"]
	_, verbose := q["verbose"]
	var lines, failed []string
	for _, c := range checks {
		if slices.Contains(exclude, c.name) {
			lines = append(lines, fmt.Sprintf("[+]%s excluded: ok", c.name))
			continue
		}
		if err := c.fn(r.Context()); err != nil {
			lines = append(lines, fmt.Sprintf("[-]%s failed: %v", c.name, err))
			failed = append(failed, fmt.Sprintf("%s: %v", c.name, err))
			continue
		}
		lines = append(lines, fmt.Sprintf("[+]%s ok", c.name))
	}
	var unknown []string
	for _, x := range exclude {
		if !slices.ContainsFunc(checks, func(c check) bool { return c.name == x }) {
			unknown = append(unknown, x)
		}
	}
	if len(unknown) > 0 {
		lines = append(lines, fmt.Sprintf("warn: some checks cannot be excluded: no matches for %q (the checks are %s)", unknown, names(checks)))
	}
	status := http.StatusOK
	if len(failed) > 0 {
		status = http.StatusServiceUnavailable
	}
	if jsonAnswers && !verbose {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		if status == http.StatusOK {
			_ = json.NewEncoder(w).Encode(apiv1.Health{Status: "ok"})
			return
		}
		_ = json.NewEncoder(w).Encode(apiv1.Error{Status: status, Code: apiv1.CodeNotReady, Message: strings.Join(failed, "; ")})
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	if !verbose && status == http.StatusOK {
		fmt.Fprintln(w, "ok")
		return
	}
	verdict := "passed"
	if status != http.StatusOK {
		verdict = "failed"
	}
	fmt.Fprintf(w, "%s\n%s check %s\n", strings.Join(lines, "\n"), endpoint, verdict)
}

func names(checks []check) string {
	var n []string
	for _, c := range checks {
		n = append(n, c.name)
	}
	return strings.Join(n, ", ")
}

// printChecks prints the readiness checks, one line each, as /readyz?verbose
// lists them: the status lines operators read beside the streams'.
func printChecks(out io.Writer, h *health) {
	for _, c := range h.readyChecks() {
		if err := c.fn(context.Background()); err != nil {
			fmt.Fprintf(out, "  [-]%s failed: %v\n", c.name, err)
			continue
		}
		fmt.Fprintf(out, "  [+]%s ok\n", c.name)
	}
}
