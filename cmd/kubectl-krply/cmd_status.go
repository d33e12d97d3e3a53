package main

import (
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// streamReport is one stream in `status`: what the journal holds of it,
// and its coverage at its last evidence of continuity.
type streamReport struct {
	storage.StreamStatus
	// Coverage is the stream's coverage now: time is covered from its
	// BaselineEndAt to LastObservedAt, the last evidence, when it is
	// continuous (a complete baseline, no loss since).
	Coverage storage.Coverage `json:"coverage"`
	// Covered says whether the stream is covered from Coverage.BaselineEndAt
	// up to its last evidence.
	Covered bool `json:"covered"`
	// Lag is how long before now the last evidence was observed: the
	// most recent time that is "not yet observed".
	Lag string `json:"lag"`
}

func (e *env) statusCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the journal's streams: coverage, gaps, lag of the evidence",
		Long: `status lists the streams the journal records (one per resource and
namespace): whether each is available, covered since when, how far its
evidence of continuity reaches (LAG: how long ago; a live recorder keeps it
within about 10s), how many gaps it had, and its last resourceVersion. A
covered stream is covered from COVERED SINCE to EVIDENCE UNTIL; later times
are not yet observed.
Streams of every namespace are shown unless -n is given.`,
		Example: `  kubectl krply status
  kubectl krply status -o wide`,
		Args: noArgs,
	}
	p := addPrintFlags(cmd, "wide")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		ctx := cmd.Context()
		src, cluster, err := e.openCluster(ctx, false)
		if err != nil {
			return err
		}
		defer src.Close()
		now := e.now()
		ns := ""
		if cmd.Flags().Changed("namespace") {
			ns = e.namespace()
		}
		streams, err := src.Streams(ctx, cluster, ns, now)
		if err != nil {
			return err
		}
		var reports []streamReport
		for _, info := range streams {
			st, cov := info.Status, info.Coverage
			if ns != "" && st.Stream.Namespace != ns && st.Stream.Namespace != "" {
				continue
			}
			r := streamReport{StreamStatus: st, Coverage: cov, Covered: st.Available && cov.Continuous(), Lag: since(st.LastObservedAt, now)}
			switch {
			case !st.Available:
				e.warnIncomplete("stream %s is unavailable: %s", st.StreamID, st.AvailabilityReason)
			case !cov.Continuous():
				e.warnIncomplete("stream %s is not covered: %s", st.StreamID, cov.Reason)
			}
			reports = append(reports, r)
		}
		sort.Slice(reports, func(i, j int) bool { return reports[i].StreamID < reports[j].StreamID })
		return p.print(e.Out, view{value: reports, table: func(w io.Writer, format string) error {
			return statusTable(w, reports, format == "wide")
		}})
	}
	return cmd
}

func statusTable(w io.Writer, reports []streamReport, wide bool) error {
	tw := newTable(w)
	header := "RESOURCE\tNAMESPACE\tAVAILABLE\tCOVERED\tCOVERED SINCE\tEVIDENCE UNTIL\tLAG\tGAPS\tRESOURCEVERSION"
	if wide {
		header += "\tRECORDS\tLAST GAP\tSTREAM\tREASON"
	}
	fmt.Fprintln(tw, header)
	for _, r := range reports {
		res := r.Stream.Resource
		if r.Stream.Group != "" {
			res += "." + r.Stream.Group
		}
		ns := r.Stream.Namespace
		if ns == "" {
			ns = "*"
		}
		line := fmt.Sprintf("%s\t%s\t%v\t%v\t%s\t%s\t%s\t%d\t%s", res, ns, r.Available, r.Covered,
			ts(r.Coverage.BaselineEndAt), ts(r.LastObservedAt), r.Lag, r.Gaps, orNone(r.CheckpointRV))
		if wide {
			reason := r.AvailabilityReason
			if reason == "" {
				reason = r.Coverage.Reason
			}
			line += fmt.Sprintf("\t%d\t%s\t%s\t%s", r.Records, ts(r.LastGapAt), r.StreamID, orNone(reason))
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

func (e *env) gapsCommand() *cobra.Command {
	var sinceFlag, untilFlag string
	cmd := &cobra.Command{
		Use:   "gaps",
		Short: "List the times the journal may miss changes: gaps and unavailable streams",
		Long: `gaps lists every loss of continuity the journal recorded: gaps (a 410 Gone,
an outage, a recorder restart too late to resume; FROM is the stream's last
evidence, TO the end of the relist that closed it) and streams that became
unavailable or available again (403, a removed CRD). Changes inside a gap
may be missing from every answer; answers that touch one say so.`,
		Example: `  kubectl krply gaps
  kubectl krply gaps --since "1h ago" -o json`,
		Args: noArgs,
	}
	p := addPrintFlags(cmd)
	cmd.Flags().StringVar(&sinceFlag, "since", "", `only losses observed at or after this time: RFC 3339, "now" or "10m ago"`)
	cmd.Flags().StringVar(&untilFlag, "until", "", `only losses observed at or before this time`)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		now := e.now()
		var from, to time.Time
		var err error
		if sinceFlag != "" {
			if from, err = parseTime("since", sinceFlag, now); err != nil {
				return err
			}
		}
		if untilFlag != "" {
			if to, err = parseTime("until", untilFlag, now); err != nil {
				return err
			}
		}
		ctx := cmd.Context()
		src, cluster, err := e.openCluster(ctx, false)
		if err != nil {
			return err
		}
		defer src.Close()
		losses, err := src.Losses(ctx, cluster, "", from, to)
		if err != nil {
			return err
		}
		if losses == nil {
			losses = []event.Record{}
		}
		return p.print(e.Out, view{value: losses, table: func(w io.Writer, _ string) error { return gapsTable(w, losses) }})
	}
	return cmd
}

func gapsTable(w io.Writer, losses []event.Record) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "OBSERVED\tKIND\tRESOURCE\tNAMESPACE\tFROM\tTO\tREASON")
	for _, r := range losses {
		st, _ := event.ParseStreamID(r.StreamID)
		res := st.Resource
		if st.Group != "" {
			res += "." + st.Group
		}
		ns := st.Namespace
		if ns == "" {
			ns = "*"
		}
		switch {
		case r.Gap != nil:
			fmt.Fprintf(tw, "%s\tgap\t%s\t%s\t%s\t%s\t%s\n", ts(r.ObservedAt), res, ns, ts(r.Gap.From), ts(r.Gap.To), r.Gap.Reason)
		case r.Coverage != nil:
			kind := "unavailable"
			if r.Coverage.Available {
				kind = "available"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t-\t-\t%s\n", ts(r.ObservedAt), kind, res, ns, r.Coverage.Reason)
		}
	}
	return tw.Flush()
}
