// Command transfer exports a journal as NDJSON, imports such a file into a
// journal (a new one, or one that records other clusters), or checks a
// file without importing it (storage/transfer). Progress goes to stderr.
//
//	go run ./examples/transfer export --store krply.db -o krply.ndjson
//	go run ./examples/transfer verify -f krply.ndjson
//	go run ./examples/transfer import --store copy.db -f krply.ndjson
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
	"github.com/krply/krply/examples/internal/cli"
	"github.com/krply/krply/storage/transfer"
)

const usage = `usage: transfer export|import|verify [flags]; "transfer <command> -h" lists the flags`

func main() {
	if len(os.Args) < 2 {
		cli.Fail("transfer", errors.New(usage))
	}
	fs := flag.NewFlagSet("transfer "+os.Args[1], flag.ExitOnError)
	store := cli.StoreFlag(fs)
	file := fs.String("f", "-", "the NDJSON file to read (import, verify); - for stdin")
	output := fs.String("o", "-", "the NDJSON file to write (export); - for stdout")
	var clusters cli.Strings
	fs.Var(&clusters, "cluster", "export only this cluster, repeatable")
	since := fs.String("since", "", `export only records observed at or after this time ("2h ago", RFC 3339)`)
	until := fs.String("until", "", "export only records observed at or before this time")
	_ = fs.Parse(os.Args[2:])
	if err := run(context.Background(), os.Args[1], *store, *file, *output, clusters, *since, *until, os.Stdin, os.Stdout, os.Stderr); err != nil {
		cli.Fail("transfer", err)
	}
}

func run(ctx context.Context, command, store, file, output string, clusters []string, since, until string,
	stdin io.Reader, stdout, stderr io.Writer) error {
	started := time.Now()
	progress := transfer.WithProgress(func(p transfer.Progress) {
		fmt.Fprintf(stderr, "\r%d records, %.1f MiB, %s", p.Records, float64(p.Bytes)/(1<<20), time.Since(started).Round(time.Second))
	})
	var res transfer.Result
	var err error
	switch command {
	case "export":
		res, err = export(ctx, store, output, clusters, since, until, stdout, progress)
	case "import", "verify":
		in := stdin
		if file != "-" {
			f, err := os.Open(file)
			if err != nil {
				return err
			}
			defer f.Close()
			in = f
		}
		if command == "verify" {
			res, err = transfer.Verify(ctx, in, progress)
			break
		}
		// The journal is created when it does not exist yet.
		j, oerr := krply.Open(ctx, store)
		if oerr != nil {
			return oerr
		}
		res, err = transfer.Import(ctx, in, j.Store(), progress)
		err = errors.Join(err, j.Close())
	default:
		return errors.New(usage)
	}
	fmt.Fprintln(stderr)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "%s: %d records (%d inserted, %d already there), %d streams of clusters %v, %d lines, %d bytes in %s\n",
		command, res.Records, res.Inserted, res.Duplicates, res.Streams, res.Clusters, res.Lines, res.Bytes, time.Since(started).Round(time.Millisecond))
	return nil
}

func export(ctx context.Context, store, output string, clusters []string, since, until string, stdout io.Writer, progress transfer.Option) (transfer.Result, error) {
	opts := []transfer.ExportOption{progress}
	if len(clusters) > 0 {
		opts = append(opts, transfer.Clusters(clusters...))
	}
	now := time.Now()
	for _, b := range []struct {
		flag, value string
		option      func(time.Time) transfer.ExportOption
	}{{"since", since, transfer.Since}, {"until", until, transfer.Until}} {
		if b.value == "" {
			continue
		}
		t, err := cli.ParseTime(b.value, now)
		if err != nil {
			return transfer.Result{}, fmt.Errorf("--%s: %w", b.flag, err)
		}
		opts = append(opts, b.option(t))
	}
	j, err := cli.OpenExisting(ctx, store, krply.WithReadOnly())
	if err != nil {
		return transfer.Result{}, err
	}
	defer j.Close()
	out := stdout
	if output != "-" {
		f, err := os.Create(output)
		if err != nil {
			return transfer.Result{}, err
		}
		defer f.Close()
		out = f
	}
	res, err := transfer.Export(ctx, j.Store(), out, opts...)
	if f, ok := out.(*os.File); ok && out != stdout && err == nil {
		err = f.Sync()
	}
	return res, err
}
