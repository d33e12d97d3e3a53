package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/cel"
	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
)

func (e *env) findCommand() *cobra.Command {
	var since, until, selector string
	var resources []string
	var all, first, stillTrue bool
	cmd := &cobra.Command{
		Use:   "find EXPRESSION",
		Short: "Find when a condition (CEL over object) held for the objects of a namespace (or cluster)",
		Long: `find evaluates a CEL expression over object — each recorded version of
each object of the namespace -n names (or, with -A, the whole cluster) —
and prints, for every object, the intervals during which it was true: from
the version that made it true to the one that made it false, with who made
them where audit correlations tell. An end the journal cannot tell (before
the stream's first complete list, or at a gap) is marked unknown with the
reason, never extended or cut silently. --first prints each object's first
interval, --now the intervals still open. Times are when the recorder
observed the changes. Secrets are never searched.`,
		Example: `  kubectl krply find 'object.spec.replicas < 2' -n shop --resource deploy
  kubectl krply find 'object.data.debug == "true"' -A --resource cm --first
  kubectl krply find 'object.spec.template.spec.containers.exists(c, c.image == "x:1.2")' -A --resource pods -o yaml`,
		Args: cobra.ExactArgs(1),
	}
	p := addPrintFlags(cmd)
	cmd.Flags().StringVar(&since, "since", "", `keep the intervals that end after this time: RFC 3339, "now" or "10m ago" (default: all)`)
	cmd.Flags().StringVar(&until, "until", "", `keep the intervals that begin before this time (default: all)`)
	cmd.Flags().StringSliceVar(&resources, "resource", nil, "look only at these resource types (deploy, cm, deployments.apps, …; repeatable)")
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "the whole cluster instead of one namespace")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "look only at versions whose labels matched this selector (e.g. app=web)")
	cmd.Flags().BoolVar(&first, "first", false, "print only each object's first interval: the first moment the condition became true")
	cmd.Flags().BoolVar(&stillTrue, "now", false, "print only the intervals still open: true at the last evidence")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		// A usage error before any work, whether a journal or a server
		// answers; the journal compiles it again for its request.
		if _, err := cel.Compile(args[0]); err != nil {
			return usagef("%v", err)
		}
		ctx := cmd.Context()
		src, cluster, err := e.openCluster(ctx, false)
		if err != nil {
			return err
		}
		defer src.Close()
		q := materialize.FindQuery{Scope: e.scopeOf(cluster, all), LabelSelector: selector, First: first, Now: stillTrue}
		if q.Since, err = optionalTime("since", since, e.now()); err != nil {
			return err
		}
		if q.Until, err = optionalTime("until", until, e.now()); err != nil {
			return err
		}
		namespace := ""
		if !all {
			namespace = e.namespace()
		}
		if q.Scope.Resources, err = resolveTypes(ctx, src, cluster, namespace, resources, e.now()); err != nil {
			return err
		}
		found, err := src.Find(ctx, q, args[0])
		if err != nil {
			return err
		}
		e.warnMissing(found.Missing, found.Warnings, false)
		var refs []event.ResourceRef
		for _, o := range found.Objects {
			refs = append(refs, o.Intervals[0].Opened.Ref)
		}
		return p.print(e.Out, view{value: found, names: refs, table: func(w io.Writer, _ string) error {
			return findTable(w, found)
		}})
	}
	return cmd
}

// optionalTime parses a time flag that may be left empty.
func optionalTime(name, value string, now time.Time) (time.Time, error) {
	if value == "" {
		return time.Time{}, nil
	}
	return parseTime(name, value, now)
}

// resolveTypes resolves --resource's types against what the journal
// records in namespace ("": anywhere).
func resolveTypes(ctx context.Context, src source, cluster, namespace string, types []string, now time.Time) ([]schema.GroupResource, error) {
	var out []schema.GroupResource
	for _, typ := range types {
		gr, err := resolveType(ctx, src, cluster, namespace, typ, now)
		if err != nil {
			return nil, err
		}
		out = append(out, gr)
	}
	return out, nil
}

// findTable prints one line per interval: the object, from, to, who and
// the unknown ends.
func findTable(w io.Writer, f *materialize.Found) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "NAMESPACE\tOBJECT\tFROM\tTO\tWHO\tUNKNOWN")
	for _, o := range f.Objects {
		for _, iv := range o.Intervals {
			to := "(still true)"
			if !iv.Open() {
				to = ts(iv.To)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", orNone(o.Object.Namespace), refString(iv.Opened.Ref), ts(iv.From), to,
				intervalWho(iv), orNone(intervalUnknown(iv)))
		}
	}
	return tw.Flush()
}

// intervalUnknown says which ends of an interval the journal cannot
// tell, and why ("" when it knows both).
func intervalUnknown(iv materialize.Interval) string {
	var unknown []string
	if iv.StartUnknown != "" {
		unknown = append(unknown, "before: "+iv.StartUnknown)
	}
	if iv.EndUnknown != "" {
		unknown = append(unknown, "after: "+iv.EndUnknown)
	}
	return strings.Join(unknown, "; ")
}

// intervalWho names who made the versions that bound an interval, as
// history does (the audit user, else the field managers): "opened → closed"
// when a version closed it. A start the journal cannot tell has no who.
func intervalWho(iv materialize.Interval) string {
	opened := "?"
	if iv.StartUnknown == "" {
		opened = who(iv.Opened, nil)
	}
	if iv.Closed == nil {
		return opened
	}
	return opened + " → " + who(iv.Closed, nil)
}
