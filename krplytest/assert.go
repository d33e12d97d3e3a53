package krplytest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
)

// Removed, as the value of a path in Version.Changes or
// ObjectChange.Changes, expects the field to have been removed.
var Removed = removedValue{}

type removedValue struct{}

func (removedValue) String() string { return "<removed>" }

// Version is one expected version of an object's history. Zero fields
// match anything.
type Version struct {
	// Type is the watch type: event.Added, event.Modified or event.Deleted.
	Type event.WatchType
	// Origin is where the version came from: materialize.OriginWatch,
	// OriginBaseline (the first list) or OriginInferred.
	Origin materialize.Origin
	// Changes maps field paths, in materialize.FieldChange.Path form
	// ("spec.replicas", `data["config.yaml"]`,
	// "spec.template.spec.containers[name=app].image"; see "Field paths" in
	// the package documentation), to the value each changed to, or
	// Removed. Every listed path must be among the version's changes, or
	// inside a map or list a change added or removed whole
	// (`metadata.annotations["example.com/x"]` matches the annotations
	// added whole, with that key); others are not checked. Values compare
	// as JSON, so 3, int64(3) and 3.0 are the same.
	Changes map[string]any
}

// AssertHistory checks that h has exactly the expected versions, in order,
// and reports every mismatch with the whole history. It returns whether
// the history matched.
func AssertHistory(t TestingT, h *materialize.History, want ...Version) bool {
	t.Helper()
	if h == nil {
		t.Errorf("krplytest: AssertHistory: nil history")
		return false
	}
	got := h.Versions()
	var problems []string
	if len(got) != len(want) {
		problems = append(problems, fmt.Sprintf("%d versions, want %d", len(got), len(want)))
	}
	for i := 0; i < len(got) && i < len(want); i++ {
		v, w := got[i], want[i]
		if w.Type != "" && v.WatchType != w.Type {
			problems = append(problems, fmt.Sprintf("version #%d is %s, want %s", i+1, v.WatchType, w.Type))
		}
		if w.Origin != "" && v.Origin != w.Origin {
			problems = append(problems, fmt.Sprintf("version #%d comes from %s, want %s", i+1, v.Origin, w.Origin))
		}
		for _, p := range checkChanges(v.Changes, w.Changes) {
			problems = append(problems, fmt.Sprintf("version #%d: %s", i+1, p))
		}
	}
	if len(problems) == 0 {
		return true
	}
	t.Errorf("krplytest: history of %s:\n  %s\nhistory:\n%s", describeID(h.Object.Group, h.Object.Resource, h.Object.Namespace, h.Object.Name),
		strings.Join(problems, "\n  "), FormatHistory(h))
	return false
}

// checkChanges returns what in want is not among got.
func checkChanges(got []materialize.FieldChange, want map[string]any) []string {
	byPath := map[string]materialize.FieldChange{}
	for _, fc := range got {
		byPath[fc.Path] = fc
	}
	var problems []string
	for _, path := range sortedKeys(want) {
		fc, ok := byPath[path]
		w := want[path]
		if !ok {
			// A field inside a map or list added or removed whole.
			var whole string
			if fc, whole, ok = inside(got, path); ok && fc.Op == "" {
				problems = append(problems, fmt.Sprintf("%s did not change (%s changed whole, without it)", path, whole))
				continue
			}
		}
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("%s did not change", path))
		case w == Removed && fc.Op != materialize.OpRemove:
			problems = append(problems, fmt.Sprintf("%s: %s to %s, want removed", path, fc.Op, jsonText(fc.After)))
		case w != Removed && fc.Op == materialize.OpRemove:
			problems = append(problems, fmt.Sprintf("%s was removed, want %s", path, jsonText(w)))
		case w != Removed && jsonText(fc.After) != jsonText(w):
			problems = append(problems, fmt.Sprintf("%s changed to %s, want %s", path, jsonText(fc.After), jsonText(w)))
		}
	}
	return problems
}

// jsonText renders a value as compact JSON, the form values compare in.
func jsonText(v any) string {
	if v == Removed {
		return Removed.String()
	}
	raw, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%v", v)
	}
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

// FormatHistory renders a history one entry per line, the form the
// assertions print on failure:
//
//	#1 ADDED    baseline  2026-01-02T03:04:05Z
//	#2 MODIFIED watch     2026-01-02T03:04:06Z  spec.replicas: 1 -> 3
//	   gap      c1/apps/v1/deployments  from ... (410 Gone ...)
func FormatHistory(h *materialize.History) string {
	var b strings.Builder
	n := 0
	for _, e := range h.Entries {
		switch {
		case e.Version != nil:
			n++
			v := e.Version
			fmt.Fprintf(&b, "  #%d %-8s %-8s %s", n, v.WatchType, v.Origin, v.ObservedAt.UTC().Format("2006-01-02T15:04:05.000Z"))
			if len(v.Changes) > 0 {
				b.WriteString("  " + FormatChanges(v.Changes))
			}
			for _, p := range v.Provenance {
				fmt.Fprintf(&b, "  by %s (%s)", p.User, p.Verb)
			}
			b.WriteByte('\n')
		case e.Gap != nil:
			fmt.Fprintf(&b, "     gap in %s from %s: %s\n", e.StreamID, e.Gap.From.UTC().Format("2006-01-02T15:04:05.000Z"), e.Gap.Reason)
		case e.Coverage != nil:
			fmt.Fprintf(&b, "     %s: %s\n", e.Kind, e.Coverage.Reason)
		case e.Confirmation != nil:
			fmt.Fprintf(&b, "     confirmed by relist %s %s (resourceVersion %s)\n", e.Confirmation.BaselineID,
				e.ObservedAt.UTC().Format("2006-01-02T15:04:05.000Z"), e.Confirmation.ResourceVersion)
		}
	}
	return b.String()
}

// FormatChanges renders field changes on one line, e.g.
// "spec.replicas: 1 -> 3; data.key: <removed>".
func FormatChanges(changes []materialize.FieldChange) string {
	parts := make([]string, 0, len(changes))
	for _, fc := range changes {
		switch fc.Op {
		case materialize.OpAdd:
			parts = append(parts, fmt.Sprintf("%s: + %s", fc.Path, jsonText(fc.After)))
		case materialize.OpRemove:
			parts = append(parts, fmt.Sprintf("%s: - %s", fc.Path, jsonText(fc.Before)))
		default:
			parts = append(parts, fmt.Sprintf("%s: %s -> %s", fc.Path, jsonText(fc.Before), jsonText(fc.After)))
		}
	}
	return strings.Join(parts, "; ")
}

// ObjectChange is one expected object of a Diff. Zero fields match
// anything, except Namespace, which must match exactly.
type ObjectChange struct {
	// Type is materialize.ObjectAdded, ObjectRemoved or ObjectChanged.
	Type materialize.ObjectChangeType
	// Resource is the plural resource name, e.g. "deployments".
	Resource  string
	Namespace string
	Name      string
	// Changes, as in Version.Changes, are checked against a changed object.
	Changes map[string]any
}

// AssertDiff checks that d holds exactly the expected objects, in any
// order, and reports every mismatch with the whole diff. It returns whether
// the diff matched.
func AssertDiff(t TestingT, d *materialize.Diff, want ...ObjectChange) bool {
	t.Helper()
	if d == nil {
		t.Errorf("krplytest: AssertDiff: nil diff")
		return false
	}
	var problems []string
	used := make([]bool, len(d.Objects))
	for _, w := range want {
		found := false
		for i, od := range d.Objects {
			if used[i] || od.ID.Name != w.Name || od.ID.Namespace != w.Namespace || (w.Resource != "" && od.ID.Resource != w.Resource) {
				continue
			}
			used[i], found = true, true
			if w.Type != "" && od.Type != w.Type {
				problems = append(problems, fmt.Sprintf("%s is %s, want %s", describeDiff(od), od.Type, w.Type))
			}
			for _, p := range checkChanges(od.Changes, w.Changes) {
				problems = append(problems, fmt.Sprintf("%s: %s", describeDiff(od), p))
			}
			break
		}
		if !found {
			problems = append(problems, fmt.Sprintf("no difference for %s", describeID("", w.Resource, w.Namespace, w.Name)))
		}
	}
	for i, od := range d.Objects {
		if !used[i] {
			problems = append(problems, fmt.Sprintf("unexpected: %s %s", describeDiff(od), od.Type))
		}
	}
	if len(problems) == 0 {
		return true
	}
	t.Errorf("krplytest: diff from %s to %s:\n  %s\ndiff:\n%s", d.From.UTC().Format(time.RFC3339Nano), d.To.UTC().Format(time.RFC3339Nano),
		strings.Join(problems, "\n  "), FormatDiff(d))
	return false
}

// FormatDiff renders a diff one object per line.
func FormatDiff(d *materialize.Diff) string {
	var b strings.Builder
	objs := append([]materialize.ObjectDiff(nil), d.Objects...)
	sort.SliceStable(objs, func(i, j int) bool { return describeDiff(objs[i]) < describeDiff(objs[j]) })
	for _, od := range objs {
		fmt.Fprintf(&b, "  %-7s %s", od.Type, describeDiff(od))
		if len(od.Changes) > 0 {
			b.WriteString("  " + FormatChanges(od.Changes))
		}
		b.WriteByte('\n')
	}
	if d.HasGaps {
		b.WriteString("  (the journal may miss changes in this interval)\n")
	}
	return b.String()
}

func describeDiff(od materialize.ObjectDiff) string {
	return describeID(od.ID.Group, od.ID.Resource, od.ID.Namespace, od.ID.Name)
}

func describeID(group, resource, namespace, name string) string {
	gr := resource
	if group != "" {
		gr = resource + "." + group
	}
	if gr == "" {
		gr = "*"
	}
	if namespace == "" {
		return gr + " " + name
	}
	return gr + " " + namespace + "/" + name
}

// AssertComplete checks that a snapshot is complete: every stream it
// depends on was covered at its time. It reports what is missing otherwise.
func AssertComplete(t TestingT, s *materialize.Snapshot) bool {
	t.Helper()
	if s == nil {
		t.Errorf("krplytest: AssertComplete: nil snapshot")
		return false
	}
	if s.Complete {
		return true
	}
	var b strings.Builder
	for _, m := range s.Missing {
		fmt.Fprintf(&b, "  %s%s %s: %s\n", m.StreamID, m.Resource.String(), m.Namespace, m.Reason)
	}
	t.Errorf("krplytest: snapshot at %s is not complete:\n%s", s.At.UTC().Format("2006-01-02T15:04:05.000Z"), b.String())
	return false
}
