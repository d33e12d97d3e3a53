package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/why"
)

func (e *env) whyCommand() *cobra.Command {
	var at, from string
	var window, after time.Duration
	var maxObjects int
	cmd := &cobra.Command{
		Use:   "why TYPE/NAME",
		Short: "What changed before an object broke: its dependencies' changes ranked as causes, with who and the gaps",
		Long: `why answers "this started failing at 10:04: what changed before it?" for one
object. T is --at, or else the object's first bad transition in the journal
(a container in CrashLoopBackOff, ImagePullBackOff, CreateContainerConfigError,
OOMKilled, …; a Pod Unschedulable; a condition leaving True; a Deployment's
ProgressDeadlineExceeded). The answer walks the object's dependencies as they
were at T — owners and what it owns, the ConfigMaps, Secrets, ServiceAccount,
PVCs and Node it references, the Services, NetworkPolicies, PDBs and HPAs that
select it — and lists every change to them in the window (--window before T,
--after after it) with who made it, and the Events about them.

The table reads top to bottom: the candidate causes first, best first, each
with its reasons; then the timeline (OBSERVED is when krply saw a change, not
when it was made); then the graph and the coverage of every stream read. When
a stream has a gap in the window, or a resource of the graph is not recorded,
the answer is incomplete: it says where, and no candidate is certain. See
docs/explanation/why.md for the ranking rules and the graph's limits.`,
		Example: `  kubectl krply why pod/web-7d4b9-x2x8k -n shop
  kubectl krply why deploy/web -n shop --at "10m ago" --window 30m
  kubectl krply why pod/web-7d4b9-x2x8k -n shop -o json`,
		Args:              exactArgs(1, "one TYPE/NAME"),
		ValidArgsFunction: e.completeObjects,
	}
	p := addPrintFlags(cmd, "wide")
	cmd.Flags().StringVar(&at, "at", "", `T: RFC 3339, "now" or "10m ago" (default: the object's first bad transition)`)
	cmd.Flags().DurationVar(&window, "window", why.DefaultBefore, "how far before T to look")
	cmd.Flags().StringVar(&from, "from", "", "the window's start instead of --window: a time as --at")
	cmd.Flags().DurationVar(&after, "after", why.DefaultAfter, "how far after T to show")
	cmd.Flags().IntVar(&maxObjects, "max-objects", why.DefaultMaxObjects, "at most this many objects in the dependency graph")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		q := why.Query{Before: window, After: after, MaxObjects: maxObjects}
		switch {
		case window <= 0:
			return usagef("--window %s: give a positive duration, such as 30m or 2h", window)
		case after <= 0:
			return usagef("--after %s: give a positive duration, such as 5m", after)
		case maxObjects <= 0:
			return usagef("--max-objects %d: give a positive number", maxObjects)
		case from != "" && cmd.Flags().Changed("window"):
			return usagef("--from and --window both given: give one of them")
		}
		var err error
		if at != "" {
			if q.At, err = parseTime("at", at, e.now()); err != nil {
				return err
			}
		}
		if from != "" {
			if q.From, err = parseTime("from", from, e.now()); err != nil {
				return err
			}
			q.Before = 0
		}
		a, err := e.why(cmd.Context(), args[0], q)
		if err != nil {
			return err
		}
		return p.print(e.Out, view{value: a, names: []event.ResourceRef{{Group: a.Object.Group, Resource: a.Object.Resource, Kind: a.Kind,
			Namespace: a.Object.Namespace, Name: a.Object.Name}}, table: func(w io.Writer, format string) error {
			return whyTable(w, a, format == "wide")
		}})
	}
	return cmd
}

// why asks the journal why the object TYPE/NAME broke, and warns about
// what the answer may miss.
func (e *env) why(ctx context.Context, arg string, q why.Query) (*why.Answer, error) {
	src, obj, err := e.objectArgs(ctx, arg)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	q.Object = obj
	a, err := src.Why(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", objectName(obj), err)
	}
	for _, w := range a.Warnings {
		fmt.Fprintf(e.ErrOut, "warning: %s\n", w)
	}
	if !a.Complete {
		e.warnIncomplete("a change before %s may be missing: %s", ts(a.At), strings.Join(whyIncomplete(a), "; "))
	}
	return a, nil
}

// whyIncomplete says why an answer is not complete: the streams not
// covered over its window, the resources not recorded, the Events.
func whyIncomplete(a *why.Answer) []string {
	var reasons []string
	for _, sc := range a.Coverage {
		if !sc.Covered {
			reasons = append(reasons, sc.StreamID+": "+sc.Reason)
		}
	}
	if len(a.NotRecorded) > 0 {
		reasons = append(reasons, "not recorded: "+strings.Join(a.NotRecorded, ", "))
	}
	if !a.EventsRecorded {
		reasons = append(reasons, "Events not recorded")
	}
	return reasons
}

// whyHeadline says what T of an answer is: the object's first bad
// transition, its latest change, or given; times printed by tf.
func whyHeadline(a *why.Answer, tf func(time.Time) string) string {
	name := a.Object.Resource + "/" + a.Object.Name
	if a.Object.Namespace != "" {
		name += " in namespace " + a.Object.Namespace
	}
	switch a.AtSource {
	case why.AtFirstBad:
		return fmt.Sprintf("%s broke at %s: %s %s", name, tf(a.At), a.Bad.What, state(a.Bad.To, a.Bad.Reason))
	case why.AtLatestChange:
		return fmt.Sprintf("%s: no bad transition found; T is its latest change, %s", name, tf(a.At))
	}
	return fmt.Sprintf("%s at %s (given)", name, tf(a.At))
}

// changeWho names who made a change: the audit user, else the field
// manager; "-" when the journal does not know.
func changeWho(c why.Change) string {
	switch {
	case c.Who == nil:
		return "-"
	case c.Who.User != "":
		return c.Who.User
	}
	return "manager " + c.Who.Manager
}

// whyTable prints an answer as a person reads it: the candidates, the
// timeline, the graph, the coverage.
func whyTable(w io.Writer, a *why.Answer, wide bool) error {
	fmt.Fprintln(w, whyHeadline(a, ts))
	complete := "yes"
	if !a.Complete {
		complete = "no: a change may be missing (see COVERAGE)"
	}
	fmt.Fprintf(w, "window %s to %s; complete: %s\n\n", ts(a.From), ts(a.To), complete)

	tw := newTable(w)
	fmt.Fprintln(tw, "RANK\tSCORE\tOBSERVED\tCANDIDATE CAUSE")
	for i, c := range a.Candidates {
		fmt.Fprintf(tw, "%d\t%d\t%s\t%s\n", i+1, c.Score, ts(a.Changes[c.Change].ObservedAt), c.Summary)
		for _, r := range c.Reasons {
			fmt.Fprintf(tw, "\t\t\t  %s\n", r)
		}
		for _, cv := range c.Caveats {
			fmt.Fprintf(tw, "\t\t\t  caveat: %s\n", cv)
		}
	}
	if len(a.Candidates) == 0 {
		fmt.Fprintln(tw, "-\t-\t-\tno change before T in the graph")
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w)
	tw = newTable(w)
	fmt.Fprintln(tw, "OBSERVED\tOBJECT\tWHAT\tWHO")
	for _, line := range timeline(a, wide) {
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w)
	tw = newTable(w)
	fmt.Fprintln(tw, "GRAPH AT T\tDISTANCE\tEDGE")
	edges := map[string]string{}
	for _, e := range a.Edges {
		to := objectKey(e.To)
		if _, ok := edges[to]; !ok && objectKey(e.From) != to {
			edges[to] = fmt.Sprintf("%s %s (%s)", e.Type, objectKey(e.From), e.Reason)
		}
		from := objectKey(e.From)
		if _, ok := edges[from]; !ok {
			edges[from] = fmt.Sprintf("%s %s (%s)", e.Type, to, e.Reason)
		}
	}
	for _, n := range a.Nodes {
		k := objectKey(n.ID)
		edge := edges[k]
		if n.Distance == 0 {
			edge = "-"
		}
		if !n.Exists {
			k += " (absent at T)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", k, n.Distance, edge)
	}
	for _, c := range a.Cut {
		fmt.Fprintf(tw, "cut: %s\t-\t-\n", c)
	}
	if err := tw.Flush(); err != nil {
		return err
	}

	fmt.Fprintln(w)
	tw = newTable(w)
	fmt.Fprintln(tw, "COVERAGE\tCOVERED\tWHY NOT")
	for _, sc := range a.Coverage {
		fmt.Fprintf(tw, "%s\t%v\t%s\n", sc.StreamID, sc.Covered, orNone(sc.Reason))
	}
	for _, r := range a.NotRecorded {
		fmt.Fprintf(tw, "%s\tfalse\tnot recorded by the journal\n", r)
	}
	if !a.EventsRecorded {
		fmt.Fprintf(tw, "events\tfalse\tEvents were not recorded\n")
	}
	return tw.Flush()
}

// timeline interleaves the changes, the Events and T, in time order.
func timeline(a *why.Answer, wide bool) []string {
	type line struct {
		at   time.Time
		text string
	}
	var lines []line
	for _, c := range a.Changes {
		what := string(c.Type)
		var parts []string
		for _, f := range c.Fields {
			parts = append(parts, f.Path)
		}
		for _, t := range c.Transitions {
			parts = append(parts, fmt.Sprintf("%s %s → %s", t.What, orNone(t.From), state(t.To, t.Reason)))
		}
		if len(parts) > 0 && !wide && len(parts) > 3 {
			parts = append(parts[:3], fmt.Sprintf("+%d more", len(parts)-3))
		}
		if len(parts) > 0 {
			what += ": " + strings.Join(parts, ", ")
		}
		if c.Between != nil {
			what += fmt.Sprintf(" (seen by a relist: between %s and %s)", ts(c.Between.From), ts(c.Between.To))
		}
		lines = append(lines, line{c.ObservedAt, fmt.Sprintf("%s\t%s\t%s\t%s", ts(c.ObservedAt), objectKey(c.Object), what, changeWho(c))})
	}
	for _, ev := range a.Events {
		lines = append(lines, line{ev.LastSeen, fmt.Sprintf("%s\t%s\tevent %s %s: %s (x%d)\t-", ts(ev.LastSeen), objectKey(ev.Regarding), ev.Type, ev.Reason, ev.Message, max(ev.Count, 1))})
	}
	lines = append(lines, line{a.At, fmt.Sprintf("%s\t%s\t── T ──\t-", ts(a.At), objectKey(a.Object))})
	for i := 1; i < len(lines); i++ {
		for j := i; j > 0 && lines[j].at.Before(lines[j-1].at); j-- {
			lines[j], lines[j-1] = lines[j-1], lines[j]
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l.text
	}
	return out
}

func state(value, reason string) string {
	if reason == "" {
		return value
	}
	return value + " (" + reason + ")"
}

// objectKey names an object in a table: "pods shop/web-1-0".
func objectKey(id storage.ObjectID) string {
	res := id.Resource
	if id.Group != "" {
		res += "." + id.Group
	}
	if id.Namespace == "" {
		return res + " " + id.Name
	}
	return res + " " + id.Namespace + "/" + id.Name
}
