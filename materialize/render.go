package materialize

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"
)

// maxValueWidth bounds a value in the table renderer.
const maxValueWidth = 60

// WriteTable writes the diff as a compact table, one line per field change:
//
//	Deployment  shop/web  spec.replicas  2 → 5
//
// Added, removed and unknown objects take one line each:
//
//	ConfigMap   shop/a    (unknown at start: no complete baseline at or before this time)
//
// Warnings come first, prefixed "warning: ".
func (d *Diff) WriteTable(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, warn := range d.Warnings {
		fmt.Fprintf(bw, "warning: %s\n", warn)
	}
	tw := tabwriter.NewWriter(bw, 0, 4, 2, ' ', 0)
	for _, od := range d.Objects {
		name := objectName(od)
		switch od.Type {
		case ObjectAdded, ObjectRemoved:
			fmt.Fprintf(tw, "%s\t%s\t(%s)\n", od.Kind, name, od.Type)
			continue
		case ObjectUnknown:
			fmt.Fprintf(tw, "%s\t%s\t(%s: %s)\n", od.Kind, name, unknownAt(od.UnknownAt), od.Reason)
			continue
		}
		if od.Recreated {
			fmt.Fprintf(tw, "%s\t%s\t(recreated)\n", od.Kind, name)
		}
		for _, c := range od.Changes {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s → %s\n", od.Kind, name, c.Path,
				formatValue(c.Before, c.Op != OpAdd), formatValue(c.After, c.Op != OpRemove))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	return bw.Flush()
}

// unknownAt says in words at which end a state is unknown.
func unknownAt(end DiffEnd) string {
	switch end {
	case DiffFrom:
		return "unknown at start"
	case DiffTo:
		return "unknown at end"
	}
	return "unknown at both ends"
}

func objectName(od ObjectDiff) string {
	if od.ID.Namespace == "" {
		return od.ID.Name
	}
	return od.ID.Namespace + "/" + od.ID.Name
}

// formatValue writes a value for the table: scalars as they are, lists and
// objects as compact JSON, long values shortened.
func formatValue(v any, present bool) string {
	if !present {
		return "<absent>"
	}
	var s string
	switch v := v.(type) {
	case nil:
		s = "null"
	case string:
		s = v
		if s == "" || strings.ContainsAny(s, " \t\n") {
			s = fmt.Sprintf("%q", v)
		}
	case json.Number:
		s = v.String()
	case bool:
		s = fmt.Sprint(v)
	default:
		b, err := json.Marshal(v)
		if err != nil {
			s = fmt.Sprint(v)
		} else {
			s = string(b)
		}
	}
	if r := []rune(s); len(r) > maxValueWidth {
		s = string(r[:maxValueWidth-1]) + "…"
	}
	return s
}

// unifiedContext is the number of unchanged lines around each hunk.
const unifiedContext = 3

// WriteUnified writes the diff like `kubectl diff`: for each object that
// differs, a unified diff of its YAML at From against its YAML at To, with
// the fields the diff ignored left out. Warnings come first as "# warning:"
// lines. An object whose state is unknown at an end gets a "# unknown:"
// line instead of a diff: the journal cannot say what changed.
func (d *Diff) WriteUnified(w io.Writer) error {
	bw := bufio.NewWriter(w)
	for _, warn := range d.Warnings {
		fmt.Fprintf(bw, "# warning: %s\n", warn)
	}
	for _, od := range d.Objects {
		if od.Type == ObjectUnknown {
			fmt.Fprintf(bw, "# %s: %s %s: %s\n", unknownAt(od.UnknownAt), od.Kind, objectName(od), od.Reason)
			continue
		}
		before, after, err := d.yamlPair(od)
		if err != nil {
			return err
		}
		label := od.Kind + " " + objectName(od)
		fmt.Fprintf(bw, "--- %s\t%s\n", label, stamp(d.From, od.Before != nil))
		fmt.Fprintf(bw, "+++ %s\t%s\n", label, stamp(d.To, od.After != nil))
		writeHunks(bw, before, after)
	}
	return bw.Flush()
}

func stamp(t time.Time, exists bool) string {
	if !exists {
		return "(absent) " + t.UTC().Format(time.RFC3339)
	}
	return t.UTC().Format(time.RFC3339)
}

// yamlPair returns the YAML lines of an object's two versions without the
// ignored fields, with the items of keyed lists in After put in Before's
// order, so that a reordering does not show as a change.
func (d *Diff) yamlPair(od ObjectDiff) (before, after []string, err error) {
	b, err := d.decodeStripped(od.Before)
	if err != nil {
		return nil, nil, err
	}
	a, err := d.decodeStripped(od.After)
	if err != nil {
		return nil, nil, err
	}
	if b != nil && a != nil {
		a = alignKeyed(b, a, "", d.comparison().mergeKeys)
	}
	before, err = yamlLines(b)
	if err != nil {
		return nil, nil, fmt.Errorf("yaml of %s: %w", objectName(od), err)
	}
	after, err = yamlLines(a)
	if err != nil {
		return nil, nil, fmt.Errorf("yaml of %s: %w", objectName(od), err)
	}
	return before, after, nil
}

// comparison is how the diff compared bodies. A Diff decoded from JSON
// (a query API's answer) does not carry it: it was compared the default
// way, unless the request said otherwise, which its Changes show.
func (d *Diff) comparison() compareConfig {
	if d.compare.mergeKeys == nil && !d.compare.defaultIgnores && d.compare.rules == nil {
		if cc, err := defaultQueryConfig().compareConfig(false); err == nil {
			return cc
		}
	}
	return d.compare
}

func (d *Diff) decodeStripped(o *SnapshotObject) (any, error) {
	if o == nil {
		return nil, nil
	}
	v, err := decodeJSON(o.Object)
	if err != nil {
		return nil, fmt.Errorf("decode %s: %w", o.Ref, err)
	}
	cc := d.comparison()
	return stripIgnored(v, startPointers(cc.pointersFor(objectMetaOf(o.Ref, v)))), nil
}

func yamlLines(v any) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	js, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		return nil, err
	}
	return strings.Split(strings.TrimSuffix(string(y), "\n"), "\n"), nil
}

// alignKeyed returns after with the items of lists matched by merge key in
// before's order, new items last.
func alignKeyed(before, after any, field string, mergeKeys map[string][]string) any {
	switch a := after.(type) {
	case map[string]any:
		b, ok := before.(map[string]any)
		if !ok {
			return after
		}
		out := make(map[string]any, len(a))
		for k, v := range a {
			out[k] = alignKeyed(b[k], v, k, mergeKeys)
		}
		return out
	case []any:
		b, ok := before.([]any)
		if !ok {
			return after
		}
		c := comparer{mergeKeys: mergeKeys}
		key := c.mergeKey(field, b, a)
		if key == "" {
			return after
		}
		byKey := make(map[string]any, len(a))
		for _, item := range a {
			byKey[keyLiteral(item.(map[string]any)[key])] = item
		}
		out := make([]any, 0, len(a))
		used := make(map[string]bool, len(a))
		for _, item := range b {
			lit := keyLiteral(item.(map[string]any)[key])
			if match, ok := byKey[lit]; ok {
				out = append(out, alignKeyed(item, match, "", mergeKeys))
				used[lit] = true
			}
		}
		for _, item := range a {
			if !used[keyLiteral(item.(map[string]any)[key])] {
				out = append(out, item)
			}
		}
		return out
	}
	return after
}

// editOp is one line of a line diff.
type editOp struct {
	kind byte // ' ', '-', '+'
	line string
}

// lineDiff returns a shortest edit script from a to b (Myers' algorithm).
func lineDiff(a, b []string) []editOp {
	n, m := len(a), len(b)
	maxD := n + m
	offset := maxD + 1
	v := make([]int, 2*maxD+3)
	var trace [][]int
	for dist := 0; dist <= maxD; dist++ {
		trace = append(trace, append([]int(nil), v...))
		for k := -dist; k <= dist; k += 2 {
			var x int
			if k == -dist || k != dist && v[offset+k-1] < v[offset+k+1] {
				x = v[offset+k+1]
			} else {
				x = v[offset+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x++
				y++
			}
			v[offset+k] = x
			if x >= n && y >= m {
				return backtrack(trace, a, b, offset, dist)
			}
		}
	}
	return nil
}

func backtrack(trace [][]int, a, b []string, offset, dist int) []editOp {
	var ops []editOp
	x, y := len(a), len(b)
	for d := dist; d > 0; d-- {
		vPrev := trace[d]
		k := x - y
		var prevK int
		if k == -d || k != d && vPrev[offset+k-1] < vPrev[offset+k+1] {
			prevK = k + 1
		} else {
			prevK = k - 1
		}
		prevX := vPrev[offset+prevK]
		prevY := prevX - prevK
		for x > prevX && y > prevY {
			ops = append(ops, editOp{' ', a[x-1]})
			x--
			y--
		}
		if x == prevX {
			ops = append(ops, editOp{'+', b[y-1]})
			y--
		} else {
			ops = append(ops, editOp{'-', a[x-1]})
			x--
		}
	}
	for x > 0 && y > 0 {
		ops = append(ops, editOp{' ', a[x-1]})
		x--
		y--
	}
	for i, j := 0, len(ops)-1; i < j; i, j = i+1, j-1 {
		ops[i], ops[j] = ops[j], ops[i]
	}
	return ops
}

// writeHunks writes the unified hunks of a line diff.
func writeHunks(w io.Writer, a, b []string) {
	ops := lineDiff(a, b)
	for start := 0; start < len(ops); {
		// Find the next change.
		for start < len(ops) && ops[start].kind == ' ' {
			start++
		}
		if start == len(ops) {
			return
		}
		from := max(0, start-unifiedContext)
		end := start
		for end < len(ops) {
			if ops[end].kind != ' ' {
				end++
				continue
			}
			run := end
			for run < len(ops) && ops[run].kind == ' ' {
				run++
			}
			if run == len(ops) || run-end > 2*unifiedContext {
				end = min(run, end+unifiedContext)
				break
			}
			end = run
		}
		aStart, bStart := 0, 0
		for _, op := range ops[:from] {
			if op.kind != '+' {
				aStart++
			}
			if op.kind != '-' {
				bStart++
			}
		}
		aLen, bLen := 0, 0
		for _, op := range ops[from:end] {
			if op.kind != '+' {
				aLen++
			}
			if op.kind != '-' {
				bLen++
			}
		}
		fmt.Fprintf(w, "@@ -%s +%s @@\n", hunkRange(aStart, aLen), hunkRange(bStart, bLen))
		for _, op := range ops[from:end] {
			fmt.Fprintf(w, "%c%s\n", op.kind, op.line)
		}
		start = end
	}
}

func hunkRange(start, n int) string {
	if n == 0 {
		return fmt.Sprintf("%d,0", start)
	}
	if n == 1 {
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}
