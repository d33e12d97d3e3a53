package cel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"

	celast "cel.dev/cel-go/common/ast"
	kjson "sigs.k8s.io/json"
)

// A projection is the part of a variable's JSON an expression can read:
// the fields of each object on the way down, and at the end of each path
// the whole value. Decoding only that part of a version (projector)
// gives the expression the same answer as decoding all of it, for a
// fraction of the work: `object.data.version == "3"` reads one string of
// a body of hundreds of bytes, and decoding the body is most of an
// evaluation.
type projection struct {
	// name is the field's name, in its parent's fields.
	name string
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
			child = &projection{name: f, fields: map[string]*projection{}}
			p.fields[f] = child
		}
		p = child
	}
	p.whole, p.fields = true, nil
}

// projector decodes what a projection projects of a JSON value, as
// decode decodes it: of an object where the projection names fields,
// only those fields (each decoded as the projection says); any other
// value whole. A value the projection does not read is skipped, its
// syntax checked only as far as finding its end needs. Its scan of the
// data makes ops, from which build makes the value, and appendKey the
// bytes that determine it.
type projector struct {
	data []byte
	pos  int
	ops  []projOp
}

// projOp is a step of the value a scan found: a value read whole (its
// bytes), the start of an object, one of its fields read (its key's
// bytes, quoted, and the key), the end of the object.
type projOp struct {
	kind       byte
	start, end int
	key        string
}

const (
	opWhole byte = iota + 1
	opObject
	opField
	opEnd
)

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

// scan goes through the data, making the ops of the value p projects,
// and checks that nothing follows it.
func (d *projector) scan(p *projection) error {
	d.pos, d.ops = 0, d.ops[:0]
	if err := d.value(p); err != nil {
		return err
	}
	if d.space(); d.pos != len(d.data) {
		return d.errorf("data after the value")
	}
	return nil
}

// value scans the value at d.pos as p projects it.
func (d *projector) value(p *projection) error {
	d.space()
	if p == nil || p.whole || d.pos >= len(d.data) || d.data[d.pos] != '{' {
		start := d.pos
		if err := d.skip(); err != nil {
			return err
		}
		d.ops = append(d.ops, projOp{kind: opWhole, start: start, end: d.pos})
		return nil
	}
	d.ops = append(d.ops, projOp{kind: opObject})
	d.pos++
	d.space()
	if d.pos < len(d.data) && d.data[d.pos] == '}' {
		d.pos++
		d.ops = append(d.ops, projOp{kind: opEnd})
		return nil
	}
	for {
		d.space()
		start := d.pos
		if err := d.skipString(); err != nil {
			return err
		}
		raw := d.data[start:d.pos]
		if d.space(); d.pos >= len(d.data) || d.data[d.pos] != ':' {
			return d.errorf("want a colon after an object key")
		}
		d.pos++
		child, key, err := p.field(raw)
		if err != nil {
			return err
		}
		if child != nil {
			d.ops = append(d.ops, projOp{kind: opField, start: start, end: start + len(raw), key: key})
			if err := d.value(child); err != nil {
				return err
			}
		} else {
			d.space()
			if err := d.skip(); err != nil {
				return err
			}
		}
		d.space()
		if d.pos >= len(d.data) {
			return d.errorf("unterminated object")
		}
		switch d.data[d.pos] {
		case ',':
			d.pos++
		case '}':
			d.pos++
			d.ops = append(d.ops, projOp{kind: opEnd})
			return nil
		default:
			return d.errorf("want a comma or a closing brace in an object")
		}
	}
}

// build makes the value of the ops of the last scan.
func (d *projector) build() (any, error) {
	v, _, err := d.buildAt(0)
	return v, err
}

// buildAt makes the value whose ops start at i, and returns the index of
// the op after them.
func (d *projector) buildAt(i int) (any, int, error) {
	op := d.ops[i]
	if op.kind == opWhole {
		v, err := decodeLeaf(d.data[op.start:op.end])
		return v, i + 1, err
	}
	m := map[string]any{}
	for i++; d.ops[i].kind == opField; {
		key := d.ops[i].key
		v, next, err := d.buildAt(i + 1)
		if err != nil {
			return nil, 0, err
		}
		// As in encoding/json, a later duplicate replaces the value.
		m[key] = v
		i = next
	}
	return m, i + 1, nil
}

// appendKey appends to dst the bytes of the ops of the last scan: the
// value build makes is a function of them, so two versions with the
// same key give the same answers to the expression.
func (d *projector) appendKey(dst []byte) []byte {
	for _, op := range d.ops {
		dst = append(dst, op.kind)
		if op.kind == opWhole || op.kind == opField {
			dst = binary.AppendUvarint(dst, uint64(op.end-op.start))
			dst = append(dst, d.data[op.start:op.end]...)
		}
	}
	return dst
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
// the syntax within is not checked (a projector checks what it
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
		return child, child.name, nil
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
