package materialize

import (
	"encoding/json"

	"github.com/krply/krply/internal/jsonscan"
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

// fastDecoder decodes and walks a body with jsonscan, keeping its place.
type fastDecoder struct {
	data   []byte
	pos    int
	spaced bool
	intern map[string]string
	// checked says data is part of a value the decoder took before: skip
	// then only finds where a value ends (see jsonscan.SkipChecked).
	checked bool
}

// maxInterned is the length of the longest string interned, and
// maxInterns the number of strings an intern table takes.
const (
	maxInterned = 64
	maxInterns  = 4096
)

func (d *fastDecoder) space() {
	if d.pos >= len(d.data) || d.data[d.pos] > ' ' {
		return // most often
	}
	end := jsonscan.Space(d.data, d.pos)
	d.spaced = d.spaced || end != d.pos
	d.pos = end
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
	end, err := jsonscan.Literal(d.data, d.pos, word)
	return d.moveTo(end, err)
}

// moveTo moves pos to end when err is nil, and reports whether it is.
func (d *fastDecoder) moveTo(end int, err error) bool {
	if err != nil {
		return false
	}
	d.pos = end
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
		key, plain, ok := d.memberKey()
		if !ok {
			return nil, false
		}
		k, ok := d.stringAt(key, plain)
		if !ok {
			return nil, false
		}
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
	s := span{start: d.pos + 1}
	plain, ok := d.scanString()
	if !ok {
		return "", false
	}
	s.end = d.pos - 1
	return d.stringAt(s, plain)
}

// stringAt returns the string whose bytes between the quotes are at s.
func (d *fastDecoder) stringAt(s span, plain bool) (string, bool) {
	if !plain {
		return jsonscan.Unquote(d.data[s.start-1 : s.end+1]), true
	}
	return d.internBytes(s.in(d.data)), true
}

// memberKey reads the key of an object's member and the colon after it,
// white space around them: where the key's bytes between the quotes are,
// and whether they are the key itself (see scanString).
func (d *fastDecoder) memberKey() (key span, plain, ok bool) {
	d.space()
	if d.pos >= len(d.data) || d.data[d.pos] != '"' {
		return key, false, false
	}
	key.start = d.pos + 1
	if plain, ok = d.scanString(); !ok {
		return key, false, false
	}
	key.end = d.pos - 1
	d.space()
	if d.pos >= len(d.data) || d.data[d.pos] != ':' {
		return key, false, false
	}
	d.pos++
	d.space()
	return key, plain, true
}

// internBytes returns b as a string, from the intern table when it has
// one (see internString).
func (d *fastDecoder) internBytes(b []byte) string {
	return internString(d.intern, b)
}

// internString returns b as a string: the one intern holds, adding those
// it lacks while it has room; a new string when intern is nil or b long.
func internString(intern map[string]string, b []byte) string {
	if intern == nil || len(b) > maxInterned {
		return string(b)
	}
	if s, ok := intern[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(intern) < maxInterns {
		intern[s] = s
	}
	return s
}

// scanString moves past the string literal at pos, checking it as
// encoding/json does; plain is jsonscan.String's.
func (d *fastDecoder) scanString() (plain, ok bool) {
	end, plain, err := jsonscan.String(d.data, d.pos)
	return plain, d.moveTo(end, err)
}

// number reads a number literal as JSON's grammar spells it.
func (d *fastDecoder) number() (any, bool) {
	start := d.pos
	if !d.scanNumber() {
		return nil, false
	}
	return json.Number(d.data[start:d.pos]), true
}

// scanNumber moves past the number literal at pos.
func (d *fastDecoder) scanNumber() bool {
	end, err := jsonscan.Number(d.data, d.pos)
	return d.moveTo(end, err)
}

// skip moves past the value at pos (white space skipped before it),
// taking exactly the values value takes, without building them; when
// checked, it only finds where the value ends.
func (d *fastDecoder) skip(depth int) bool {
	d.space()
	if d.pos >= len(d.data) {
		return false
	}
	if d.checked {
		end, ok := jsonscan.SkipChecked(d.data, d.pos)
		if ok {
			d.pos = end
		}
		return ok
	}
	end, spaced, err := jsonscan.SkipSpaced(d.data, d.pos, maxFastDepth-depth)
	d.spaced = d.spaced || spaced
	return d.moveTo(end, err)
}

// span is where a part of a JSON text is: data[start:end].
type span struct{ start, end int }

func (s span) in(data []byte) []byte { return data[s.start:s.end] }

// rawField is a member of a JSON object as written: where its key is,
// between the quotes, and where its value is, in the object's text. It
// holds no pointer, so that the many of them cost the garbage collector
// nothing.
type rawField struct {
	key, val span
	// escaped says the key has escapes or invalid UTF-8: its bytes are
	// not the key, keyIn decodes them.
	escaped bool
}

// keyIn returns the member's key, data being the object's text.
func (f *rawField) keyIn(data []byte) []byte {
	k := f.key.in(data)
	if !f.escaped {
		return k
	}
	return []byte(jsonscan.Unquote(data[f.key.start-1 : f.key.end+1]))
}

// members moves past the object at pos, as skip does, appending its
// members to dst in order, duplicates included, when record. (It returns
// dst rather than storing through a pointer for each member: a store of a
// pointer costs a write barrier while the garbage collector marks.)
func (d *fastDecoder) members(depth int, dst []rawField, record bool) ([]rawField, bool) {
	if depth > maxFastDepth {
		return dst, false
	}
	d.pos++ // {
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return dst, true
	}
	for {
		key, plain, ok := d.memberKey()
		if !ok {
			return dst, false
		}
		vstart := d.pos
		if !d.skip(depth) {
			return dst, false
		}
		if record {
			dst = append(dst, rawField{key: key, val: span{vstart, d.pos}, escaped: !plain})
		}
		if more, ok := d.separator('}'); !ok || !more {
			return dst, ok
		}
	}
}

// items moves past the list at pos, as skip does, appending where its
// items are to dst when record.
func (d *fastDecoder) items(depth int, dst []span, record bool) ([]span, bool) {
	if depth > maxFastDepth {
		return dst, false
	}
	d.pos++ // [
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == ']' {
		d.pos++
		return dst, true
	}
	for {
		d.space()
		start := d.pos
		if !d.skip(depth) {
			return dst, false
		}
		if record {
			dst = append(dst, span{start, d.pos})
		}
		if more, ok := d.separator(']'); !ok || !more {
			return dst, ok
		}
	}
}
