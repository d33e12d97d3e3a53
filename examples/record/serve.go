package main

import (
	"context"
	"errors"
	"flag"
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

// apiFlags are the flags of the query API the recorder serves.
type apiFlags struct {
	listen        string
	tlsCert       string
	tlsKey        string
	tokenFile     string
	delegatedAuth bool
	serveOnly     bool
}

func (a *apiFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&a.listen, "listen", "", "serve the query API (/api/v1/…, /healthz, /readyz) on this address, e.g. 127.0.0.1:8080 or :8443 (default: do not serve)")
	fs.StringVar(&a.tlsCert, "tls-cert-file", "", "serve HTTPS with this certificate (PEM; with --tls-key-file)")
	fs.StringVar(&a.tlsKey, "tls-key-file", "", "the key of --tls-cert-file (PEM)")
	fs.StringVar(&a.tokenFile, "token-file", "", "accept the bearer tokens listed in this file, one a line (read again when it changes)")
	fs.BoolVar(&a.delegatedAuth, "delegated-auth", false, "authenticate bearer tokens by the cluster's TokenReview and authorize by SubjectAccessReview (get history.krply.io per namespace), with the recorder's credentials")
	fs.BoolVar(&a.serveOnly, "serve-only", false, "do not record: serve the journal --store read-only (needs --listen, no cluster)")
}

// check refuses flag combinations that cannot work.
func (a *apiFlags) check() error {
	switch {
	case a.listen == "" && (a.tlsCert != "" || a.tlsKey != "" || a.tokenFile != "" || a.delegatedAuth || a.serveOnly):
		return errors.New("--tls-cert-file, --tls-key-file, --token-file, --delegated-auth and --serve-only need --listen ADDR")
	case (a.tlsCert == "") != (a.tlsKey == ""):
		return errors.New("give both --tls-cert-file and --tls-key-file, or neither")
	case a.serveOnly && a.delegatedAuth:
		return errors.New("--delegated-auth needs a cluster, which --serve-only does not use: give --token-file instead")
	}
	if a.tokenFile != "" {
		if _, err := os.Stat(a.tokenFile); err != nil {
			return fmt.Errorf("--token-file: %w", err)
		}
	}
	if a.listen != "" && a.tokenFile == "" && !a.delegatedAuth {
		host, _, err := net.SplitHostPort(a.listen)
		if err != nil {
			return fmt.Errorf("--listen %q: %w", a.listen, err)
		}
		if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("--listen %s serves every history to anyone who can reach it: give --token-file or --delegated-auth, or listen on a loopback address (127.0.0.1:8080)", a.listen)
		}
	}
	return nil
}

// serveAPI starts serving the query API over j until ctx ends; the
// returned channel reports why serving stopped (nil after ctx ended). cfg
// is the recorder's cluster (nil with --serve-only), rec its Collector.
func serveAPI(ctx context.Context, out io.Writer, a apiFlags, j *krply.Journal, cfg *rest.Config, rec server.Recorder, metrics http.Handler) (<-chan error, error) {
	opts := []server.Option{}
	if rec != nil {
		opts = append(opts, server.WithRecorder(rec))
	}
	if a.tokenFile != "" {
		opts = append(opts, server.WithTokenFile(a.tokenFile))
	}
	if a.delegatedAuth {
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
	mux := http.NewServeMux()
	mux.Handle("/", server.NewHandler(j.Store(), opts...))
	if metrics != nil {
		mux.Handle("GET /metrics", metrics)
	}

	ln, err := net.Listen("tcp", a.listen)
	if err != nil {
		return nil, fmt.Errorf("--listen: %w", err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	scheme := "http"
	if a.tlsCert != "" {
		scheme = "https"
	}
	fmt.Fprintf(out, "serving the query API on %s://%s\n", scheme, ln.Addr())
	done := make(chan error, 1)
	go func() {
		var err error
		if a.tlsCert != "" {
			err = srv.ServeTLS(ln, a.tlsCert, a.tlsKey)
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

// serveOnly serves the journal at store read-only until ctx ends.
func serveOnly(ctx context.Context, out io.Writer, a apiFlags, store string) error {
	if _, err := os.Stat(store); err != nil {
		return fmt.Errorf("--serve-only: journal %s: %w", store, err)
	}
	j, err := krply.Open(ctx, store, krply.WithReadOnly())
	if err != nil {
		return err
	}
	defer j.Close()
	stopped, err := serveAPI(ctx, out, a, j, nil, nil, nil)
	if err != nil {
		return err
	}
	return <-stopped
}
