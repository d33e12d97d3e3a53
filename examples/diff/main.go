// Command diff prints what changed in a namespace between two times, from a
// journal that examples/record wrote: the library calls behind
// `kubectl krply diff`. An object whose state the journal does not know at
// an end of the window (before recording began, inside a gap) is called
// unknown there, never added or removed.
//
//	go run ./examples/diff --journal krply.db --namespace shop --from "1h ago" --to now
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
	"github.com/krply/krply/server"
)

func main() {
	journal := flag.String("journal", "krply.db", "path of the SQLite journal")
	namespace := flag.String("namespace", "", "namespace to compare (default: the whole cluster)")
	from := flag.String("from", "1h ago", `start: RFC 3339, "now" or "10m ago"`)
	to := flag.String("to", "now", `end: RFC 3339, "now" or "10m ago"`)
	unified := flag.Bool("unified", false, "print a unified diff of the objects' YAML instead of a table")
	flag.Parse()
	if err := run(os.Stdout, *journal, *namespace, *from, *to, *unified); err != nil {
		fmt.Fprintln(os.Stderr, "diff:", err)
		os.Exit(1)
	}
}

func run(out io.Writer, path, namespace, from, to string, unified bool) error {
	now := time.Now()
	t1, err1 := server.ParseTime(from, now) // the parser the query API and kubectl krply use
	t2, err2 := server.ParseTime(to, now)
	if err := errors.Join(err1, err2); err != nil {
		return err
	}
	ctx := context.Background()
	j, err := krply.Open(ctx, path, krply.WithReadOnly()) // a query only reads
	if err != nil {
		return err
	}
	defer j.Close()
	streams, err := j.Store().Streams(ctx, "")
	if err != nil || len(streams) == 0 {
		return errors.Join(err, errors.New("the journal has recorded nothing yet"))
	}
	scope := krply.Namespaces(streams[0].Stream.ClusterID) // the whole cluster…
	if namespace != "" {
		scope = krply.Namespaces(streams[0].Stream.ClusterID, namespace) // …or one namespace
	}
	d, err := j.Diff(ctx, scope, t1, t2)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "changes from %s to %s: %d objects\n", t1.Format(time.RFC3339Nano), t2.Format(time.RFC3339Nano), len(d.Objects))
	// The renderers print the warnings (gaps in the window) first.
	if unified {
		return d.WriteUnified(out)
	}
	return d.WriteTable(out)
}
