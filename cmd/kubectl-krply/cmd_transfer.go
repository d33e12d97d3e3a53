package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/krply/krply"
	"github.com/krply/krply/recorder"
	"github.com/krply/krply/storage/transfer"
)

// export and import move a journal between files and backends (SQLite,
// PostgreSQL) through the versioned NDJSON of storage/transfer. They work
// on --journal only: a recorder's query API serves answers, not journals.

func (e *env) exportCommand() *cobra.Command {
	var file, since, until string
	cmd := &cobra.Command{
		Use:   "export",
		Short: "Write the journal (or the clusters and times chosen) as versioned NDJSON",
		Long: `export writes the records of the journal as NDJSON (storage/transfer's
format: a header line, one record per line with its body exactly as
recorded, the streams, a trailer), to stdout or --file. The journal is
opened read-only, so a running recorder may keep writing it. import reads
the file back into any journal, SQLite or PostgreSQL; export verify checks
a file without importing it. With --progress (the default when stderr is a
terminal) stderr gets the records written, records/s and, for an export
not restricted in time, the share done, every second and at the end;
stdout holds only the export.`,
		Example: `  kubectl krply export --journal krply.db > krply.ndjson
  kubectl krply export --cluster-id prod --since "24h ago" -f last-day.ndjson
  kubectl krply export --journal postgres://krply@db/krply -f krply.ndjson --progress
  kubectl krply export verify krply.ndjson`,
		Args: noArgs,
	}
	cmd.Flags().StringVarP(&file, "file", "f", "", "write to this file instead of stdout")
	cmd.Flags().StringVar(&since, "since", "", "only records observed at or after this time (RFC 3339, or 2h ago)")
	cmd.Flags().StringVar(&until, "until", "", "only records observed before this time (RFC 3339, or 10m ago)")
	addProgressFlag(cmd)
	cmd.AddCommand(e.exportVerifyCommand())
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
		j, closeJournal, err := e.transferJournal(cmd.Context(), true)
		if err != nil {
			return err
		}
		defer closeJournal()
		m := newMeter(e.ErrOut, "export", clock.RealClock{})
		progress := e.progressWanted(cmd)
		if progress {
			m.totalRecords = exportTotal(cmd.Context(), j.Store(), e.clusterID, since != "" || until != "")
			opts = append(opts, transfer.WithProgress(m.report))
		}
		out := e.Out
		if file != "" {
			f, err := os.Create(file)
			if err != nil {
				return fmt.Errorf("--file %s: %w", file, errors.Unwrap(err))
			}
			defer f.Close()
			out = f
		}
		res, err := transfer.Export(cmd.Context(), j.Store(), out, opts...)
		if err != nil {
			return err
		}
		if progress {
			m.done(res.Progress)
		}
		if f, ok := out.(*os.File); ok && file != "" {
			if err := f.Close(); err != nil {
				return fmt.Errorf("--file %s: %w", file, err)
			}
		}
		fmt.Fprintf(e.ErrOut, "exported %s of %s and %s (%s, %s) in %s\n",
			count(res.Records, "record"), count(int64(res.Streams), "stream"), count(int64(len(res.Clusters)), "cluster"),
			count(res.Lines, "line"), byteSize(res.Bytes), m.clock.Since(m.started).Round(time.Millisecond))
		return nil
	}
	return cmd
}

func (e *env) importCommand() *cobra.Command {
	var verify bool
	cmd := &cobra.Command{
		Use:   "import [FILE]",
		Short: "Read an export (a FILE, or stdin) into the journal; importing twice stores nothing twice",
		Long: `import reads an export of storage/transfer's NDJSON into --journal (a SQLite
file, created when missing, or a PostgreSQL URL). Records already in the
journal are skipped, so an import can be repeated. A corrupt or cut file
fails with its line number; the journal then holds whole batches only, and
importing the whole file again completes it. --verify checks a file
without writing anything, as 'kubectl krply export verify' does.`,
		Example: `  kubectl krply import --journal copy.db krply.ndjson
  kubectl krply import --journal postgres://krply@db/krply < krply.ndjson
  kubectl krply import --verify krply.ndjson`,
		Args: oneFileOrStdin,
	}
	cmd.Flags().BoolVar(&verify, "verify", false, "check the file (format, order, bodies, trailer) and write nothing, as export verify does")
	addProgressFlag(cmd)
	p := addPrintFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		in, name, closeInput, err := e.input(args)
		if err != nil {
			return err
		}
		defer closeInput()
		if verify {
			return e.verifyExport(cmd, in, name, p)
		}
		j, closeJournal, err := e.transferJournal(cmd.Context(), false)
		if err != nil {
			return err
		}
		defer closeJournal()
		m, opts := e.readMeter(cmd, "import", in)
		res, err := transfer.Import(cmd.Context(), in, j.Store(), opts...)
		if err != nil {
			return inputError(name, err, true)
		}
		if m != nil {
			m.done(res.Progress)
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

// exportVerifyCommand is "export verify FILE": a subcommand of export, as
// "kubectl rollout status" is of rollout, because what it checks is an
// export; a top-level "verify" would read as a check of the journal.
func (e *env) exportVerifyCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "verify [FILE]",
		Short: "Check an export (a FILE, or stdin) end to end without importing it",
		Long: `export verify reads an export as import does and stores nothing: the
header and its format version, every line (JSON of the kind its place calls
for, each record one a journal accepts, each body matching its objectHash),
the order of the lines, and the trailer's record and stream counts. A file
that fails exits 1 naming the line and what is wrong with it; a file that
passes prints its records, streams, clusters and time range. A file that
verifies imports into an empty journal.`,
		Example: `  kubectl krply export verify krply.ndjson
  kubectl krply export --journal krply.db | kubectl krply export verify`,
		Args: oneFileOrStdin,
	}
	addProgressFlag(cmd)
	p := addPrintFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		in, name, closeInput, err := e.input(args)
		if err != nil {
			return err
		}
		defer closeInput()
		return e.verifyExport(cmd, in, name, p)
	}
	return cmd
}

// verifyExport checks an export (export verify, import --verify) and
// prints what it holds.
func (e *env) verifyExport(cmd *cobra.Command, in io.Reader, name string, p *printFlags) error {
	m, opts := e.readMeter(cmd, "verify", in)
	res, err := transfer.Verify(cmd.Context(), in, opts...)
	if err != nil {
		return inputError(name, err, false)
	}
	if m != nil {
		m.done(res.Progress)
	}
	return p.print(e.Out, view{value: res, table: func(w io.Writer, _ string) error {
		fmt.Fprintf(w, "%s: a valid krply export: %s, %s, clusters %s\n", name,
			count(res.Records, "record"), count(int64(res.Streams), "stream"), orNone(strings.Join(res.Clusters, ", ")))
		if res.Records > 0 {
			fmt.Fprintf(w, "records observed from %s to %s\n", ts(res.FirstObservedAt), ts(res.LastObservedAt))
		}
		return nil
	}})
}

func addProgressFlag(cmd *cobra.Command) {
	cmd.Flags().Bool("progress", false, "report progress on stderr: records, records/s, share done (default: when stderr is a terminal)")
}

// readMeter returns the progress meter of a read of in, and the option
// that feeds it; nil and none when progress is not wanted.
func (e *env) readMeter(cmd *cobra.Command, what string, in io.Reader) (*meter, []transfer.ImportOption) {
	if !e.progressWanted(cmd) {
		return nil, nil
	}
	m := newMeter(e.ErrOut, what, clock.RealClock{})
	m.totalBytes = fileSize(in)
	return m, []transfer.ImportOption{transfer.WithProgress(m.report)}
}

func oneFileOrStdin(cmd *cobra.Command, args []string) error {
	if len(args) > 1 {
		return usagef("%s reads one FILE (or stdin)", cmd.CommandPath())
	}
	return nil
}

// input opens the FILE argument, or stdin without one.
func (e *env) input(args []string) (io.Reader, string, func(), error) {
	if len(args) == 0 {
		return e.In, "stdin", func() {}, nil
	}
	f, err := os.Open(args[0])
	if err != nil {
		return nil, "", nil, fmt.Errorf("FILE %s: %w", args[0], errors.Unwrap(err))
	}
	return f, args[0], func() { f.Close() }, nil
}

// inputError says where an export is wrong: the file and the line, and
// for an import what the journal holds of it.
func inputError(name string, err error, importing bool) error {
	var le *transfer.LineError
	if !errors.As(err, &le) {
		return err
	}
	msg := fmt.Sprintf("%s line %d: %s", name, le.Line, strings.TrimPrefix(le.Err.Error(), "transfer: "))
	if importing && le.Records > 0 {
		msg += fmt.Sprintf("; the journal holds the first %d records of the file: import the whole file again to complete it", le.Records)
	}
	return &lineError{msg: msg, err: err}
}

// lineError is a LineError in the words of the command line.
type lineError struct {
	msg string
	err error
}

func (e *lineError) Error() string { return e.msg }
func (e *lineError) Unwrap() error { return e.err }

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
		return nil, nil, recorder.JournalError(e.journal, err)
	}
	return j, closeJournal, nil
}
