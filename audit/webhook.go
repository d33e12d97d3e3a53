package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"k8s.io/utils/clock"
)

// DefaultMaxBodyBytes is the default of WithMaxBodyBytes: 64 MiB.
const DefaultMaxBodyBytes = 64 << 20

// DefaultSettleDelay is the default of WithSettleDelay.
const DefaultSettleDelay = 2 * time.Second

// HandlerOption configures a WebhookHandler.
type HandlerOption interface {
	applyHandler(*handlerConfig)
}

type handlerConfig struct {
	maxBody  int64
	settle   time.Duration
	clock    clock.Clock
	onIngest func(context.Context, Summary, error)
	readOpts []ReadOption
}

type handlerOptionFunc func(*handlerConfig)

func (f handlerOptionFunc) applyHandler(c *handlerConfig) { f(c) }

// WithMaxBodyBytes caps the size of one POST body (default
// DefaultMaxBodyBytes); a larger body is refused with 413.
func WithMaxBodyBytes(n int64) HandlerOption {
	return handlerOptionFunc(func(c *handlerConfig) { c.maxBody = n })
}

// WithSettleDelay sets how long the handler waits before it matches again
// the events of a POST that matched nothing (default DefaultSettleDelay;
// 0 turns the second attempt off). The webhook backend can deliver an event
// before the collector has recorded the change it caused; the delay lets
// the journal catch up. It delays the API server's webhook sender, never
// the request that was audited, when the backend runs in batch mode (the
// default).
func WithSettleDelay(d time.Duration) HandlerOption {
	return handlerOptionFunc(func(c *handlerConfig) { c.settle = d })
}

// WithClock sets the clock the settle delay is measured with (default the
// real clock).
func WithClock(clk clock.Clock) HandlerOption {
	return handlerOptionFunc(func(c *handlerConfig) { c.clock = clk })
}

// WithIngestHook sets a function called after every POST with what was
// ingested and the error, if any (for metrics or logs).
func WithIngestHook(fn func(ctx context.Context, sum Summary, err error)) HandlerOption {
	return handlerOptionFunc(func(c *handlerConfig) { c.onIngest = fn })
}

// WithReadOptions sets the options of the EventList reader of each POST,
// e.g. WithMaxEventBytes.
func WithReadOptions(opts ...ReadOption) HandlerOption {
	return handlerOptionFunc(func(c *handlerConfig) { c.readOpts = append(c.readOpts, opts...) })
}

// WebhookHandler is an http.Handler for the API server's audit webhook
// backend (--audit-webhook-config-file): it accepts POSTed EventList
// bodies and ingests them with a Correlator.
//
// It answers 200 with the Summary as JSON once the correlations are
// stored; 400 for a body that is not an EventList; 405 for other methods;
// 413 for a body over the limit; and 500 when the journal failed, so that
// the API server retries the batch (ingesting it again adds nothing that
// is already stored). Malformed items are counted in the Summary, not
// refused.
//
// A WebhookHandler is safe for concurrent use.
type WebhookHandler struct {
	correlator *Correlator
	cfg        handlerConfig
}

// NewWebhookHandler returns a WebhookHandler that ingests with c.
func NewWebhookHandler(c *Correlator, opts ...HandlerOption) (*WebhookHandler, error) {
	if c == nil {
		return nil, fmt.Errorf("audit: %w: nil correlator", ErrInvalidArgument)
	}
	cfg := handlerConfig{maxBody: DefaultMaxBodyBytes, settle: DefaultSettleDelay, clock: clock.RealClock{}}
	for _, o := range opts {
		if o != nil {
			o.applyHandler(&cfg)
		}
	}
	switch {
	case cfg.maxBody <= 0:
		return nil, fmt.Errorf("audit: %w: max body size %d, want > 0", ErrInvalidArgument, cfg.maxBody)
	case cfg.settle < 0:
		return nil, fmt.Errorf("audit: %w: settle delay %s, want >= 0", ErrInvalidArgument, cfg.settle)
	case cfg.clock == nil:
		return nil, fmt.Errorf("audit: %w: nil clock", ErrInvalidArgument)
	}
	if _, err := newReadConfig(cfg.readOpts); err != nil {
		return nil, err
	}
	return &WebhookHandler{correlator: c, cfg: cfg}, nil
}

// ServeHTTP implements http.Handler.
func (h *WebhookHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "audit webhook: POST an audit.k8s.io/v1 EventList", http.StatusMethodNotAllowed)
		return
	}
	ctx := r.Context()
	sum, err := h.ingest(ctx, http.MaxBytesReader(w, r.Body, h.cfg.maxBody), r.RemoteAddr)
	if h.cfg.onIngest != nil {
		h.cfg.onIngest(ctx, sum, err)
	}
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		http.Error(w, err.Error(), http.StatusRequestEntityTooLarge)
		return
	case errors.Is(err, ErrMalformed):
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	case err != nil:
		h.correlator.logger(ctx).Error(err, "audit webhook: ingest failed; the API server will retry")
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(sum) // the client went away: nothing to do
}

// ingest reads the body and ingests it, then retries the unmatched events
// once after the settle delay.
func (h *WebhookHandler) ingest(ctx context.Context, body io.Reader, name string) (Summary, error) {
	list, err := NewEventListReader(body, "webhook POST from "+name, h.cfg.readOpts...)
	if err != nil {
		return Summary{}, err
	}
	var unmatched []Event
	sum, err := h.correlator.ingest(ctx, list, &unmatched)
	if err != nil || len(unmatched) == 0 || h.cfg.settle == 0 {
		return sum, err
	}
	select {
	case <-ctx.Done():
		return sum, ctx.Err()
	case <-h.cfg.clock.After(h.cfg.settle):
	}
	again, err := h.correlator.Ingest(ctx, Events(unmatched...))
	sum.Exact += again.Exact
	sum.Scored += again.Scored
	sum.Unmatched = again.Unmatched
	sum.SkippedNoChange += again.SkippedNoChange
	sum.Recorded += again.Recorded
	sum.Duplicates += again.Duplicates
	return sum, err
}
