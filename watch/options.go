package watch

import (
	"fmt"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
)

// Option configures a Collector. Options are applied in order by
// NewCollector; a later option overrides an earlier one of the same kind.
type Option interface {
	apply(*config)
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WatchListMode says whether a baseline is taken with a streaming WatchList
// (a watch with sendInitialEvents) instead of a paginated list.
type WatchListMode string

// The WatchList modes.
const (
	// WatchListAuto uses WatchList when the client supports it and falls
	// back to a paginated list, for the rest of the stream's life, when the
	// server rejects it or ends it before the initial-events-end bookmark.
	WatchListAuto WatchListMode = "auto"
	// WatchListOn always uses WatchList.
	WatchListOn WatchListMode = "on"
	// WatchListOff always uses a paginated list.
	WatchListOff WatchListMode = "off"
)

// Defaults of the options.
const (
	DefaultPageSize            = 500
	DefaultBackoffMin          = 500 * time.Millisecond
	DefaultBackoffMax          = 30 * time.Second
	DefaultBatchMaxEvents      = 512
	DefaultBatchMaxBytes       = 4 << 20
	DefaultBatchMaxLatency     = 20 * time.Millisecond
	DefaultWatchIdleTimeout    = 5 * time.Minute
	DefaultRediscoveryInterval = time.Minute
	DefaultQueueSize           = 1024
	DefaultProgressInterval    = 10 * time.Second
)

type config struct {
	resources           []string
	namespaces          []string
	labelSelector       string
	fieldSelector       string
	clusterID           string
	bookmarks           bool
	watchList           WatchListMode
	pageSize            int64
	backoffMin          time.Duration
	backoffMax          time.Duration
	batchMaxEvents      int
	batchMaxBytes       int
	batchMaxLatency     time.Duration
	watchIdleTimeout    time.Duration
	progressInterval    time.Duration
	rediscoveryInterval time.Duration
	queueSize           int
	logger              *logr.Logger
	clock               clock.WithTicker
	metrics             MetricsProvider
	allowSecrets        bool
	keepSecretValues    bool
	allResources        bool
	exclude, include    []string
	rule                RecordRule
	ruleSet             bool
}

func defaultConfig() config {
	return config{
		bookmarks:           true,
		watchList:           WatchListAuto,
		pageSize:            DefaultPageSize,
		backoffMin:          DefaultBackoffMin,
		backoffMax:          DefaultBackoffMax,
		batchMaxEvents:      DefaultBatchMaxEvents,
		batchMaxBytes:       DefaultBatchMaxBytes,
		batchMaxLatency:     DefaultBatchMaxLatency,
		watchIdleTimeout:    DefaultWatchIdleTimeout,
		progressInterval:    DefaultProgressInterval,
		rediscoveryInterval: DefaultRediscoveryInterval,
		queueSize:           DefaultQueueSize,
		clock:               clock.RealClock{},
		metrics:             noopMetrics{},
	}
}

// newConfig returns the configuration opts make, with defaults, or why
// it is refused: invalid options, or Secrets asked for by name without
// AllowSecrets.
func newConfig(opts []Option) (config, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if len(cfg.resources) == 0 && !cfg.allResources {
		cfg.resources = DefaultResources()
	}
	if err := cfg.validate(); err != nil {
		return config{}, err
	}
	if !cfg.allowSecrets {
		for _, spec := range cfg.resources {
			if gr, ok := aliases[strings.ToLower(spec)]; ok && gr.Group == "" && gr.Resource == "secrets" {
				return config{}, fmt.Errorf("%w: %q", ErrSecretsNotAllowed, spec)
			}
			switch strings.ToLower(spec) {
			case "secrets", "secret", "v1/secrets":
				return config{}, fmt.Errorf("%w: %q", ErrSecretsNotAllowed, spec)
			}
		}
	}
	return cfg, nil
}

func (c *config) validate() error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("watch: %w: %s", ErrInvalidArgument, fmt.Sprintf(format, args...))
	}
	if len(c.resources) == 0 && !c.allResources {
		return bad("no resources")
	}
	if err := c.validateRule(); err != nil {
		return err
	}
	if c.allResources && len(c.resources) > 0 {
		return bad("WithResources and WithAllResources together: record every resource, or the ones named")
	}
	if (len(c.exclude) > 0 || len(c.include) > 0) && !c.allResources {
		return bad("WithExclude and WithInclude apply to WithAllResources only")
	}
	for _, spec := range c.include {
		if r := (Resource{Version: "v1", Resource: "secrets"}); matchesSpec(spec, r) && !c.allowSecrets {
			return fmt.Errorf("watch: %w: WithInclude(%q): %w", ErrInvalidArgument, spec, ErrSecretsNotAllowed)
		}
	}
	for _, spec := range append(append([]string(nil), c.exclude...), c.include...) {
		if spec == "" || strings.Contains(spec, "/") {
			return bad("exclusion %q: want a resource or resource.group (\"events\", \"leases.coordination.k8s.io\")", spec)
		}
	}
	for _, r := range c.resources {
		if r == "" {
			return bad("empty resource name")
		}
	}
	for _, ns := range c.namespaces {
		if ns == "" {
			return bad("empty namespace (leave WithNamespaces out to watch all namespaces)")
		}
	}
	if _, err := labels.Parse(c.labelSelector); err != nil {
		return bad("label selector %q: %v", c.labelSelector, err)
	}
	if _, err := fields.ParseSelector(c.fieldSelector); err != nil {
		return bad("field selector %q: %v", c.fieldSelector, err)
	}
	switch c.watchList {
	case WatchListAuto, WatchListOn, WatchListOff:
	default:
		return bad("WatchList mode %q (want auto, on or off)", c.watchList)
	}
	if c.pageSize <= 0 {
		return bad("page size %d must be positive", c.pageSize)
	}
	if c.backoffMin <= 0 || c.backoffMax < c.backoffMin {
		return bad("backoff min %s, max %s: want 0 < min <= max", c.backoffMin, c.backoffMax)
	}
	if c.batchMaxEvents <= 0 || c.batchMaxBytes <= 0 || c.batchMaxLatency < 0 {
		return bad("batching %d events, %d bytes, %s: want positive limits", c.batchMaxEvents, c.batchMaxBytes, c.batchMaxLatency)
	}
	if c.watchIdleTimeout < 0 || c.rediscoveryInterval < 0 {
		return bad("negative duration")
	}
	if c.progressInterval != 0 && c.progressInterval < time.Second {
		return bad("progress interval %s: want 0 (off) or at least 1s (watch timeouts are whole seconds)", c.progressInterval)
	}
	if c.queueSize <= 0 {
		return bad("queue size %d must be positive", c.queueSize)
	}
	if c.clock == nil {
		return bad("nil clock")
	}
	if c.metrics == nil {
		return bad("nil metrics provider")
	}
	if c.keepSecretValues && !c.allowSecrets {
		return bad("KeepSecretValues without AllowSecrets")
	}
	return nil
}

// WithResources sets the resources to record: built-in aliases ("deploy",
// "cm", "svc", …), discovery plurals, singulars, kinds and short names,
// "resource.group" ("deployments.apps", "widgets.example.com"),
// "resource.version.group" and "group/version/resource" ("apps/v1/deployments",
// "v1/configmaps"). Without it the Collector records DefaultResources().
//
// A name that is not served is an error of Start listing close matches,
// except a qualified name ("resource.group" or "group/version/resource"),
// which waits for rediscovery (a CRD that is installed later).
func WithResources(specs ...string) Option {
	specs = append([]string(nil), specs...)
	return optionFunc(func(c *config) { c.resources = specs })
}

// WithNamespaces restricts namespaced resources to these namespaces, one
// stream per namespace. Cluster-scoped resources are not affected. Without
// it namespaced resources are recorded across all namespaces.
func WithNamespaces(namespaces ...string) Option {
	namespaces = append([]string(nil), namespaces...)
	return optionFunc(func(c *config) { c.namespaces = namespaces })
}

// WithLabelSelector records only objects matching a label selector.
func WithLabelSelector(selector string) Option {
	return optionFunc(func(c *config) { c.labelSelector = selector })
}

// WithFieldSelector records only objects matching a field selector.
func WithFieldSelector(selector string) Option {
	return optionFunc(func(c *config) { c.fieldSelector = selector })
}

// WithClusterID names the cluster in every record. Without it Start uses
// the UID of the kube-system namespace, and when that namespace cannot be
// read (403 or 404) a hash of the API server URL ("url-" followed by 16 hex
// digits). Transient errors reading kube-system are retried, so the ID does
// not change with the server's health.
func WithClusterID(id string) Option {
	return optionFunc(func(c *config) { c.clusterID = id })
}

// WithBookmarks turns watch bookmarks on (the default) or off. Bookmarks
// become checkpoint records, which keep the durable resume point fresh and
// gaps narrow.
func WithBookmarks(enabled bool) Option {
	return optionFunc(func(c *config) { c.bookmarks = enabled })
}

// WithWatchList chooses how baselines are taken; the default is
// WatchListAuto.
func WithWatchList(mode WatchListMode) Option {
	return optionFunc(func(c *config) { c.watchList = mode })
}

// WithPageSize sets the limit of each page of a baseline list (default
// DefaultPageSize). It also bounds how many objects are in memory at once.
func WithPageSize(n int64) Option {
	return optionFunc(func(c *config) { c.pageSize = n })
}

// WithBackoff sets the minimum and maximum delay between retries after a
// failure. The delay doubles on each consecutive failure up to max and is
// jittered down by up to half; it resets after a success.
func WithBackoff(minDelay, maxDelay time.Duration) Option {
	return optionFunc(func(c *config) { c.backoffMin, c.backoffMax = minDelay, maxDelay })
}

// WithBatching bounds the groups in which watch events are committed: at
// most maxEvents records or maxBytes bytes of bodies, and at most maxLatency
// after the first of them arrived.
func WithBatching(maxEvents, maxBytes int, maxLatency time.Duration) Option {
	return optionFunc(func(c *config) {
		c.batchMaxEvents, c.batchMaxBytes, c.batchMaxLatency = maxEvents, maxBytes, maxLatency
	})
}

// WithWatchIdleTimeout restarts a watch that delivered nothing, not even a
// bookmark, for d (default DefaultWatchIdleTimeout; 0 disables). The restart
// resumes from the last resourceVersion, so it makes no gap.
func WithWatchIdleTimeout(d time.Duration) Option {
	return optionFunc(func(c *config) { c.watchIdleTimeout = d })
}

// WithProgressInterval sets how often a stream's durable evidence of
// continuity advances while its watch is healthy, when no event does
// (default DefaultProgressInterval; 0 turns progress checkpoints off).
// Coverage at a time T needs evidence after T (storage.Coverage), so a
// quiet stream is covered up to at most about one interval ago.
//
// Every watch asks the server to end it after the interval less a second
// (timeoutSeconds, at least 1). When the server ends it at that timeout,
// the server has streamed everything up to then without error: the
// Collector writes a progress checkpoint (a checkpoint record at the
// stream's resourceVersion, observed then) and reconnects from the same
// resourceVersion. A bookmark whose resourceVersion did not change writes
// one too, at most two per interval. Nothing else does — never a timer of
// the Collector's own: a half-open connection, which delivers nothing and
// never ends, vouches for nothing, and once the server is known to honor
// timeouts the Collector abandons a watch that outlives its timeout by
// max(2s, half the timeout) (WithWatchIdleTimeout still applies when
// shorter).
//
// A clean stop (the end of Start's ctx) writes a last checkpoint after the
// events already received, at the stop when the server confirms it (a
// watch of a second it ends at its timeout), else at the server's last
// evidence not yet written. See the package documentation.
func WithProgressInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.progressInterval = d })
}

// WithRediscoveryInterval sets how often discovery runs again to find
// resources that match the configuration but were not served before, such as
// a CRD installed later (default DefaultRediscoveryInterval; 0 disables).
func WithRediscoveryInterval(d time.Duration) Option {
	return optionFunc(func(c *config) { c.rediscoveryInterval = d })
}

// WithQueueSize bounds the number of watch events waiting to be committed
// (default DefaultQueueSize). When the store is slower than the watches,
// the watches wait: memory stays bounded.
func WithQueueSize(n int) Option {
	return optionFunc(func(c *config) { c.queueSize = n })
}

// WithLogger sets the logger. Without it Start uses
// logr.FromContextOrDiscard(ctx).
func WithLogger(l logr.Logger) Option {
	return optionFunc(func(c *config) { c.logger = &l })
}

// WithClock sets the clock used for observation times, batching latency,
// backoff and timers (default the real clock).
func WithClock(clk clock.WithTicker) Option {
	return optionFunc(func(c *config) { c.clock = clk })
}

// WithMetrics sets the metrics provider (default: no metrics).
func WithMetrics(p MetricsProvider) Option {
	return optionFunc(func(c *config) { c.metrics = p })
}

// AllowSecrets lets the Collector record Secrets, which it refuses
// otherwise. The values of data and stringData, and the
// kubectl last-applied-configuration annotation, are replaced by
// RedactedValue unless KeepSecretValues is given too.
func AllowSecrets() Option {
	return optionFunc(func(c *config) { c.allowSecrets = true })
}

// KeepSecretValues records Secret values as they are. It requires
// AllowSecrets. The journal then holds credentials: protect it accordingly.
func KeepSecretValues() Option {
	return optionFunc(func(c *config) { c.keepSecretValues = true })
}

// WithAllResources records every resource the API server serves that can
// be listed and watched, at its group's preferred version, except the
// exclusions (DefaultExclusions, adjusted by WithExclude and WithInclude).
// Rediscovery (WithRediscoveryInterval) follows the server: a resource
// served later (a CRD installed) gets its streams, recorded from a
// coverage change "discovered"; a resource no longer served (a CRD
// deleted) ends its streams with a coverage change saying so (state
// StateRemoved), and starts them again if it comes back. A resource of an
// API group whose discovery fails (an aggregated API server down) is kept
// as it is. It cannot be combined with WithResources.
func WithAllResources() Option {
	return optionFunc(func(c *config) { c.allResources = true })
}

// WithExclude leaves more resources out of WithAllResources: "resource"
// (in any group) or "resource.group".
func WithExclude(specs ...string) Option {
	specs = append([]string(nil), specs...)
	return optionFunc(func(c *config) { c.exclude = append(c.exclude, specs...) })
}

// WithInclude takes resources off DefaultExclusions for WithAllResources:
// "resource" (in any group) or "resource.group", for example "events".
// Secrets need AllowSecrets instead.
func WithInclude(specs ...string) Option {
	specs = append([]string(nil), specs...)
	return optionFunc(func(c *config) { c.include = append(c.include, specs...) })
}
