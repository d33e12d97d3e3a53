package materialize

import (
	"encoding/json"
	"strconv"
	"strings"
)

// segKind is the kind of one step of a field path.
type segKind uint8

const (
	segField segKind = iota // a key of a JSON object
	segIndex                // an item of a list, by position
	segKey                  // an item of a list, by merge key
)

// seg is one step of a field path.
type seg struct {
	kind  segKind
	name  string // field name, or merge key name for segKey
	index int    // segIndex; for segKey the item's position in Before (or After when added)
	value any    // segKey: the merge key's value (string or json.Number)
}

// renderPath writes a path the way kubectl users read it:
// spec.template.spec.containers[name=app].image. Field names that are not
// plain identifiers are quoted: metadata.annotations["example.com/x"].
func renderPath(path []seg) string {
	var b strings.Builder
	for _, s := range path {
		switch s.kind {
		case segField:
			if plainName(s.name) {
				if b.Len() > 0 {
					b.WriteByte('.')
				}
				b.WriteString(s.name)
			} else {
				b.WriteByte('[')
				b.WriteString(strconv.Quote(s.name))
				b.WriteByte(']')
			}
		case segIndex:
			b.WriteByte('[')
			b.WriteString(strconv.Itoa(s.index))
			b.WriteByte(']')
		case segKey:
			b.WriteByte('[')
			b.WriteString(s.name)
			b.WriteByte('=')
			b.WriteString(keyLiteral(s.value))
			b.WriteByte(']')
		}
	}
	return b.String()
}

// plainName reports whether a field name can be written after a dot.
func plainName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '_' || c == '$' ||
			i > 0 && ('0' <= c && c <= '9' || c == '-') {
			continue
		}
		return false
	}
	return true
}

// keyLiteral writes a merge key value: numbers bare, plain names bare,
// anything else (including strings that look like numbers) quoted.
func keyLiteral(v any) string {
	switch v := v.(type) {
	case json.Number:
		return v.String()
	case string:
		if plainName(v) {
			return v
		}
		return strconv.Quote(v)
	}
	return ""
}

// comparePaths orders paths segment by segment, list indexes numerically.
func comparePaths(a, b []seg) int {
	for i := 0; i < len(a) && i < len(b); i++ {
		if c := compareSeg(a[i], b[i]); c != 0 {
			return c
		}
	}
	return len(a) - len(b)
}

func compareSeg(a, b seg) int {
	if a.kind != b.kind {
		return int(a.kind) - int(b.kind)
	}
	switch a.kind {
	case segIndex:
		return a.index - b.index
	case segKey:
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return strings.Compare(keyLiteral(a.value), keyLiteral(b.value))
	}
	return strings.Compare(a.name, b.name)
}
