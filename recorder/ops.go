package recorder

// What an operator needs to leave the recorder running for months:
// retention, /metrics, a version (health.go: /livez, /healthz, /readyz).

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/krply/krply"
	"github.com/krply/krply/metrics"
	"github.com/krply/krply/retention"
)

// Version returns stamped, the version a build stamped with -ldflags
// "-X main.version=…" (the image's build does), or without it krply's
// module version (krply.Version) as the build recorded it, with the
// build's VCS revision when it has one.
func Version(stamped string) string {
	if stamped != "" {
		return stamped
	}
	v := krply.Version()
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				v += "+" + s.Value
			}
		}
	}
	return v
}

// ops are retention and the metrics of a running recorder.
type ops struct {
	// metrics serves Prometheus metrics, on --metrics-addr (open) and
	// --listen (server.WithMetrics, behind the API's authentication).
	metrics http.Handler
	// keeper is the retention keeper whose pressure the retention check
	// reports; nil without retention.
	keeper *retention.Keeper
	// wait stops retention and waits for it.
	wait func()
}

// startOps runs retention until ctx ends or wait is called.
func startOps(ctx context.Context, c Config, j *krply.Journal, rec *krply.Collector, hs *metrics.Histograms) (*ops, error) {
	ctx, cancel := context.WithCancel(ctx)
	o := &ops{}
	keepDone := make(chan struct{})
	if c.Retention > 0 || c.MaxSize > 0 || c.DiskReserve > 0 || c.EventsRetention > 0 {
		// The disk watched is a journal file's; a journal named by a URL
		// (PostgreSQL) lives on its server's disk, which is not ours to stat.
		disk := ""
		if !isURL(c.Journal) {
			disk = filepath.Dir(c.Journal)
		}
		var err error
		o.keeper, err = retention.New(j.Store(), retention.WithMaxAge(time.Duration(c.Retention)), retention.WithMaxSize(int64(c.MaxSize)),
			retention.WithResourceMaxAge(time.Duration(c.EventsRetention), EventResources()...),
			retention.WithMinAge(time.Duration(c.MinAge)), retention.WithInterval(time.Duration(c.RetentionEvery)),
			retention.WithDiskReserve(disk, int64(c.DiskReserve)), retention.WithLogger(c.Log))
		if err != nil {
			cancel()
			return nil, fmt.Errorf("%w (check --retention, --events-retention, --max-size, --min-age, --disk-reserve, --retention-every)", err)
		}
		go func() {
			defer close(keepDone)
			_ = o.keeper.Run(ctx) // returns nil when ctx ends; failures are in its Status
		}()
	} else {
		close(keepDone)
	}
	mopts := []metrics.Option{metrics.WithCollector(rec), metrics.WithStore(j.Store()), metrics.WithHistograms(hs)}
	if o.keeper != nil {
		mopts = append(mopts, metrics.WithRetention(o.keeper))
	}
	mh := metrics.NewHandler(mopts...)
	o.metrics = mh
	if c.MetricsHandler != nil {
		var err error
		if o.metrics, err = c.MetricsHandler(mh); err != nil {
			cancel()
			<-keepDone
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	o.wait = func() {
		cancel()
		<-keepDone
	}
	return o, nil
}

// Age is a duration flag value that also takes days ("7d"). It implements
// flag.Value and pflag.Value.
type Age time.Duration

func (a *Age) String() string { return time.Duration(*a).String() }

// Type names the value in pflag's help.
func (a *Age) Type() string { return "duration" }

// Set parses "7d", "1.5d" or a time.Duration ("36h").
func (a *Age) Set(s string) error {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("want a duration such as 7d or 36h, got %q", s)
		}
		*a = Age(time.Duration(n * 24 * float64(time.Hour)))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("want a duration such as 7d or 36h, got %q", s)
	}
	*a = Age(d)
	return nil
}

// Quantity is a byte size flag value in Kubernetes quantity form ("4Gi").
// It implements flag.Value and pflag.Value.
type Quantity int64

func (q *Quantity) String() string { return strconv.FormatInt(int64(*q), 10) }

// Type names the value in pflag's help.
func (q *Quantity) Type() string { return "quantity" }

// Set parses a non-negative Kubernetes quantity ("4Gi", "500M").
func (q *Quantity) Set(s string) error {
	v, err := resource.ParseQuantity(s)
	if err != nil || v.Sign() < 0 {
		return fmt.Errorf("want a size such as 4Gi or 500M, got %q", s)
	}
	*q = Quantity(v.Value())
	return nil
}
