package recorder

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"

	"github.com/krply/krply"
	"github.com/krply/krply/server"
	"github.com/krply/krply/server/apiv1"
)

// Check refuses flag combinations that cannot work, naming the flags.
func (c *Config) Check() error {
	switch {
	case c.Listen == "" && (c.TLSCertFile != "" || c.TLSKeyFile != "" || c.TokenFile != "" || c.DelegatedAuth || c.ServeOnly || c.AllowWrites || c.UI):
		return errors.New("--tls-cert-file, --tls-key-file, --listen-token-file, --delegated-auth, --listen-allow-writes, --ui and --serve-only need --listen ADDR")
	case (c.TLSCertFile == "") != (c.TLSKeyFile == ""):
		return errors.New("give both --tls-cert-file and --tls-key-file, or neither")
	case c.ServeOnly && c.DelegatedAuth:
		return errors.New("--delegated-auth needs a cluster, which --serve-only does not use: give --listen-token-file instead")
	case c.AllResources && len(c.Resources) > 0:
		return errors.New("--all-resources records every resource and --resource the ones it names: give one of them")
	case !c.AllResources && (len(c.Exclude) > 0 || len(c.Include) > 0):
		return errors.New("--exclude and --include adjust --all-resources: give it too, or name the resources with --resource")
	}
	if c.TokenFile != "" {
		if _, err := os.Stat(c.TokenFile); err != nil {
			return fmt.Errorf("--listen-token-file: %w", err)
		}
	}
	if c.Listen != "" {
		host, _, err := net.SplitHostPort(c.Listen)
		if err != nil {
			return fmt.Errorf("--listen %q: want host:port, e.g. 127.0.0.1:8080 or :8443", c.Listen)
		}
		if ip := net.ParseIP(host); c.TokenFile == "" && !c.DelegatedAuth && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("--listen %s serves every history to anyone who can reach it: give --listen-token-file or --delegated-auth, or listen on a loopback address (127.0.0.1:8080)", c.Listen)
		}
	}
	return nil
}

// endpoints are the recorder's HTTP servers, --listen and --metrics-addr.
// They start before the journal opens, serving /livez, /healthz and
// /readyz from the first moment; the query API and /metrics answer 503
// not_ready, saying why, until the journal is open and they are set.
type endpoints struct {
	api, metrics atomic.Pointer[http.Handler]
	health       *health
	// listenURL is --listen's base URL ("" without --listen).
	listenURL string
	// stopped reports why a server stopped serving (nil after ctx ended).
	stopped chan error
	servers []*http.Server
	done    sync.WaitGroup
}

// startEndpoints starts --listen and --metrics-addr, until ctx ends.
func startEndpoints(ctx context.Context, c Config, h *health) (_ *endpoints, err error) {
	e := &endpoints{health: h, stopped: make(chan error, 2)}
	defer func() {
		if err != nil {
			e.shutdown()
		}
	}()
	if c.Listen != "" {
		mux := http.NewServeMux()
		h.mount(mux, true)
		mux.Handle("/", e.pending(&e.api, "the query API"))
		var tlsConfig *tls.Config
		if c.TLSCertFile != "" {
			getCert, err := certificates(c.TLSCertFile, c.TLSKeyFile)
			if err != nil {
				return nil, err
			}
			tlsConfig = &tls.Config{GetCertificate: getCert, MinVersion: tls.VersionTLS12}
		}
		addr, err := e.serve(mux, c.Listen, tlsConfig)
		if err != nil {
			return nil, fmt.Errorf("--listen: %w", err)
		}
		scheme := "http"
		if tlsConfig != nil {
			scheme = "https"
		}
		e.listenURL = scheme + "://" + addr
	}
	if c.MetricsAddr != "" {
		mux := http.NewServeMux()
		h.mount(mux, false)
		mux.Handle("GET /metrics", e.pending(&e.metrics, "/metrics"))
		addr, err := e.serve(mux, c.MetricsAddr, nil)
		if err != nil {
			return nil, fmt.Errorf("--metrics-addr: %w", err)
		}
		c.Log.Info("serving /metrics, /livez, /healthz and /readyz", "address", addr)
	}
	go func() {
		<-ctx.Done()
		e.shutdown()
	}()
	return e, nil
}

// serve serves handler on addr (over TLS with tlsConfig) and returns the
// address it listens on.
func (e *endpoints) serve(handler http.Handler, addr string, tlsConfig *tls.Config) (string, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", err
	}
	srv := &http.Server{Handler: handler, TLSConfig: tlsConfig, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	e.servers = append(e.servers, srv)
	e.done.Add(1)
	go func() {
		defer e.done.Done()
		var err error
		if tlsConfig != nil {
			err = srv.ServeTLS(ln, "", "") // the pair comes from srv.TLSConfig
		} else {
			err = srv.Serve(ln)
		}
		if !errors.Is(err, http.ErrServerClosed) {
			e.stopped <- fmt.Errorf("serving on %s: %w", ln.Addr(), err)
		}
	}()
	return ln.Addr().String(), nil
}

// pending serves what *h holds, and until it holds a handler answers 503
// not_ready with why (the journal opening or migrating).
func (e *endpoints) pending(h *atomic.Pointer[http.Handler], what string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if next := h.Load(); next != nil {
			(*next).ServeHTTP(w, r)
			return
		}
		why := "the recorder is starting"
		if err := e.health.journalReady(r.Context()); err != nil {
			why = err.Error()
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "5")
		w.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(w).Encode(apiv1.Error{Status: http.StatusServiceUnavailable, Code: apiv1.CodeNotReady,
			Message: fmt.Sprintf("%s is not served yet: %s; /readyz?verbose says how far it is", what, why)})
	})
}

// shutdown stops the servers, leaving open change feeds 5 seconds to end,
// and waits for them.
func (e *endpoints) shutdown() {
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, srv := range e.servers {
		_ = srv.Shutdown(shutdown)
	}
	e.done.Wait()
}

// apiHandler returns the query API over j: cfg is the recorder's cluster
// and rec its Collector, whose appends wake the change feeds (both nil
// with --serve-only), metrics its Prometheus handler (nil with
// --serve-only), served at /metrics behind the API's authentication
// (server.WithMetrics). /healthz and /readyz are the recorder's (health.go),
// in front of the handler's own.
func apiHandler(c Config, j *krply.Journal, cfg *rest.Config, rec *krply.Collector, metrics http.Handler, requests server.RequestMetricsProvider) (http.Handler, error) {
	opts := []server.Option{}
	if requests != nil {
		opts = append(opts, server.WithRequestMetrics(requests))
	}
	if rec != nil {
		opts = append(opts, server.WithAppendNotifier(rec))
	}
	if c.TokenFile != "" {
		opts = append(opts, server.WithTokenFile(c.TokenFile))
	}
	if c.AllowWrites {
		opts = append(opts, server.WithWrites())
	}
	if c.UI {
		opts = append(opts, server.WithUI())
	}
	if c.Conditions != nil {
		opts = append(opts, server.WithConditions(c.Conditions))
	}
	if c.DelegatedAuth {
		authn, err := authenticationv1.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("--delegated-auth: %w", err)
		}
		authz, err := authorizationv1.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("--delegated-auth: %w", err)
		}
		opts = append(opts, server.WithDelegatedAuth(authn.TokenReviews(), authz.SubjectAccessReviews()))
	}
	if metrics != nil {
		// Behind the API's authentication: the metrics name the recorded
		// namespaces.
		opts = append(opts, server.WithMetrics(metrics))
	}
	handler := server.NewHandler(j.Store(), opts...)
	if c.Serve != nil {
		var err error
		if handler, err = c.Serve(handler); err != nil {
			return nil, fmt.Errorf("--listen: %w", err)
		}
	}
	return handler, nil
}

// serveAPI sets the query API of --listen and says where it is served.
func (e *endpoints) serveAPI(out io.Writer, c Config, j *krply.Journal, cfg *rest.Config, rec *krply.Collector, metrics http.Handler, requests server.RequestMetricsProvider) error {
	if metrics != nil {
		e.metrics.Store(&metrics)
	}
	if e.listenURL == "" {
		return nil
	}
	api, err := apiHandler(c, j, cfg, rec, metrics, requests)
	if err != nil {
		return err
	}
	e.api.Store(&api)
	fmt.Fprintf(out, "serving the query API on %s (kubectl krply --server %s)\n", e.listenURL, e.listenURL)
	return nil
}

// serveOnly serves the journal read-only until ctx ends.
func serveOnly(ctx context.Context, out io.Writer, c Config) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	h := newHealth(true)
	e, err := startEndpoints(ctx, c, h)
	if err != nil {
		return err
	}
	defer e.shutdown()
	j, closeJournal, err := c.open(ctx, true)
	if inc, older := OlderJournal(err); older {
		return fmt.Errorf("--serve-only: journal %s has schema version %d, older than the %d this recorder reads, and --serve-only never writes "+
			"the journal: migrate it once by starting the recorder without --serve-only, or with kubectl krply migrate --journal %s",
			inc.Path, inc.FileVersion, inc.SupportedVersion, inc.Path)
	}
	if err != nil {
		return fmt.Errorf("--serve-only: %w", err)
	}
	defer func() {
		e.shutdown() // the API stops before the journal closes
		closeJournal()
	}()
	h.opened(j)
	if err := e.serveAPI(out, c, j, nil, nil, nil, nil); err != nil {
		return err
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-e.stopped:
		return err
	}
}
