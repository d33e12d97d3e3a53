// Command replay rebuilds the recorded state of namespaces in a target
// cluster from a journal written by examples/record. It works in three
// steps, each its own run, so that what is applied is exactly the plan that
// was reviewed:
//
//  1. Without --save it shows the plan (objects, what it left out and why)
//     and writes nothing: a preview. With -o yaml it writes the plan as a
//     file `kubectl apply --server-side -f` takes instead.
//
//  2. With --save it saves the plan in the journal and dry-runs it on the
//     target's API server (the dry-run report is saved too), and prints the
//     command that applies it.
//
//  3. With --plan ID --confirm HASH it applies that saved plan, only if its
//     hash is HASH and its dry run was clean. --plan ID alone dry-runs it
//     again.
//
//     go run ./examples/replay --store krply.db --namespace shop --at "10m ago" --to-namespace shop-restore
//     go run ./examples/replay --store krply.db --namespace shop --at "10m ago" --to-namespace shop-restore --save
//     go run ./examples/replay --store krply.db --plan <plan ID> --confirm <plan hash>
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
	save                                          bool
	planID, confirm                               string
	target                                        cli.Cluster
}

func main() {
	var o options
	var namespaces cli.Strings
	o.target.Register(flag.CommandLine)
	flag.StringVar(&o.store, "store", "krply.db", "path of the SQLite journal")
	flag.StringVar(&o.cluster, "cluster", "", "source cluster ID (default: the only one in the journal)")
	flag.Var(&namespaces, "namespace", "source namespace, repeatable (required unless --plan)")
	flag.StringVar(&o.at, "at", "now", `time whose state to rebuild: RFC 3339, "now" or "10m ago"`)
	flag.StringVar(&o.toNamespace, "to-namespace", "", "target namespace (with a single --namespace; default: the same name)")
	flag.StringVar(&o.output, "o", "", "yaml: write the plan as a file for kubectl apply --server-side, and stop")
	flag.StringVar(&o.file, "file", "", "file for -o yaml (default: replay-<plan ID>.yaml)")
	flag.BoolVar(&o.save, "save", false, "save the plan in the journal and dry-run it on the target (default: only show it)")
	flag.StringVar(&o.planID, "plan", "", "ID of a saved plan to dry-run again, or to apply with --confirm, instead of making one")
	flag.StringVar(&o.confirm, "confirm", "", "apply the saved plan named by --plan if its hash is this one (--save prints both)")
	flag.BoolVar(&o.policy.AllowGaps, "allow-gaps", false, "plan even when the journal is not complete at that time")
	flag.BoolVar(&o.policy.AllowSourceCluster, "allow-source-cluster", false, "allow writing into the cluster the history was recorded from")
	flag.Parse()
	o.namespaces = namespaces
	if err := run(os.Stdout, o); err != nil {
		cli.Fail("replay", err)
	}
}

func (o options) validate() error {
	switch {
	case o.output != "" && o.output != "yaml":
		return fmt.Errorf("-o %q: want yaml", o.output)
	case o.planID != "" && (len(o.namespaces) > 0 || o.toNamespace != "" || o.save):
		return errors.New("--plan loads a saved plan: give it without --namespace, --to-namespace and --save")
	case o.planID == "" && o.confirm != "":
		return errors.New("--confirm applies a saved plan: name it with --plan (run with --save first to save and dry-run a plan)")
	case o.planID == "" && (len(o.namespaces) == 0 || (o.toNamespace != "" && len(o.namespaces) != 1)):
		return errors.New("give one or more --namespace, and --to-namespace only with a single one")
	}
	return nil
}

func run(out io.Writer, o options) error {
	if err := o.validate(); err != nil {
		return err
	}
	ctx := context.Background()
	at, err := cli.ParseTime(o.at, time.Now())
	if err != nil {
		return err
	}
	// A preview only reads; saving, a dry run and applying write.
	j, cluster, err := cli.OpenJournal(ctx, o.store, o.cluster, append(cli.ReadOnlyUnless(o.save || o.planID != ""), krply.WithPolicy(o.policy))...)
	if err != nil {
		return err
	}
	defer j.Close()

	// 1. Plan, or load the saved plan.
	var plan *krply.Plan
	if o.planID != "" {
		plan, err = j.LoadPlan(ctx, o.planID)
	} else {
		tgt := krply.Target{}
		if o.toNamespace != "" {
			tgt.Namespaces = map[string]string{o.namespaces[0]: o.toNamespace}
		}
		plan, err = j.Plan(ctx, krply.Source{ClusterID: cluster, Namespaces: o.namespaces, At: at}, tgt)
	}
	if err != nil {
		return err // a *replay.CoverageIncompleteError names the missing streams
	}
	printPlan(out, plan)
	if o.save {
		if err := j.SavePlan(ctx, plan); err != nil {
			return err
		}
		fmt.Fprintf(out, "saved plan %s in the journal\n", plan.ID)
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
	}
	if o.planID == "" && !o.save {
		fmt.Fprintln(out, "preview: nothing was saved; run again with --save to save the plan and dry-run it on the target")
		return nil
	}

	// 2. Dry run of the saved plan on the target, or 3. apply it.
	cfg, err := o.target.Config()
	if err != nil {
		return err
	}
	target, err := replay.NewClusterForConfig(cfg)
	if err != nil {
		return err
	}
	if o.confirm == "" {
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
		fmt.Fprintf(out, "not applied: to apply exactly this plan, run with --store %s --plan %s --confirm %s\n", o.store, plan.ID, plan.Hash)
		return nil
	}
	applied, err := j.Apply(ctx, plan, target, replay.Confirmation{PlanID: o.planID, PlanHash: o.confirm})
	if applied != nil {
		for _, r := range applied.Results {
			fmt.Fprintf(out, "  %-13s %s %s %s\n", r.Outcome, r.Ref.Kind, r.Ref.ObjectKey(), r.Message)
		}
		fmt.Fprintf(out, "apply: %s as %s (nothing forced, nothing deleted; controllers act on the objects now)\n", applied.Status, applied.FieldManager)
	}
	return err
}

func printPlan(out io.Writer, plan *krply.Plan) {
	fmt.Fprintf(out, "plan %s (%s), source %s at %s, coverage complete: %v\n", plan.ID, plan.Hash, plan.Source.ClusterID,
		plan.Source.At.Local().Format(time.RFC3339), plan.Coverage.Complete)
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
}
