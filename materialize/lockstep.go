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
	// failed is set when a value the scan took does not decode, which
	// should not happen: the caller then compares the decoded bodies.
	failed bool
	// fields, items, keys and ptrs are stacks of scratch space, one frame
	// per level of the walk; path is the path walked.
	fields []rawField
	items  [][]byte
	keys   []rawKey
	ptrs   []activePtr
	path   []seg

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
		o.kind = c.kindOf(after)
	}
	rc := before.rawComparer()
	rc.mergeKeys, rc.out, rc.failed = c.mergeKeys, rc.out[:0], false
	if rc.activeFor != c || rc.activeMeta != o || rc.activeIgnore == nil {
		rc.activeFor, rc.activeMeta, rc.activeIgnore = c, o, startPointers(c.pointersFor(o))
	}
	rc.walkFields(rc.path[:0], rc.activeIgnore, before.top, after.top, before.raw, after.raw)
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

// kindOf returns the kind a body names, as objectMetaOf reads it from the
// decoded body.
func (c *compareConfig) kindOf(b *body) string {
	val := lastField(b.top, "kind")
	if len(val) == 0 || val[0] != '"' {
		return ""
	}
	d := fastDecoder{data: val}
	s, _ := d.str()
	return s
}

// lastField returns the value of the last field named key (the one a
// decoded object holds), nil when there is none.
func lastField(fields []rawField, key string) []byte {
	for i := len(fields) - 1; i >= 0; i-- {
		if string(fields[i].key) == key {
			return fields[i].val
		}
	}
	return nil
}

// decode decodes a value the scan took.
func (c *rawComparer) decode(raw []byte) any {
	d := fastDecoder{data: raw, intern: c.intern}
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

// walkRaw compares two values as written whose bytes differ; field is the
// name of the field holding them (for merge keys).
func (c *rawComparer) walkRaw(path []seg, field string, active []activePtr, b, a []byte) {
	switch {
	case b[0] == '{' && a[0] == '{':
		base := len(c.fields)
		fb, okb := c.members(b)
		fa, oka := c.members(a)
		if okb && oka {
			c.walkFields(path, active, fb, fa, b, a)
		}
		c.fields = c.fields[:base]
	case b[0] == '[' && a[0] == '[':
		c.walkRawList(path, field, active, b, a)
	default:
		bv, av := c.decode(b), c.decode(a)
		if !equalJSON(bv, av) {
			c.emit(path, OpReplace, bv, av)
		}
	}
}

// members returns the members of the object raw, pushed on c.fields.
func (c *rawComparer) members(raw []byte) ([]rawField, bool) {
	start := len(c.fields)
	d := fastDecoder{data: raw, checked: true}
	if !d.members(1, &c.fields) {
		c.failed = true
		return nil, false
	}
	return c.fields[start:len(c.fields):len(c.fields)], true
}

// walkFields compares two objects, b and a as written, by their members
// fb and fa.
func (c *rawComparer) walkFields(path []seg, active []activePtr, fb, fa []rawField, b, a []byte) {
	if hasDuplicate(fb, sameKey, keyName) || hasDuplicate(fa, sameKey, keyName) {
		c.walk(path, "", active, c.decode(b), c.decode(a), true, true)
		return
	}
	var indexA, indexB map[string]int // of fa and fb, when out of step
	visit := func(key []byte, bv, av []byte) {
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
		case bv == nil:
			c.emit(p, OpAdd, nil, c.decode(av))
		case av == nil:
			c.emit(p, OpRemove, c.decode(bv), nil)
		default:
			c.walkRaw(p, name, next, bv, av)
		}
	}
	matched := 0
	for i := range fb {
		j := findIndexed(fa, fb[i], i, sameKey, keyName, &indexA)
		if j < 0 {
			visit(fb[i].key, fb[i].val, nil)
			continue
		}
		matched++
		if !bytes.Equal(fb[i].val, fa[j].val) {
			visit(fb[i].key, fb[i].val, fa[j].val)
		}
	}
	if matched == len(fa) {
		return
	}
	for j := range fa {
		if findIndexed(fb, fa[j], j, sameKey, keyName, &indexB) < 0 {
			visit(fa[j].key, nil, fa[j].val)
		}
	}
}

// findIndexed returns the position of x among xs (tried at hint first),
// -1 when it is not there. A long xs is indexed by name in *index.
func findIndexed[T any](xs []T, x T, hint int, equal func(a, b T) bool, name func(T) string, index *map[string]int) int {
	if hint < len(xs) && equal(xs[hint], x) {
		return hint
	}
	if len(xs) > maxLinearFind {
		if *index == nil {
			*index = make(map[string]int, len(xs))
			for j := range xs {
				(*index)[name(xs[j])] = j
			}
		}
		if j, ok := (*index)[name(x)]; ok {
			return j
		}
		return -1
	}
	for j := range xs {
		if equal(xs[j], x) {
			return j
		}
	}
	return -1
}

// hasDuplicate reports whether two of xs are equal (have the same name).
func hasDuplicate[T any](xs []T, equal func(a, b T) bool, name func(T) string) bool {
	if len(xs) > maxLinearFind {
		seen := make(map[string]struct{}, len(xs))
		for _, x := range xs {
			if _, dup := seen[name(x)]; dup {
				return true
			}
			seen[name(x)] = struct{}{}
		}
		return false
	}
	for i := 1; i < len(xs); i++ {
		for j := 0; j < i; j++ {
			if equal(xs[i], xs[j]) {
				return true
			}
		}
	}
	return false
}

// maxLinearFind is the length of the longest list of members or keys
// searched one by one; a longer one is indexed by a map.
const maxLinearFind = 16

func sameKey(a, b rawField) bool { return bytes.Equal(a.key, b.key) }
func keyName(f rawField) string  { return string(f.key) }

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

// walkRawList compares two lists as written, as walkList compares them
// decoded.
func (c *rawComparer) walkRawList(path []seg, field string, active []activePtr, b, a []byte) {
	base := len(c.items)
	defer func() { c.items = c.items[:base] }()
	ib, okb := c.listItems(b)
	ia, oka := c.listItems(a)
	if !okb || !oka {
		return
	}
	if candidates := c.mergeKeys[field]; len(candidates) > 0 && len(ib)+len(ia) > 0 {
		kbase := len(c.keys)
		defer func() { c.keys = c.keys[:kbase] }()
		for _, key := range candidates {
			c.keys = c.keys[:kbase]
			kb, okb := c.keyValues(key, ib)
			if !okb {
				continue
			}
			ka, oka := c.keyValues(key, ia)
			if !oka {
				continue
			}
			c.walkRawKeyed(path, key, active, ib, ia, kb, ka)
			return
		}
	}
	for i := range max(len(ib), len(ia)) {
		hasB, hasA := i < len(ib), i < len(ia)
		if hasB && hasA && bytes.Equal(ib[i], ia[i]) {
			continue
		}
		next, ignored := active, false
		base := len(c.ptrs)
		if len(active) > 0 {
			if next, ignored = c.step(active, "", i); ignored {
				continue
			}
		}
		c.item(append(path, seg{kind: segIndex, index: i}), next, ib, ia, i, i)
		c.ptrs = c.ptrs[:base]
	}
}

// item compares item bi of ib with item ai of ia at path (-1: absent).
func (c *rawComparer) item(path []seg, active []activePtr, ib, ia [][]byte, bi, ai int) {
	switch {
	case bi < 0 || bi >= len(ib):
		c.emit(path, OpAdd, nil, c.decode(ia[ai]))
	case ai < 0 || ai >= len(ia):
		c.emit(path, OpRemove, c.decode(ib[bi]), nil)
	default:
		c.walkRaw(path, "", active, ib[bi], ia[ai])
	}
}

// listItems returns the items of the list raw, pushed on c.items.
func (c *rawComparer) listItems(raw []byte) ([][]byte, bool) {
	start := len(c.items)
	d := fastDecoder{data: raw, checked: true}
	if !d.items(1, &c.items) {
		c.failed = true
		return nil, false
	}
	return c.items[start:len(c.items):len(c.items)], true
}

// keyValues returns the values of the merge key key of items, pushed on
// c.keys; ok is false when usableKey would refuse it: an item is not an
// object, or its key is missing, not a string or number, or not unique.
func (c *rawComparer) keyValues(key string, items [][]byte) ([]rawKey, bool) {
	start := len(c.keys)
	for _, item := range items {
		if item[0] != '{' {
			return nil, false
		}
		fbase := len(c.fields)
		fs, ok := c.members(item)
		if !ok {
			return nil, false
		}
		val := lastField(fs, key)
		c.fields = c.fields[:fbase]
		var k rawKey
		switch {
		case len(val) == 0:
			return nil, false
		case val[0] == '"':
			d := fastDecoder{data: val}
			if plain, _ := d.scanString(); plain {
				k.val = val[1 : len(val)-1]
			} else {
				s, _ := c.decode(val).(string)
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
	return ks, !hasDuplicate(ks, rawKey.equal, rawKey.String)
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
func (c *rawComparer) walkRawKeyed(path []seg, key string, active []activePtr, ib, ia [][]byte, kb, ka []rawKey) {
	var indexA, indexB map[string]int // of ka and kb, when long
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
		c.item(append(path, seg{kind: segKey, name: key, value: k.value(c.intern), index: idx}), next, ib, ia, bi, ai)
	}
	matched := 0
	for bi := range ib {
		ai := findIndexed(ka, kb[bi], bi, rawKey.equal, rawKey.String, &indexA)
		if ai >= 0 {
			matched++
			if bytes.Equal(ib[bi], ia[ai]) {
				continue
			}
		}
		visit(kb[bi], bi, ai)
	}
	if matched == len(ia) {
		return
	}
	for ai := range ia {
		if findIndexed(kb, ka[ai], ai, rawKey.equal, rawKey.String, &indexB) < 0 {
			visit(ka[ai], -1, ai)
		}
	}
}

// exactRawKeys is exactKeys over the members of an object as written.
func exactRawKeys(fs []rawField, names ...string) bool {
	for _, f := range fs {
		for _, n := range names {
			if string(f.key) != n && strings.EqualFold(string(f.key), n) {
				return false
			}
		}
	}
	return true
}
