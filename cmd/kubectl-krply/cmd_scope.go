package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
)

// scopeOf is the namespace -n names (the kubeconfig context's by
// default), or the whole cluster with -A.
func (e *env) scopeOf(cluster string, all bool) materialize.Scope {
	if all {
		return materialize.Scope{ClusterID: cluster}
	}
	return materialize.Scope{ClusterID: cluster, Namespaces: []string{e.namespace()}}
}

func scopeName(s materialize.Scope) string {
	if len(s.Namespaces) == 0 {
		return "all namespaces"
	}
	return "namespace " + strings.Join(s.Namespaces, ", ")
}

// missingName names a stream an answer lacks: its ID, or the resource
// and namespace no stream records.
func missingName(m materialize.MissingStream) string {
	if m.StreamID != "" {
		return m.StreamID
	}
	if m.Namespace != "" {
		return m.Resource.String() + " in " + m.Namespace
	}
	return m.Resource.String()
}

// warnMissing warns about the streams an answer lacks, and prints its
// warnings: as incomplete when gaps intersect the answer.
func (e *env) warnMissing(missing []materialize.MissingStream, warnings []string, gaps bool) {
	for _, m := range missing {
		e.warnIncomplete("%s: %s", missingName(m), m.Reason)
	}
	for _, w := range warnings {
		if gaps {
			e.warnIncomplete("%s", w)
		} else {
			fmt.Fprintf(e.ErrOut, "warning: %s\n", w)
		}
	}
}

func (e *env) snapshotCommand() *cobra.Command {
	var at, save, selector string
	var all bool
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "List the objects of a namespace (or cluster) as they were at a time",
		Long: `snapshot lists every object alive at --at in the namespace -n names (the
kubeconfig context's by default) or, with -A, in the whole cluster, and
whether that picture is complete: every stream must be covered at that
time. The table ends with "Complete" or "Incomplete" and the streams not
covered, with why (-o json and yaml have the complete and missing
fields). It only reads the journal unless --save NAME saves the snapshot there
(a replay plan can start from it).`,
		Example: `  kubectl krply snapshot -n shop --at "10m ago"
  kubectl krply snapshot -A --at 2026-12-01T10:04:05Z -o name
  kubectl krply snapshot -n shop --at "10m ago" --save before-rollout`,
		Args: noArgs,
	}
	p := addPrintFlags(cmd, "wide")
	cmd.Flags().StringVar(&at, "at", "now", `time: RFC 3339, "now" or "10m ago"`)
	cmd.Flags().StringVar(&save, "save", "", "save the snapshot in the journal under this name (default: save nothing)")
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "the whole cluster instead of one namespace")
	cmd.Flags().StringVarP(&selector, "selector", "l", "", "list only objects whose labels then matched this selector (e.g. app=web); completeness is the scope's")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		when, err := parseTime("at", at, e.now())
		if err != nil {
			return err
		}
		sel, err := labels.Parse(selector)
		if err != nil {
			return usagef("-l %q: %v", selector, err)
		}
		ctx := cmd.Context()
		src, cluster, err := e.openCluster(ctx, save != "")
		if err != nil {
			return err
		}
		defer src.Close()
		var snap *materialize.Snapshot
		if save != "" {
			snap, err = src.SaveSnapshot(ctx, e.scopeOf(cluster, all), when, save)
		} else {
			snap, err = src.Snapshot(ctx, e.scopeOf(cluster, all), when)
		}
		if err != nil {
			return err
		}
		e.warnMissing(snap.Missing, snap.Warnings, !snap.Complete)
		if save != "" {
			fmt.Fprintf(e.ErrOut, "saved snapshot %q as %s\n", snap.Name, snap.ID)
		}
		if !sel.Empty() {
			if snap.Objects, err = selectObjects(snap.Objects, sel); err != nil {
				return err
			}
		}
		refs := make([]event.ResourceRef, 0, len(snap.Objects))
		for _, o := range snap.Objects {
			refs = append(refs, o.Ref)
		}
		return p.print(e.Out, view{value: snap, names: refs, table: func(w io.Writer, format string) error {
			return snapshotTable(w, snap, format == "wide")
		}})
	}
	return cmd
}

func snapshotTable(w io.Writer, s *materialize.Snapshot, wide bool) error {
	tw := newTable(w)
	header := "NAMESPACE\tNAME\tRESOURCEVERSION\tOBSERVED\tFROM"
	if wide {
		header += "\tSTREAM\tEVENT ID"
	}
	fmt.Fprintln(tw, header)
	for _, o := range s.Objects {
		from := "watch"
		if o.Synthetic {
			from = "list"
		}
		line := fmt.Sprintf("%s\t%s\t%s\t%s\t%s", orNone(o.Ref.Namespace), refString(o.Ref), o.Ref.ResourceVersion, ts(o.ObservedAt), from)
		if wide {
			line += "\t" + o.StreamID + "\t" + o.EventID
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return completeness(w, s)
}

// completeness ends a snapshot's table with whether it is complete, and
// if not, which streams are not covered at its time and why.
func completeness(w io.Writer, s *materialize.Snapshot) error {
	if s.Complete {
		_, err := fmt.Fprintf(w, "Complete at %s: every stream is covered\n", ts(s.At))
		return err
	}
	streams := "streams are"
	if len(s.Missing) == 1 {
		streams = "stream is"
	}
	fmt.Fprintf(w, "Incomplete at %s: %d %s not covered\n", ts(s.At), len(s.Missing), streams)
	for _, m := range s.Missing {
		if _, err := fmt.Fprintf(w, "  %s: %s\n", missingName(m), m.Reason); err != nil {
			return err
		}
	}
	return nil
}

func (e *env) diffCommand() *cobra.Command {
	var from, to string
	var all, status bool
	cmd := &cobra.Command{
		Use:   "diff",
		Short: "Show what changed in a namespace (or cluster) between two times",
		Long: `diff compares the objects of the namespace -n names (or, with -A, the
whole cluster) at --from and at --to: objects added, removed and changed,
with field paths and values. An object whose state the journal does not
know at an end of the window (before recording began, inside a gap) is
"unknown" there, never called added or removed. -o unified prints a
unified diff of the objects' YAML.`,
		Example: `  kubectl krply diff -n shop --from "1h ago" --to now
  kubectl krply diff -A --from 2026-12-01T10:00:00Z --to 2026-12-01T11:00:00Z -o unified`,
		Args: noArgs,
	}
	p := addPrintFlags(cmd, "unified")
	cmd.Flags().StringVar(&from, "from", "1h ago", `start: RFC 3339, "now" or "10m ago"`)
	cmd.Flags().StringVar(&to, "to", "now", `end: RFC 3339, "now" or "10m ago"`)
	cmd.Flags().BoolVarP(&all, "all-namespaces", "A", false, "the whole cluster instead of one namespace")
	cmd.Flags().BoolVar(&status, "status", false, "compare status too")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		now := e.now()
		t1, err := parseTime("from", from, now)
		if err != nil {
			return err
		}
		t2, err := parseTime("to", to, now)
		if err != nil {
			return err
		}
		if t2.Before(t1) {
			return usagef("--to %s is before --from %s", ts(t2), ts(t1))
		}
		ctx := cmd.Context()
		src, cluster, err := e.openCluster(ctx, false)
		if err != nil {
			return err
		}
		defer src.Close()
		d, err := src.Diff(ctx, e.scopeOf(cluster, all), t1, t2, materialize.IncludeStatus(status))
		if err != nil {
			return err
		}
		e.warnMissing(d.Missing, d.Warnings, d.HasGaps)
		var refs []event.ResourceRef
		for _, od := range d.Objects {
			if od.Type == materialize.ObjectUnknown {
				e.warnIncomplete("%s %s: %s: %s", od.Kind, od.ID.Name, unknownAt(od.UnknownAt), od.Reason)
			}
			refs = append(refs, diffRef(od))
		}
		return p.print(e.Out, view{value: d, names: refs, table: func(w io.Writer, format string) error {
			if format == "unified" {
				return d.WriteUnified(w)
			}
			return diffTable(w, d)
		}})
	}
	return cmd
}

func diffRef(od materialize.ObjectDiff) event.ResourceRef {
	for _, o := range []*materialize.SnapshotObject{od.After, od.Before} {
		if o != nil {
			return o.Ref
		}
	}
	return event.ResourceRef{Group: od.ID.Group, Resource: od.ID.Resource, Kind: od.Kind, Namespace: od.ID.Namespace, Name: od.ID.Name}
}

func diffTable(w io.Writer, d *materialize.Diff) error {
	tw := newTable(w)
	fmt.Fprintln(tw, "NAMESPACE\tNAME\tCHANGE\tFIELD\tBEFORE\tAFTER")
	for _, od := range d.Objects {
		ref := diffRef(od)
		ns, name := orNone(ref.Namespace), refString(ref)
		switch od.Type {
		case materialize.ObjectChanged:
		case materialize.ObjectUnknown:
			fmt.Fprintf(tw, "%s\t%s\t%s\t-\t-\t%s\n", ns, name, unknownAt(od.UnknownAt), od.Reason)
			continue
		default:
			fmt.Fprintf(tw, "%s\t%s\t%s\t-\t-\t-\n", ns, name, od.Type)
			continue
		}
		if od.Recreated {
			fmt.Fprintf(tw, "%s\t%s\trecreated\t-\t-\t-\n", ns, name)
		}
		for _, c := range od.Changes {
			before, after := value(c.Before), value(c.After)
			switch c.Op {
			case materialize.OpAdd:
				before = "<none>"
			case materialize.OpRemove:
				after = "<none>"
			}
			fmt.Fprintf(tw, "%s\t%s\tchanged\t%s\t%s\t%s\n", ns, name, c.Path, before, after)
		}
	}
	return tw.Flush()
}

// unknownAt says at which end of a diff's window an object's state is
// unknown.
func unknownAt(end materialize.DiffEnd) string {
	switch end {
	case materialize.DiffFrom:
		return "unknown at --from"
	case materialize.DiffTo:
		return "unknown at --to"
	}
	return "unknown at both ends"
}

// selectObjects keeps the objects whose labels match sel.
func selectObjects(objects []materialize.SnapshotObject, sel labels.Selector) ([]materialize.SnapshotObject, error) {
	var out []materialize.SnapshotObject
	for _, o := range objects {
		var meta struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(o.Object, &meta); err != nil {
			return nil, fmt.Errorf("%s: the recorded body is not an object: %w", refString(o.Ref), err)
		}
		if sel.Matches(labels.Set(meta.Metadata.Labels)) {
			out = append(out, o)
		}
	}
	return out, nil
}
