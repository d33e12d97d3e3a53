// Command record records a gap-aware history of a cluster's objects into a
// SQLite journal until it is stopped with SIGINT or SIGTERM: the library
// calls a recorder makes, in a page. The recorder operators run, with
// record-everything, retention, metrics and the query API, is `kubectl
// krply record` (cmd/kubectl-krply).
//
//	go run ./examples/record --resource deploy,cm,svc --namespace shop --journal krply.db
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

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/krply/krply"
	"github.com/krply/krply/watch"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	resources := flag.String("resource", "", "resources to record, comma-separated: aliases (deploy, cm, svc), plurals, resource.group (default: "+strings.Join(watch.DefaultResources(), ",")+")")
	namespaces := flag.String("namespace", "", "namespaces to record, comma-separated (default: all)")
	journal := flag.String("journal", "krply.db", "path of the SQLite journal")
	flag.Parse()
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = *kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err == nil {
		err = run(os.Stdout, cfg, split(*resources), split(*namespaces), *journal)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "record:", err)
		os.Exit(1)
	}
}

func run(out io.Writer, cfg *rest.Config, resources, namespaces []string, path string) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// The journal, told what to record (default: watch.DefaultResources
	// in every namespace).
	var opts []krply.Option
	if len(resources) > 0 {
		opts = append(opts, krply.WithResources(resources...))
	}
	if len(namespaces) > 0 {
		opts = append(opts, krply.WithNamespaces(namespaces...))
	}
	j, err := krply.Open(ctx, path, opts...)
	if err != nil {
		return err
	}
	defer j.Close()

	// A Collector lists and watches each resource; Start runs it until ctx
	// ends, then commits what it saw and returns.
	rec, err := j.NewCollectorForConfig(cfg)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- rec.Start(ctx) }()
	fmt.Fprintf(out, "recording %s into %s (Ctrl-C to stop)\n", cfg.Host, path)

	// Once every stream has its first complete list, the journal covers
	// them: from then on every change is in it, or a gap says it is not.
	if err := rec.WaitForSync(ctx); err != nil {
		if startErr := <-done; startErr != nil && !errors.Is(startErr, context.Canceled) {
			return startErr
		}
		if ctx.Err() != nil {
			return nil // stopped before the first sync
		}
		return err
	}
	fmt.Fprintf(out, "synced: every stream has a complete baseline (cluster %s)\n", rec.ClusterID())
	printStatus(out, rec.Status())

	if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	fmt.Fprintln(out, "stopped; final status:")
	printStatus(out, rec.Status())
	return nil
}

// printStatus prints one line per stream.
func printStatus(out io.Writer, streams []watch.StreamStatus) {
	for _, st := range streams {
		covered := "covered since " + st.CoveredSince.Local().Format("15:04:05")
		if !st.Covered {
			covered = "NOT covered"
		}
		fmt.Fprintf(out, "  %-50s %-11s %s, %d events, %d gaps, rv %s\n", st.StreamID, st.State, covered, st.Events, st.Gaps, st.LastResourceVersion)
	}
}

// split splits a comma-separated flag.
func split(s string) []string {
	var out []string
	for _, item := range strings.Split(s, ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}
