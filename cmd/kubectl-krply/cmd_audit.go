package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/krply/krply/audit"
)

func (e *env) auditCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Link kube-apiserver audit logs to the journal, so history says who",
		Args:  noArgs,
	}
	cmd.AddCommand(e.auditIngestCommand())
	return cmd
}

func (e *env) auditIngestCommand() *cobra.Command {
	var tolerate bool
	cmd := &cobra.Command{
		Use:   "ingest FILE...",
		Short: "Link the writes of audit log files to the journal events they caused",
		Long: `audit ingest reads kube-apiserver audit logs (JSON lines; rotated and
gzipped files welcome), links each write to the journal event it caused,
and saves the links in the journal, so that history and blame show who made
each change. Ingesting the same log again stores nothing twice.

Malformed lines are listed on stderr, and make the command fail (exit code
1) unless --tolerate-malformed: the links of the lines that were read are
saved either way.`,
		Example: `  kubectl krply audit ingest /var/log/kubernetes/audit.log
  kubectl krply audit ingest audit.log audit-2026-12-01T10-00-00.log.gz --tolerate-malformed`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return usagef("%s wants one or more audit log FILEs", cmd.CommandPath())
			}
			return nil
		},
	}
	p := addPrintFlags(cmd)
	cmd.Flags().BoolVar(&tolerate, "tolerate-malformed", false, "succeed even when some lines are not audit events (they are still listed)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		ctx := cmd.Context()
		src, cluster, err := e.openCluster(ctx, true)
		if err != nil {
			return err
		}
		defer src.Close()
		sum, err := src.IngestAudit(ctx, cluster, args)
		if err != nil {
			return err
		}
		for _, prob := range sum.Problems {
			fmt.Fprintf(e.ErrOut, "malformed: %s\n", prob.Error())
		}
		if more := sum.Malformed - len(sum.Problems); more > 0 {
			fmt.Fprintf(e.ErrOut, "malformed: %d more lines not listed\n", more)
		}
		if err := p.print(e.Out, view{value: sum, table: func(w io.Writer, _ string) error { return auditTable(w, sum) }}); err != nil {
			return err
		}
		if sum.Malformed > 0 && !tolerate {
			return fmt.Errorf("%d malformed lines in %d audit events read (listed above); fix the log, or give --tolerate-malformed to accept what was read", sum.Malformed, sum.Events)
		}
		return nil
	}
	return cmd
}

func auditTable(w io.Writer, s audit.Summary) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "EVENTS\tEXACT\tBEST EFFORT\tUNMATCHED\tREAD ONLY\tSKIPPED\tMALFORMED\tLINKS SAVED\tALREADY SAVED")
	skipped := s.SkippedIncomplete + s.SkippedFailed + s.SkippedDryRun + s.SkippedNoObject + s.SkippedNoChange
	fmt.Fprintf(tw, "%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\n", s.Events, s.Exact, s.Scored, s.Unmatched, s.SkippedReadOnly, skipped, s.Malformed, s.Recorded, s.Duplicates)
	return tw.Flush()
}
