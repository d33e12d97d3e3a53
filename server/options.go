package server

import (
	"fmt"
	"net/http"
	"runtime"
	"time"

	"github.com/go-logr/logr"
	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/utils/clock"

	"github.com/krply/krply/audit"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/replay"
)

// Defaults of the limits.
const (
	// DefaultPageSize is the page size of a list without limit.
	DefaultPageSize = 100
	// DefaultMaxPageSize is the default of WithMaxPageSize.
	DefaultMaxPageSize = 1000
	// DefaultMaxRange is the default of WithMaxRange: 31 days.
	DefaultMaxRange = 31 * 24 * time.Hour
	// DefaultMaxBodyBytes is the default of WithMaxBodyBytes: 1 MiB.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultRequestTimeout is the default of WithRequestTimeout.
	DefaultRequestTimeout = 30 * time.Second
	// DefaultPollInterval is the default of WithPollInterval.
	DefaultPollInterval = 250 * time.Millisecond
	// DefaultAuthCacheTTL is the default of WithAuthCacheTTL.
	DefaultAuthCacheTTL = 10 * time.Second
	// DefaultMaxInFlight is the default of WithMaxInFlight: requests
	// answered at once per CPU the process may use (GOMAXPROCS).
	DefaultMaxInFlight = 2
	// DefaultKeepalive is how long the change feed stays silent before it
	// sends a keepalive comment.
	DefaultKeepalive = 15 * time.Second
	// DefaultMaxFeeds is the default of WithMaxFeeds: change feeds served
	// at once.
	DefaultMaxFeeds = 100
)

// Option configures NewHandler.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// Recorder is what readiness asks: a watch.Collector is one. Synced returns
// nil once every stream has a complete baseline and an open watch.
type Recorder interface {
	Synced() error
}

type config struct {
	log               logr.Logger
	clock             clock.PassiveClock
	recorder          Recorder
	writes            bool
	dryRun            *replay.Cluster
	apply             *replay.Cluster
	auditor           *audit.Correlator
	auditSet          bool
	auditOpts         []audit.HandlerOption
	tokenFile         string
	tokenReviews      authenticationv1.TokenReviewInterface
	accessReviews     authorizationv1.SubjectAccessReviewInterface
	authTTL           time.Duration
	maxPage           int
	maxRange          time.Duration
	maxBody           int64
	timeout           time.Duration
	poll              time.Duration
	inFlight          int
	keepalive         time.Duration
	maxFeeds          int
	notifier          AppendNotifier
	plannerOptions    []replay.Option
	ui                bool         // WithUI (ui.go)
	metrics           http.Handler // WithMetrics (metrics.go)
	metricsSet        bool
	requestMetrics    RequestMetricsProvider // WithRequestMetrics (metrics.go)
	requestMetricsSet bool
	conditions        materialize.Conditions // WithConditions (find.go)
}

func newConfig(opts []Option) (*config, error) {
	c := &config{
		log:       logr.Discard(),
		clock:     clock.RealClock{},
		authTTL:   DefaultAuthCacheTTL,
		maxPage:   DefaultMaxPageSize,
		maxRange:  DefaultMaxRange,
		maxBody:   DefaultMaxBodyBytes,
		timeout:   DefaultRequestTimeout,
		poll:      DefaultPollInterval,
		inFlight:  DefaultMaxInFlight * runtime.GOMAXPROCS(0),
		keepalive: DefaultKeepalive,
		maxFeeds:  DefaultMaxFeeds,
	}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("server: %w: a nil Option", ErrInvalidArgument)
		}
		o.apply(c)
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("server: %w: "+format, append([]any{ErrInvalidArgument}, args...)...)
	}
	switch {
	case c.clock == nil:
		return nil, bad("WithClock(nil): give a clock, or leave the option out for the real one")
	case c.authTTL < 0:
		return nil, bad("WithAuthCacheTTL(%s): want 0 (no cache) or more", c.authTTL)
	case c.maxPage < 1:
		return nil, bad("WithMaxPageSize(%d): want 1 or more", c.maxPage)
	case c.maxRange <= 0:
		return nil, bad("WithMaxRange(%s): want a positive duration", c.maxRange)
	case c.maxBody < 1:
		return nil, bad("WithMaxBodyBytes(%d): want 1 or more", c.maxBody)
	case c.timeout <= 0:
		return nil, bad("WithRequestTimeout(%s): want a positive duration", c.timeout)
	case c.inFlight < 1:
		return nil, bad("WithMaxInFlight(%d): want 1 or more", c.inFlight)
	case c.poll <= 0:
		return nil, bad("WithPollInterval(%s): want a positive duration", c.poll)
	case c.maxFeeds < 1:
		return nil, bad("WithMaxFeeds(%d): want 1 or more", c.maxFeeds)
	case c.auditSet && c.auditor == nil:
		return nil, bad("WithAuditWebhook(nil): give the audit.Correlator that records the correlations")
	case c.requestMetricsSet && c.requestMetrics == nil:
		return nil, bad("WithRequestMetrics(nil): give the provider (e.g. metrics.NewHistograms), or leave the option out")
	case c.metricsSet && c.metrics == nil:
		return nil, bad("WithMetrics(nil): give the http.Handler that serves the metrics (e.g. metrics.NewHandler), or leave the option out")
	case (c.tokenReviews == nil) != (c.accessReviews == nil):
		return nil, bad("WithDelegatedAuth needs both the TokenReview and the SubjectAccessReview client")
	}
	if c.apply != nil && c.dryRun == nil {
		c.dryRun = c.apply
	}
	if n, ok := c.recorder.(AppendNotifier); ok && c.notifier == nil {
		c.notifier = n
	}
	return c, nil
}

// WithLogger sets the logger: one line per request that failed on the
// server's side (5xx) and per authorization denial, at verbosity 1. The
// default discards everything.
func WithLogger(log logr.Logger) Option {
	return optionFunc(func(c *config) { c.log = log })
}

// WithClock sets the clock that "now" and relative times are read with
// (default the real clock).
func WithClock(clk clock.PassiveClock) Option {
	return optionFunc(func(c *config) { c.clock = clk })
}

// WithRecorder attaches the recorder that writes the journal: /readyz
// answers ready only while r.Synced() returns nil, and when r also has a
// Status() []watch.StreamStatus method (a watch.Collector does), the
// streams route shows each stream's live state.
func WithRecorder(r Recorder) Option {
	return optionFunc(func(c *config) { c.recorder = r })
}

// WithWrites lets clients save snapshots and replay plans in the journal
// (POST /api/v1/snapshots, POST /api/v1/plans). Without it the handler is
// read-only: those routes answer 403 read_only.
func WithWrites() Option {
	return optionFunc(func(c *config) { c.writes = true })
}

// WithDryRun lets clients dry-run saved plans against target, the cluster
// a replay would write to (POST /api/v1/plans/{id}/dryrun). A dry run
// writes nothing to the cluster but saves its report in the journal, which
// must be writable.
func WithDryRun(target *replay.Cluster) Option {
	return optionFunc(func(c *config) { c.dryRun = target })
}

// WithApply lets clients apply saved plans to target (POST
// /api/v1/plans/{id}/apply), with the plan's ID and hash confirmed in the
// request, after a clean dry run (which WithApply enables too, against
// the same cluster). Without it no request of this handler writes to a
// cluster.
func WithApply(target *replay.Cluster) Option {
	return optionFunc(func(c *config) { c.apply = target })
}

// WithPlannerOptions sets options of the replay Planner the plan routes use
// (e.g. replay.WithMaxDryRunAge); the request's policy is added to them.
func WithPlannerOptions(opts ...replay.Option) Option {
	return optionFunc(func(c *config) { c.plannerOptions = append(c.plannerOptions, opts...) })
}

// WithAuditWebhook serves the kube-apiserver's audit webhook at POST
// /api/v1/audit: each EventList is correlated with the journal by corr,
// which writes audit_correlation records (the journal must be writable).
func WithAuditWebhook(corr *audit.Correlator, opts ...audit.HandlerOption) Option {
	return optionFunc(func(c *config) { c.auditor, c.auditOpts, c.auditSet = corr, opts, true })
}

// WithTokenFile authenticates requests by a bearer token listed in the file
// at path: one token per line, blank lines and lines starting with # left
// out. The file is read on the first request and again whenever its
// modification time or size changes, so tokens can be rotated without a
// restart. When it cannot be read, requests are refused (500) with the
// reason, never let through. Token-file clients may read everything.
func WithTokenFile(path string) Option {
	return optionFunc(func(c *config) { c.tokenFile = path })
}

// WithDelegatedAuth authenticates bearer tokens with the cluster's
// TokenReview API and authorizes each request with a SubjectAccessReview on
// the virtual resource "history" of API group "krply.io" (see the package
// documentation), as an aggregated API server does. Pass the clients of a
// clientset (cs.AuthenticationV1().TokenReviews(),
// cs.AuthorizationV1().SubjectAccessReviews()) whose identity may create
// both. Decisions are cached (WithAuthCacheTTL).
func WithDelegatedAuth(tokenReviews authenticationv1.TokenReviewInterface, accessReviews authorizationv1.SubjectAccessReviewInterface) Option {
	return optionFunc(func(c *config) { c.tokenReviews, c.accessReviews = tokenReviews, accessReviews })
}

// WithAuthCacheTTL sets how long a TokenReview or SubjectAccessReview
// decision, allowed or denied, is reused (default DefaultAuthCacheTTL; 0
// asks the cluster on every request).
func WithAuthCacheTTL(d time.Duration) Option {
	return optionFunc(func(c *config) { c.authTTL = d })
}

// WithMaxPageSize caps the limit of a list (default DefaultMaxPageSize) and
// the versions of one history answer.
func WithMaxPageSize(n int) Option {
	return optionFunc(func(c *config) { c.maxPage = n })
}

// WithMaxRange caps the time range of a records query (since..until) and
// of a diff (from..to) (default DefaultMaxRange).
func WithMaxRange(d time.Duration) Option {
	return optionFunc(func(c *config) { c.maxRange = d })
}

// WithMaxBodyBytes caps a request body (default DefaultMaxBodyBytes). The
// audit webhook's limit is the audit package's (audit.WithMaxBodyBytes).
func WithMaxBodyBytes(n int64) Option {
	return optionFunc(func(c *config) { c.maxBody = n })
}

// WithRequestTimeout bounds every request but the change feed (default
// DefaultRequestTimeout), its body included (408 when it has not come
// whole by then). Sending an answer, and each write of a change feed,
// gets as long again per 64 KiB chunk: a client that reads nothing for d
// is cut off. These deadlines replace an http.Server's WriteTimeout for
// the handler's requests (which would otherwise end every change feed at
// it): to bound sending tighter, give a smaller d.
func WithRequestTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.timeout = d })
}

// WithPollInterval sets how often the change feed looks for new records
// (default DefaultPollInterval).
func WithPollInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.poll = d })
}

// WithMaxFeeds caps the change feeds (GET /api/v1/watch) served at once
// (default DefaultMaxFeeds): each holds a connection and reads the
// journal at every poll. One more is answered 429 too_many_requests,
// naming the limit, with Retry-After.
func WithMaxFeeds(n int) Option {
	return optionFunc(func(c *config) { c.maxFeeds = n })
}

// AppendNotifier tells the change feed that records were appended to the
// journal, so that it reads them at once instead of at its next poll.
// Appended returns a channel that is closed at the next append after the
// call (AppendSignal is one).
type AppendNotifier interface {
	Appended() <-chan struct{}
}

// WithAppendNotifier wakes the change feeds whenever n says records were
// appended; they still poll the journal (WithPollInterval), which covers
// writers n does not hear of. A recorder given to WithRecorder that is an
// AppendNotifier (a watch.Collector is one) is used without this option.
func WithAppendNotifier(n AppendNotifier) Option {
	return optionFunc(func(c *config) { c.notifier = n })
}

// WithMaxInFlight caps the requests answered at once (default
// DefaultMaxInFlight per GOMAXPROCS; the change feed and health checks
// are not counted). More wait for their turn within their timeout, so a
// burst of queries cannot starve the recorder writing the journal in the
// same process. A turn covers computing and encoding an answer, not
// sending it: a client that stops reading holds none.
func WithMaxInFlight(n int) Option {
	return optionFunc(func(c *config) { c.inFlight = n })
}
