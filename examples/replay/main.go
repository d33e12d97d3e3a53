// Command replay rebuilds the recorded state of namespaces in a target
// cluster: it makes a plan from a journal written by examples/record,
// prints the objects and what it left out and why, dry-runs the plan on the
// target's API server, and applies it only with --confirm. With -o yaml it
// writes the plan as a file `kubectl apply --server-side -f` takes instead.
//
//	go run ./examples/replay --store krply.db --namespace shop --at "10m ago" --to-namespace shop-restore
//	go run ./examples/replay --store krply.db --namespace shop --at "10m ago" --to-namespace shop-restore --confirm
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/krply/krply"
	"github.com/krply/krply/examples/internal/cli"
	"github.com/krply/krply/replay"
)

type options struct {
	store, cluster, at, toNamespace, output, file string
	namespaces                                    []string
	policy                                        replay.Policy
	confirm                                       bool
	target                                        cli.Cluster
}

func main() {
	var o options
	var namespaces cli.Strings
	o.target.Register(flag.CommandLine)
	flag.StringVar(&o.store, "store", "krply.db", "path of the SQLite journal")
	flag.StringVar(&o.cluster, "cluster", "", "source cluster ID (default: the only one in the journal)")
	flag.Var(&namespaces, "namespace", "source namespace, repeatable (required)")
	flag.StringVar(&o.at, "at", "now", `time whose state to rebuild: RFC 3339, "now" or "10m ago"`)
	flag.StringVar(&o.toNamespace, "to-namespace", "", "target namespace (with a single --namespace; default: the same name)")
	flag.StringVar(&o.output, "o", "", "yaml: write the plan as a file for kubectl apply --server-side, and stop")
	flag.StringVar(&o.file, "file", "", "file for -o yaml (default: replay-<plan ID>.yaml)")
	flag.BoolVar(&o.confirm, "confirm", false, "apply the plan after a clean dry run")
	flag.BoolVar(&o.policy.AllowGaps, "allow-gaps", false, "plan even when the journal is not complete at that time")
	flag.BoolVar(&o.policy.AllowSourceCluster, "allow-source-cluster", false, "allow writing into the cluster the history was recorded from")
	flag.Parse()
	o.namespaces = namespaces
	if len(o.namespaces) == 0 || (o.toNamespace != "" && len(o.namespaces) != 1) {
		cli.Fail("replay", errors.New("give one or more --namespace, and --to-namespace only with a single one"))
	}
	if err := run(os.Stdout, o); err != nil {
		cli.Fail("replay", err)
	}
}

func run(out io.Writer, o options) error {
	ctx := context.Background()
	at, err := cli.ParseTime(o.at, time.Now())
	if err != nil {
		return err
	}
	j, cluster, err := cli.OpenJournal(ctx, o.store, o.cluster, krply.WithPolicy(o.policy))
	if err != nil {
		return err
	}
	defer j.Close()
	o.cluster = cluster
	tgt := krply.Target{}
	if o.toNamespace != "" {
		tgt.Namespaces = map[string]string{o.namespaces[0]: o.toNamespace}
	}

	// 1. Plan.
	plan, err := j.Plan(ctx, krply.Source{ClusterID: o.cluster, Namespaces: o.namespaces, At: at}, tgt)
	if err != nil {
		return err // a *replay.CoverageIncompleteError names the missing streams
	}
	fmt.Fprintf(out, "plan %s (%s), source %s at %s, coverage complete: %v\n", plan.ID, plan.Hash, o.cluster, at.Local().Format(time.RFC3339), plan.Coverage.Complete)
	for i, obj := range plan.Objects {
		fmt.Fprintf(out, "  %2d. %s %s\n", i+1, obj.Ref.Kind, obj.Ref.ObjectKey())
		for _, w := range obj.Warnings {
			fmt.Fprintf(out, "      warning: %s\n", w)
		}
	}
	for _, e := range plan.Exclusions {
		fmt.Fprintf(out, "  excluded %s %s: %s\n", e.Ref.Kind, e.Ref.ObjectKey(), e.Reason)
	}
	for _, w := range plan.Warnings {
		fmt.Fprintf(out, "  warning: %s\n", w)
	}
	if o.output == "yaml" {
		file := o.file
		if file == "" {
			file = "replay-" + plan.ID + ".yaml"
		}
		raw, err := plan.YAML()
		if err != nil {
			return err
		}
		if err := os.WriteFile(file, raw, 0o644); err != nil {
			return err
		}
		fmt.Fprintf(out, "wrote %s: kubectl apply --server-side --field-manager %s -f %s\n", file, replay.DefaultFieldManager, file)
		return nil
	} else if o.output != "" {
		return fmt.Errorf("-o %q: want yaml", o.output)
	}

	// 2. Dry run on the target.
	cfg, err := o.target.Config()
	if err != nil {
		return err
	}
	target, err := replay.NewClusterForConfig(cfg)
	if err != nil {
		return err
	}
	report, err := j.DryRun(ctx, plan, target)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "dry run on %s: %s (%s)\n", cfg.Host, report.Status, report.Summary())
	for _, r := range report.Results {
		fmt.Fprintf(out, "  %-14s %s %s %s\n", r.Action, r.Ref.Kind, r.Ref.ObjectKey(), r.Message)
		for _, c := range r.Conflicts {
			fmt.Fprintf(out, "      conflict on %s with %s\n", c.Field, c.Manager)
		}
	}

	// 3. Apply, only when asked.
	if !o.confirm {
		fmt.Fprintln(out, "not applied: run again with --confirm to apply")
		return nil
	}
	applied, err := j.Apply(ctx, plan, target, replay.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash})
	if applied != nil {
		for _, r := range applied.Results {
			fmt.Fprintf(out, "  %-13s %s %s %s\n", r.Outcome, r.Ref.Kind, r.Ref.ObjectKey(), r.Message)
		}
		fmt.Fprintf(out, "apply: %s as %s (nothing forced, nothing deleted; controllers act on the objects now)\n", applied.Status, applied.FieldManager)
	}
	return err
}
