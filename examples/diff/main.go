// Command diff prints what changed in a scope between two times, from a
// journal written by examples/record: objects added, removed and changed,
// with field paths and values, as a table or a unified diff. It warns when
// the journal may miss changes in that window, and says which objects'
// state it does not know at an end of it (before recording began, inside a
// gap) instead of calling them added or removed.
//
//	go run ./examples/diff --store krply.db --namespace shop --from "1h ago" --to now
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/krply/krply"
	"github.com/krply/krply/examples/internal/cli"
	"github.com/krply/krply/materialize"
)

func main() {
	var namespaces cli.Strings
	store := cli.StoreFlag(flag.CommandLine)
	cluster := flag.String("cluster", "", "cluster ID (default: the only one in the journal)")
	flag.Var(&namespaces, "namespace", "namespace to compare, repeatable (default: the whole cluster)")
	from := flag.String("from", "1h ago", `start: RFC 3339, "now" or "10m ago"`)
	to := flag.String("to", "now", `end: RFC 3339, "now" or "10m ago"`)
	status := flag.Bool("status", false, "compare status too")
	output := flag.String("o", "table", "output: table or unified")
	flag.Parse()
	if err := run(os.Stdout, *store, *cluster, namespaces, *from, *to, *status, *output); err != nil {
		cli.Fail("diff", err)
	}
}

func run(out io.Writer, store, cluster string, namespaces []string, from, to string, status bool, output string) error {
	ctx := context.Background()
	now := time.Now()
	t1, err := cli.ParseTime(from, now)
	if err != nil {
		return err
	}
	t2, err := cli.ParseTime(to, now)
	if err != nil {
		return err
	}
	j, cluster, err := cli.OpenJournal(ctx, store, cluster, krply.WithReadOnly())
	if err != nil {
		return err
	}
	defer j.Close()
	d, err := j.Diff(ctx, krply.Namespaces(cluster, namespaces...), t1, t2, materialize.IncludeStatus(status))
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "changes from %s to %s: %d objects\n", t1.Local().Format(time.RFC3339), t2.Local().Format(time.RFC3339), len(d.Objects))
	unknown := 0
	for _, od := range d.Objects {
		if od.Type == materialize.ObjectUnknown {
			unknown++
		}
	}
	if unknown > 0 {
		fmt.Fprintf(out, "%d of them unknown at an end of the window: the journal did not cover them there, so it cannot say whether they were added, removed or changed\n", unknown)
	}
	switch output {
	case "table":
		return d.WriteTable(out)
	case "unified":
		return d.WriteUnified(out)
	}
	return fmt.Errorf("-o %q: want table or unified", output)
}
