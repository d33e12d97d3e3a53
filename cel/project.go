package cel

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	celast "cel.dev/cel-go/common/ast"
	kjson "sigs.k8s.io/json"
)

// A projection is the part of a variable's JSON an expression can read:
// the fields of each object on the way down, and at the end of each path
// the whole value. Decoding only that part of a version (decodeProjected)
// gives the expression the same answer as decoding all of it, for a
// fraction of the work: `object.data.version == "3"` reads one string of
// a body of hundreds of bytes, and decoding the body is most of an
// evaluation.
type projection struct {
	// whole is set when the value is read whole.
	whole bool
	// fields are the fields read of an object, each with its projection.
	fields map[string]*projection
}

// projectionOf returns the projection of the variable in a checked
// expression: the field paths of the chains of field selections that
// start at the variable (`object.spec.template`, also in has()). It
// returns nil, for the whole value, when the expression uses the
// variable in any other way (as a value of its own, indexed with [], with
// an optional field `.?`) or names a comprehension variable alike.
func projectionOf(a *celast.AST, variable string) *projection {
	root := &projection{fields: map[string]*projection{}}
	nav := celast.NavigateAST(a)
	for _, c := range celast.MatchDescendants(nav, celast.KindMatcher(celast.ComprehensionKind)) {
		comp := c.AsComprehension()
		if comp.IterVar() == variable || comp.IterVar2() == variable || comp.AccuVar() == variable {
			return nil
		}
	}
	for _, id := range celast.MatchDescendants(nav, celast.KindMatcher(celast.IdentKind)) {
		if id.AsIdent() != variable {
			continue
		}
		var path []string
		for e := id; ; {
			p, ok := e.Parent()
			if !ok || p.Kind() != celast.SelectKind || p.AsSelect().Operand().ID() != e.ID() {
				break
			}
			path = append(path, p.AsSelect().FieldName())
			e = p
		}
		if len(path) == 0 {
			return nil
		}
		root.add(path)
	}
	return root
}

// add makes the value at path read whole.
func (p *projection) add(path []string) {
	for _, f := range path {
		if p.whole {
			return
		}
		child := p.fields[f]
		if child == nil {
			child = &projection{fields: map[string]*projection{}}
			p.fields[f] = child
		}
		p = child
	}
	p.whole, p.fields = true, nil
}

// decodeProjected decodes what p projects of a JSON value, as decode
// decodes it: of an object where p names fields, only those fields (each
// decoded as p says); any other value whole. A value p does not read is
// skipped, its syntax checked only as far as finding its end needs.
func decodeProjected(raw []byte, p *projection) (any, error) {
	d := projector{data: raw}
	v, err := d.value(p)
	if err != nil {
		return nil, err
	}
	if d.space(); d.pos != len(d.data) {
		return nil, d.errorf("data after the value")
	}
	return v, nil
}

// projector is the state of a decodeProjected.
type projector struct {
	data []byte
	pos  int
}

func (d *projector) errorf(format string, args ...any) error {
	return fmt.Errorf("json: offset %d: %s", d.pos, fmt.Sprintf(format, args...))
}

func (d *projector) space() {
	for d.pos < len(d.data) {
		switch d.data[d.pos] {
		case ' ', '\t', '\n', '\r':
			d.pos++
		default:
			return
		}
	}
}

// value decodes the value at d.pos as p projects it.
func (d *projector) value(p *projection) (any, error) {
	d.space()
	if p == nil || p.whole || d.pos >= len(d.data) || d.data[d.pos] != '{' {
		start := d.pos
		if err := d.skip(); err != nil {
			return nil, err
		}
		return decodeLeaf(d.data[start:d.pos])
	}
	d.pos++
	m := make(map[string]any, len(p.fields))
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		return m, nil
	}
	for {
		d.space()
		start := d.pos
		if err := d.skipString(); err != nil {
			return nil, err
		}
		raw := d.data[start:d.pos]
		if d.space(); d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return nil, d.errorf("want a colon after an object key")
		}
		d.pos++
		child, key, err := p.field(raw)
		if err != nil {
			return nil, err
		}
		if child != nil {
			v, err := d.value(child)
			if err != nil {
				return nil, err
			}
			// As in encoding/json, a later duplicate replaces the value.
			m[key] = v
		} else {
			d.space()
			if err := d.skip(); err != nil {
				return nil, err
			}
		}
		d.space()
		if d.pos >= len(d.data) {
			return nil, d.errorf("unterminated object")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			return m, nil
		default:
			return nil, d.errorf("want a comma or a closing brace in an object")
		}
	}
}

// skip moves past the value at d.pos.
func (d *projector) skip() error {
	d.space()
	if d.pos >= len(d.data) {
		return d.errorf("unexpected end of the data")
	}
	switch c := d.data[d.pos]; c {
	case '"':
		return d.skipString()
	case '{', '[':
		return d.skipContainer()
	default:
		start := d.pos
		for d.pos < len(d.data) && isScalarByte(d.data[d.pos]) {
			d.pos++
		}
		if d.pos == start {
			return d.errorf("unexpected %q", c)
		}
		return nil
	}
}

// skipContainer moves past the object or array at d.pos, finding its end
// by its brackets outside strings: faster than a token at a time, and
// the syntax within is not checked (decodeProjected checks what it
// reads, not what it skips).
func (d *projector) skipContainer() error {
	data, depth := d.data, 0
	for i := d.pos; i < len(data); i++ {
		switch data[i] {
		case '"':
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++
				}
			}
		case '{', '[':
			depth++
		case '}', ']':
			if depth--; depth == 0 {
				d.pos = i + 1
				return nil
			}
		}
	}
	return d.errorf("unterminated object or array")
}

// isScalarByte tells the bytes of numbers, true, false and null.
func isScalarByte(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c == '-' || c == '+' || c == '.' || c == 'E'
}

// skipString moves past the string at d.pos.
func (d *projector) skipString() error {
	if d.pos >= len(d.data) || d.data[d.pos] != '"' {
		return d.errorf("want a string")
	}
	for i := d.pos + 1; ; {
		q := bytes.IndexByte(d.data[i:], '"')
		if q < 0 {
			return d.errorf("unterminated string")
		}
		i += q
		// The quote ends the string unless an odd number of
		// backslashes escapes it.
		n := 0
		for j := i - 1; j > d.pos && d.data[j] == '\\'; j-- {
			n++
		}
		i++
		if n%2 == 0 {
			d.pos = i
			return nil
		}
	}
}

// field returns the projection of the field whose key is raw (quoted),
// and the key; nil when p does not read the field. The key is decoded
// only when it could differ from its bytes (escapes, bytes that are not
// ASCII), and allocated only for a field read.
func (p *projection) field(raw []byte) (*projection, string, error) {
	k := raw[1 : len(raw)-1]
	plain := true
	for _, c := range k {
		if c == '\\' || c >= 0x80 {
			plain = false
			break
		}
	}
	if plain {
		child := p.fields[string(k)]
		if child == nil {
			return nil, "", nil
		}
		return child, string(k), nil
	}
	key, err := decodeKey(raw)
	if err != nil {
		return nil, "", err
	}
	return p.fields[key], key, nil
}

var errNotSimple = errors.New("not a simple value")

// decodeLeaf decodes a whole value as decode does: the simplest values
// at once, the others with Kubernetes' decoder.
func decodeLeaf(raw []byte) (any, error) {
	if v, err := simpleValue(raw); err == nil {
		return v, nil
	}
	var v any
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &v); err != nil {
		return nil, err
	}
	return v, nil
}

// simpleValue decodes a string without escapes of valid UTF-8, true,
// false, null or an integer that fits an int64; errNotSimple for any
// other value.
func simpleValue(raw []byte) (any, error) {
	switch {
	case len(raw) >= 2 && raw[0] == '"':
		s := raw[1 : len(raw)-1]
		if bytes.IndexByte(s, '\\') >= 0 || !utf8.Valid(s) || hasControl(s) {
			return nil, errNotSimple
		}
		return string(s), nil
	case string(raw) == "true":
		return true, nil
	case string(raw) == "false":
		return false, nil
	case string(raw) == "null":
		return nil, nil
	}
	for i, c := range raw {
		if !(c >= '0' && c <= '9' || c == '-' && i == 0) {
			return nil, errNotSimple
		}
	}
	if len(raw) == 0 || raw[0] == '0' && len(raw) > 1 || len(raw) > 1 && raw[0] == '-' && raw[1] == '0' {
		return nil, errNotSimple
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return nil, errNotSimple
	}
	return n, nil
}

// hasControl tells whether s has a byte JSON does not allow unescaped in
// a string.
func hasControl(s []byte) bool {
	for _, c := range s {
		if c < 0x20 {
			return true
		}
	}
	return false
}

// decodeKey decodes an object's key.
func decodeKey(raw []byte) (string, error) {
	if v, err := simpleValue(raw); err == nil {
		if s, ok := v.(string); ok {
			return s, nil
		}
	}
	var s string
	if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &s); err != nil {
		return "", err
	}
	return s, nil
}
