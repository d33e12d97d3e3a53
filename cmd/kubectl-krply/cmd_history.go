package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/krply/krply/cel"
	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
)

func (e *env) historyCommand() *cobra.Command {
	var ignoreStatus bool
	var filter string
	cmd := &cobra.Command{
		Use:   "history TYPE/NAME",
		Short: "List every version of an object: when, resourceVersion, who, what changed",
		Long: `history lists every version of one object the journal holds, in order: when
krply observed it (OBSERVED is when krply saw the change, not when it was
made), the event (ADDED, MODIFIED, DELETED), its resourceVersion, where it
came from (watch; list: a baseline, the object was like this by then;
inferred: a deletion found by a relist, not a DELETED event), who made it
(the user from the audit log, after kubectl krply audit ingest, or else the
field managers of the changed fields), and the fields that changed. A relist
that found the object at the resourceVersion it already had is one
CONFIRMED line ("confirmed by relist"), not a new version. Gaps of the
streams that record the object are listed where they fall: changes inside
them may be missing.`,
		Example: `  kubectl krply history deploy/web -n shop
  kubectl krply history deployments.apps/web -n shop -o yaml
  kubectl krply history cm/settings -n shop -o jsonpath='{.entries[*].version.resourceVersion}'
  kubectl krply history deploy/web -n shop --filter 'change.paths.exists(p, p.startsWith("spec.template"))'
  kubectl krply history deploy/web -n shop --filter 'actor.user == "bob"'`,
		Args:              exactArgs(1, "one TYPE/NAME"),
		ValidArgsFunction: e.completeObjects,
	}
	p := addPrintFlags(cmd, "wide")
	cmd.Flags().BoolVar(&ignoreStatus, "ignore-status", false, "leave out changes of status")
	cmd.Flags().StringVar(&filter, "filter", "", "keep the versions whose change this CEL expression over old, new, change and actor matches (gaps stay)")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if filter != "" {
			if _, err := cel.CompileChange(filter); err != nil {
				return usagef("--filter: %v", err)
			}
		}
		h, err := e.history(cmd.Context(), args[0], ignoreStatus, filter)
		if err != nil {
			return err
		}
		var names []event.ResourceRef
		if versions := h.Versions(); len(versions) > 0 {
			names = append(names, versions[len(versions)-1].Ref)
		}
		return p.print(e.Out, view{value: h, names: names, table: func(w io.Writer, format string) error {
			return historyTable(w, h, format == "wide")
		}})
	}
	return cmd
}

// history returns the history of the object TYPE/NAME names, and warns
// about what it may miss.
func (e *env) history(ctx context.Context, arg string, ignoreStatus bool, filter string) (*materialize.History, error) {
	src, obj, err := e.objectArgs(ctx, arg)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	var opts []materialize.HistoryOption
	if ignoreStatus {
		opts = append(opts, materialize.IncludeStatus(false))
	}
	if filter != "" {
		f, err := cel.CompileChange(filter)
		if err != nil {
			return nil, usagef("--filter: %v", err)
		}
		opts = append(opts, materialize.WithChangeFilter(f.Filter()))
	}
	h, err := src.History(ctx, obj, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", objectName(obj), err)
	}
	e.warnHistory(h)
	return h, nil
}

// warnHistory warns about what a history may miss.
func (e *env) warnHistory(h *materialize.History) {
	for _, w := range h.Warnings {
		e.warnIncomplete("%s", w)
	}
	for _, en := range h.Entries {
		switch {
		case en.Gap != nil:
			e.warnIncomplete("changes between %s and %s may be missing: %s", ts(en.Gap.From), ts(en.Gap.To), en.Gap.Reason)
		case en.Kind == materialize.EntryUnavailable && en.Coverage != nil:
			e.warnIncomplete("stream %s unavailable from %s: %s", en.StreamID, ts(en.ObservedAt), en.Coverage.Reason)
		}
	}
}

func historyTable(w io.Writer, h *materialize.History, wide bool) error {
	tw := newTable(w)
	header := "OBSERVED\tEVENT\tRESOURCEVERSION\tFROM\tWHO\tCHANGES"
	if wide {
		header += "\tEVENT ID"
	}
	fmt.Fprintln(tw, header)
	for _, en := range h.Entries {
		var line string
		switch {
		case en.Gap != nil:
			line = fmt.Sprintf("%s\tGAP\t%s\t-\t-\tchanges from %s to %s may be missing: %s", ts(en.ObservedAt), orNone(en.Gap.LastResourceVersion), ts(en.Gap.From), ts(en.Gap.To), en.Gap.Reason)
		case en.Coverage != nil:
			line = fmt.Sprintf("%s\t%s\t-\t-\t-\t%s", ts(en.ObservedAt), strings.ToUpper(string(en.Kind)), en.Coverage.Reason)
		case en.Confirmation != nil:
			line = fmt.Sprintf("%s\tCONFIRMED\t%s\tlist\t-\tconfirmed by relist: unchanged since resourceVersion %s, not a new version",
				ts(en.ObservedAt), en.Confirmation.ResourceVersion, en.Confirmation.ResourceVersion)
		case en.Version != nil:
			v := en.Version
			line = fmt.Sprintf("%s\t%s\t%s\t%s\t%s\t%s", ts(v.ObservedAt), v.WatchType, v.ResourceVersion, versionOrigin(v), who(v, nil), changes(v))
		default:
			continue
		}
		if wide {
			line += "\t" + en.EventID
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

func versionOrigin(v *materialize.Version) string {
	if v.Origin == materialize.OriginBaseline {
		return "list"
	}
	return string(v.Origin)
}

// who says who made a version: the audit log's user (with the confidence
// of a best-effort match), or else the field managers of the changed
// fields (of change, when given), which name a client, not a user.
func who(v *materialize.Version, change *materialize.FieldChange) string {
	if len(v.Provenance) > 0 {
		p := v.Provenance[0]
		s := p.User + " (" + p.Verb + ")"
		if p.Confidence < 1 {
			s += fmt.Sprintf(" %.0f%%", 100*p.Confidence)
		}
		return s
	}
	var managers []string
	add := func(fm *materialize.FieldManager) {
		if fm == nil {
			return
		}
		m := "manager " + fm.Manager + " (" + fm.Operation + ")"
		for _, have := range managers {
			if have == m {
				return
			}
		}
		managers = append(managers, m)
	}
	if change != nil {
		add(change.FieldManager)
	} else {
		for i := range v.Changes {
			add(v.Changes[i].FieldManager)
		}
	}
	if len(managers) == 0 {
		return "-"
	}
	return strings.Join(managers, ", ")
}

func changes(v *materialize.Version) string {
	if v.Inferred != nil {
		return inferredDeletion(v.Inferred)
	}
	if v.Recreated {
		return "recreated; " + formatChanges(v.Changes)
	}
	return formatChanges(v.Changes)
}

// inferredDeletion describes a deletion a relist inferred, which no watch
// DELETED event showed.
func inferredDeletion(inf *event.InferredDeletion) string {
	return fmt.Sprintf("deleted between %s and %s (inferred by a relist: %s; no watch DELETED event)", ts(inf.From), ts(inf.To), inf.Reason)
}

// blameLine is the last change of one field.
type blameLine struct {
	// Path is the field; "(object)" stands for the fields no recorded
	// change touched: they are as first observed.
	Path            string                    `json:"path"`
	Op              materialize.ChangeOp      `json:"op,omitempty"`
	Value           any                       `json:"value,omitempty"`
	ObservedAt      time.Time                 `json:"observedAt"`
	ResourceVersion string                    `json:"resourceVersion"`
	WatchType       event.WatchType           `json:"watchType"`
	Origin          materialize.Origin        `json:"origin"`
	Provenance      *event.AuditCorrelation   `json:"provenance,omitempty"`
	FieldManager    *materialize.FieldManager `json:"fieldManager,omitempty"`
	who             string
}

// blame is the answer of `blame`.
type blame struct {
	Object   storage.ObjectID `json:"object"`
	Fields   []blameLine      `json:"fields"`
	Warnings []string         `json:"warnings,omitempty"`
}

func (e *env) blameCommand() *cobra.Command {
	var ignoreStatus bool
	cmd := &cobra.Command{
		Use:   "blame TYPE/NAME",
		Short: "For each field of an object: its last change, who made it, when",
		Long: `blame lists, for every field a recorded change touched, the last change:
its value, when krply observed it, the resourceVersion, and who made it (the
audit log's user after kubectl krply audit ingest, or else the field's
manager from managedFields, which names a client, not a user). The row
"(object)" stands for every other field: as first observed.`,
		Example: `  kubectl krply blame deploy/web -n shop
  kubectl krply blame deploy/web -n shop -o json`,
		Args:              exactArgs(1, "one TYPE/NAME"),
		ValidArgsFunction: e.completeObjects,
	}
	p := addPrintFlags(cmd)
	cmd.Flags().BoolVar(&ignoreStatus, "ignore-status", false, "leave out status fields")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		h, err := e.history(cmd.Context(), args[0], ignoreStatus, "")
		if err != nil {
			return err
		}
		versions := h.Versions()
		b := blameOf(h)
		return p.print(e.Out, view{value: b, names: []event.ResourceRef{versions[len(versions)-1].Ref}, table: func(w io.Writer, _ string) error {
			tw := newTable(w)
			fmt.Fprintln(tw, "FIELD\tVALUE\tOBSERVED\tRESOURCEVERSION\tEVENT\tWHO")
			for _, l := range b.Fields {
				val := value(l.Value)
				switch {
				case l.Op == materialize.OpRemove:
					val = "(removed)"
				case l.Path == "(object)":
					val = "as first observed"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", l.Path, val, ts(l.ObservedAt), l.ResourceVersion, l.WatchType, l.who)
			}
			return tw.Flush()
		}})
	}
	return cmd
}

func blameOf(h *materialize.History) *blame {
	versions := h.Versions()
	first := versions[0]
	b := &blame{Object: h.Object, Warnings: h.Warnings}
	line := func(v *materialize.Version, path string, c *materialize.FieldChange) blameLine {
		l := blameLine{Path: path, ObservedAt: v.ObservedAt, ResourceVersion: v.ResourceVersion, WatchType: v.WatchType, Origin: v.Origin, who: who(v, c)}
		if len(v.Provenance) > 0 {
			l.Provenance = &v.Provenance[0]
		}
		if c != nil {
			l.Op, l.Value, l.FieldManager = c.Op, c.After, c.FieldManager
		}
		return l
	}
	last := map[string]blameLine{}
	for _, v := range versions[1:] {
		for i := range v.Changes {
			c := &v.Changes[i]
			last[c.Path] = line(v, c.Path, c)
		}
	}
	paths := make([]string, 0, len(last))
	for p := range last {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	b.Fields = append(b.Fields, line(first, "(object)", nil))
	for _, p := range paths {
		b.Fields = append(b.Fields, last[p])
	}
	if end := versions[len(versions)-1]; end.WatchType == event.Deleted {
		b.Fields = append(b.Fields, line(end, "(deleted)", nil))
	}
	return b
}
