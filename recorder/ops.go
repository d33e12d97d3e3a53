package recorder

// What an operator needs to leave the recorder running for months:
// retention, /metrics, /healthz, /readyz, a version.

import (
	"context"
	"errors"
	"fmt"
	"net"
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
	"github.com/krply/krply/server"
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

// ops are retention and the metrics endpoints of a running recorder.
type ops struct {
	// metrics serves Prometheus metrics, on --metrics-addr (open) and
	// --listen (server.WithMetrics, behind the API's authentication).
	metrics http.Handler
	// keeper is the retention keeper whose pressure makes the recorder
	// not ready; nil without retention.
	keeper *retention.Keeper
	// wait stops retention and --metrics-addr and waits for them.
	wait func() error
}

// startOps runs retention and the --metrics-addr endpoints until ctx ends
// or wait is called.
func startOps(ctx context.Context, c Config, j *krply.Journal, rec *krply.Collector, hs *metrics.Histograms) (o *ops, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		if err != nil {
			cancel()
		}
	}()
	o = &ops{}
	var keepDone chan struct{}
	if c.Retention > 0 || c.MaxSize > 0 || c.DiskReserve > 0 {
		o.keeper, err = retention.New(j.Store(), retention.WithMaxAge(time.Duration(c.Retention)), retention.WithMaxSize(int64(c.MaxSize)),
			retention.WithMinAge(time.Duration(c.MinAge)), retention.WithInterval(time.Duration(c.RetentionEvery)),
			retention.WithDiskReserve(filepath.Dir(c.Journal), int64(c.DiskReserve)), retention.WithLogger(c.Log))
		if err != nil {
			return nil, fmt.Errorf("%w (check --retention, --max-size, --min-age, --disk-reserve, --retention-every)", err)
		}
		keepDone = make(chan struct{})
		go func() {
			defer close(keepDone)
			_ = o.keeper.Run(ctx) // returns nil when ctx ends; failures are in its Status
		}()
	}
	mopts := []metrics.Option{metrics.WithCollector(rec), metrics.WithStore(j.Store()), metrics.WithHistograms(hs)}
	if o.keeper != nil {
		mopts = append(mopts, metrics.WithRetention(o.keeper))
	}
	mh := metrics.NewHandler(mopts...)
	o.metrics = mh
	if c.MetricsHandler != nil {
		if o.metrics, err = c.MetricsHandler(mh); err != nil {
			return nil, fmt.Errorf("metrics: %w", err)
		}
	}
	var srv *http.Server
	srvDone := make(chan error, 1)
	if c.MetricsAddr != "" {
		l, err := net.Listen("tcp", c.MetricsAddr)
		if err != nil {
			return nil, fmt.Errorf("--metrics-addr: %w", err)
		}
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", o.metrics)
		mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
		mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
			if err := o.ready(rec).Synced(); err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintln(w, "ok")
		})
		srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
		go func() { srvDone <- srv.Serve(l) }()
		c.Log.Info("serving /metrics, /healthz and /readyz", "address", l.Addr().String())
	}
	o.wait = func() error {
		cancel()
		var err error
		if srv != nil {
			shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			err = srv.Shutdown(shutdown)
			if serr := <-srvDone; !errors.Is(serr, http.ErrServerClosed) {
				err = errors.Join(err, serr)
			}
		}
		if keepDone != nil {
			<-keepDone
		}
		return err
	}
	return o, nil
}

// ready is what /readyz asks, on --metrics-addr and on --listen: the
// recorder synced, and retention within its bounds.
func (o *ops) ready(rec *krply.Collector) server.Recorder {
	return readiness(func() error {
		err := rec.Synced()
		if o.keeper != nil {
			err = errors.Join(err, o.keeper.Ready())
		}
		return err
	})
}

// readiness adapts a function to server.Recorder.
type readiness func() error

func (r readiness) Synced() error { return r() }

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
