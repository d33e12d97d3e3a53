// Command history prints one object's versions from a journal that
// examples/record wrote: the library calls behind `kubectl krply history`,
// which adds kubectl's flags, short names and printers.
//
//	go run ./examples/history --journal krply.db --namespace shop deployments.apps/web
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/krply/krply"
)

func main() {
	journal := flag.String("journal", "krply.db", "path of the SQLite journal")
	namespace := flag.String("namespace", "", "the object's namespace (none for cluster-scoped objects)")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: history [--journal FILE] [--namespace NS] RESOURCE.GROUP/NAME, e.g. deployments.apps/web")
		os.Exit(2)
	}
	if err := run(os.Stdout, *journal, *namespace, flag.Arg(0)); err != nil {
		fmt.Fprintln(os.Stderr, "history:", err)
		os.Exit(1)
	}
}

func run(out io.Writer, path, namespace, object string) error {
	resource, name, ok := strings.Cut(object, "/")
	if !ok {
		return fmt.Errorf("%q: want RESOURCE.GROUP/NAME, e.g. deployments.apps/web or configmaps/settings", object)
	}
	ctx := context.Background()
	// A query only reads: open the journal read-only.
	j, err := krply.Open(ctx, path, krply.WithReadOnly())
	if err != nil {
		return err
	}
	defer j.Close()
	// Objects are named within a cluster; this journal records one.
	streams, err := j.Store().Streams(ctx, "")
	if err != nil || len(streams) == 0 {
		return errors.Join(err, errors.New("the journal has recorded nothing yet"))
	}
	h, err := j.History(ctx, krply.Object(streams[0].Stream.ClusterID, resource, namespace, name))
	if err != nil {
		return err
	}
	if len(h.Versions()) == 0 {
		return fmt.Errorf("the journal holds no version of %s", object)
	}
	// Entries are versions (with the fields that changed and, after an
	// audit log was ingested, who changed them), gaps, coverage changes and
	// relists that found the object unchanged (confirmations).
	for _, e := range h.Entries {
		at := e.ObservedAt.Format(time.RFC3339Nano) // when krply saw it
		switch {
		case e.Gap != nil:
			fmt.Fprintf(out, "%s GAP: changes since %s may be missing (%s)\n", at, e.Gap.From.Format(time.RFC3339Nano), e.Gap.Reason)
		case e.Confirmation != nil:
			fmt.Fprintf(out, "%s confirmed by relist: still at resourceVersion %s\n", at, e.Confirmation.ResourceVersion)
		case e.Version != nil:
			v, who := e.Version, "unknown"
			if len(v.Provenance) > 0 {
				who = v.Provenance[0].User
			}
			fmt.Fprintf(out, "%s %s resourceVersion %s from %s, by %s\n", at, v.WatchType, v.ResourceVersion, v.Origin, who)
			for _, c := range v.Changes {
				fmt.Fprintf(out, "    %s %s: %v → %v\n", c.Op, c.Path, c.Before, c.After)
			}
		}
	}
	return nil
}
