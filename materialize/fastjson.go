package materialize

import (
	"encoding/json"
	"unicode/utf8"
)

// maxFastDepth is the nesting the fast decoder takes; a deeper body is
// left to encoding/json (whose own limit is far above any object's).
const maxFastDepth = 512

// fastDecode decodes the JSON object at the start of raw (after white
// space) into the tree decodeFirst makes — map[string]any, []any,
// json.Number, string, bool and nil — and returns what follows it. It
// handles what the API server writes; ok is false for anything else (a
// value other than an object at the top, a syntax error, a nesting deeper
// than maxFastDepth), and then decodeFirst must decode raw, so that every
// body decodes to the same tree, and fails with the same error, either
// way. It is three to four times faster than encoding/json's decoding into
// interfaces, which dominated the cost of a history.
//
// spaced reports whether white space came before or inside the value: a
// body decoded whole and without it is compact JSON, as encoding/json
// would write it.
func fastDecode(raw []byte) (v any, rest []byte, spaced, ok bool) {
	return fastDecodeInterning(raw, nil)
}

// fastDecodeInterning is fastDecode that takes short strings from intern,
// adding those it lacks (nil: none), so that the bodies of one history,
// which repeat most of their keys and values, share them.
func fastDecodeInterning(raw []byte, intern map[string]string) (v any, rest []byte, spaced, ok bool) {
	d := fastDecoder{data: raw, intern: intern}
	d.space()
	if d.pos >= len(d.data) || d.data[d.pos] != '{' {
		return nil, nil, false, false
	}
	v, ok = d.value(0)
	if !ok {
		return nil, nil, false, false
	}
	return v, raw[d.pos:], d.spaced, true
}

type fastDecoder struct {
	data   []byte
	pos    int
	spaced bool
	intern map[string]string
}

// maxInterned is the length of the longest string interned, and
// maxInterns the number of strings an intern table takes.
const (
	maxInterned = 64
	maxInterns  = 4096
)

func (d *fastDecoder) space() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\r', '\n':
			d.pos++
			d.spaced = true
		default:
			return
		}
	}
}

// value decodes the value at pos (white space skipped before it).
func (d *fastDecoder) value(depth int) (any, bool) {
	d.space()
	if d.pos >= len(d.data) {
		return nil, false
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		s, ok := d.str()
		return s, ok
	case c == '-' || c >= '0' && c <= '9':
		return d.number()
	case c == 't':
		return true, d.literal("true")
	case c == 'f':
		return false, d.literal("false")
	case c == 'n':
		return nil, d.literal("null")
	}
	return nil, false
}

func (d *fastDecoder) literal(word string) bool {
	if len(d.data)-d.pos < len(word) || string(d.data[d.pos:d.pos+len(word)]) != word {
		return false
	}
	d.pos += len(word)
	return true
}

func (d *fastDecoder) object(depth int) (any, bool) {
	if depth > maxFastDepth {
		return nil, false
	}
	d.pos++ // {
	m := make(map[string]any)
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return m, true
	}
	for {
		d.space()
		if d.pos >= len(d.data) || d.data[d.pos] != '"' {
			return nil, false
		}
		k, ok := d.str()
		if !ok {
			return nil, false
		}
		d.space()
		if d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, false
		}
		d.pos++
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		m[k] = v // the last of duplicate keys wins, as in encoding/json
		if more, ok := d.separator('}'); !ok || !more {
			return m, ok
		}
	}
}

// separator reads what follows an item of an object or a list: a comma
// (more is true) or the end.
func (d *fastDecoder) separator(end byte) (more, ok bool) {
	d.space()
	if d.pos >= len(d.data) {
		return false, false
	}
	switch d.data[d.pos] {
	case ',':
		d.pos++
		return true, true
	case end:
		d.pos++
		return false, true
	}
	return false, false
}

func (d *fastDecoder) array(depth int) (any, bool) {
	if depth > maxFastDepth {
		return nil, false
	}
	d.pos++ // [
	out := []any{}
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return out, true
	}
	for {
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		out = append(out, v)
		if more, ok := d.separator(']'); !ok || !more {
			return out, ok
		}
	}
}

// str decodes the string at pos. A string with escapes or bytes beyond
// ASCII that are not valid UTF-8 is unquoted by encoding/json, which
// decides what they mean.
func (d *fastDecoder) str() (string, bool) {
	start := d.pos
	d.pos++ // "
	plain, ascii := true, true
	for d.pos < len(d.data) {
		c := d.data[d.pos]
		switch {
		case c == '"':
			d.pos++
			lit := d.data[start:d.pos]
			if plain && (ascii || utf8.Valid(lit)) {
				b := lit[1 : len(lit)-1]
				if d.intern == nil || len(b) > maxInterned {
					return string(b), true
				}
				if s, ok := d.intern[string(b)]; ok {
					return s, true
				}
				s := string(b)
				if len(d.intern) < maxInterns {
					d.intern[s] = s
				}
				return s, true
			}
			var s string
			if err := json.Unmarshal(lit, &s); err != nil {
				return "", false
			}
			return s, true
		case c == '\\':
			plain = false
			d.pos += 2
			continue
		case c < 0x20:
			return "", false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		d.pos++
	}
	return "", false
}

// number reads a number literal as JSON's grammar spells it.
func (d *fastDecoder) number() (any, bool) {
	start := d.pos
	digits := func() int {
		n := 0
		for d.pos < len(d.data) && d.data[d.pos] >= '0' && d.data[d.pos] <= '9' {
			d.pos++
			n++
		}
		return n
	}
	if d.data[d.pos] == '-' {
		d.pos++
	}
	switch {
	case d.pos >= len(d.data):
		return nil, false
	case d.data[d.pos] == '0':
		d.pos++
	case digits() == 0:
		return nil, false
	}
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		if digits() == 0 {
			return nil, false
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if digits() == 0 {
			return nil, false
		}
	}
	return json.Number(d.data[start:d.pos]), true
}
