package why

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/krply/krply/materialize"
)

// The points of the ranking rules (see the package documentation).
const (
	pointsAffects   = 40 // the changed field can affect the object
	pointsSecretW   = 30 // a Secret written whose values the journal redacted
	pointsMayAffect = 15 // another change of spec, data or existence
	pointsMetadata  = 5  // labels, annotations, unread keys
	pointsClose     = 30 // at most, for a change just before T
	pointsNear      = 20 // the object itself or one edge away
	pointsFar       = 10 // two edges away
	pointsFarther   = 5  // three or more
	pointsPerson    = 10
	pointsUnknown   = 5
)

// rank ranks the changes before T as candidate causes.
func rank(a *Answer, w *walker) []Candidate {
	var caveat string
	if !a.Complete {
		var why []string
		if n := uncovered(a.Coverage); n > 0 {
			why = append(why, fmt.Sprintf("%d of %d streams not covered", n, len(a.Coverage)))
		}
		if len(a.NotRecorded) > 0 {
			why = append(why, "not recorded: "+strings.Join(a.NotRecorded, ", "))
		}
		if !a.EventsRecorded {
			why = append(why, "Events not recorded")
		}
		caveat = "the journal is not complete over the window (" + strings.Join(why, "; ") + ": see coverage): a change it does not hold could rank above this one"
	}
	var out []Candidate
	for i := range a.Changes {
		c := &a.Changes[i]
		n := w.nodes[c.Object]
		if n == nil || !eligible(c, n, a.At) {
			continue
		}
		cand := Candidate{Change: i, Summary: summary(c)}
		pts, why := relevance(c, n)
		cand.add(pts, why)
		cand.add(closeness(c, a.At, a.From))
		cand.add(distance(n))
		cand.add(actor(c))
		if c.Between != nil {
			cand.Caveats = append(cand.Caveats, fmt.Sprintf("seen only by a relist after a loss of continuity: it happened between %s and %s, not when observed",
				c.Between.From.UTC().Format(time.RFC3339), c.Between.To.UTC().Format(time.RFC3339)))
		}
		if caveat != "" {
			cand.Caveats = append(cand.Caveats, caveat)
		}
		out = append(out, cand)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Score != out[j].Score {
			return out[i].Score > out[j].Score
		}
		return a.Changes[out[i].Change].ObservedAt.After(a.Changes[out[j].Change].ObservedAt)
	})
	if len(out) > maxCandidates {
		out = out[:maxCandidates]
	}
	return out
}

// uncovered counts the streams not covered over the window.
func uncovered(cov []StreamCoverage) int {
	n := 0
	for _, sc := range cov {
		if !sc.Covered {
			n++
		}
	}
	return n
}

func (c *Candidate) add(points int, reason string) {
	c.Score += points
	c.Reasons = append(c.Reasons, fmt.Sprintf("+%d %s", points, reason))
}

// eligible says whether a change can be a cause: it is before T, and it
// is not a symptom — a status change of the object or of its owners and
// owned objects, or a controller creating one of them.
func eligible(c *Change, n *gnode, at time.Time) bool {
	when := c.ObservedAt
	if c.Between != nil {
		when = c.Between.From
	}
	if when.After(at) {
		return false
	}
	if n.workload {
		if c.Type == ChangeCreated && (c.Who == nil || c.Who.Actor != ActorPerson) {
			return false
		}
		if c.Type == ChangeModified && len(specFields(c.Fields)) == 0 {
			return false
		}
	}
	return true
}

// specFields are the changes outside status.
func specFields(fields []materialize.FieldChange) []materialize.FieldChange {
	var out []materialize.FieldChange
	for _, f := range fields {
		if !strings.HasPrefix(f.Path, "status") {
			out = append(out, f)
		}
	}
	return out
}

// relevance scores whether the change can affect the object.
func relevance(c *Change, n *gnode) (int, string) {
	kind := n.Kind
	switch c.Type {
	case ChangeDeleted:
		if n.via != "" && strings.HasPrefix(n.via, "is read by") {
			return pointsAffects, fmt.Sprintf("deleted a %s that %s", kind, n.via)
		}
		return pointsMayAffect, "deleted a " + kind + " in the graph"
	case ChangeCreated:
		return pointsMayAffect, "created a " + kind + " in the graph"
	}
	fields := specFields(c.Fields)
	if kind == "ConfigMap" || kind == "Secret" {
		keys := dataKeys(fields)
		if len(keys) == 0 && kind == "Secret" && len(fields) == 0 {
			return pointsSecretW, "wrote a Secret that " + n.via + "; its values are redacted in the journal, so which key changed is unknown"
		}
		if len(keys) > 0 {
			if n.allKeys != "" {
				return pointsAffects, fmt.Sprintf("changed %s of a %s read whole (%s)", plural("key", keys), kind, n.allKeys)
			}
			for _, k := range keys {
				if where, ok := n.keys[k]; ok {
					return pointsAffects, fmt.Sprintf("changed key %q, which is read (%s)", k, where)
				}
			}
			return pointsMetadata, fmt.Sprintf("changed %s, which the object does not read", plural("key", keys))
		}
	}
	for _, f := range fields {
		switch {
		case n.workload && (strings.Contains(f.Path, "template.spec") || strings.HasPrefix(f.Path, "spec.containers") || strings.HasPrefix(f.Path, "spec.initContainers")):
			if strings.HasSuffix(f.Path, ".image") {
				return pointsAffects, fmt.Sprintf("changed image %v → %v (%s)", f.Before, f.After, f.Path)
			}
			return pointsAffects, "changed the pod template (" + f.Path + ")"
		case kind == "Node" && (strings.HasPrefix(f.Path, "spec.taints") || f.Path == "spec.unschedulable"):
			return pointsAffects, "changed the taints or schedulability of a Node that " + n.via
		}
	}
	for _, t := range c.Transitions {
		if t.Bad {
			return pointsAffects, fmt.Sprintf("%s turned %s", t.What, describeState(t.To, t.Reason))
		}
	}
	for _, f := range fields {
		if strings.HasPrefix(f.Path, "spec") || strings.HasPrefix(f.Path, "data") || strings.HasPrefix(f.Path, "binaryData") {
			return pointsMayAffect, "changed " + f.Path
		}
	}
	if len(fields) > 0 {
		return pointsMetadata, "changed only " + fields[0].Path + " and such metadata"
	}
	return 0, "changed status only"
}

// dataKeys are the keys of data, binaryData or stringData that changed.
func dataKeys(fields []materialize.FieldChange) []string {
	seen := map[string]bool{}
	var keys []string
	for _, f := range fields {
		for _, top := range []string{"data", "binaryData", "stringData"} {
			rest, ok := strings.CutPrefix(f.Path, top)
			if !ok {
				continue
			}
			var k string
			switch {
			case strings.HasPrefix(rest, "."):
				k = rest[1:]
			case strings.HasPrefix(rest, "["):
				end := strings.Index(rest, "]")
				if end < 0 {
					continue
				}
				k, _ = strconv.Unquote(rest[1:end])
			case rest == "":
				if m, ok := f.After.(map[string]any); ok {
					for mk := range m {
						if !seen[mk] {
							seen[mk] = true
							keys = append(keys, mk)
						}
					}
				}
				if m, ok := f.Before.(map[string]any); ok {
					for mk := range m {
						if !seen[mk] {
							seen[mk] = true
							keys = append(keys, mk)
						}
					}
				}
			}
			if k != "" && !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

func plural(word string, items []string) string {
	q := make([]string, len(items))
	for i, s := range items {
		q[i] = strconv.Quote(s)
	}
	if len(items) == 1 {
		return word + " " + q[0]
	}
	return word + "s " + strings.Join(q, ", ")
}

// closeness scores how shortly before T the change came.
func closeness(c *Change, at, from time.Time) (int, string) {
	when := c.ObservedAt
	if c.Between != nil && c.Between.To.Before(at) {
		when = c.Between.To
	} else if c.Between != nil {
		when = at
	}
	window := at.Sub(from)
	before := at.Sub(when)
	pts := pointsClose
	if window > 0 {
		pts = int(float64(pointsClose) * (1 - float64(before)/float64(window)))
	}
	pts = max(0, min(pointsClose, pts))
	return pts, fmt.Sprintf("%s before T", before.Round(time.Second))
}

// distance scores how close in the graph the changed object is.
func distance(n *gnode) (int, string) {
	switch {
	case n.Distance == 0:
		return pointsNear, "the object itself"
	case n.Distance == 1:
		return pointsNear, "one edge away: " + n.via
	case n.Distance == 2:
		return pointsFar, "two edges away: " + n.via
	}
	return pointsFarther, fmt.Sprintf("%d edges away: %s", n.Distance, n.via)
}

// actor scores who made the change.
func actor(c *Change) (int, string) {
	switch {
	case c.Who == nil:
		return pointsUnknown, "made by someone the journal does not know"
	case c.Who.Actor == ActorPerson:
		return pointsPerson, "made by a person: " + c.Who.name()
	case c.Who.Actor == ActorController:
		return 0, "made by a controller: " + c.Who.name()
	}
	return pointsUnknown, "made by " + c.Who.name() + ", not known as a person or a controller"
}

// name says who in words.
func (w *Who) name() string {
	switch {
	case w.User != "" && w.Manager != "":
		return fmt.Sprintf("%s (audit) with %s", w.User, w.Manager)
	case w.User != "":
		return w.User + " (audit)"
	}
	return w.Manager + " (field manager)"
}

// summary says a change in one line.
func summary(c *Change) string {
	var what string
	switch c.Type {
	case ChangeCreated, ChangeDeleted:
		what = string(c.Type)
	default:
		fields := specFields(c.Fields)
		switch {
		case len(fields) > 0:
			f := fields[0]
			what = fmt.Sprintf("%s %s", f.Path, arrow(f))
			if len(fields) > 1 {
				what += fmt.Sprintf(" (+%d more)", len(fields)-1)
			}
		case len(c.Transitions) > 0:
			t := c.Transitions[0]
			what = fmt.Sprintf("%s %s → %s", t.What, orNone(t.From), describeState(t.To, t.Reason))
		default:
			what = "written, no visible change"
		}
	}
	s := describe(c.Object) + ": " + what
	if c.Who != nil {
		s += " by " + c.Who.name()
	}
	return s
}

func arrow(f materialize.FieldChange) string {
	switch f.Op {
	case materialize.OpAdd:
		return fmt.Sprintf("added %s", short(f.After))
	case materialize.OpRemove:
		return fmt.Sprintf("removed (was %s)", short(f.Before))
	}
	return fmt.Sprintf("%s → %s", short(f.Before), short(f.After))
}

func short(v any) string {
	s := fmt.Sprint(v)
	if str, ok := v.(string); ok {
		s = strconv.Quote(str)
	}
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

func describeState(value, reason string) string {
	if reason == "" {
		return value
	}
	return value + " (" + reason + ")"
}
