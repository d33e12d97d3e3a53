package materialize

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/krply/krply/event"
)

// IgnoreRule leaves fields out of comparisons, in the manner of Argo CD's
// ignoreDifferences: for objects matching Group, Kind, Namespace and Name
// (empty matches any), the fields at JSONPointers (RFC 6901, e.g.
// "/spec/replicas" or "/metadata/annotations/example.com~1x") are ignored.
// A pointer segment addressing a list item matches the item's position in
// either version; "*" matches any field or item.
type IgnoreRule struct {
	Group        string   `json:"group,omitempty"`
	Kind         string   `json:"kind,omitempty"`
	Namespace    string   `json:"namespace,omitempty"`
	Name         string   `json:"name,omitempty"`
	JSONPointers []string `json:"jsonPointers"`
}

// defaultPointers are the server-owned fields every comparison ignores
// unless WithoutDefaultIgnores is given.
var defaultPointers = []pointer{
	{"metadata", "managedFields"},
	{"metadata", "resourceVersion"},
	{"metadata", "uid"},
	{"metadata", "generation"},
	{"metadata", "creationTimestamp"},
	{"metadata", "selfLink"},
	{"metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration"},
	{"metadata", "annotations", "deployment.kubernetes.io/revision"},
}

// DefaultIgnorePointers returns the JSON pointers of the server-owned fields
// every comparison ignores unless WithoutDefaultIgnores is given: managed
// fields, resourceVersion, uid, generation, creationTimestamp, selfLink, the
// last-applied annotation and the Deployment revision annotation. Status is
// ignored separately, see IncludeStatus.
func DefaultIgnorePointers() []string {
	out := make([]string, len(defaultPointers))
	for i, p := range defaultPointers {
		out[i] = p.String()
	}
	return out
}

// String returns the pointer in RFC 6901 form.
func (p pointer) String() string {
	var b strings.Builder
	for _, s := range p {
		b.WriteByte('/')
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

// statusPointers is ignored unless status is included.
var statusPointers = []pointer{{"status"}}

// defaultMergeKeys maps a list field's name to the item fields that identify
// its items, tried in order: the first one present, scalar and unique in
// both versions is used, otherwise items are matched by position.
var defaultMergeKeys = map[string][]string{
	"containers":          {"name"},
	"initContainers":      {"name"},
	"ephemeralContainers": {"name"},
	"env":                 {"name"},
	"volumes":             {"name"},
	"volumeMounts":        {"mountPath", "name"},
	"volumeDevices":       {"devicePath", "name"},
	"ports":               {"containerPort", "port", "name"},
	"imagePullSecrets":    {"name"},
	"hostAliases":         {"ip"},
	"conditions":          {"type"},
}

// pointer is a compiled JSON pointer.
type pointer []string

func parsePointer(p string) (pointer, error) {
	if p == "" || p[0] != '/' {
		return nil, fmt.Errorf("materialize: %w: JSON pointer %q must start with '/'", ErrInvalidArgument, p)
	}
	parts := strings.Split(p[1:], "/")
	for i, s := range parts {
		if strings.Contains(s, "~") {
			for j := 0; j < len(s); j++ {
				if s[j] == '~' && (j+1 == len(s) || s[j+1] != '0' && s[j+1] != '1') {
					return nil, fmt.Errorf("materialize: %w: JSON pointer %q: bad escape", ErrInvalidArgument, p)
				}
			}
			s = strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
		}
		parts[i] = s
	}
	return parts, nil
}

// compareConfig decides what a comparison ignores and how lists are matched.
type compareConfig struct {
	includeStatus  bool
	defaultIgnores bool
	rules          []compiledRule
	mergeKeys      map[string][]string
	// trees compares decoded bodies only (compareTrees), and reads
	// managedFields from them: the reference the tests hold the lockstep
	// comparison to.
	trees bool
}

type compiledRule struct {
	IgnoreRule
	pointers []pointer
}

// DefaultMergeKeys returns, for each list field name, the item fields that
// identify its items, tried in order: the first one present, scalar and
// unique in both versions is used, otherwise items are matched by position.
// Merge keys given with WithMergeKeys are added to these.
func DefaultMergeKeys() map[string][]string {
	out := make(map[string][]string, len(defaultMergeKeys))
	for k, v := range defaultMergeKeys {
		out[k] = slices.Clone(v)
	}
	return out
}

func compileRules(rules []IgnoreRule) ([]compiledRule, error) {
	out := make([]compiledRule, 0, len(rules))
	for _, r := range rules {
		cr := compiledRule{IgnoreRule: r}
		for _, p := range r.JSONPointers {
			cp, err := parsePointer(p)
			if err != nil {
				return nil, fmt.Errorf("ignore rule %s/%s %s/%s: %w", r.Group, r.Kind, r.Namespace, r.Name, err)
			}
			cr.pointers = append(cr.pointers, cp)
		}
		out = append(out, cr)
	}
	return out, nil
}

// objectMeta identifies the object a comparison is about, for ignore rules.
type objectMeta struct {
	group, kind, namespace, name string
}

// pointersFor returns the ignored pointers for one object.
func (c *compareConfig) pointersFor(o objectMeta) []pointer {
	var ps []pointer
	if c.defaultIgnores {
		ps = append(ps, defaultPointers...)
	}
	if !c.includeStatus {
		ps = append(ps, statusPointers...)
	}
	for _, r := range c.rules {
		if (r.Group == "" || r.Group == o.group) && (r.Kind == "" || r.Kind == o.kind) &&
			(r.Namespace == "" || r.Namespace == o.namespace) && (r.Name == "" || r.Name == o.name) {
			ps = append(ps, r.pointers...)
		}
	}
	return ps
}

// activePtr is an ignore pointer matched up to pos.
type activePtr struct {
	p   pointer
	pos int
}

func startPointers(ps []pointer) []activePtr {
	out := make([]activePtr, len(ps))
	for i, p := range ps {
		out[i] = activePtr{p: p}
	}
	return out
}

// step advances the active pointers into a child named by field, or by
// list positions (a child of a list may sit at different positions in the
// two versions). It reports whether the child itself is ignored.
func step(active []activePtr, field string, positions ...int) (next []activePtr, ignored bool) {
	return stepAppend(nil, active, field, positions...)
}

// stepAppend is step appending the next active pointers to dst: next is
// dst with them.
func stepAppend(dst, active []activePtr, field string, positions ...int) (next []activePtr, ignored bool) {
	next = dst
	for _, a := range active {
		s := a.p[a.pos]
		match := s == "*"
		if !match {
			if positions == nil {
				match = s == field
			} else {
				for _, pos := range positions {
					if pos >= 0 && s == strconv.Itoa(pos) {
						match = true
						break
					}
				}
			}
		}
		if !match {
			continue
		}
		if a.pos+1 == len(a.p) {
			return nil, true
		}
		next = append(next, activePtr{p: a.p, pos: a.pos + 1})
	}
	return next, false
}

// comparer computes field changes between two decoded JSON documents.
type comparer struct {
	mergeKeys map[string][]string
	out       []change
	// recent are the last paths changed, each with its text: the
	// comparisons of a history change the same fields version after
	// version, and share a path's segments (read only) and text.
	recent     [8]recentPath
	nextRecent int
}

type recentPath struct {
	path []seg
	text string
}

type change struct {
	path   []seg
	text   string // the path rendered, when known
	op     ChangeOp
	before any
	after  any
}

// decodeJSON decodes a body keeping numbers exact.
func decodeJSON(raw []byte) (any, error) {
	v, _, err := decodeFirst(raw)
	return v, err
}

// decodeFirst is decodeJSON that also returns what follows the value.
func decodeFirst(raw []byte) (any, []byte, error) {
	v, rest, _, err := decodeInterning(raw, nil)
	return v, rest, err
}

// decodeInterning is decodeFirst taking short strings from intern (see
// fastDecodeInterning); compact reports that raw is the value alone,
// compact JSON that the fast decoder took.
func decodeInterning(raw []byte, intern map[string]string) (v any, rest []byte, compact bool, err error) {
	if len(raw) == 0 {
		return nil, nil, false, nil
	}
	if v, rest, spaced, ok := fastDecodeInterning(raw, intern); ok {
		return v, rest, !spaced && len(rest) == 0, nil
	}
	v, rest, err = decodeStd(raw)
	return v, rest, false, err
}

// decodeStd is decodeFirst by encoding/json alone.
func decodeStd(raw []byte) (any, []byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, nil, err
	}
	return v, raw[dec.InputOffset():], nil
}

// compareValues returns the field changes from before to after, sorted by
// path, ignoring the given pointers.
func compareValues(before, after any, ignore []pointer, mergeKeys map[string][]string) []FieldChange {
	out, _ := compareValuesPaths(before, after, ignore, mergeKeys)
	return out
}

// compareValuesPaths is compareValues that also returns the path of each
// change as segments.
func compareValuesPaths(before, after any, ignore []pointer, mergeKeys map[string][]string) ([]FieldChange, [][]seg) {
	c := comparer{mergeKeys: mergeKeys}
	c.walk(nil, "", startPointers(ignore), before, after, true, true)
	return c.result()
}

// result returns the changes found, sorted by path, with the path of each
// as segments.
func (c *comparer) result() ([]FieldChange, [][]seg) {
	slices.SortStableFunc(c.out, func(x, y change) int { return comparePaths(x.path, y.path) })
	out := make([]FieldChange, len(c.out))
	paths := make([][]seg, len(c.out))
	for i, ch := range c.out {
		if ch.text == "" {
			ch.text = renderPath(ch.path)
			c.recent[c.nextRecent] = recentPath{path: ch.path, text: ch.text}
			c.nextRecent = (c.nextRecent + 1) % len(c.recent)
		}
		out[i] = FieldChange{Path: ch.text, Op: ch.op, Before: ch.before, After: ch.after}
		paths[i] = ch.path
	}
	return out, paths
}

func (c *comparer) emit(path []seg, op ChangeOp, before, after any) {
	ch := change{op: op, before: before, after: after}
	for _, r := range c.recent {
		if r.text != "" && slices.Equal(r.path, path) {
			ch.path, ch.text = r.path, r.text
			break
		}
	}
	if ch.path == nil {
		ch.path = slices.Clone(path)
	}
	c.out = append(c.out, ch)
}

// walk compares one node. field is the name of the field holding it (for
// merge keys); hasB and hasA tell absent from null.
func (c *comparer) walk(path []seg, field string, active []activePtr, b, a any, hasB, hasA bool) {
	switch {
	case !hasB && !hasA:
		return
	case !hasB:
		c.emit(path, OpAdd, nil, a)
		return
	case !hasA:
		c.emit(path, OpRemove, b, nil)
		return
	}
	switch bv := b.(type) {
	case map[string]any:
		av, ok := a.(map[string]any)
		if !ok {
			break
		}
		c.walkMap(path, active, bv, av)
		return
	case []any:
		av, ok := a.([]any)
		if !ok {
			break
		}
		c.walkList(path, field, active, bv, av)
		return
	}
	if !equalJSON(b, a) {
		c.emit(path, OpReplace, b, a)
	}
}

// walkMap visits the fields of both maps in no particular order:
// compareValuesPaths sorts the changes by their paths, which differ.
func (c *comparer) walkMap(path []seg, active []activePtr, b, a map[string]any) {
	visit := func(k string, bv, av any, hasB, hasA bool) {
		next, ignored := active, false
		if len(active) > 0 {
			next, ignored = step(active, k)
			if ignored {
				return
			}
		}
		c.walk(append(path, seg{kind: segField, name: k}), k, next, bv, av, hasB, hasA)
	}
	for k, bv := range b {
		av, hasA := a[k]
		visit(k, bv, av, true, hasA)
	}
	for k, av := range a {
		if _, ok := b[k]; !ok {
			visit(k, nil, av, false, true)
		}
	}
}

func (c *comparer) walkList(path []seg, field string, active []activePtr, b, a []any) {
	if key := c.mergeKey(field, b, a); key != "" {
		c.walkKeyed(path, key, active, b, a)
		return
	}
	n := max(len(b), len(a))
	for i := 0; i < n; i++ {
		next, ignored := active, false
		if len(active) > 0 {
			next, ignored = step(active, "", i)
			if ignored {
				continue
			}
		}
		var bv, av any
		hasB, hasA := i < len(b), i < len(a)
		if hasB {
			bv = b[i]
		}
		if hasA {
			av = a[i]
		}
		c.walk(append(path, seg{kind: segIndex, index: i}), "", next, bv, av, hasB, hasA)
	}
}

func (c *comparer) walkKeyed(path []seg, key string, active []activePtr, b, a []any) {
	afterPos := make(map[string]int, len(a))
	for i, item := range a {
		afterPos[keyLiteral(item.(map[string]any)[key])] = i
	}
	seen := make(map[string]bool, len(b))
	visit := func(kv any, bi, ai int) {
		next, ignored := active, false
		if len(active) > 0 {
			next, ignored = step(active, "", bi, ai)
			if ignored {
				return
			}
		}
		var bv, av any
		if bi >= 0 {
			bv = b[bi]
		}
		if ai >= 0 {
			av = a[ai]
		}
		idx := bi
		if idx < 0 {
			idx = ai
		}
		c.walk(append(path, seg{kind: segKey, name: key, value: kv, index: idx}), "", next, bv, av, bi >= 0, ai >= 0)
	}
	for bi, item := range b {
		kv := item.(map[string]any)[key]
		lit := keyLiteral(kv)
		seen[lit] = true
		ai, ok := afterPos[lit]
		if !ok {
			ai = -1
		}
		visit(kv, bi, ai)
	}
	for ai, item := range a {
		kv := item.(map[string]any)[key]
		if !seen[keyLiteral(kv)] {
			visit(kv, -1, ai)
		}
	}
}

// mergeKey returns the merge key both lists can be matched by, or "".
func (c *comparer) mergeKey(field string, b, a []any) string {
	candidates := c.mergeKeys[field]
	if len(candidates) == 0 || len(b)+len(a) == 0 {
		return ""
	}
	for _, key := range candidates {
		if usableKey(key, b) && usableKey(key, a) {
			return key
		}
	}
	return ""
}

// usableKey reports whether every item is an object with a unique scalar
// (string or number) value at key.
func usableKey(key string, items []any) bool {
	seen := make(map[string]bool, len(items))
	for _, item := range items {
		m, ok := item.(map[string]any)
		if !ok {
			return false
		}
		var lit string
		switch v := m[key].(type) {
		case string:
			lit = "s" + v
		case json.Number:
			lit = "n" + v.String()
		default:
			return false
		}
		if seen[lit] {
			return false
		}
		seen[lit] = true
	}
	return true
}

// equalJSON compares decoded JSON values.
func equalJSON(a, b any) bool {
	switch av := a.(type) {
	case string:
		bv, ok := b.(string)
		return ok && av == bv
	case json.Number:
		bv, ok := b.(json.Number)
		return ok && av == bv
	case bool:
		bv, ok := b.(bool)
		return ok && av == bv
	case nil:
		return b == nil
	}
	return reflect.DeepEqual(a, b)
}

// stripIgnored returns a copy of v without the ignored fields. List items
// are addressed by their position in v.
func stripIgnored(v any, active []activePtr) any {
	if len(active) == 0 {
		return v
	}
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, child := range t {
			next, ignored := step(active, k)
			if ignored {
				continue
			}
			out[k] = stripIgnored(child, next)
		}
		return out
	case []any:
		out := make([]any, 0, len(t))
		for i, child := range t {
			next, ignored := step(active, "", i)
			if ignored {
				continue
			}
			out = append(out, stripIgnored(child, next))
		}
		return out
	}
	return v
}

// objectMetaOf identifies an object for ignore rules.
func objectMetaOf(ref event.ResourceRef, body any) objectMeta {
	o := objectMeta{group: ref.Group, kind: ref.Kind, namespace: ref.Namespace, name: ref.Name}
	if o.kind == "" {
		if m, ok := body.(map[string]any); ok {
			o.kind, _ = m["kind"].(string)
		}
	}
	return o
}

// compareBodies returns the field changes between two raw bodies of one
// object; nil bodies are absent objects.
func (c *compareConfig) compareBodies(ref event.ResourceRef, before, after json.RawMessage) ([]FieldChange, error) {
	out, _, err := c.compareBodiesPaths(ref, before, after)
	return out, err
}

// compareBodiesPaths is compareBodies that also returns the path of each
// change as segments (empty for a whole object added or removed).
func (c *compareConfig) compareBodiesPaths(ref event.ResourceRef, before, after json.RawMessage) ([]FieldChange, [][]seg, error) {
	return c.compareDecoded(ref, &body{raw: before}, &body{raw: after})
}

// compareDecoded is compareBodiesPaths over bodies that decode once
// whatever number of comparisons they take part in. Two objects are
// compared as written (compareRaw), which decodes only what differs, when
// the fast decoder takes both; otherwise decoded (compareTrees).
func (c *compareConfig) compareDecoded(ref event.ResourceRef, before, after *body) ([]FieldChange, [][]seg, error) {
	if bytes.Equal(before.raw, after.raw) {
		return nil, nil, nil
	}
	if !c.trees && len(before.raw) > 0 && len(after.raw) > 0 {
		o := objectMeta{group: ref.Group, kind: ref.Kind, namespace: ref.Namespace, name: ref.Name}
		if out, paths, ok := c.compareRaw(o, before, after); ok {
			return out, paths, nil
		}
	}
	return c.compareTrees(ref, before, after)
}

// compareTrees is compareDecoded by decoding both bodies whole.
func (c *compareConfig) compareTrees(ref event.ResourceRef, before, after *body) ([]FieldChange, [][]seg, error) {
	if bytes.Equal(before.raw, after.raw) {
		return nil, nil, nil
	}
	b, err := before.value()
	if err != nil {
		return nil, nil, fmt.Errorf("decode %s: %w", ref, err)
	}
	a, err := after.value()
	if err != nil {
		return nil, nil, fmt.Errorf("decode %s: %w", ref, err)
	}
	switch {
	case len(before.raw) == 0 && len(after.raw) == 0:
		return nil, nil, nil
	case len(before.raw) == 0:
		return []FieldChange{{Op: OpAdd, After: a}}, [][]seg{nil}, nil
	case len(after.raw) == 0:
		return []FieldChange{{Op: OpRemove, Before: b}}, [][]seg{nil}, nil
	}
	out, paths := compareValuesPaths(b, a, c.pointersFor(objectMetaOf(ref, a)), c.mergeKeys)
	return out, paths, nil
}

// bodyCache is what the bodies of one history share: an intern table for
// their strings (see fastDecodeInterning) and the managedFields entries
// last read, which the next version nearly always repeats.
type bodyCache struct {
	intern map[string]string
	// trees reads managedFields from decoded bodies (compareConfig.trees).
	trees bool
	// raw is the lockstep comparer the bodies' comparisons share.
	raw *rawComparer
	// spare is a body done with, whose space the next body reuses.
	spare *body
	// stack and spanStack gather the members and items of the objects
	// and lists scanAfter parses.
	stack     []rawField
	spanStack []span

	managedRaw []byte
	managed    []managedEntry
	managedOK  bool
}

// newBodyCache returns the cache of a history of n versions (a history
// interns one or two strings a version: its map is made that large at
// once instead of growing into it).
func newBodyCache(cc *compareConfig, n int) *bodyCache {
	return &bodyCache{intern: make(map[string]string, min(2*n, maxInterns)), trees: cc.trees}
}

// newBody returns a body of raw sharing the cache, in the space of the
// spare body when there is one.
func (c *bodyCache) newBody(raw json.RawMessage) *body {
	b := c.spare
	if b == nil {
		return &body{raw: raw, cache: c}
	}
	c.spare = nil
	clear(b.parsedIndex)
	*b = body{raw: raw, cache: c, parsed: b.parsed[:0], parsedIndex: b.parsedIndex, fields: b.fields[:0], spans: b.spans[:0]}
	return b
}

// release gives the cache a body no longer used (nor anything read from
// it but its managedFields entries), for the next one.
func (c *bodyCache) release(b *body) {
	if b != nil && b.cache == c {
		c.spare = b
	}
}

// body is a raw body with what comparisons read of it, each computed on
// first use: a history compares each version twice, with the version
// before and the version after it.
type body struct {
	raw json.RawMessage
	// cache, when set, is shared by the bodies of one history.
	cache *bodyCache

	// scanned is set once raw was scanned; scanOK when the fast decoder
	// takes it (a JSON object), top then being that object.
	scanned, scanOK bool
	top             rawObject
	// parsed are the objects and lists of raw parsed since, by where they
	// start (indexed in parsedIndex when many): each is parsed once
	// whatever number of comparisons descend into it.
	parsed      []parsedValue
	parsedIndex map[int]int
	// fields and spans are where the members and items of the parsed
	// objects and lists are kept.
	fields []rawField
	spans  []span

	decoded bool
	val     any
	err     error
	whole   bool // nothing but white space follows the value (scanOK or decoded)
	compact bool // raw is the value alone, without white space

	managedRead bool
	managed     []managedEntry
}

// internTable returns the intern table the body decodes with (nil: none).
func (b *body) internTable() map[string]string {
	if b.cache == nil {
		return nil
	}
	return b.cache.intern
}

// scan reports whether raw is a JSON object the fast decoder takes, and
// reads its members, without decoding them.
func (b *body) scan() bool {
	if !b.scanned {
		b.scanned = true
		d := fastDecoder{data: b.raw}
		d.space()
		at := d.pos
		start, ok := len(b.fields), false
		if d.pos < len(d.data) && d.data[d.pos] == '{' {
			b.fields, ok = d.members(1, b.fields, true)
		}
		if ok {
			b.top = newRawObject(b.raw, span{at, d.pos}, b.fields[start:len(b.fields):len(b.fields)])
			b.scanOK = true
			rest := b.raw[d.pos:]
			b.compact = !d.spaced && len(rest) == 0
			b.whole = len(bytes.TrimLeft(rest, " \t\r\n")) == 0
		}
	}
	return b.scanOK
}

// isCompact reports whether the body was found to be compact JSON, as
// encoding/json would write it.
func (b *body) isCompact() bool {
	return (b.scanOK || b.decoded && b.err == nil) && b.compact
}

// value returns the decoded body (see decodeJSON).
func (b *body) value() (any, error) {
	if !b.decoded {
		var rest []byte
		b.val, rest, b.compact, b.err = decodeInterning(b.raw, b.internTable())
		b.whole = len(bytes.TrimLeft(rest, " \t\r\n")) == 0
		b.decoded = true
	}
	return b.val, b.err
}

// entries returns the managedFields entries of the body (see
// managedEntries): read from raw as written when the body is an object
// the fast decoder takes whole, from its decoded value otherwise.
func (b *body) entries() []managedEntry {
	if !b.managedRead {
		var ok bool
		if (b.cache == nil || !b.cache.trees) && b.scan() && b.whole {
			b.managed, ok = b.rawEntries()
		}
		if !ok {
			if v, err := b.value(); err == nil && b.whole {
				b.managed, ok = managedEntriesOf(v)
			}
		}
		if !ok {
			b.managed = managedEntries(b.raw)
		}
		b.managedRead = true
	}
	return b.managed
}

// rawEntries is managedEntriesOf reading only metadata.managedFields of
// the scanned body, and reusing the entries of the body cache when that
// list is written as the last one read.
func (b *body) rawEntries() ([]managedEntry, bool) {
	if !b.top.exactKeys("metadata") {
		return nil, false
	}
	ms, ok := b.top.lastAt("metadata")
	if meta := ms.in(b.raw); !ok || string(meta) == "null" {
		return nil, true
	} else if meta[0] != '{' {
		return nil, false
	}
	mo, ok := b.objectAt(ms)
	if !ok || !mo.exactKeys("managedFields") {
		return nil, false
	}
	ls, ok := mo.lastAt("managedFields")
	list := ls.in(b.raw)
	if !ok || string(list) == "null" {
		return nil, true
	}
	if list[0] != '[' {
		return nil, false
	}
	if b.cache != nil && b.cache.managedRaw != nil && bytes.Equal(b.cache.managedRaw, list) {
		return b.cache.managed, b.cache.managedOK
	}
	// Read each entry, reusing those written as an entry of the list
	// last read: a controller's new time leaves the others as they were.
	l, ok := b.listAt(ls)
	if !ok {
		return nil, false
	}
	var last []managedEntry
	if b.cache != nil && b.cache.managedOK {
		last = b.cache.managed
	}
	out, ok := make([]managedEntry, 0, len(l.items)), true
	for i := range l.items {
		item := l.item(i)
		if j := entryWritten(last, item, i); j >= 0 {
			out = append(out, last[j])
			continue
		}
		d := fastDecoder{data: item, intern: b.internTable()}
		v, decoded := d.value(0)
		if !decoded {
			return nil, false
		}
		var e managedEntry
		if e, ok = managedEntryOf(v); !ok {
			out = nil
			break
		}
		e.raw = item
		out = append(out, e)
	}
	if b.cache != nil {
		b.cache.managedRaw, b.cache.managed, b.cache.managedOK = list, out, ok
	}
	return out, ok
}

// entryWritten returns the position among entries of the one read from
// bytes equal to item (tried at hint first), -1 when none.
func entryWritten(entries []managedEntry, item []byte, hint int) int {
	if hint < len(entries) && bytes.Equal(entries[hint].raw, item) {
		return hint
	}
	for j := range entries {
		if bytes.Equal(entries[j].raw, item) {
			return j
		}
	}
	return -1
}
