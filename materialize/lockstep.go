package materialize

import (
	"bytes"
	"encoding/json"
	"strings"
	"unicode/utf8"
)

// The lockstep comparison walks two bodies as written, side by side, and
// decodes only what differs: consecutive versions of an object, written by
// one API server, keep their keys in the same order and most of their
// bytes, so most subtrees are skipped by comparing their bytes. Where the
// bytes of a field differ it descends; a changed value is decoded to be
// compared and reported. What it returns is exactly what comparing the
// decoded bodies (compareTrees) returns: changes are sorted by their paths,
// which are unique, so the order of the walk does not matter; a member is
// matched by its key's bytes wherever it is in the object, and an object
// whose keys' bytes do not say its decoded keys (one escaped, or repeated:
// the decoded object holds the last) is decoded and compared as a tree,
// as is a keyed list whose merge key values include an escaped string. A
// body the fast decoder would not take is left to compareTrees.
//
// A body is checked once (scan), in a history only where it differs from
// the version before (scanAfter), and each of its objects and lists is
// parsed once (objectAt, listAt), whatever number of comparisons descend
// into it.

// rawComparer is a comparer over bodies as written.
type rawComparer struct {
	comparer
	intern map[string]string
	// b and a are the bodies compared.
	b, a *body
	// failed is set when a value the scan took does not decode, which
	// should not happen: the caller then compares the decoded bodies.
	failed bool
	// keys and ptrs are stacks of scratch space, one frame per level of
	// the walk; path is the path walked.
	keys []rawField
	ptrs []activePtr
	path []seg

	// active are the ignored pointers of the object meta, by config.
	activeFor    *compareConfig
	activeMeta   objectMeta
	activeIgnore []activePtr
}

// step is step, the next active pointers pushed on c.ptrs (the caller
// pops them with c.ptrs = c.ptrs[:base]).
func (c *rawComparer) step(active []activePtr, field string, positions ...int) (next []activePtr, ignored bool) {
	base := len(c.ptrs)
	all, ignored := stepAppend(c.ptrs, active, field, positions...)
	if ignored {
		return nil, true
	}
	c.ptrs = all
	return all[base:len(all):len(all)], false
}

// compareRaw is compareTrees by the lockstep walk; ok is false when the
// bodies are not both JSON objects the fast decoder takes whole.
func (c *compareConfig) compareRaw(o objectMeta, before, after *body) (out []FieldChange, paths [][]seg, ok bool) {
	if !before.scan() || !after.scan() {
		return nil, nil, false
	}
	if o.kind == "" {
		o.kind = kindNamed(after.top)
	}
	rc := before.rawComparer()
	rc.mergeKeys, rc.out, rc.failed, rc.b, rc.a = c.mergeKeys, rc.out[:0], false, before, after
	defer func() { rc.b, rc.a = nil, nil }()
	if rc.activeFor != c || rc.activeMeta != o || rc.activeIgnore == nil {
		rc.activeFor, rc.activeMeta, rc.activeIgnore = c, o, startPointers(c.pointersFor(o))
	}
	rc.walkObjects(rc.path[:0], rc.activeIgnore, before.top, after.top)
	if rc.failed {
		return nil, nil, false
	}
	out, paths = rc.result()
	return out, paths, true
}

// rawComparer returns the lockstep comparer of the body's cache, a new
// one without a cache.
func (b *body) rawComparer() *rawComparer {
	if b.cache == nil {
		return &rawComparer{path: make([]seg, 0, 16)}
	}
	if b.cache.raw == nil {
		b.cache.raw = &rawComparer{intern: b.cache.intern, path: make([]seg, 0, 16)}
	}
	return b.cache.raw
}

// kindNamed returns the kind an object names, as objectMetaOf reads it
// from the decoded body.
func kindNamed(o rawObject) string {
	val := o.last("kind")
	if len(val) == 0 || val[0] != '"' {
		return ""
	}
	d := fastDecoder{data: val}
	s, _ := d.str()
	return s
}

// rawObject is a JSON object of a body as written: the body's text and
// the object's members, whose spans are in it.
type rawObject struct {
	data   []byte
	at     span // the object's own
	fields []rawField
	// tree says the object is to be compared decoded: a key is escaped
	// (its bytes are not the key) or repeated (the decoded object holds
	// only the last).
	tree bool
}

// newRawObject returns the object at at of data, with its members.
func newRawObject(data []byte, at span, fields []rawField) rawObject {
	o := rawObject{data: data, at: at, fields: fields}
	for i := range fields {
		if fields[i].escaped {
			o.tree = true
			return o
		}
	}
	o.tree = hasDuplicateKey(fields, data)
	return o
}

func (o rawObject) key(i int) []byte { return o.fields[i].keyIn(o.data) }
func (o rawObject) val(i int) []byte { return o.fields[i].val.in(o.data) }

// lastAt returns where the value of the last member named key (the one a
// decoded object holds) is; ok is false when there is none.
func (o rawObject) lastAt(key string) (s span, ok bool) {
	for i := len(o.fields) - 1; i >= 0; i-- {
		if string(o.key(i)) == key {
			return o.fields[i].val, true
		}
	}
	return span{}, false
}

// last is lastAt returning the value, nil when there is none.
func (o rawObject) last(key string) []byte {
	if s, ok := o.lastAt(key); ok {
		return s.in(o.data)
	}
	return nil
}

// exactKeys is exactKeys over the members of an object as written.
func (o rawObject) exactKeys(names ...string) bool {
	for i := range o.fields {
		k := o.key(i)
		for _, n := range names {
			// A key starting with an ASCII letter other than n's, in either
			// case, is not n's in another case (only non-ASCII runes fold
			// to another byte).
			if len(k) > 0 && k[0] < utf8.RuneSelf && k[0]|0x20 != n[0]|0x20 {
				continue
			}
			if string(k) != n && strings.EqualFold(string(k), n) {
				return false
			}
		}
	}
	return true
}

// find returns the position of the member whose key is written as key
// (tried at hint first), -1 when there is none.
func (o rawObject) find(key []byte, hint int, index *map[string]int) int {
	return findKey(o.fields, o.data, key, hint, index)
}

// rawList is a JSON list of a body as written: the body's text and where
// the list's items are in it.
type rawList struct {
	data  []byte
	items []span
}

func (l rawList) item(i int) []byte { return l.items[i].in(l.data) }

// parsedValue is an object or a list of a body that was parsed, by where
// it starts.
type parsedValue struct {
	start int
	obj   rawObject
	list  rawList
}

// maxParsedScan is the number of parsed values a body looks through one
// by one; past it they are indexed by a map.
const maxParsedScan = 16

// parsedAt returns the value parsed at start, nil when it was not.
func (b *body) parsedAt(start int) *parsedValue {
	if len(b.parsed) > maxParsedScan {
		if i, ok := b.parsedIndex[start]; ok {
			return &b.parsed[i]
		}
		return nil
	}
	for i := range b.parsed {
		if b.parsed[i].start == start {
			return &b.parsed[i]
		}
	}
	return nil
}

// addParsed records a parsed value.
func (b *body) addParsed(p parsedValue) {
	b.parsed = append(b.parsed, p)
	switch {
	case len(b.parsed) > maxParsedScan+1:
		b.parsedIndex[p.start] = len(b.parsed) - 1
	case len(b.parsed) == maxParsedScan+1:
		if b.parsedIndex == nil {
			b.parsedIndex = make(map[int]int, 2*len(b.parsed))
		}
		for i := range b.parsed {
			b.parsedIndex[b.parsed[i].start] = i
		}
	}
}

// objectAt returns the object of the scanned body at s with its members,
// parsing it on first use. ok is false when it does not parse, which
// should not happen.
func (b *body) objectAt(s span) (rawObject, bool) {
	if p := b.parsedAt(s.start); p != nil {
		return p.obj, true
	}
	d := fastDecoder{data: b.raw, pos: s.start, checked: true}
	start := len(b.fields)
	var ok bool
	if b.fields, ok = d.members(1, b.fields, true); !ok {
		return rawObject{}, false
	}
	o := newRawObject(b.raw, span{s.start, d.pos}, b.fields[start:len(b.fields):len(b.fields)])
	b.addParsed(parsedValue{start: s.start, obj: o})
	return o, true
}

// listAt is objectAt for a list.
func (b *body) listAt(s span) (rawList, bool) {
	if p := b.parsedAt(s.start); p != nil {
		return p.list, true
	}
	d := fastDecoder{data: b.raw, pos: s.start, checked: true}
	start := len(b.spans)
	var ok bool
	if b.spans, ok = d.items(1, b.spans, true); !ok {
		return rawList{}, false
	}
	l := rawList{data: b.raw, items: b.spans[start:len(b.spans):len(b.spans)]}
	b.addParsed(parsedValue{start: s.start, list: l})
	return l, true
}

// decode decodes a value of body bd the scan took.
func (c *rawComparer) decode(bd *body, s span) any {
	d := fastDecoder{data: s.in(bd.raw), intern: c.intern}
	v, ok := d.value(0)
	if !ok {
		c.failed = true
	}
	return v
}

// name returns a field name as a string.
func (c *rawComparer) name(key []byte) string {
	return internString(c.intern, key)
}

// walkRaw compares the values of c.b at bs and of c.a at as, whose bytes
// differ; field is the name of the field holding them (for merge keys).
func (c *rawComparer) walkRaw(path []seg, field string, active []activePtr, bs, as span) {
	b0, a0 := c.b.raw[bs.start], c.a.raw[as.start]
	switch {
	case b0 == '{' && a0 == '{':
		ob, okb := c.b.objectAt(bs)
		oa, oka := c.a.objectAt(as)
		if !okb || !oka {
			c.failed = true
			return
		}
		c.walkObjects(path, active, ob, oa)
	case b0 == '[' && a0 == '[':
		c.walkRawList(path, field, active, bs, as)
	default:
		bv, av := c.decode(c.b, bs), c.decode(c.a, as)
		if !equalJSON(bv, av) {
			c.emit(path, OpReplace, bv, av)
		}
	}
}

// walkObjects compares an object of c.b with one of c.a.
func (c *rawComparer) walkObjects(path []seg, active []activePtr, b, a rawObject) {
	if b.tree || a.tree {
		c.walk(path, "", active, c.decode(c.b, b.at), c.decode(c.a, a.at), true, true)
		return
	}
	visit := func(key []byte, bs, as span, hasB, hasA bool) {
		name := c.name(key)
		next, ignored := active, false
		if len(active) > 0 {
			base := len(c.ptrs)
			defer func() { c.ptrs = c.ptrs[:base] }()
			if next, ignored = c.step(active, name); ignored {
				return
			}
		}
		p := append(path, seg{kind: segField, name: name})
		switch {
		case !hasB:
			c.emit(p, OpAdd, nil, c.decode(c.a, as))
		case !hasA:
			c.emit(p, OpRemove, c.decode(c.b, bs), nil)
		default:
			c.walkRaw(p, name, next, bs, as)
		}
	}
	var indexA, indexB map[string]int // of a and b, when long
	matched := 0
	for i := range b.fields {
		key := b.fields[i].key.in(b.data) // plain: the key itself
		j := a.find(key, i, &indexA)
		if j < 0 {
			visit(key, b.fields[i].val, span{}, true, false)
			continue
		}
		matched++
		if !bytes.Equal(b.val(i), a.val(j)) {
			visit(key, b.fields[i].val, a.fields[j].val, true, true)
		}
	}
	if matched == len(a.fields) {
		return
	}
	for j := range a.fields {
		if key := a.fields[j].key.in(a.data); b.find(key, j, &indexB) < 0 {
			visit(key, span{}, a.fields[j].val, false, true)
		}
	}
}

// findKey returns the position among fs of the one whose key, in data,
// is written as key (tried at hint first), -1 when there is none. Past
// maxLinearFind it indexes fs in *index.
func findKey(fs []rawField, data, key []byte, hint int, index *map[string]int) int {
	if hint < len(fs) && bytes.Equal(fs[hint].key.in(data), key) {
		return hint
	}
	if len(fs) > maxLinearFind {
		if *index == nil {
			*index = make(map[string]int, len(fs))
			for j := range fs {
				(*index)[string(fs[j].key.in(data))] = j
			}
		}
		if j, ok := (*index)[string(key)]; ok {
			return j
		}
		return -1
	}
	for j := range fs {
		if bytes.Equal(fs[j].key.in(data), key) {
			return j
		}
	}
	return -1
}

// hasDuplicateKey reports whether two of fs have keys written alike.
func hasDuplicateKey(fs []rawField, data []byte) bool {
	if len(fs) > maxLinearFind {
		seen := make(map[string]struct{}, len(fs))
		for _, f := range fs {
			if _, dup := seen[string(f.key.in(data))]; dup {
				return true
			}
			seen[string(f.key.in(data))] = struct{}{}
		}
		return false
	}
	for i := 1; i < len(fs); i++ {
		for j := 0; j < i; j++ {
			if bytes.Equal(fs[i].key.in(data), fs[j].key.in(data)) {
				return true
			}
		}
	}
	return false
}

// maxLinearFind is the length of the longest list of members or keys
// searched one by one; a longer one is indexed by a map.
const maxLinearFind = 16

// walkRawList compares the lists of c.b at bs and of c.a at as, as
// walkList compares them decoded.
func (c *rawComparer) walkRawList(path []seg, field string, active []activePtr, bs, as span) {
	lb, okb := c.b.listAt(bs)
	la, oka := c.a.listAt(as)
	if !okb || !oka {
		c.failed = true
		return
	}
	if candidates := c.mergeKeys[field]; len(candidates) > 0 && len(lb.items)+len(la.items) > 0 {
		kbase := len(c.keys)
		defer func() { c.keys = c.keys[:kbase] }()
		for _, key := range candidates {
			c.keys = c.keys[:kbase]
			kb, okb := c.keyValues(key, c.b, lb)
			ka, oka := c.keyValues(key, c.a, la)
			if okb == keyEscaped || oka == keyEscaped {
				// Merge key values are matched by their bytes: those of an
				// escaped string are not its value.
				c.walk(path, field, active, c.decode(c.b, bs), c.decode(c.a, as), true, true)
				return
			}
			if okb == keyUsable && oka == keyUsable {
				c.walkRawKeyed(path, key, active, lb, la, kb, ka)
				return
			}
		}
	}
	for i := range max(len(lb.items), len(la.items)) {
		hasB, hasA := i < len(lb.items), i < len(la.items)
		if hasB && hasA && bytes.Equal(lb.item(i), la.item(i)) {
			continue
		}
		next, ignored := active, false
		base := len(c.ptrs)
		if len(active) > 0 {
			if next, ignored = c.step(active, "", i); ignored {
				continue
			}
		}
		c.item(append(path, seg{kind: segIndex, index: i}), next, lb, la, i, i)
		c.ptrs = c.ptrs[:base]
	}
}

// item compares item bi of lb (of c.b) with item ai of la (of c.a) at
// path (-1: absent).
func (c *rawComparer) item(path []seg, active []activePtr, lb, la rawList, bi, ai int) {
	switch {
	case bi < 0 || bi >= len(lb.items):
		c.emit(path, OpAdd, nil, c.decode(c.a, la.items[ai]))
	case ai < 0 || ai >= len(la.items):
		c.emit(path, OpRemove, c.decode(c.b, lb.items[bi]), nil)
	default:
		c.walkRaw(path, "", active, lb.items[bi], la.items[ai])
	}
}

// keyUse says whether the values of a merge key can match a list's
// items.
type keyUse int

const (
	keyUnusable keyUse = iota // usableKey refuses the key
	keyUsable
	keyEscaped // a value is an escaped string, matched decoded only
)

// keyValues returns where the values of the merge key key of the items
// of l, a list of bd, are written (a string with its quotes, a number),
// pushed on c.keys as the keys of rawFields; keyUnusable when usableKey
// would refuse it: an item is not an object, or its key is missing, not a
// string or number, or not unique.
func (c *rawComparer) keyValues(key string, bd *body, l rawList) ([]rawField, keyUse) {
	start := len(c.keys)
	for i := range l.items {
		if l.item(i)[0] != '{' {
			return nil, keyUnusable
		}
		o, ok := bd.objectAt(l.items[i])
		if !ok {
			c.failed = true
			return nil, keyUnusable
		}
		vs, ok := o.lastAt(key)
		if !ok {
			return nil, keyUnusable
		}
		switch v := vs.in(bd.raw); {
		case v[0] == '"':
			d := fastDecoder{data: v}
			if plain, _ := d.scanString(); !plain {
				return nil, keyEscaped
			}
		case v[0] == '-' || '0' <= v[0] && v[0] <= '9':
		default:
			return nil, keyUnusable
		}
		c.keys = append(c.keys, rawField{key: vs})
	}
	ks := c.keys[start:len(c.keys):len(c.keys)]
	if hasDuplicateKey(ks, bd.raw) {
		return nil, keyUnusable
	}
	return ks, keyUsable
}

// keyValue returns the merge key value written at s of bd as walkKeyed
// has it: a string or a json.Number.
func (c *rawComparer) keyValue(bd *body, s span) any {
	v := s.in(bd.raw)
	if v[0] == '"' {
		return internString(c.intern, v[1:len(v)-1])
	}
	return json.Number(v)
}

// walkRawKeyed is walkKeyed over lists as written, whose items' merge key
// values are written at the keys of kb and ka.
func (c *rawComparer) walkRawKeyed(path []seg, key string, active []activePtr, lb, la rawList, kb, ka []rawField) {
	visit := func(kv any, bi, ai int) {
		next, ignored := active, false
		if len(active) > 0 {
			base := len(c.ptrs)
			defer func() { c.ptrs = c.ptrs[:base] }()
			if next, ignored = c.step(active, "", bi, ai); ignored {
				return
			}
		}
		idx := bi
		if idx < 0 {
			idx = ai
		}
		c.item(append(path, seg{kind: segKey, name: key, value: kv, index: idx}), next, lb, la, bi, ai)
	}
	var indexA, indexB map[string]int // of ka and kb, when long
	matched := 0
	for bi := range kb {
		ai := findKey(ka, c.a.raw, kb[bi].key.in(c.b.raw), bi, &indexA)
		if ai >= 0 {
			matched++
			if bytes.Equal(lb.item(bi), la.item(ai)) {
				continue
			}
		}
		visit(c.keyValue(c.b, kb[bi].key), bi, ai)
	}
	if matched == len(ka) {
		return
	}
	for ai := range ka {
		if findKey(kb, c.b.raw, ka[ai].key.in(c.a.raw), ai, &indexB) < 0 {
			visit(c.keyValue(c.a, ka[ai].key), -1, ai)
		}
	}
}

// scanAfter is scan for a body that follows prev in a history: the parts
// of raw written as prev's are not checked again. prev was checked whole
// and compact, so a member or item whose value is written as the one at
// the same place in prev is valid JSON, of the same depth, without white
// space; the rest is checked as scan checks it. The objects and lists it
// parses are kept (see objectAt). A body it refuses is scanned anew, so
// that the answer is scan's.
func (b *body) scanAfter(prev *body) bool {
	if b.scanned {
		return b.scanOK
	}
	if prev == nil || !prev.scanOK || !prev.compact {
		return b.scan()
	}
	d := fastDecoder{data: b.raw}
	d.space()
	if d.pos >= len(d.data) || d.data[d.pos] != '{' {
		return b.scan()
	}
	top, ok := b.objectAfter(&d, 1, prev, prev.top)
	if !ok {
		b.parsed, b.fields, b.spans = b.parsed[:0], b.fields[:0], b.spans[:0]
		clear(b.parsedIndex)
		return b.scan()
	}
	b.scanned, b.scanOK, b.top = true, true, top
	rest := b.raw[d.pos:]
	b.compact = !d.spaced && len(rest) == 0
	b.whole = len(bytes.TrimLeft(rest, " \t\r\n")) == 0
	return true
}

// objectAfter checks and parses the object at d.pos, of the given depth,
// whose place in prev holds po.
func (b *body) objectAfter(d *fastDecoder, depth int, prev *body, po rawObject) (rawObject, bool) {
	if depth > maxFastDepth {
		return rawObject{}, false
	}
	at := d.pos
	d.pos++ // {
	// The members are gathered on the cache's stack (a member's own
	// objects are gathered above them), then kept in b.fields.
	var stack *[]rawField
	if b.cache != nil {
		stack = &b.cache.stack
	} else {
		stack = new([]rawField)
	}
	base := len(*stack)
	defer func() { *stack = (*stack)[:base] }()
	var index map[string]int
	// inStep says every key so far is written as po's at its place.
	inStep := true
	d.space()
	done := d.pos < len(d.data) && d.data[d.pos] == '}' // empty
	if done {
		d.pos++
	}
	for !done {
		key, plain, ok := d.memberKey()
		if !ok {
			return rawObject{}, false
		}
		f := rawField{key: key, escaped: !plain}
		vstart := d.pos
		i := len(*stack) - base
		j := po.find(key.in(d.data), i, &index)
		inStep = inStep && j == i
		if j < 0 {
			if !d.skip(depth) {
				return rawObject{}, false
			}
		} else if !b.valueAfter(d, depth, prev, po.fields[j].val) {
			return rawObject{}, false
		}
		f.val = span{vstart, d.pos}
		*stack = append(*stack, f)
		more, ok := d.separator('}')
		if !ok {
			return rawObject{}, false
		}
		done = !more
	}
	start := len(b.fields)
	b.fields = append(b.fields, (*stack)[base:]...)
	fields := b.fields[start:len(b.fields):len(b.fields)]
	var o rawObject
	if inStep && len(fields) == len(po.fields) && !po.tree {
		// The keys are po's, none escaped nor repeated.
		o = rawObject{data: b.raw, at: span{at, d.pos}, fields: fields}
	} else {
		o = newRawObject(b.raw, span{at, d.pos}, fields)
	}
	b.addParsed(parsedValue{start: at, obj: o})
	return o, true
}

// valueAfter checks the value at d.pos, a member or an item of a value
// of the given depth, whose place in prev holds pv.
func (b *body) valueAfter(d *fastDecoder, depth int, prev *body, pv span) bool {
	pval := pv.in(prev.raw)
	rest := d.data[d.pos:]
	if bytes.HasPrefix(rest, pval) && (!numberByte[pval[0]] || len(rest) == len(pval) || !numberByte[rest[len(pval)]]) {
		// Written as prev's: a number that does not go on.
		d.pos += len(pval)
		return true
	}
	switch {
	case len(rest) == 0:
		return false
	case rest[0] == '{' && pval[0] == '{':
		po, ok := prev.objectAt(pv)
		if !ok {
			return false
		}
		_, ok = b.objectAfter(d, depth+1, prev, po)
		return ok
	case rest[0] == '[' && pval[0] == '[':
		pl, ok := prev.listAt(pv)
		if !ok {
			return false
		}
		return b.listAfter(d, depth+1, prev, pl)
	}
	return d.skip(depth)
}

// numberByte marks the bytes of a number literal.
var numberByte = func() (t [256]bool) {
	for _, c := range "0123456789.eE+-" {
		t[c] = true
	}
	return t
}()

// listAfter is objectAfter for a list: its items are matched with pl's
// by position.
func (b *body) listAfter(d *fastDecoder, depth int, prev *body, pl rawList) bool {
	if depth > maxFastDepth {
		return false
	}
	at := d.pos
	d.pos++ // [
	var stack *[]span
	if b.cache != nil {
		stack = &b.cache.spanStack
	} else {
		stack = new([]span)
	}
	base := len(*stack)
	defer func() { *stack = (*stack)[:base] }()
	d.space()
	done := d.pos < len(d.data) && d.data[d.pos] == ']' // empty
	if done {
		d.pos++
	}
	for !done {
		d.space()
		start, i := d.pos, len(*stack)-base
		if i < len(pl.items) {
			if !b.valueAfter(d, depth, prev, pl.items[i]) {
				return false
			}
		} else if !d.skip(depth) {
			return false
		}
		*stack = append(*stack, span{start, d.pos})
		more, ok := d.separator(']')
		if !ok {
			return false
		}
		done = !more
	}
	start := len(b.spans)
	b.spans = append(b.spans, (*stack)[base:]...)
	b.addParsed(parsedValue{start: at, list: rawList{data: b.raw, items: b.spans[start:len(b.spans):len(b.spans)]}})
	return true
}
