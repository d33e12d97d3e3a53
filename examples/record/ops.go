package main

// What an operator needs to leave the recorder running for months:
// record-everything, retention, /metrics, /healthz, /readyz, --version.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/krply/krply"
	"github.com/krply/krply/examples/internal/cli"
	"github.com/krply/krply/metrics"
	"github.com/krply/krply/retention"
	"github.com/krply/krply/server"
	"github.com/krply/krply/watch"
)

// version is stamped at build time (-ldflags "-X main.version=v0.1.0");
// without it, --version reports the module's version and build info.
var version string

// versionString is what --version prints.
func versionString() string {
	if version != "" {
		return version
	}
	v := krply.Version
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			if s.Key == "vcs.revision" {
				v += "+" + s.Value
			}
		}
		v += " (" + info.GoVersion + ")"
	}
	return v
}

// ops are the flags of running in a cluster.
type ops struct {
	all, allowSecrets bool
	exclude, include  cli.Strings
	retention, minAge age
	every             age
	maxSize, reserve  quantity
	metricsAddr       string
	printVersion      bool

	// Set by start: the Prometheus handler (also mounted on --listen) and
	// the retention keeper whose pressure makes the recorder not ready.
	metrics http.Handler
	keeper  *retention.Keeper
}

func (o *ops) register(fs *flag.FlagSet) {
	fs.BoolVar(&o.all, "all-resources", false, "record every listable and watchable resource, following CRDs as they come and go, except the default exclusions (Secrets, Events, Leases, EndpointSlices, Endpoints; each logged with its reason at -v 1)")
	fs.Var(&o.exclude, "exclude", "with --all-resources: also leave out these resources (resource or resource.group), repeatable or comma-separated")
	fs.Var(&o.include, "include", "with --all-resources: record these default exclusions after all (e.g. events)")
	fs.BoolVar(&o.allowSecrets, "allow-secrets", false, "record Secrets (values redacted); needs RBAC on secrets")
	fs.Var(&o.retention, "retention", "compact history older than this (e.g. 7d, 36h; 0: keep everything)")
	fs.Var(&o.maxSize, "max-size", "compact the oldest history while the journal's data takes more than this (e.g. 4Gi; 0: no bound)")
	o.minAge, o.every = age(retention.DefaultMinAge), age(retention.DefaultInterval)
	fs.Var(&o.minAge, "min-age", "history younger than this is never compacted for --max-size (e.g. 1h, 2d)")
	fs.Var(&o.reserve, "disk-reserve", "report pressure (not ready, krply_retention_pressure 1) while the journal's disk has less free space than this (e.g. 256Mi; 0: off)")
	fs.Var(&o.every, "retention-every", "how often retention runs (e.g. 5m)")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve /metrics, /healthz and /readyz on this address (e.g. :9090; empty: off)")
	fs.BoolVar(&o.printVersion, "version", false, "print the version and exit")
}

// options returns the Collector options the flags ask for.
func (o *ops) options() []krply.Option {
	var w []watch.Option
	if o.all {
		w = append(w, watch.WithAllResources())
	}
	if len(o.exclude) > 0 {
		w = append(w, watch.WithExclude(o.exclude...))
	}
	if len(o.include) > 0 {
		w = append(w, watch.WithInclude(o.include...))
	}
	if o.allowSecrets {
		w = append(w, watch.AllowSecrets())
	}
	if len(w) == 0 {
		return nil
	}
	return []krply.Option{krply.WithCollectorOptions(w...)}
}

// start runs retention and the HTTP endpoints until ctx ends or wait is
// called; wait stops both and waits for them.
func (o *ops) start(ctx context.Context, log logr.Logger, j *krply.Journal, rec *krply.Collector, store string) (wait func() error, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		if err != nil {
			cancel()
		}
	}()
	var keeper *retention.Keeper
	var keepDone chan struct{}
	if o.retention > 0 || o.maxSize > 0 || o.reserve > 0 {
		keeper, err = retention.New(j.Store(), retention.WithMaxAge(time.Duration(o.retention)), retention.WithMaxSize(int64(o.maxSize)),
			retention.WithMinAge(time.Duration(o.minAge)), retention.WithInterval(time.Duration(o.every)), retention.WithDiskReserve(filepath.Dir(store), int64(o.reserve)),
			retention.WithLogger(log))
		if err != nil {
			return nil, fmt.Errorf("%w (check --retention, --max-size, --min-age, --disk-reserve, --retention-every)", err)
		}
		keepDone = make(chan struct{})
		go func() {
			defer close(keepDone)
			_ = keeper.Run(ctx) // returns nil when ctx ends; failures are in its Status
		}()
	}
	o.keeper = keeper
	opts := []metrics.Option{metrics.WithCollector(rec), metrics.WithStore(j.Store())}
	if keeper != nil {
		opts = append(opts, metrics.WithRetention(keeper))
	}
	o.metrics = metrics.NewHandler(opts...)
	var srv *http.Server
	srvDone := make(chan error, 1)
	if o.metricsAddr != "" {
		l, err := net.Listen("tcp", o.metricsAddr)
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
		log.Info("serving /metrics, /healthz and /readyz", "address", l.Addr().String())
	}
	return func() error {
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
	}, nil
}

// age is a duration flag that also takes days ("7d").
type age time.Duration

func (a *age) String() string { return time.Duration(*a).String() }

func (a *age) Set(s string) error {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseFloat(days, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("want a duration such as 7d or 36h, got %q", s)
		}
		*a = age(time.Duration(n * 24 * float64(time.Hour)))
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("want a duration such as 7d or 36h, got %q", s)
	}
	*a = age(d)
	return nil
}

// quantity is a byte size flag in Kubernetes quantity form ("4Gi").
type quantity int64

func (q *quantity) String() string { return strconv.FormatInt(int64(*q), 10) }

func (q *quantity) Set(s string) error {
	v, err := resource.ParseQuantity(s)
	if err != nil || v.Sign() < 0 {
		return fmt.Errorf("want a size such as 4Gi or 500M, got %q", s)
	}
	*q = quantity(v.Value())
	return nil
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
