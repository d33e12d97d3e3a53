package materialize

import (
	"bytes"
	"encoding/json"
	"strings"
)

// The lockstep comparison walks two bodies as written, side by side, and
// decodes only what differs: consecutive versions of an object, written by
// one API server, keep their keys in the same order and most of their
// bytes, so most subtrees are skipped by comparing their bytes. Where the
// bytes of a field differ it descends; a changed value is decoded to be
// compared and reported. What it returns is exactly what comparing the
// decoded bodies (compareTrees) returns: changes are sorted by their paths,
// which are unique, so the order of the walk does not matter; a field is
// matched by its decoded key wherever it is in the object; an object with
// a duplicate key, whose decoded value holds only the last, is decoded and
// compared as a tree. A body the fast decoder would not take is left to
// compareTrees.

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
	keys []rawKey
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
	// dup says two members have the same key.
	dup bool
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
			if string(k) != n && strings.EqualFold(string(k), n) {
				return false
			}
		}
	}
	return true
}

// find returns the position of the member named key (tried at hint
// first), -1 when there is none; a long object is indexed in *index.
func (o rawObject) find(key []byte, hint int, index *map[string]int) int {
	return find(len(o.fields), hint, func(j int) bool { return bytes.Equal(o.key(j), key) },
		func(j int) string { return string(o.key(j)) }, string(key), index)
}

// hasDuplicate reports whether two members have the same key.
func (o rawObject) hasDuplicate() bool {
	return hasDuplicate(len(o.fields), func(i, j int) bool { return bytes.Equal(o.key(i), o.key(j)) },
		func(i int) string { return string(o.key(i)) })
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
	if b.parsedIndex != nil {
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
	case b.parsedIndex != nil:
		b.parsedIndex[p.start] = len(b.parsed) - 1
	case len(b.parsed) > maxParsedScan:
		b.parsedIndex = make(map[int]int, 2*len(b.parsed))
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
	fields := b.fieldSlab()
	start := len(fields)
	if !d.members(1, &fields) {
		return rawObject{}, false
	}
	o := rawObject{data: b.raw, at: span{s.start, d.pos}, fields: fields[start:len(fields):len(fields)]}
	b.keepFieldSlab(fields)
	o.dup = o.hasDuplicate()
	b.addParsed(parsedValue{start: s.start, obj: o})
	return o, true
}

// listAt is objectAt for a list.
func (b *body) listAt(s span) (rawList, bool) {
	if p := b.parsedAt(s.start); p != nil {
		return p.list, true
	}
	d := fastDecoder{data: b.raw, pos: s.start, checked: true}
	var items []span
	if b.cache != nil {
		items = b.cache.spans
		if cap(items)-len(items) < 16 {
			items = make([]span, 0, 256)
		}
	}
	start := len(items)
	if !d.items(1, &items) {
		return rawList{}, false
	}
	l := rawList{data: b.raw, items: items[start:len(items):len(items)]}
	if b.cache != nil {
		b.cache.spans = items
	}
	b.addParsed(parsedValue{start: s.start, list: l})
	return l, true
}

// fieldSlab returns the slab the body's members are appended to: the
// cache's, or none.
func (b *body) fieldSlab() []rawField {
	if b.cache == nil {
		return nil
	}
	if cap(b.cache.fields)-len(b.cache.fields) < 16 {
		b.cache.fields = make([]rawField, 0, 256)
	}
	return b.cache.fields
}

// keepFieldSlab keeps the slab members were appended to.
func (b *body) keepFieldSlab(fields []rawField) {
	if b.cache != nil {
		b.cache.fields = fields
	}
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
	if b.dup || a.dup {
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
		key := b.key(i)
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
		if key := a.key(j); b.find(key, j, &indexB) < 0 {
			visit(key, span{}, a.fields[j].val, false, true)
		}
	}
}
// find returns the j < n for which eq(j) holds (tried at hint first), -1
// when there is none. Past maxLinearFind it looks want up in an index of
// name(j) built once in *index.
func find(n, hint int, eq func(j int) bool, name func(j int) string, want string, index *map[string]int) int {
	if hint < n && eq(hint) {
		return hint
	}
	if n > maxLinearFind {
		if *index == nil {
			*index = make(map[string]int, n)
			for j := range n {
				(*index)[name(j)] = j
			}
		}
		if j, ok := (*index)[want]; ok {
			return j
		}
		return -1
	}
	for j := range n {
		if eq(j) {
			return j
		}
	}
	return -1
}

// hasDuplicate reports whether eq(i, j) holds for two of the n, or past
// maxLinearFind whether two have the same name.
func hasDuplicate(n int, eq func(i, j int) bool, name func(i int) string) bool {
	if n > maxLinearFind {
		seen := make(map[string]struct{}, n)
		for i := range n {
			if _, dup := seen[name(i)]; dup {
				return true
			}
			seen[name(i)] = struct{}{}
		}
		return false
	}
	for i := 1; i < n; i++ {
		for j := 0; j < i; j++ {
			if eq(i, j) {
				return true
			}
		}
	}
	return false
}

// maxLinearFind is the length of the longest list of members or keys
// searched one by one; a longer one is indexed by a map.
const maxLinearFind = 16

// rawKey is the merge key value of a list item: a string (its decoded
// bytes) or a number (its literal), which keyLiteral tells apart.
type rawKey struct {
	number bool
	val    []byte
}

func (k rawKey) equal(o rawKey) bool {
	return k.number == o.number && bytes.Equal(k.val, o.val)
}

// String returns the key's type and value as one string, for a map.
func (k rawKey) String() string {
	if k.number {
		return "n" + string(k.val)
	}
	return "s" + string(k.val)
}

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
			if !okb {
				continue
			}
			ka, oka := c.keyValues(key, c.a, la)
			if !oka {
				continue
			}
			c.walkRawKeyed(path, key, active, lb, la, kb, ka)
			return
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

// keyValues returns the values of the merge key key of the items of l, a
// list of bd, pushed on c.keys; ok is false when usableKey would refuse
// it: an item is not an object, or its key is missing, not a string or
// number, or not unique.
func (c *rawComparer) keyValues(key string, bd *body, l rawList) ([]rawKey, bool) {
	start := len(c.keys)
	for i := range l.items {
		if l.item(i)[0] != '{' {
			return nil, false
		}
		o, ok := bd.objectAt(l.items[i])
		if !ok {
			c.failed = true
			return nil, false
		}
		vs, ok := o.lastAt(key)
		if !ok {
			return nil, false
		}
		val := vs.in(bd.raw)
		var k rawKey
		switch {
		case val[0] == '"':
			d := fastDecoder{data: val}
			if plain, _ := d.scanString(); plain {
				k.val = val[1 : len(val)-1]
			} else {
				s, _ := c.decode(bd, vs).(string)
				k.val = []byte(s)
			}
		case val[0] == '-' || '0' <= val[0] && val[0] <= '9':
			k = rawKey{number: true, val: val}
		default:
			return nil, false
		}
		c.keys = append(c.keys, k)
	}
	ks := c.keys[start:len(c.keys):len(c.keys)]
	return ks, !hasDuplicate(len(ks), func(i, j int) bool { return ks[i].equal(ks[j]) }, func(i int) string { return ks[i].String() })
}

// value returns the merge key value as walkKeyed has it.
func (k rawKey) value(intern map[string]string) any {
	if k.number {
		return json.Number(k.val)
	}
	return internString(intern, k.val)
}

// walkRawKeyed is walkKeyed over lists as written, whose items' merge key
// values are kb and ka.
func (c *rawComparer) walkRawKeyed(path []seg, key string, active []activePtr, lb, la rawList, kb, ka []rawKey) {
	visit := func(k rawKey, bi, ai int) {
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
		c.item(append(path, seg{kind: segKey, name: key, value: k.value(c.intern), index: idx}), next, lb, la, bi, ai)
	}
	findKey := func(ks []rawKey, k rawKey, hint int, index *map[string]int) int {
		return find(len(ks), hint, func(j int) bool { return ks[j].equal(k) }, func(j int) string { return ks[j].String() }, k.String(), index)
	}
	var indexA, indexB map[string]int // of ka and kb, when long
	matched := 0
	for bi := range kb {
		ai := findKey(ka, kb[bi], bi, &indexA)
		if ai >= 0 {
			matched++
			if bytes.Equal(lb.item(bi), la.item(ai)) {
				continue
			}
		}
		visit(kb[bi], bi, ai)
	}
	if matched == len(ka) {
		return
	}
	for ai := range ka {
		if findKey(kb, ka[ai], ai, &indexB) < 0 {
			visit(ka[ai], -1, ai)
		}
	}
}
