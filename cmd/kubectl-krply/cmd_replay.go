package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/krply/krply/event"
	"github.com/krply/krply/replay"
)

func (e *env) replayCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "replay",
		Short: "Rebuild a recorded state in a sandbox: plan, dry-run, apply",
		Long: `replay rebuilds the recorded state of a namespace in a target cluster, in
three steps, each its own command, so that what is applied is exactly the
plan that was reviewed:

  1. replay plan      saves a plan in the journal and prints its ID and hash
  2. replay dry-run   runs the saved plan server-side with dryRun=All
  3. replay apply     applies that saved plan, only with --confirm HASH of
                      the plan reviewed and after its clean dry run

The target cluster is the one --kubeconfig and --context select. Replay
never deletes and never forces; it refuses the cluster the history was
recorded from unless the plan allows it (--allow-source-cluster).`,
		Example: `  kubectl krply replay plan -n shop --at "10m ago" --to-namespace shop-restore
  kubectl krply replay dry-run PLAN_ID --context sandbox
  kubectl krply replay apply PLAN_ID --confirm sha256:... --context sandbox`,
		Args: noArgs,
	}
	cmd.AddCommand(e.replayPlanCommand(), e.replayDryRunCommand(), e.replayApplyCommand())
	return cmd
}

func (e *env) replayPlanCommand() *cobra.Command {
	var at, toNamespace string
	var all bool
	var policy replay.Policy
	cmd := &cobra.Command{
		Use:   "plan",
		Short: "Plan a replay of a namespace at a time, and save the plan",
		Long: `replay plan materializes the namespace -n names (or, with -A, the whole
cluster) at --at, sanitizes its objects, leaves out what is unsafe to
replay (each exclusion with its reason and the flag that opts in), maps the
namespace to --to-namespace, orders the objects for applying, saves the
plan in the journal and prints its ID and hash. A time the journal does not
cover is refused unless --allow-gaps.

-o yaml prints the plan as multi-document YAML that
kubectl apply --server-side -f takes (ID and hash in its header); -o json
the plan document.`,
		Example: `  kubectl krply replay plan -n shop --at "10m ago" --to-namespace shop-restore
  kubectl krply replay plan -n shop --at 2026-12-01T10:04:05Z -o yaml > plan.yaml`,
		Args: noArgs,
	}
	p := addPrintFlags(cmd)
	f := cmd.Flags()
	f.StringVar(&at, "at", "now", `time whose state to rebuild: RFC 3339, "now" or "10m ago"`)
	f.StringVar(&toNamespace, "to-namespace", "", "target namespace (default: the same name)")
	f.BoolVarP(&all, "all-namespaces", "A", false, "plan every recorded namespace instead of one")
	f.BoolVar(&policy.AllowGaps, "allow-gaps", false, "plan even when the journal is not complete at that time (affected objects carry warnings)")
	f.BoolVar(&policy.AllowSourceCluster, "allow-source-cluster", false, "allow applying into the cluster the history was recorded from")
	f.BoolVar(&policy.AllowSecrets, "allow-secrets", false, "include Secrets")
	f.BoolVar(&policy.AllowServiceAccounts, "allow-service-accounts", false, "include ServiceAccounts")
	f.BoolVar(&policy.AllowRBAC, "allow-rbac", false, "include Roles, RoleBindings, ClusterRoles, ClusterRoleBindings")
	f.BoolVar(&policy.AllowPods, "allow-pods", false, "include Pods")
	f.BoolVar(&policy.AllowJobs, "allow-jobs", false, "include Jobs and CronJobs")
	f.BoolVar(&policy.AllowStorage, "allow-storage", false, "include PersistentVolumes, PersistentVolumeClaims, storage.k8s.io kinds")
	f.BoolVar(&policy.AllowLoadBalancers, "allow-load-balancers", false, "include Services of type LoadBalancer")
	f.BoolVar(&policy.AllowWebhooks, "allow-webhooks", false, "include admission webhooks and policies")
	f.BoolVar(&policy.AllowCRDs, "allow-crds", false, "include CustomResourceDefinitions")
	f.StringSliceVar(&policy.AllowFinalizers, "allow-finalizer", nil, "keep this finalizer, repeatable")
	f.BoolVar(&policy.KeepOwnerReferences, "keep-owner-references", false, "keep ownerReferences")
	f.BoolVar(&policy.KeepClusterIPs, "keep-cluster-ips", false, "keep Services' clusterIP and clusterIPs")
	f.BoolVar(&policy.KeepNodePorts, "keep-node-ports", false, "keep Services' nodePorts")
	f.StringSliceVar(&policy.Kinds, "kind", nil, "replay only these kinds, repeatable (default: every kind not excluded)")
	f.StringSliceVar(&policy.Names, "name", nil, "replay only objects whose name matches this glob, repeatable")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if all && toNamespace != "" {
			return usagef("--to-namespace maps one namespace: give it with -n, not -A")
		}
		when, err := parseTime("at", at, e.now())
		if err != nil {
			return err
		}
		ctx := cmd.Context()
		src, cluster, err := e.openCluster(ctx, true)
		if err != nil {
			return err
		}
		defer src.Close()
		source := replay.Source{ClusterID: cluster, At: when}
		var target replay.Target
		if !all {
			ns := e.namespace()
			source.Namespaces = []string{ns}
			if toNamespace != "" {
				target.Namespaces = map[string]string{ns: toNamespace}
			}
		}
		plan, err := src.Plan(ctx, source, target, policy)
		if err != nil {
			return err
		}
		if !plan.Coverage.Complete {
			e.warnIncomplete("the journal is not complete at %s (planned with --allow-gaps): objects changed or deleted in a gap may be missing or stale", ts(when))
		}
		// The ID and hash go to stderr for the file formats, so that
		// stdout stays what kubectl apply -f takes.
		next := fmt.Sprintf("saved plan %s with hash %s\nnext: kubectl krply replay dry-run %s, then kubectl krply replay apply %s --confirm %s\n",
			plan.ID, plan.Hash, plan.ID, plan.ID, plan.Hash)
		switch p.output {
		case "yaml":
			fmt.Fprint(e.ErrOut, next)
			return plan.WriteYAML(e.Out)
		case "", "table":
		default:
			fmt.Fprint(e.ErrOut, next)
		}
		refs := make([]event.ResourceRef, 0, len(plan.Objects))
		for _, o := range plan.Objects {
			refs = append(refs, o.Ref)
		}
		return p.print(e.Out, view{value: plan, names: refs, table: func(w io.Writer, _ string) error {
			if err := planTable(w, plan); err != nil {
				return err
			}
			_, err := fmt.Fprint(w, next)
			return err
		}})
	}
	return cmd
}

func planTable(w io.Writer, plan *replay.Plan) error {
	fmt.Fprintf(w, "plan %s\nhash %s\nsource: cluster %s at %s, coverage complete: %v\n\n", plan.ID, plan.Hash, plan.Source.ClusterID, ts(plan.Source.At), plan.Coverage.Complete)
	tw := newTable(w)
	fmt.Fprintln(tw, "ORDER\tNAMESPACE\tNAME\tACTION\tNOTE")
	for i, o := range plan.Objects {
		note := "-"
		if len(o.Warnings) > 0 {
			note = flagWords(o.Warnings[0])
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\tapply\t%s\n", i+1, orNone(o.Ref.Namespace), refString(o.Ref), note)
	}
	for _, x := range plan.Exclusions {
		fmt.Fprintf(tw, "-\t%s\t%s\texcluded\t%s\n", orNone(x.Ref.Namespace), refString(x.Ref), flagWords(x.Reason))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, warn := range plan.Warnings {
		fmt.Fprintf(w, "warning: %s\n", flagWords(warn))
	}
	fmt.Fprintln(w)
	return nil
}

// loadPlan opens the journal writable (dry runs and applies save their
// reports) and loads a saved plan.
func (e *env) loadPlan(cmd *cobra.Command, id string) (source, *replay.Plan, error) {
	ctx := cmd.Context()
	src, err := e.open(ctx, true)
	if err != nil {
		return nil, nil, err
	}
	plan, err := src.LoadPlan(ctx, id)
	if err != nil {
		src.Close()
		return nil, nil, fmt.Errorf("plan %s: %w (kubectl krply replay plan saves one and prints its ID)", id, err)
	}
	return src, plan, nil
}

func (e *env) replayDryRunCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dry-run PLAN_ID",
		Short: "Dry-run a saved plan on the target cluster (server-side, dryRun=All)",
		Long: `replay dry-run sends every object of the saved plan to the target cluster
(--kubeconfig, --context) as a server-side apply with dryRun=All, under the
field manager krply-replay, and reports per object what would happen. The
report is saved in the journal: apply needs a clean dry run of the same plan
on the same cluster. A namespace the plan creates is reported as needed
first; apply creates it and validates again.`,
		Example: `  kubectl krply replay dry-run 0193f1c2-... --context sandbox`,
		Args:    exactArgs(1, "one PLAN_ID"),
	}
	p := addPrintFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		src, plan, err := e.loadPlan(cmd, args[0])
		if err != nil {
			return err
		}
		defer src.Close()
		report, err := src.DryRun(cmd.Context(), plan, e.target)
		if err != nil {
			return err
		}
		refs := make([]event.ResourceRef, 0, len(report.Results))
		for _, r := range report.Results {
			refs = append(refs, r.Ref)
		}
		return p.print(e.Out, view{value: report, names: refs, table: func(w io.Writer, _ string) error {
			tw := newTable(w)
			fmt.Fprintln(tw, "NAMESPACE\tNAME\tACTION\tVALIDATED\tMESSAGE")
			for _, r := range report.Results {
				msg := orNone(r.Message)
				for _, c := range r.Conflicts {
					msg += fmt.Sprintf("; conflict on %s with %s", c.Field, c.Manager)
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%v\t%s\n", orNone(r.Ref.Namespace), refString(r.Ref), r.Action, r.Validated, msg)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
			fmt.Fprintf(w, "\ndry run on cluster %s: %s (%s)\n", report.Cluster, report.Status, report.Summary())
			fmt.Fprintf(w, "not applied: to apply exactly this plan, run kubectl krply replay apply %s --confirm %s\n", plan.ID, plan.Hash)
			return nil
		}})
	}
	return cmd
}

func (e *env) replayApplyCommand() *cobra.Command {
	var confirm string
	cmd := &cobra.Command{
		Use:   "apply PLAN_ID --confirm HASH",
		Short: "Apply exactly the saved plan that was reviewed",
		Long: `replay apply applies the saved plan PLAN_ID to the target cluster
(--kubeconfig, --context), only if HASH is the plan's hash (printed by
replay plan and replay dry-run) and the plan had a clean dry run on that
cluster. It never plans again: the plan applied is the plan reviewed. Any
other hash is refused and nothing is written. It creates missing namespaces
first, never forces, never deletes.`,
		Example: `  kubectl krply replay apply 0193f1c2-... --confirm sha256:9f2c... --context sandbox`,
		Args:    exactArgs(1, "one PLAN_ID"),
	}
	p := addPrintFlags(cmd)
	cmd.Flags().StringVar(&confirm, "confirm", "", "the hash of the plan you reviewed (required)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if confirm == "" {
			return usagef("--confirm HASH is required: the hash of the plan you reviewed (replay plan and replay dry-run print it)")
		}
		src, plan, err := e.loadPlan(cmd, args[0])
		if err != nil {
			return err
		}
		defer src.Close()
		report, err := src.Apply(cmd.Context(), plan, e.target, replay.Confirmation{PlanID: args[0], PlanHash: confirm})
		if report != nil {
			refs := make([]event.ResourceRef, 0, len(report.Results))
			for _, r := range report.Results {
				refs = append(refs, r.Ref)
			}
			perr := p.print(e.Out, view{value: report, names: refs, table: func(w io.Writer, _ string) error {
				tw := newTable(w)
				fmt.Fprintln(tw, "NAMESPACE\tNAME\tOUTCOME\tRESOURCEVERSION\tMESSAGE")
				for _, r := range report.Results {
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", orNone(r.Ref.Namespace), refString(r.Ref), r.Outcome, orNone(r.ResourceVersion), orNone(r.Message))
				}
				if err := tw.Flush(); err != nil {
					return err
				}
				fmt.Fprintf(w, "\napply of plan %s on cluster %s: %s as %s (nothing forced, nothing deleted; controllers act on the objects now)\n", plan.ID, report.Cluster, report.Status, report.FieldManager)
				return nil
			}})
			if err == nil {
				err = perr
			}
		}
		return err
	}
	return cmd
}

// target is the cluster a journal's plan is dry-run and applied on.
func (e *env) target() (*rest.Config, error) {
	cfg, err := e.restConfig()
	if err != nil {
		return nil, fmt.Errorf("target cluster: %w (choose it with --kubeconfig and --context)", err)
	}
	return cfg, nil
}
