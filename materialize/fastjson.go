package materialize

import (
	"bytes"
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
	// checked says data is part of a value the decoder took before: skip
	// then only finds where a value ends (see skipChecked).
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
		var out string
		if err := json.Unmarshal(d.data[s.start-1:s.end+1], &out); err != nil {
			return "", false
		}
		return out, true
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
// encoding/json does (no control characters, only JSON's escapes). plain
// reports that its bytes between the quotes are the string itself: no
// escapes, and valid UTF-8 (encoding/json replaces invalid bytes).
func (d *fastDecoder) scanString() (plain, ok bool) {
	start, data := d.pos, d.data
	pos := start + 1 // after the quote
	escaped, ascii := false, true
	for pos < len(data) {
		c := data[pos]
		if !stringSpecial[c] {
			pos++
			continue
		}
		switch {
		case c == '"':
			d.pos = pos + 1
			return !escaped && (ascii || utf8.Valid(data[start:d.pos])), true
		case c == '\\':
			escaped = true
			d.pos = pos
			if !d.escape() {
				return false, false
			}
			pos = d.pos
			continue
		case c < 0x20:
			return false, false
		default: // c >= utf8.RuneSelf
			ascii = false
		}
		pos++
	}
	return false, false
}

// stringSpecial marks the bytes scanString looks at: the quote, the
// backslash, control characters and bytes beyond ASCII.
var stringSpecial = func() (t [256]bool) {
	for c := range t {
		t[c] = c == '"' || c == '\\' || c < 0x20 || c >= utf8.RuneSelf
	}
	return t
}()

// escape moves past the escape sequence at pos: a backslash, then one of
// the quote, backslash, slash, b, f, n, r and t, or u and four hex digits.
func (d *fastDecoder) escape() bool {
	if d.pos+1 >= len(d.data) {
		return false
	}
	switch d.data[d.pos+1] {
	case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
		d.pos += 2
		return true
	case 'u':
		if d.pos+6 > len(d.data) {
			return false
		}
		for _, h := range d.data[d.pos+2 : d.pos+6] {
			if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
				return false
			}
		}
		d.pos += 6
		return true
	}
	return false
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
		return false
	case d.data[d.pos] == '0':
		d.pos++
	case digits() == 0:
		return false
	}
	if d.pos < len(d.data) && d.data[d.pos] == '.' {
		d.pos++
		if digits() == 0 {
			return false
		}
	}
	if d.pos < len(d.data) && (d.data[d.pos] == 'e' || d.data[d.pos] == 'E') {
		d.pos++
		if d.pos < len(d.data) && (d.data[d.pos] == '+' || d.data[d.pos] == '-') {
			d.pos++
		}
		if digits() == 0 {
			return false
		}
	}
	return true
}

// skip moves past the value at pos (white space skipped before it),
// taking exactly the values value takes, without building them.
func (d *fastDecoder) skip(depth int) bool {
	d.space()
	if d.pos >= len(d.data) {
		return false
	}
	if d.checked {
		return d.skipChecked()
	}
	switch c := d.data[d.pos]; {
	case c == '{':
		_, ok := d.members(depth+1, nil, false)
		return ok
	case c == '[':
		_, ok := d.items(depth+1, nil, false)
		return ok
	case c == '"':
		_, ok := d.scanString()
		return ok
	case c == '-' || c >= '0' && c <= '9':
		return d.scanNumber()
	case c == 't':
		return d.literal("true")
	case c == 'f':
		return d.literal("false")
	case c == 'n':
		return d.literal("null")
	}
	return false
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
	var s string
	// The scan checked the string: it unquotes.
	_ = json.Unmarshal(data[f.key.start-1:f.key.end+1], &s)
	return []byte(s)
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

// skipChecked is skip over a value known to be valid JSON: it matches
// brackets and finds the ends of strings, and checks nothing else.
func (d *fastDecoder) skipChecked() bool {
	data, pos := d.data, d.pos
	switch data[pos] {
	case '"':
		pos = stringEnd(data, pos)
	case '{', '[':
		depth := 0
		for pos < len(data) {
			c := data[pos]
			if !structural[c] {
				pos++
				continue
			}
			switch c {
			case '"':
				if pos = stringEnd(data, pos); pos < 0 {
					return false
				}
				continue
			case '{', '[':
				depth++
			default: // '}', ']'
				depth--
			}
			pos++
			if depth == 0 {
				break
			}
		}
		if depth != 0 {
			return false
		}
	default: // a number or a literal
		for pos < len(data) && !structural[data[pos]] && data[pos] > ' ' && data[pos] != ',' {
			pos++
		}
	}
	if pos < 0 {
		return false
	}
	d.pos = pos
	return true
}

// structural marks the bytes skipChecked looks for in a list or object.
var structural = func() (t [256]bool) {
	for _, c := range `"{}[]` {
		t[c] = true
	}
	return t
}()

// stringEnd returns the position after the string literal at pos, -1
// when it does not end.
func stringEnd(data []byte, pos int) int {
	for i := pos + 1; ; {
		q := bytes.IndexByte(data[i:], '"')
		if q < 0 {
			return -1
		}
		i += q
		backslashes := 0
		for j := i - 1; j > pos && data[j] == '\\'; j-- {
			backslashes++
		}
		i++
		if backslashes%2 == 0 {
			return i
		}
	}
}
