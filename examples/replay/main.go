// Command replay rebuilds the recorded state of a namespace in a sandbox
// namespace, from a journal that examples/record wrote: the library calls
// behind `kubectl krply replay`. Two runs, so that what is applied is
// exactly the plan that was reviewed:
//
//  1. It plans the namespace as it was at --at, saves the plan in the
//     journal, dry-runs it on the target cluster (--kubeconfig) and prints
//     the plan's ID and hash.
//
//  2. --apply ID --confirm HASH applies that saved plan, never a new one.
//
//     go run ./examples/replay --journal krply.db --namespace shop --at "10m ago" --to-namespace shop-restore
//     go run ./examples/replay --journal krply.db --apply <plan ID> --confirm <plan hash>
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/krply/krply"
	"github.com/krply/krply/server"
)

type options struct {
	journal, kubeconfig, namespace, at, toNamespace, apply, confirm string
	allowSourceCluster                                              bool
}

func main() {
	var o options
	flag.StringVar(&o.journal, "journal", "krply.db", "path of the SQLite journal")
	flag.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the target cluster")
	flag.StringVar(&o.namespace, "namespace", "", "source namespace")
	flag.StringVar(&o.at, "at", "now", `time whose state to rebuild: RFC 3339, "now" or "10m ago"`)
	flag.StringVar(&o.toNamespace, "to-namespace", "", "target namespace (default: the same name)")
	flag.StringVar(&o.apply, "apply", "", "ID of the saved plan to apply (with --confirm)")
	flag.StringVar(&o.confirm, "confirm", "", "hash of the plan --apply names, as the first run printed it")
	flag.BoolVar(&o.allowSourceCluster, "allow-source-cluster", false, "allow writing into the cluster the history was recorded from")
	flag.Parse()
	if err := run(os.Stdout, o); err != nil {
		fmt.Fprintln(os.Stderr, "replay:", err)
		os.Exit(1)
	}
}

func run(out io.Writer, o options) error {
	if (o.apply == "") != (o.confirm == "") || (o.apply == "" && o.namespace == "") {
		return fmt.Errorf("give --namespace (to plan), or --apply ID with --confirm HASH (to apply a saved plan)")
	}
	ctx := context.Background()
	// The plan carries its policy: the apply checks what it allows.
	j, err := krply.Open(ctx, o.journal, krply.WithPolicy(krply.Policy{AllowSourceCluster: o.allowSourceCluster}))
	if err != nil {
		return err
	}
	defer j.Close()
	var plan *krply.Plan
	if o.apply != "" {
		plan, err = j.LoadPlan(ctx, o.apply) // the plan reviewed, never planned again
	} else {
		plan, err = newPlan(ctx, out, j, o)
	}
	if err != nil {
		return err // a replay.CoverageIncompleteError names the streams not covered
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return err
	}
	target, err := krply.NewClusterForConfig(cfg)
	if err != nil {
		return err
	}
	if o.apply != "" {
		// Refused unless the hash is the saved plan's and its dry run here was clean.
		report, err := j.Apply(ctx, plan, target, krply.Confirmation{PlanID: o.apply, PlanHash: o.confirm})
		if report != nil {
			for _, r := range report.Results {
				fmt.Fprintf(out, "%s %s %s\n", r.Outcome, r.Ref.Kind, r.Ref.ObjectKey())
			}
			fmt.Fprintf(out, "apply: %s (nothing forced, nothing deleted)\n", report.Status)
		}
		return err
	}
	report, err := j.DryRun(ctx, plan, target) // server-side apply with dryRun=All; the report is saved
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "dry run: %s (%s)\nto apply exactly this plan: --apply %s --confirm %s\n", report.Status, report.Summary(), plan.ID, plan.Hash)
	return nil
}

// newPlan plans the namespace at --at into --to-namespace, prints the plan
// and saves it: only a saved plan is dry-run and applied.
func newPlan(ctx context.Context, out io.Writer, j *krply.Journal, o options) (*krply.Plan, error) {
	at, err := server.ParseTime(o.at, time.Now())
	if err != nil {
		return nil, err
	}
	streams, err := j.Store().Streams(ctx, "")
	if err != nil || len(streams) == 0 {
		return nil, fmt.Errorf("the journal has recorded nothing yet (%v)", err)
	}
	target := krply.Target{}
	if o.toNamespace != "" {
		target.Namespaces = map[string]string{o.namespace: o.toNamespace}
	}
	plan, err := j.Plan(ctx, krply.Source{ClusterID: streams[0].Stream.ClusterID, Namespaces: []string{o.namespace}, At: at}, target)
	if err != nil {
		return nil, err
	}
	for i, obj := range plan.Objects { // sanitized, mapped, in apply order
		fmt.Fprintf(out, "%d. %s %s\n", i+1, obj.Ref.Kind, obj.Ref.ObjectKey())
	}
	for _, e := range plan.Exclusions { // left out, each with its reason
		fmt.Fprintf(out, "excluded %s %s: %s\n", e.Ref.Kind, e.Ref.ObjectKey(), e.Reason)
	}
	return plan, j.SavePlan(ctx, plan)
}
