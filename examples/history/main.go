// Command history prints one object's timeline from a journal written by
// examples/record: every version, the fields that changed, the gaps of the
// streams that record it, and — given the API server's audit log — who made
// each change. It only reads the journal, unless --audit-log asks it to link
// the log's writes to the journal's events: those links are saved in the
// journal, so later histories show them too.
//
//	go run ./examples/history --store krply.db --resource deployments --namespace shop --name web --audit-log audit.log
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/krply/krply/examples/internal/cli"
	"github.com/krply/krply/materialize"
)

func main() {
	var auditLogs cli.Strings
	store := cli.StoreFlag(flag.CommandLine)
	cluster := flag.String("cluster", "", "cluster ID (default: the only one in the journal)")
	resource := flag.String("resource", "", `plural resource, with its group when ambiguous: "deployments", "deployments.apps"`)
	namespace := flag.String("namespace", "", "the object's namespace (empty for cluster-scoped objects)")
	name := flag.String("name", "", "the object's name")
	status := flag.Bool("status", false, "show changes of status too")
	flag.Var(&auditLogs, "audit-log", "kube-apiserver audit log (JSON lines, rotated files and .gz welcome) to correlate first, repeatable; saves the links in the journal")
	flag.Parse()
	if *resource == "" || *name == "" {
		cli.Fail("history", fmt.Errorf("--resource and --name are required"))
	}
	if err := run(os.Stdout, *store, *cluster, *resource, *namespace, *name, *status, auditLogs); err != nil {
		cli.Fail("history", err)
	}
}

func run(out io.Writer, store, cluster, resource, namespace, name string, status bool, auditLogs []string) error {
	ctx := context.Background()
	j, cluster, err := cli.OpenJournal(ctx, store, cluster, cli.ReadOnlyUnless(len(auditLogs) > 0)...)
	if err != nil {
		return err
	}
	defer j.Close()
	if len(auditLogs) > 0 {
		sum, err := cli.Correlate(ctx, j.Store(), cluster, auditLogs...)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "audit: %d events, %d writes matched exactly, %d by best effort (links saved in the journal), %d unmatched, %d malformed lines\n",
			sum.Events, sum.Exact, sum.Scored, sum.Unmatched, sum.Malformed)
	}
	obj, err := cli.ObjectID(ctx, j.Store(), cluster, resource, namespace, name)
	if err != nil {
		return err
	}
	h, err := j.History(ctx, obj, materialize.IncludeStatus(status))
	if err != nil {
		return err
	}
	for _, w := range h.Warnings {
		fmt.Fprintf(out, "warning: %s\n", w)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "OBSERVED (by krply)\tEVENT\tFROM\tWHO\tCHANGES")
	for _, e := range h.Entries {
		at := e.ObservedAt.Local().Format("2006-01-02 15:04:05")
		switch {
		case e.Gap != nil:
			fmt.Fprintf(tw, "%s\tGAP\t\t\tchanges since %s may be missing: %s\n", at, e.Gap.From.Local().Format("15:04:05"), e.Gap.Reason)
		case e.Coverage != nil:
			fmt.Fprintf(tw, "%s\t%s\t\t\t%s\n", at, strings.ToUpper(string(e.Kind)), e.Coverage.Reason)
		case e.Version != nil:
			v := e.Version
			who := "-"
			if len(v.Provenance) > 0 {
				p := v.Provenance[0]
				who = fmt.Sprintf("%s %s", p.User, p.Verb)
				if p.Confidence < 1 {
					who += fmt.Sprintf(" (%.0f%%)", 100*p.Confidence)
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", at, v.WatchType, v.Origin, who, changes(v))
		}
	}
	return tw.Flush()
}

func changes(v *materialize.Version) string {
	if v.Inferred != nil {
		return fmt.Sprintf("deleted between %s and %s (%s)", v.Inferred.From.Local().Format("15:04:05"), v.Inferred.To.Local().Format("15:04:05"), v.Inferred.Reason)
	}
	return cli.FormatChanges(v.Changes)
}
