// Command snapshot prints what a namespace looked like at a time, from a
// journal that examples/record wrote, and whether that picture is complete:
// the library calls behind `kubectl krply snapshot`. It only reads the
// journal, unless --save NAME asks it to save the snapshot there.
//
//	go run ./examples/snapshot --journal krply.db --namespace shop --at "10m ago"
//	go run ./examples/snapshot --journal krply.db --namespace shop --at "10m ago" --save before-rollout
package main

import (
	"bufio"
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
	namespace := flag.String("namespace", "", "namespace (default: the whole cluster)")
	at := flag.String("at", "now", `time: RFC 3339, "now" or "10m ago"`)
	save := flag.String("save", "", "save the snapshot in the journal under this name")
	flag.Parse()
	out := bufio.NewWriter(os.Stdout) // a line per object: one write, not thousands
	err := run(out, *journal, *namespace, *at, *save)
	if ferr := out.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "snapshot:", err)
		os.Exit(1)
	}
}

func run(out io.Writer, path, namespace, at, save string) error {
	when, err := server.ParseTime(at, time.Now())
	if err != nil {
		return err
	}
	ctx := context.Background()
	var opts []krply.Option
	if save == "" {
		opts = append(opts, krply.WithReadOnly()) // a query only reads
	}
	j, err := krply.Open(ctx, path, opts...)
	if err != nil {
		return err
	}
	defer j.Close()
	streams, err := j.Store().Streams(ctx, "")
	if err != nil || len(streams) == 0 {
		return errors.Join(err, errors.New("the journal has recorded nothing yet"))
	}
	scope := krply.Namespaces(streams[0].Stream.ClusterID)
	if namespace != "" {
		scope = krply.Namespaces(streams[0].Stream.ClusterID, namespace)
	}
	snap, err := j.Snapshot(ctx, scope, when)
	if err != nil {
		return err
	}
	if save != "" {
		if err := j.SaveSnapshot(ctx, snap, save); err != nil { // an explicit act
			return err
		}
		fmt.Fprintf(out, "saved as %q, ID %s\n", snap.Name, snap.ID)
	}
	// Complete means every stream of the scope is covered at that time;
	// Missing says which are not, and why.
	fmt.Fprintf(out, "snapshot at %s: complete: %v\n", snap.At.Format(time.RFC3339Nano), snap.Complete)
	for _, m := range snap.Missing {
		fmt.Fprintf(out, "missing %s: %s\n", m.StreamID, m.Reason)
	}
	for _, o := range snap.Objects {
		fmt.Fprintf(out, "%s %s/%s resourceVersion %s (observed %s)\n", o.Ref.Kind, o.Ref.Namespace, o.Ref.Name, o.Ref.ResourceVersion, o.ObservedAt.Format(time.RFC3339Nano))
	}
	return nil
}
