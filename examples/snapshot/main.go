// Command snapshot prints the state of a scope at a time from a journal
// written by examples/record: every object alive then, whether that picture
// is complete, and which streams are missing if it is not. It only reads the
// journal, unless --save NAME asks it to save the snapshot there.
//
//	go run ./examples/snapshot --store krply.db --namespace shop --at "10m ago"
//	go run ./examples/snapshot --store krply.db --namespace shop --at "10m ago" --save before-rollout
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/krply/krply"
	"github.com/krply/krply/examples/internal/cli"
)

func main() {
	var namespaces cli.Strings
	store := cli.StoreFlag(flag.CommandLine)
	flag.Var(&namespaces, "namespace", "namespace to include, repeatable (default: the whole cluster)")
	at := flag.String("at", "now", `time of the snapshot: RFC 3339, "now" or "10m ago"`)
	cluster := flag.String("cluster", "", "cluster ID (default: the only one in the journal)")
	save := flag.String("save", "", "save the snapshot in the journal under this name (default: save nothing)")
	output := flag.String("o", "table", "output: table, yaml or json")
	flag.Parse()
	if err := run(os.Stdout, *store, *cluster, namespaces, *at, *save, *output); err != nil {
		cli.Fail("snapshot", err)
	}
}

// run prints the snapshot; save, when not empty, names it in the journal.
func run(out io.Writer, store, cluster string, namespaces []string, at, save, output string) error {
	ctx := context.Background()
	when, err := cli.ParseTime(at, time.Now())
	if err != nil {
		return err
	}
	j, cluster, err := cli.OpenJournal(ctx, store, cluster, cli.ReadOnlyUnless(save != "")...)
	if err != nil {
		return err
	}
	defer j.Close()
	snap, err := j.Snapshot(ctx, krply.Namespaces(cluster, namespaces...), when)
	if err != nil {
		return err
	}
	if save != "" {
		if err := j.SaveSnapshot(ctx, snap, save); err != nil {
			return err
		}
	}
	switch output {
	case "json":
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		return enc.Encode(snap)
	case "yaml":
		raw, err := yaml.Marshal(snap)
		if err != nil {
			return err
		}
		_, err = out.Write(raw)
		return err
	case "table":
		return table(out, snap)
	}
	return fmt.Errorf("-o %q: want table, yaml or json", output)
}

func table(out io.Writer, s *krply.Snapshot) error {
	complete := "yes"
	if !s.Complete {
		complete = "NO — the journal may miss changes before this time"
	}
	saved := "not saved (--save NAME saves it)"
	if s.ID != "" {
		saved = fmt.Sprintf("saved as %q, ID %s", s.Name, s.ID)
	}
	fmt.Fprintf(out, "snapshot of cluster %s at %s, %s\ncomplete: %s\n", s.Scope.ClusterID, s.At.Local().Format(time.RFC3339), saved, complete)
	for _, m := range s.Missing {
		what := m.StreamID
		if what == "" {
			what = m.Resource.String() + " " + m.Namespace
		}
		fmt.Fprintf(out, "missing: %s: %s\n", what, m.Reason)
	}
	for _, w := range s.Warnings {
		fmt.Fprintf(out, "warning: %s\n", w)
	}
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "\nSTREAM\tCOVERED\tWATERMARK (resourceVersion)\tOBSERVED")
	for _, w := range s.Watermarks {
		fmt.Fprintf(tw, "%s\t%v\t%s\t%s\n", w.StreamID, w.Covered, w.ResourceVersion, w.ObservedAt.Local().Format("15:04:05"))
	}
	fmt.Fprintln(tw, "\nKIND\tNAMESPACE\tNAME\tOBSERVED (by krply)\tFROM")
	for _, o := range s.Objects {
		from := "watch"
		if o.Synthetic {
			from = "list"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", o.Ref.Kind, o.Ref.Namespace, o.Ref.Name, o.ObservedAt.Local().Format(time.RFC3339), from)
	}
	return tw.Flush()
}
