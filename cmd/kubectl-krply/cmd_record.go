package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/krply/krply"
	"github.com/krply/krply/server"
	"github.com/krply/krply/watch"
)

func (e *env) recordCommand() *cobra.Command {
	var resources []string
	var all bool
	var every time.Duration
	var verbosity int
	var selector string
	var api apiFlags
	cmd := &cobra.Command{
		Use:   "record",
		Short: "Record a gap-aware history of the cluster's objects into the journal",
		Long: `record lists and watches the resources --resource names in the cluster
--kubeconfig and --context select, and writes every change into the journal
(--journal, created if missing) until it is stopped with Ctrl-C or SIGTERM.
It prints the initial lists' progress, one line per stream once every stream
has a complete baseline, and again every --status-every. Gaps, 410s and
retries are logged on stderr.

--listen ADDR serves the query API (docs/query-api.md) from this recorder's
journal, so that kubectl krply --server http://ADDR answers without access
to the file. Give it --listen-token-file (one bearer token per line, reread
when it changes) unless ADDR is a loopback address; without it every
request is allowed.

Without -n it records every namespace; -n takes one namespace or several
separated by commas.`,
		Example: `  kubectl krply record --resource deploy,cm,svc -n shop
  kubectl krply record --context prod --journal prod.db
  kubectl krply record -n shop --listen 127.0.0.1:8080`,
		Args: noArgs,
	}
	f := cmd.Flags()
	f.StringSliceVar(&resources, "resource", nil, "resources to record, repeatable or comma-separated: short names (deploy, cm, svc, sts), plurals, resource.group (default: "+strings.Join(watch.DefaultResources(), ",")+")")
	f.BoolVarP(&all, "all-namespaces", "A", false, "record every namespace (the default without -n)")
	f.StringVarP(&selector, "selector", "l", "", "record only objects with these labels (a label selector, e.g. app=web)")
	f.DurationVar(&every, "status-every", 30*time.Second, "how often to print each stream's status once synced (0: never)")
	f.IntVarP(&verbosity, "v", "v", 0, "log verbosity on stderr (gaps, 410s and retries are logged at 0)")
	f.StringVar(&api.listen, "listen", "", "serve the query API on this address (host:port), for kubectl krply --server")
	f.StringVar(&api.tokenFile, "listen-token-file", "", "bearer tokens the query API accepts, one per line (required with a non-loopback --listen)")
	f.BoolVar(&api.writes, "listen-allow-writes", false, "let query API clients save snapshots and replay plans in the journal")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if all && cmd.Flags().Changed("namespace") {
			return usagef("-A records every namespace: give it without -n")
		}
		if e.server != "" {
			return usagef("--server asks a recorder; record writes a journal file: give --journal")
		}
		if err := api.validate(); err != nil {
			return err
		}
		cfg, err := e.kube.ToRESTConfig()
		if err != nil {
			return fmt.Errorf("cluster to record: %w (choose it with --kubeconfig and --context)", err)
		}
		log := funcr.New(func(prefix, args string) {
			fmt.Fprintln(e.ErrOut, e.now().Format(time.RFC3339Nano), prefix, args)
		}, funcr.Options{Verbosity: verbosity})
		opts := []krply.Option{krply.WithLogger(log)}
		if len(resources) > 0 {
			opts = append(opts, krply.WithResources(resources...))
		}
		if cmd.Flags().Changed("namespace") {
			var namespaces []string
			for _, ns := range strings.Split(e.namespace(), ",") {
				if ns = strings.TrimSpace(ns); ns != "" {
					namespaces = append(namespaces, ns)
				}
			}
			opts = append(opts, krply.WithNamespaces(namespaces...))
		}
		if e.clusterID != "" {
			opts = append(opts, krply.WithClusterID(e.clusterID))
		}
		if selector != "" {
			opts = append(opts, krply.WithCollectorOptions(watch.WithLabelSelector(selector)))
		}
		ctx := cmd.Context()
		err = e.openAndRecord(ctx, opts, cfg, every, api)
		if err != nil && ctx.Err() != nil && errors.Is(err, context.Canceled) {
			// Ctrl-C is how a recorder is stopped, also before its
			// first sync.
			fmt.Fprintln(e.Out, "stopped before every stream had its first complete list; the journal keeps what was recorded")
			return nil
		}
		return err
	}
	return cmd
}

func (e *env) openAndRecord(ctx context.Context, opts []krply.Option, cfg *rest.Config, every time.Duration, api apiFlags) error {
	j, err := krply.Open(ctx, e.journal, opts...)
	if err != nil {
		return fmt.Errorf("journal %s: %w", e.journal, err)
	}
	defer j.Close()
	rec, err := j.NewCollectorForConfig(cfg)
	if err != nil {
		return err
	}
	if api.listen != "" {
		stop, err := e.serve(j, rec, api)
		if err != nil {
			return err
		}
		defer stop()
	}
	return e.record(ctx, rec, cfg.Host, every)
}

// apiFlags are record's flags of the query API.
type apiFlags struct {
	listen, tokenFile string
	writes            bool
}

func (a apiFlags) validate() error {
	if a.listen == "" {
		if a.tokenFile != "" || a.writes {
			return usagef("--listen-token-file and --listen-allow-writes go with --listen")
		}
		return nil
	}
	host, _, err := net.SplitHostPort(a.listen)
	if err != nil {
		return usagef("--listen %q: want host:port, e.g. 127.0.0.1:8080", a.listen)
	}
	if ip := net.ParseIP(host); a.tokenFile == "" && host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return usagef("--listen %s serves a namespace's history beyond this machine: give --listen-token-file", a.listen)
	}
	return nil
}

// serve serves the query API from the recorder's journal until stop.
func (e *env) serve(j *krply.Journal, rec *krply.Collector, api apiFlags) (stop func(), err error) {
	opts := []server.Option{server.WithRecorder(rec)}
	if api.tokenFile != "" {
		opts = append(opts, server.WithTokenFile(api.tokenFile))
	}
	if api.writes {
		opts = append(opts, server.WithWrites())
	}
	ln, err := net.Listen("tcp", api.listen)
	if err != nil {
		return nil, fmt.Errorf("--listen: %w", err)
	}
	srv := &http.Server{Handler: server.NewHandler(j.Store(), opts...), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(e.ErrOut, "query API on %s stopped: %v\n", ln.Addr(), err)
		}
	}()
	fmt.Fprintf(e.Out, "serving the query API on http://%s (kubectl krply --server http://%s)\n", ln.Addr(), ln.Addr())
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			fmt.Fprintf(e.ErrOut, "query API on %s: %v\n", ln.Addr(), err)
		}
	}, nil
}

// record runs the Collector until ctx ends, printing its progress.
func (e *env) record(ctx context.Context, rec *krply.Collector, host string, every time.Duration) error {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan error, 1)
	go func() { done <- rec.Start(ctx) }()
	fmt.Fprintf(e.Out, "recording %s into %s (Ctrl-C to stop)\n", host, e.journal)
	synced := make(chan error, 1)
	go func() { synced <- rec.WaitForSync(ctx) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case err := <-synced:
			if err != nil {
				stop()
				if startErr := <-done; startErr != nil && !errors.Is(startErr, context.Canceled) {
					return startErr
				}
				return err
			}
			waiting = false
		case <-tick.C:
			printProgress(e.Out, rec.Status())
		}
	}
	fmt.Fprintf(e.Out, "synced: every stream has a complete baseline (cluster %s)\n", rec.ClusterID())
	printStreams(e.Out, rec.Status())
	var status <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		status = t.C
	}
	for {
		select {
		case err := <-done:
			if err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			fmt.Fprintln(e.Out, "stopped; final status:")
			printStreams(e.Out, rec.Status())
			return nil
		case <-status:
			printStreams(e.Out, rec.Status())
		}
	}
}

// printProgress prints the streams still taking their first baseline.
func printProgress(out io.Writer, streams []watch.StreamStatus) {
	var listing []string
	for _, st := range streams {
		if !st.Synced && st.State != watch.StatePending {
			listing = append(listing, fmt.Sprintf("%s %s (%d objects)", st.Resource, st.State, st.Events))
		}
	}
	if len(listing) > 0 {
		fmt.Fprintf(out, "  initial lists: %s\n", strings.Join(listing, ", "))
	}
}

// printStreams prints one line per stream.
func printStreams(out io.Writer, streams []watch.StreamStatus) {
	tw := newTable(out)
	fmt.Fprintln(tw, "  STREAM\tSTATE\tCOVERED SINCE\tEVIDENCE UNTIL\tEVENTS\tGAPS\tRESOURCEVERSION\tDEGRADED")
	for _, st := range streams {
		covered := "NOT covered"
		if st.Covered {
			covered = ts(st.CoveredSince)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\n", st.StreamID, st.State, covered, ts(st.LastDurableAt), st.Events, st.Gaps, orNone(st.LastResourceVersion), orNone(st.DegradedReason))
	}
	tw.Flush()
}
