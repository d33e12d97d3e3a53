// Command record records a gap-aware history of a cluster's objects into a
// SQLite journal until it is stopped with SIGINT or SIGTERM.
//
//	go run ./examples/record --resource deploy,cm,svc --namespace shop --store krply.db
//
// With --listen it serves the query API (package server) from its own
// journal, so one process writes and every reader asks it; --serve-only
// serves a journal without recording.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/krply/krply"
	"github.com/krply/krply/examples/internal/cli"
	"github.com/krply/krply/watch"
)

func main() {
	var cluster cli.Cluster
	var resources, namespaces cli.Strings
	cluster.Register(flag.CommandLine)
	flag.Var(&resources, "resource", "resource to record, repeatable or comma-separated: aliases (deploy, cm, svc, sts), plurals, resource.group (default: "+strings.Join(watch.DefaultResources(), ",")+")")
	flag.Var(&namespaces, "namespace", "namespace to record, repeatable (default: all namespaces)")
	store := cli.StoreFlag(flag.CommandLine)
	clusterID := flag.String("cluster-id", "", "cluster ID written in every record (default: the UID of kube-system)")
	every := flag.Duration("status-every", 30*time.Second, "how often to print the status line of each stream once synced (0: never)")
	verbosity := flag.Int("v", 0, "log verbosity (gaps, 410s and retries are logged at 0)")
	var api apiFlags
	api.register(flag.CommandLine)
	var o ops
	o.register(flag.CommandLine)
	flag.Parse()
	if o.printVersion {
		fmt.Println("record", versionString())
		return
	}
	if err := run(os.Stdout, cluster, resources, namespaces, *store, *clusterID, *every, *verbosity, api, &o); err != nil {
		cli.Fail("record", err)
	}
}

func run(out io.Writer, cluster cli.Cluster, resources, namespaces []string, store, clusterID string, every time.Duration, verbosity int, api apiFlags, o *ops) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := api.check(); err != nil {
		return err
	}
	if api.serveOnly {
		return serveOnly(ctx, out, api, store)
	}
	cfg, err := cluster.Config()
	if err != nil {
		return err
	}
	log := cli.Logger(verbosity)
	opts := append([]krply.Option{krply.WithLogger(log)}, o.options()...)
	if len(resources) > 0 {
		opts = append(opts, krply.WithResources(resources...))
	}
	if len(namespaces) > 0 {
		opts = append(opts, krply.WithNamespaces(namespaces...))
	}
	if clusterID != "" {
		opts = append(opts, krply.WithClusterID(clusterID))
	}
	j, err := krply.Open(ctx, store, opts...)
	if err != nil {
		return err
	}
	defer j.Close()
	rec, err := j.NewCollectorForConfig(cfg)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- rec.Start(ctx) }()
	waitOps, err := o.start(ctx, log, j, rec, store)
	if err != nil {
		stop()
		return errors.Join(err, <-done)
	}
	defer func() {
		if err := waitOps(); err != nil {
			fmt.Fprintln(out, "stopping /metrics:", err)
		}
	}()
	var serving <-chan error
	if api.listen != "" {
		if serving, err = serveAPI(ctx, out, api, j, cfg, o.ready(rec), o.metrics); err != nil {
			stop()
			<-done
			return err
		}
	}

	// Progress while the initial lists run, then one line per stream.
	fmt.Fprintf(out, "recording %s into %s (Ctrl-C to stop)\n", cfg.Host, store)
	synced := make(chan error, 1)
	go func() { synced <- rec.WaitForSync(ctx) }()
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case err := <-synced:
			if err != nil {
				stop()
				if startErr := <-done; startErr != nil {
					return startErr
				}
				return err
			}
			waiting = false
		case <-tick.C:
			printProgress(out, rec.Status())
		}
	}
	fmt.Fprintf(out, "synced: every stream has a complete baseline (cluster %s)\n", rec.ClusterID())
	printStatus(out, rec.Status())

	var status <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		status = t.C
	}
	for {
		select {
		case err := <-done:
			if serving != nil {
				<-serving // the API stops with ctx, before the journal closes
			}
			if err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			fmt.Fprintln(out, "stopped; final status:")
			printStatus(out, rec.Status())
			return nil
		case <-status:
			printStatus(out, rec.Status())
		case err := <-serving:
			if err != nil {
				stop()
				<-done
				return err
			}
			serving = nil
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

// printStatus prints one line per stream.
func printStatus(out io.Writer, streams []watch.StreamStatus) {
	for _, st := range streams {
		covered := "covered since " + st.CoveredSince.Local().Format("15:04:05")
		if !st.Covered {
			covered = "NOT covered"
		}
		line := fmt.Sprintf("  %-50s %-11s %s, %d events, %d gaps, rv %s", st.StreamID, st.State, covered, st.Events, st.Gaps, st.LastResourceVersion)
		if st.Degraded {
			line += " — " + st.DegradedReason
		}
		fmt.Fprintln(out, line)
	}
}
