package krplytest

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/krply/krply/materialize"
)

// pathSeg is one step of a field path as materialize.FieldChange.Path
// writes it: a field (name or ["quoted"]), a list index ([3]), or a list
// item by merge key ([name=app], [name="my.app"], [containerPort=80]).
type pathSeg struct {
	field string
	index int
	key   string // merge key name; value holds its value
	value string // the value as written: a plain name, a number, or unquoted string
	kind  byte   // 'f' field, 'i' index, 'k' merge key
}

// parsePath reads a field path. It returns an error for a path that
// materialize never writes.
func parsePath(p string) ([]pathSeg, error) {
	var out []pathSeg
	i := 0
	for i < len(p) {
		switch {
		case p[i] == '.' && len(out) > 0:
			i++
			n := plainLen(p[i:])
			if n == 0 {
				return nil, fmt.Errorf("no field name after the dot at %d", i)
			}
			out = append(out, pathSeg{kind: 'f', field: p[i : i+n]})
			i += n
		case p[i] == '[':
			end, seg, err := bracket(p, i)
			if err != nil {
				return nil, err
			}
			out = append(out, seg)
			i = end
		case len(out) == 0:
			n := plainLen(p)
			if n == 0 {
				return nil, fmt.Errorf("no field name at the start")
			}
			out = append(out, pathSeg{kind: 'f', field: p[:n]})
			i = n
		default:
			return nil, fmt.Errorf("unexpected %q at %d", p[i], i)
		}
	}
	return out, nil
}

// plainLen is the length of the plain field name s starts with (letters,
// digits, _, $ and -, not starting with a digit or -).
func plainLen(s string) int {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '$' || i > 0 && ('0' <= c && c <= '9' || c == '-') {
			continue
		}
		return i
	}
	return len(s)
}

// bracket reads the [...] step starting at p[i].
func bracket(p string, i int) (int, pathSeg, error) {
	rest := p[i+1:]
	if strings.HasPrefix(rest, `"`) {
		q, err := strconv.QuotedPrefix(rest)
		if err != nil || !strings.HasPrefix(rest[len(q):], "]") {
			return 0, pathSeg{}, fmt.Errorf("bad quoted field at %d", i)
		}
		name, _ := strconv.Unquote(q)
		return i + 1 + len(q) + 1, pathSeg{kind: 'f', field: name}, nil
	}
	if n, err := strconv.Atoi(rest[:max(strings.IndexByte(rest, ']'), 0)]); err == nil && strings.Contains(rest, "]") {
		return i + 1 + strings.IndexByte(rest, ']') + 1, pathSeg{kind: 'i', index: n}, nil
	}
	n := plainLen(rest)
	if n == 0 || n >= len(rest) || rest[n] != '=' {
		return 0, pathSeg{}, fmt.Errorf("bad [...] at %d", i)
	}
	seg := pathSeg{kind: 'k', key: rest[:n]}
	v := rest[n+1:]
	switch {
	case strings.HasPrefix(v, `"`):
		q, err := strconv.QuotedPrefix(v)
		if err != nil || !strings.HasPrefix(v[len(q):], "]") {
			return 0, pathSeg{}, fmt.Errorf("bad quoted merge key value at %d", i)
		}
		seg.value, _ = strconv.Unquote(q)
		return i + 1 + n + 1 + len(q) + 1, seg, nil
	default:
		end := strings.IndexByte(v, ']')
		if end <= 0 {
			return 0, pathSeg{}, fmt.Errorf("bad merge key value at %d", i)
		}
		seg.value = v[:end]
		return i + 1 + n + 1 + end + 1, seg, nil
	}
}

// lookup finds the value at a path inside a JSON value.
func lookup(v any, path []pathSeg) (any, bool) {
	for _, s := range path {
		switch s.kind {
		case 'f':
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[s.field]; !ok {
				return nil, false
			}
		case 'i':
			l, ok := v.([]any)
			if !ok || s.index < 0 || s.index >= len(l) {
				return nil, false
			}
			v = l[s.index]
		case 'k':
			l, ok := v.([]any)
			if !ok {
				return nil, false
			}
			found := false
			for _, item := range l {
				m, ok := item.(map[string]any)
				if !ok {
					continue
				}
				switch kv := m[s.key].(type) {
				case string:
					found = kv == s.value
				case json.Number:
					found = kv.String() == s.value
				case float64:
					found = strconv.FormatFloat(kv, 'f', -1, 64) == s.value
				}
				if found {
					v = item
					break
				}
			}
			if !found {
				return nil, false
			}
		}
	}
	return v, true
}

// hasPrefix reports whether path starts with prefix and is longer.
func hasPrefix(path, prefix []pathSeg) bool {
	if len(prefix) >= len(path) {
		return false
	}
	for i := range prefix {
		if prefix[i] != path[i] {
			return false
		}
	}
	return true
}

// inside finds a change of an ancestor of path — a map or list added,
// removed or replaced whole — and returns what it did to the field at path,
// as a change of its own (op "" when the field is on neither side).
func inside(changes []materialize.FieldChange, path string) (materialize.FieldChange, string, bool) {
	want, err := parsePath(path)
	if err != nil {
		return materialize.FieldChange{}, "", false
	}
	for _, fc := range changes {
		anc, err := parsePath(fc.Path)
		if err != nil || !hasPrefix(want, anc) {
			continue
		}
		rest := want[len(anc):]
		before, inBefore := lookup(fc.Before, rest)
		after, inAfter := lookup(fc.After, rest)
		if fc.Op == materialize.OpAdd {
			inBefore = false
		}
		if fc.Op == materialize.OpRemove {
			inAfter = false
		}
		out := materialize.FieldChange{Path: path, Before: before, After: after}
		switch {
		case inBefore && inAfter:
			out.Op = materialize.OpReplace
		case inAfter:
			out.Op = materialize.OpAdd
		case inBefore:
			out.Op = materialize.OpRemove
		}
		return out, fc.Path, true
	}
	return materialize.FieldChange{}, "", false
}
