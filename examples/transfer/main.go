// Command transfer exports a journal as NDJSON, checks such a file, or
// imports it into a journal (a new one, or one that records other
// clusters): the library calls of storage/transfer, in a page. Progress
// goes to stderr.
//
//	go run ./examples/transfer --journal krply.db export > krply.ndjson
//	go run ./examples/transfer verify < krply.ndjson
//	go run ./examples/transfer --journal copy.db import < krply.ndjson
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
	"github.com/krply/krply/storage/transfer"
)

func main() {
	journal := flag.String("journal", "krply.db", "path of the SQLite journal")
	since := flag.String("since", "", "export only the records observed at or after this RFC 3339 time")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: transfer [--journal FILE] [--since TIME] export|verify|import (the NDJSON on stdout or stdin)")
		os.Exit(2)
	}
	if err := run(context.Background(), flag.Arg(0), *journal, *since, os.Stdin, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "transfer:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, command, path, since string, in io.Reader, out, log io.Writer) error {
	started := time.Now()
	progress := transfer.WithProgress(func(p transfer.Progress) {
		fmt.Fprintf(log, "%s: %d records, %.1f MiB, %s\n", command, p.Records, float64(p.Bytes)/(1<<20), time.Since(started).Round(time.Millisecond))
	})
	var res transfer.Result
	var err error
	switch command {
	case "export":
		opts := []transfer.ExportOption{progress}
		if since != "" {
			t, perr := time.Parse(time.RFC3339Nano, since)
			if perr != nil {
				return fmt.Errorf("--since: %w", perr)
			}
			opts = append(opts, transfer.Since(t))
		}
		// Export only reads: open the journal read-only, beside a recorder.
		j, oerr := krply.Open(ctx, path, krply.WithReadOnly())
		if oerr != nil {
			return oerr
		}
		res, err = transfer.Export(ctx, j.Store(), out, opts...)
		err = errors.Join(err, j.Close())
	case "verify":
		res, err = transfer.Verify(ctx, in, progress)
	case "import":
		// Open creates the journal when there is none yet. A cut or corrupt
		// file fails with its line (a *transfer.LineError) and leaves whole
		// batches; importing the whole file again completes it.
		j, oerr := krply.Open(ctx, path)
		if oerr != nil {
			return oerr
		}
		res, err = transfer.Import(ctx, in, j.Store(), progress)
		err = errors.Join(err, j.Close())
	default:
		return fmt.Errorf("command %q: want export, verify or import", command)
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(log, "%s: %d records (%d inserted, %d already there), %d streams of clusters %v\n",
		command, res.Records, res.Inserted, res.Duplicates, res.Streams, res.Clusters)
	return nil
}
