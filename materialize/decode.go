package materialize

import (
	"bytes"
	"encoding/json"
	"errors"
	"unicode/utf8"
)

// errSlowPath makes parseValue hand a body to encoding/json: the fast
// parser met something it leaves to it (an escaped or non-ASCII string
// it could not take as it is, deep nesting, or invalid JSON, whose error
// encoding/json words).
var errSlowPath = errors.New("materialize: decode with encoding/json")

// maxDepth is encoding/json's nesting limit; deeper values are left to it.
const maxDepth = 10000

// decodeFirstFast decodes the first JSON value of raw as encoding/json
// does into an interface with UseNumber (maps, slices, strings,
// json.Number, bools and nil), and returns what follows it; errSlowPath
// when encoding/json must decide. A diff decodes every changed body,
// and this is several times faster than encoding/json's reflection.
func decodeFirstFast(raw []byte) (any, []byte, error) {
	p := parser{data: raw}
	p.skipSpace()
	v, err := p.value(0)
	if err != nil {
		return nil, nil, err
	}
	return v, raw[p.pos:], nil
}

type parser struct {
	data []byte
	pos  int
}

func (p *parser) skipSpace() {
	for p.pos < len(p.data) {
		switch p.data[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// value parses the value at pos (no space before it).
func (p *parser) value(depth int) (any, error) {
	if p.pos >= len(p.data) || depth >= maxDepth {
		return nil, errSlowPath
	}
	switch c := p.data[p.pos]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		return p.str()
	case c == '-' || c >= '0' && c <= '9':
		return p.number()
	case c == 't':
		return true, p.literal("true")
	case c == 'f':
		return false, p.literal("false")
	case c == 'n':
		return nil, p.literal("null")
	}
	return nil, errSlowPath
}

func (p *parser) literal(word string) error {
	if !bytes.HasPrefix(p.data[p.pos:], []byte(word)) {
		return errSlowPath
	}
	p.pos += len(word)
	return nil
}

func (p *parser) object(depth int) (any, error) {
	p.pos++ // {
	m := map[string]any{}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == '}' {
		p.pos++
		return m, nil
	}
	for {
		if p.pos >= len(p.data) || p.data[p.pos] != '"' {
			return nil, errSlowPath
		}
		key, err := p.str()
		if err != nil {
			return nil, err
		}
		p.skipSpace()
		if p.pos >= len(p.data) || p.data[p.pos] != ':' {
			return nil, errSlowPath
		}
		p.pos++
		p.skipSpace()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		m[key] = v
		if end, err := p.next('}'); end || err != nil {
			return m, err
		}
	}
}

// next consumes what follows a member or an element: a comma (false) or
// the closing byte (true).
func (p *parser) next(closing byte) (bool, error) {
	p.skipSpace()
	if p.pos >= len(p.data) {
		return false, errSlowPath
	}
	switch p.data[p.pos] {
	case ',':
		p.pos++
		p.skipSpace()
		return false, nil
	case closing:
		p.pos++
		return true, nil
	}
	return false, errSlowPath
}

func (p *parser) array(depth int) (any, error) {
	p.pos++ // [
	out := []any{}
	p.skipSpace()
	if p.pos < len(p.data) && p.data[p.pos] == ']' {
		p.pos++
		return out, nil
	}
	for {
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
		if end, err := p.next(']'); end || err != nil {
			return out, err
		}
	}
}

// str parses a string. One without escapes that is valid UTF-8 is taken
// as it is; any other is unquoted by encoding/json.
func (p *parser) str() (string, error) {
	start := p.pos + 1
	plain := true
	i := start
	for ; i < len(p.data); i++ {
		c := p.data[i]
		if c == '"' {
			break
		}
		if c == '\\' {
			plain = false
			i++ // the escaped byte cannot end the string
			continue
		}
		if c < 0x20 {
			return "", errSlowPath
		}
		if c >= utf8.RuneSelf {
			plain = false
		}
	}
	if i >= len(p.data) {
		return "", errSlowPath
	}
	p.pos = i + 1
	if plain {
		return string(p.data[start:i]), nil
	}
	if !bytes.ContainsRune(p.data[start:i], '\\') && utf8.Valid(p.data[start:i]) {
		return string(p.data[start:i]), nil
	}
	var s string
	if err := json.Unmarshal(p.data[start-1:i+1], &s); err != nil {
		return "", errSlowPath
	}
	return s, nil
}

// number parses a number as JSON's grammar has it.
func (p *parser) number() (any, error) {
	start := p.pos
	d := p.data
	i := p.pos
	if d[i] == '-' {
		i++
	}
	digits := func() bool {
		j := i
		for i < len(d) && d[i] >= '0' && d[i] <= '9' {
			i++
		}
		return i > j
	}
	switch {
	case i < len(d) && d[i] == '0':
		i++
	case !digits():
		return nil, errSlowPath
	}
	if i < len(d) && d[i] == '.' {
		i++
		if !digits() {
			return nil, errSlowPath
		}
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		if !digits() {
			return nil, errSlowPath
		}
	}
	p.pos = i
	return json.Number(d[start:i]), nil
}
