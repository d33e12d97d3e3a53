package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/krply/krply"
	"github.com/krply/krply/recorder"
	"github.com/krply/krply/storage/transfer"
)

// export and import move a journal between files and backends (SQLite,
// PostgreSQL) through the versioned NDJSON of storage/transfer. They work
// on --journal only: a recorder's query API serves answers, not journals.

func (e *env) exportCommand() *cobra.Command {
	var file, since, until string
	var progress bool
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the journal (or the clusters and times chosen) as versioned NDJSON",
		Long: `export writes the records of the journal as NDJSON (storage/transfer's
format: a header line, one record per line with its body exactly as
recorded, the streams, a trailer), to stdout or --file. The journal is
opened read-only, so a running recorder may keep writing it. import reads
the file back into any journal, SQLite or PostgreSQL.`,
		Example: `  kubectl krply export --journal krply.db > krply.ndjson
  kubectl krply export --cluster-id prod --since "24h ago" -f last-day.ndjson`,
		Args: noArgs,
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "write to this file instead of stdout")
	cmd.Flags().StringVar(&since, "since", "", "only records observed at or after this time (RFC 3339, or 2h ago)")
	cmd.Flags().StringVar(&until, "until", "", "only records observed before this time (RFC 3339, or 10m ago)")
	cmd.Flags().BoolVar(&progress, "progress", false, "report progress on stderr")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		opts := []transfer.ExportOption{}
		if e.clusterID != "" {
			opts = append(opts, transfer.Clusters(e.clusterID))
		}
		for _, t := range []struct {
			flag, value string
			opt         func(time.Time) transfer.ExportOption
		}{{"since", since, transfer.Since}, {"until", until, transfer.Until}} {
			if t.value == "" {
				continue
			}
			at, err := parseTime(t.flag, t.value, e.now())
			if err != nil {
				return err
			}
			opts = append(opts, t.opt(at))
		}
		if progress {
			opts = append(opts, transfer.WithProgress(e.progress("export")))
		}
		j, closeJournal, err := e.transferJournal(cmd.Context(), true)
		if err != nil {
			return err
		}
		defer closeJournal()
		out := e.Out
		if file != "" {
			f, err := os.Create(file)
			if err != nil {
				return fmt.Errorf("--file: %w", err)
			}
			defer f.Close()
			out = f
		}
		res, err := transfer.Export(cmd.Context(), j.Store(), out, opts...)
		if err != nil {
			return err
		}
		if f, ok := out.(*os.File); ok && file != "" {
			if err := f.Close(); err != nil {
				return fmt.Errorf("--file: %w", err)
			}
		}
		fmt.Fprintf(e.ErrOut, "exported %d records of %d streams and %d clusters (%d lines)\n", res.Records, res.Streams, len(res.Clusters), res.Lines)
		return nil
	}
	return cmd
}

func (e *env) importCommand() *cobra.Command {
	var verify, progress bool
	cmd := &cobra.Command{
		Use:   "import [FILE]",
		Short: "Read an export (a FILE, or stdin) into the journal; importing twice stores nothing twice",
		Long: `import reads an export of storage/transfer's NDJSON into --journal (a SQLite
file, created when missing, or a PostgreSQL URL). Records already in the
journal are skipped, so an import can be repeated. A corrupt or cut file
fails with its line number; the journal then holds whole batches only, and
importing the whole file again completes it. --verify checks a file
without writing anything.`,
		Example: `  kubectl krply import --journal copy.db krply.ndjson
  kubectl krply import --journal postgres://krply@db/krply < krply.ndjson
  kubectl krply import --verify krply.ndjson`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("%s reads one FILE (or stdin)", cmd.CommandPath())
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&verify, "verify", false, "check the file (format, order, bodies) and write nothing")
	cmd.Flags().BoolVar(&progress, "progress", false, "report progress on stderr")
	p := addPrintFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		in := e.In
		name := "stdin"
		if len(args) == 1 {
			f, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer f.Close()
			in, name = f, args[0]
		}
		opts := []transfer.ImportOption{}
		if progress {
			opts = append(opts, transfer.WithProgress(e.progress("import")))
		}
		var res transfer.Result
		var err error
		if verify {
			res, err = transfer.Verify(cmd.Context(), in, opts...)
		} else {
			j, closeJournal, oerr := e.transferJournal(cmd.Context(), false)
			if oerr != nil {
				return oerr
			}
			defer closeJournal()
			res, err = transfer.Import(cmd.Context(), in, j.Store(), opts...)
		}
		if err != nil {
			var le *transfer.LineError
			if errors.As(err, &le) {
				return fmt.Errorf("%s: %w", name, err)
			}
			return err
		}
		return p.print(e.Out, view{value: res, table: func(w io.Writer, _ string) error {
			tw := newTable(w)
			fmt.Fprintln(tw, "LINES\tRECORDS\tSTREAMS\tCLUSTERS\tINSERTED\tDUPLICATES\tSTREAMS RESTORED")
			fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%d\n", res.Lines, res.Records, res.Streams, len(res.Clusters), res.Inserted, res.Duplicates, res.StreamsRestored)
			return tw.Flush()
		}})
	}
	return cmd
}

// transferJournal opens --journal for export (read-only; it must exist) or
// import (writable; a SQLite file is created when missing). --server is
// refused: the query API serves answers, not journals.
func (e *env) transferJournal(ctx context.Context, readOnly bool) (*krply.Journal, func() error, error) {
	if e.server != "" {
		return nil, nil, usagef("export and import work on --journal, not --server")
	}
	if readOnly && !isPostgres(e.journal) {
		if _, err := os.Stat(e.journal); err != nil {
			return nil, nil, fmt.Errorf("journal %s: %w (give --journal or KRPLY_JOURNAL)", e.journal, errors.Unwrap(err))
		}
	}
	j, closeJournal, err := openStore(ctx, e.journal, readOnly)
	if err != nil {
		return nil, nil, fmt.Errorf("journal %s: %w", recorder.Redacted(e.journal), err)
	}
	return j, closeJournal, nil
}

// progress reports a transfer's progress on stderr.
func (e *env) progress(what string) func(transfer.Progress) {
	started := time.Now()
	return func(p transfer.Progress) {
		fmt.Fprintf(e.ErrOut, "%s: %d records, %.1f MiB, %s\n", what, p.Records, float64(p.Bytes)/(1<<20), time.Since(started).Round(time.Millisecond))
	}
}
