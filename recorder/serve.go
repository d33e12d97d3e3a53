package recorder

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"

	authenticationv1 "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1 "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"

	"github.com/krply/krply"
	"github.com/krply/krply/server"
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

// serveAPI starts serving the query API over j until ctx ends; the
// returned channel reports why serving stopped (nil after ctx ended). cfg
// is the recorder's cluster (nil with --serve-only), rec its readiness,
// metrics its Prometheus handler (both nil with --serve-only), served at
// /metrics behind the API's authentication (server.WithMetrics).
func serveAPI(ctx context.Context, out io.Writer, c Config, j *krply.Journal, cfg *rest.Config, rec server.Recorder, metrics http.Handler) (<-chan error, error) {
	opts := []server.Option{}
	if rec != nil {
		opts = append(opts, server.WithRecorder(rec))
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
	srv := &http.Server{Handler: handler, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	scheme := "http"
	if c.TLSCertFile != "" {
		getCert, err := certificates(c.TLSCertFile, c.TLSKeyFile)
		if err != nil {
			return nil, err
		}
		srv.TLSConfig = &tls.Config{GetCertificate: getCert, MinVersion: tls.VersionTLS12}
		scheme = "https"
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		return nil, fmt.Errorf("--listen: %w", err)
	}
	fmt.Fprintf(out, "serving the query API on %s://%s (kubectl krply --server %s://%s)\n", scheme, ln.Addr(), scheme, ln.Addr())
	done := make(chan error, 1)
	go func() {
		var err error
		if c.TLSCertFile != "" {
			err = srv.ServeTLS(ln, "", "") // the pair comes from srv.TLSConfig
		} else {
			err = srv.Serve(ln)
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		done <- err
	}()
	stopped := make(chan error, 1)
	go func() {
		select {
		case err := <-done:
			stopped <- fmt.Errorf("query API: %w", err)
		case <-ctx.Done():
			shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(shutdown) // open change feeds end with the timeout
			stopped <- nil
		}
	}()
	return stopped, nil
}

// serveOnly serves the journal read-only until ctx ends.
func serveOnly(ctx context.Context, out io.Writer, c Config) error {
	j, closeJournal, err := c.open(ctx, true)
	if inc, older := OlderJournal(err); older {
		return fmt.Errorf("--serve-only: journal %s has schema version %d, older than the %d this recorder reads, and --serve-only never writes "+
			"the journal: migrate it once by starting the recorder without --serve-only, or with kubectl krply migrate --journal %s",
			inc.Path, inc.FileVersion, inc.SupportedVersion, inc.Path)
	}
	if err != nil {
		return fmt.Errorf("--serve-only: %w", err)
	}
	defer closeJournal()
	stopped, err := serveAPI(ctx, out, c, j, nil, nil, nil)
	if err != nil {
		return err
	}
	return <-stopped
}
