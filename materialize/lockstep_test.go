package materialize

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage/storagetest"
)

// jnode is a JSON value whose objects keep their members in order, so
// that a test can write one document in many ways.
type jnode struct {
	kind  byte // 'o' object, 'a' list, 's' string, 'n' number literal, 't' true, 'f' false, 'z' null
	keys  []string
	vals  []*jnode
	items []*jnode
	text  string // the string, or the number literal
}

var (
	genKeys = []string{"a", "b", "c", "name", "type", "id", "image", "value", "containers", "env", "ports", "containerPort",
		"conditions", "rules", "metadata", "status", "spec", "managedFields", "resourceVersion", "uid", "kind", "generation",
		"annotations", "example.com/x", "x~y", "é", "", "A", "Name", "ünï"}
	genStrings = []string{"", "x", "y", "1", "a b", "ü", "\u2028", `"q"`, `back\slash`, "tab\t", "\x7f", "😀", "Deployment", "</script>", "\xff"}
	genNumbers = []string{"0", "1", "-1", "1.0", "1e0", "1E+0", "10", "12345678901234567890", "-0", "0.5", "80", "443"}
)

// genValue returns a random value nested at most depth deep.
func genValue(r *rand.Rand, depth int) *jnode {
	k := r.IntN(10)
	if depth <= 0 {
		k = 4 + r.IntN(6)
	}
	switch k {
	case 0, 1, 2:
		return genObject(r, depth-1)
	case 3:
		n := &jnode{kind: 'a'}
		keyed := r.IntN(2) == 0
		for i := range r.IntN(5) {
			if keyed {
				item := genObject(r, depth-2)
				key := genKeys[3+r.IntN(3)] // name, type, id
				var v *jnode
				if r.IntN(3) == 0 {
					v = &jnode{kind: 'n', text: strconv.Itoa(r.IntN(4))}
				} else {
					v = &jnode{kind: 's', text: string(rune('A' + i + r.IntN(2)))}
				}
				setMember(item, key, v)
				n.items = append(n.items, item)
			} else {
				n.items = append(n.items, genValue(r, depth-1))
			}
		}
		return n
	case 4, 5:
		return &jnode{kind: 's', text: genStrings[r.IntN(len(genStrings))]}
	case 6, 7:
		return &jnode{kind: 'n', text: genNumbers[r.IntN(len(genNumbers))]}
	case 8:
		return &jnode{kind: "tf"[r.IntN(2)]}
	}
	return &jnode{kind: 'z'}
}

func genObject(r *rand.Rand, depth int) *jnode {
	n := &jnode{kind: 'o'}
	for range r.IntN(6) {
		setMember(n, genKeys[r.IntN(len(genKeys))], genValue(r, depth))
	}
	return n
}

func setMember(n *jnode, key string, v *jnode) {
	for i, k := range n.keys {
		if k == key {
			n.vals[i] = v
			return
		}
	}
	n.keys = append(n.keys, key)
	n.vals = append(n.vals, v)
}

func (n *jnode) clone() *jnode {
	c := *n
	c.keys = append([]string(nil), n.keys...)
	c.vals = make([]*jnode, len(n.vals))
	for i, v := range n.vals {
		c.vals[i] = v.clone()
	}
	c.items = make([]*jnode, len(n.items))
	for i, v := range n.items {
		c.items[i] = v.clone()
	}
	return &c
}

// mutate changes a copy of n in a few random places: values replaced,
// members added, removed and reordered, items added, removed and
// reordered, numbers and strings rewritten.
func mutate(r *rand.Rand, n *jnode) *jnode {
	c := n.clone()
	for range 1 + r.IntN(3) {
		mutateOne(r, c, 0)
	}
	return c
}

func mutateOne(r *rand.Rand, n *jnode, depth int) {
	switch n.kind {
	case 'o':
		if len(n.keys) > 0 && r.IntN(3) > 0 {
			i := r.IntN(len(n.keys))
			mutateOne(r, n.vals[i], depth+1)
			return
		}
		switch r.IntN(4) {
		case 0:
			setMember(n, genKeys[r.IntN(len(genKeys))], genValue(r, 2))
		case 1:
			if len(n.keys) > 0 {
				i := r.IntN(len(n.keys))
				n.keys = append(n.keys[:i], n.keys[i+1:]...)
				n.vals = append(n.vals[:i], n.vals[i+1:]...)
			}
		case 2:
			r.Shuffle(len(n.keys), func(i, j int) {
				n.keys[i], n.keys[j] = n.keys[j], n.keys[i]
				n.vals[i], n.vals[j] = n.vals[j], n.vals[i]
			})
		case 3:
			if len(n.keys) > 0 {
				n.vals[r.IntN(len(n.vals))] = genValue(r, 2)
			}
		}
	case 'a':
		if len(n.items) > 0 && r.IntN(3) > 0 {
			mutateOne(r, n.items[r.IntN(len(n.items))], depth+1)
			return
		}
		switch r.IntN(3) {
		case 0:
			n.items = append(n.items, genValue(r, 2))
		case 1:
			if len(n.items) > 0 {
				i := r.IntN(len(n.items))
				n.items = append(n.items[:i], n.items[i+1:]...)
			}
		case 2:
			r.Shuffle(len(n.items), func(i, j int) { n.items[i], n.items[j] = n.items[j], n.items[i] })
		}
	default:
		*n = *genValue(r, 1)
	}
}

// writeStyle says how a document is written.
type writeStyle struct {
	r *rand.Rand
	// spaced puts white space around tokens; escape writes characters as
	// escapes; dups writes a member twice (the first with another value).
	spaced, escape, dups bool
}

func (w writeStyle) write(b *bytes.Buffer, n *jnode) {
	space := func() {
		if w.spaced && w.r.IntN(3) == 0 {
			b.WriteString([]string{" ", "\n  ", "\t", "\r\n"}[w.r.IntN(4)])
		}
	}
	space()
	switch n.kind {
	case 'o':
		b.WriteByte('{')
		for i, k := range n.keys {
			if i > 0 {
				b.WriteByte(',')
			}
			if w.dups && w.r.IntN(6) == 0 {
				w.str(b, k)
				b.WriteByte(':')
				w.write(b, genValue(w.r, 1))
				b.WriteByte(',')
			}
			space()
			w.str(b, k)
			space()
			b.WriteByte(':')
			w.write(b, n.vals[i])
		}
		space()
		b.WriteByte('}')
	case 'a':
		b.WriteByte('[')
		for i, item := range n.items {
			if i > 0 {
				b.WriteByte(',')
			}
			w.write(b, item)
		}
		space()
		b.WriteByte(']')
	case 's':
		w.str(b, n.text)
	case 'n':
		b.WriteString(n.text)
	case 't':
		b.WriteString("true")
	case 'f':
		b.WriteString("false")
	case 'z':
		b.WriteString("null")
	}
	space()
}

// str writes a string, escaping characters at random when w.escape.
func (w writeStyle) str(b *bytes.Buffer, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteByte(s[i]) // invalid UTF-8 as it is
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(b, `\u%04x`, r)
		case w.escape && w.r.IntN(3) == 0 && r < 0x10000:
			fmt.Fprintf(b, `\u%04X`, r)
		case w.escape && r == '/' && w.r.IntN(2) == 0:
			b.WriteString(`\/`)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	b.WriteByte('"')
}

// genPair returns a random object and a changed copy, each written in a
// random style.
func genPair(r *rand.Rand) (before, after []byte) {
	doc := genObject(r, 5)
	next := mutate(r, doc)
	if r.IntN(8) == 0 {
		next = genObject(r, 5)
	}
	style := func() writeStyle {
		return writeStyle{r: r, spaced: r.IntN(4) == 0, escape: r.IntN(4) == 0, dups: r.IntN(8) == 0}
	}
	var b, a bytes.Buffer
	s := style()
	s.write(&b, doc)
	if r.IntN(2) == 0 {
		s = style()
	}
	s.write(&a, next)
	return b.Bytes(), a.Bytes()
}

// lockstepConfigs are the comparison configurations the lockstep walk is
// checked under.
func lockstepConfigs(t testing.TB) []*compareConfig {
	var out []*compareConfig
	for _, opts := range [][]CompareOption{
		nil,
		{IncludeStatus(true)},
		{WithoutDefaultIgnores(), IncludeStatus(true)},
		{WithIgnoreRules(IgnoreRule{Kind: "Deployment", JSONPointers: []string{"/spec/containers/*/image", "/a/1", "/env/0/value", "/*/b"}}),
			WithMergeKeys("rules", "id"), WithMergeKeys("a", "name", "type")},
	} {
		cc, err := newCompareConfig(opts)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, &cc)
	}
	return out
}

// checkLockstep checks that comparing two bodies as written gives what
// comparing them decoded gives, and that it takes every pair of objects
// the fast decoder takes.
func checkLockstep(t testing.TB, cc *compareConfig, ref event.ResourceRef, before, after []byte) {
	t.Helper()
	if bytes.Equal(before, after) {
		return // compareDecoded does not compare them
	}
	want, wantPaths, wantErr := cc.compareTrees(ref, &body{raw: before}, &body{raw: after})
	o := objectMeta{group: ref.Group, kind: ref.Kind, namespace: ref.Namespace, name: ref.Name}
	got, gotPaths, ok := cc.compareRaw(o, &body{raw: before}, &body{raw: after})
	if !ok {
		if fastTakes(before) && fastTakes(after) {
			t.Fatalf("the lockstep walk refused two objects the fast decoder takes:\n%s\n%s", before, after)
		}
		return
	}
	if wantErr != nil {
		t.Fatalf("the lockstep walk compared bodies that do not decode (%v):\n%s\n%s", wantErr, before, after)
	}
	if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotPaths, wantPaths) {
		t.Fatalf("before %s\nafter  %s\nlockstep %q\n%v\ndecoded  %q\n%v", before, after, render(got), gotPaths, render(want), wantPaths)
	}
	// What compareDecoded answers, its bodies shared by several
	// comparisons as in a history.
	cache := newBodyCache(cc, 0)
	bb, ab := &body{raw: before, cache: cache}, &body{raw: after, cache: cache}
	for range 2 {
		got, gotPaths, err := cc.compareDecoded(ref, bb, ab)
		if err != nil || !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotPaths, wantPaths) {
			t.Fatalf("compareDecoded of %s and %s: %q %v %v, want %q", before, after, render(got), gotPaths, err, render(want))
		}
	}
}

func fastTakes(raw []byte) bool {
	_, _, _, ok := fastDecode(raw)
	return ok
}

var lockstepSeeds = [][2]string{
	{`{"a":1}`, `{"a":2,"b":null}`},
	{`{"a":1,"b":2}`, `{"b":2,"a":1}`},
	{`{"a":1,"b":2}`, `{"b":3,"a":1}`},
	{`{"a":1}`, `{"a":1.0}`},
	{`{"a":1e0}`, `{"a":1E0}`},
	{`{"a":"x"}`, `{"a":"\u0078"}`},
	{`{"a":"x"}`, `{"\u0061":"y"}`},
	{`{"a/b":"x"}`, `{"a\/b":"x"}`},
	{`{"a":"\ud800"}`, `{"a":"\ufffd"}`},
	{"{\"a\":\"\xff\"}", `{"a":"\ufffd"}`},
	{"{\"\xff\":1}", `{"\ufffd":2}`},
	{`{"a":1,"a":2}`, `{"a":2}`},
	{`{"a":1,"a":2}`, `{"a":1}`},
	{`{"a":{"b":1,"b":2}}`, `{"a":{"b":2,"c":1}}`},
	{`{"a":null}`, `{}`},
	{`{"a":{}}`, `{"a":[]}`},
	{`{"a":{}}`, `{"a":{ }}`},
	{`{"a":[1,2]}`, `{"a":[ 1 , 2 ]}`},
	{`{"a":[1,2,3]}`, `{"a":[3]}`},
	{`{"a":[{"x":1}]}`, `{"a":[{"x":2},{"x":3}]}`},
	{`{"env":[{"name":"A","value":"1"},{"name":"B","value":"2"}]}`, `{"env":[{"name":"C","value":"3"},{"name":"A","value":"1"}]}`},
	{`{"env":[{"name":"A","value":"1"},{"name":"A","value":"2"}]}`, `{"env":[{"name":"A","value":"1"},{"name":"A","value":"3"}]}`},
	{`{"env":[{"name":"A","value":"1"},{"name":"\u0041","value":"2"}]}`, `{"env":[{"name":"A","value":"3"}]}`},
	{`{"env":[{"name":1},{"name":"1"}]}`, `{"env":[{"name":"1","v":2},{"name":1.0}]}`},
	{`{"env":[{"name":"a","name":"b"}]}`, `{"env":[{"name":"b","v":1}]}`},
	{`{"env":[{"name":"a"},null]}`, `{"env":[{"name":"a","v":1},null]}`},
	{`{"env":[]}`, `{"env":[{"name":"a"}]}`},
	{`{"ports":[{"containerPort":80,"protocol":"TCP"},{"containerPort":443}]}`, `{"ports":[{"containerPort":443},{"containerPort":80,"protocol":"UDP"}]}`},
	{`{"ports":[{"containerPort":80,"name":"a"},{"containerPort":80,"name":"b"}]}`, `{"ports":[{"containerPort":80,"name":"b","x":1},{"containerPort":80,"name":"a"}]}`},
	{`{"kind":"Deployment","spec":{"containers":[{"image":"1"},{"image":"2"}]}}`, `{"kind":"Deployment","spec":{"containers":[{"image":"3"},{"image":"4"}]}}`},
	{`{"kind":"Deployment","kind":"StatefulSet","a":[1,2]}`, `{"kind":"Deployment","a":[1,3]}`},
	{`{"kind":"Deploy\u006dent","a":[1,2]}`, `{"kind":"Deployment","a":[1,3]}`},
	{`{"metadata":{"resourceVersion":"1","labels":{"a":"b"}},"status":{"x":1}}`, `{"metadata":{"resourceVersion":"2","labels":{"a":"c"}},"status":{"x":2}}`},
	{`{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"1","x":"1"}}}`, `{"metadata":{"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"2","x":"2"}}}`},
	{`{"a":1} `, `{"a":2}trailing`},
	{`{"a":1}{"a":3}`, `{"a":2}`},
	{` {"a":1}`, `{"a":1}`},
	{`{"a":01}`, `{"a":2}`},
	{`{"a":"\x"}`, `{"a":2}`},
	{`[1]`, `{"a":1}`},
	{`{"a":1}`, `"x"`},
	{`{"a":1}`, ``},
	{`{"a":1`, `{"a":1}`},
	{`{"a":{"b":{"c":{"d":[{"e":[1,{"f":null}]}]}}}}`, `{"a":{"b":{"c":{"d":[{"e":[1,{"f":false}]}]}}}}`},
}

// TestLockstepMatchesTrees: comparing two bodies as written gives the
// changes and paths comparing them decoded gives, for hand-written pairs
// (keys reordered, numbers and strings written differently, duplicate
// keys, keyed lists with unusable keys, bodies that do not decode) and
// thousands of random ones, under several configurations.
func TestLockstepMatchesTrees(t *testing.T) {
	configs := lockstepConfigs(t)
	refs := []event.ResourceRef{{}, {Group: "apps", Kind: "Deployment"}}
	for _, p := range lockstepSeeds {
		for _, cc := range configs {
			for _, ref := range refs {
				checkLockstep(t, cc, ref, []byte(p[0]), []byte(p[1]))
				checkLockstep(t, cc, ref, []byte(p[1]), []byte(p[0]))
			}
		}
	}
	n := 8000
	if testing.Short() {
		n = 1000
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range n {
		before, after := genPair(r)
		cc := configs[r.IntN(len(configs))]
		checkLockstep(t, cc, refs[r.IntN(len(refs))], before, after)
	}
}

func FuzzLockstep(f *testing.F) {
	for _, p := range lockstepSeeds {
		f.Add([]byte(p[0]), []byte(p[1]))
	}
	configs := lockstepConfigs(f)
	f.Fuzz(func(t *testing.T, before, after []byte) {
		for _, cc := range configs {
			checkLockstep(t, cc, event.ResourceRef{}, before, after)
		}
	})
}

// historyRecords returns records of one object with the given bodies.
func historyRecords(bodies [][]byte) []event.Record {
	s := event.Stream{ClusterID: "c", Group: "apps", Version: "v1", Resource: "deployments", Namespace: "ns"}
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := make([]event.Record, len(bodies))
	for i, b := range bodies {
		rv := strconv.Itoa(100 + i)
		ref := storagetest.Ref(s, "", "ns", "web", "u", rv)
		wt := event.Modified
		if i > 0 && i%17 == 0 {
			wt = event.Deleted
		}
		recs[i] = storagetest.Event(s, wt, ref, b, start.Add(time.Duration(i)*time.Second))
		recs[i].IngestSeq = int64(i + 1)
	}
	return recs
}

// checkHistoryLockstep checks that a history of bodies is the same,
// written as JSON and in every field, whether its versions are compared
// as written or decoded.
func checkHistoryLockstep(t *testing.T, cc compareConfig, bodies [][]byte) {
	t.Helper()
	recs := historyRecords(bodies)
	trees := cc
	trees.trees = true
	run := func(cc compareConfig) (*History, []byte) {
		h := &History{}
		for _, e := range h.versions(recs, nil, "", nil, &cc) {
			h.Entries = append(h.Entries, e.Entry)
		}
		out, err := h.MarshalJSON()
		if err != nil {
			out = []byte("error: " + err.Error())
		}
		return h, out
	}
	gotH, got := run(cc)
	wantH, want := run(trees)
	if !bytes.Equal(got, want) {
		t.Fatalf("history as written\n%s\nhistory decoded\n%s", got, want)
	}
	if !reflect.DeepEqual(gotH, wantH) {
		for i := range gotH.Entries {
			if g, w := gotH.Entries[i].Version, wantH.Entries[i].Version; !reflect.DeepEqual(g, w) {
				t.Fatalf("version %d:\n got %+v\nwant %+v", i, g, w)
			}
		}
		t.Fatalf("histories differ: %+v\n%+v", gotH, wantH)
	}
}

// managedVariant returns body with its managedFields replaced by a list of
// entries chosen by r (a manager moved in time, grown, added or dropped).
func managedVariant(r *rand.Rand, i int) string {
	entries := []string{
		`{"manager":"kubectl","operation":"Update","apiVersion":"apps/v1","time":"2025-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:a":{},"f:b":{".":{},"f:c":{}}},"f:metadata":{"f:labels":{}}}}`,
		`{"manager":"kubectl","operation":"Update","apiVersion":"apps/v1","time":"2025-01-01T00:00:0` + strconv.Itoa(i%10) + `Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:a":{}}}}`,
		`{"manager":"ctrl","operation":"Update","subresource":"status","apiVersion":"apps/v1","time":"2025-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:status":{}}}`,
		`{"manager":"ctrl","operation":"Update","subresource":"status","apiVersion":"apps/v1","time":"2025-01-01T00:01:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:status":{},"f:spec":{"f:env":{"k:{\"name\":\"A\"}":{}}}}}`,
		`{"manager":"apply","operation":"Apply","apiVersion":"apps/v1","time":"2025-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{"f:containers":{}}}}`,
		`{"Manager":"odd"}`,
		`null`,
	}
	var picked []string
	for range r.IntN(4) {
		e := entries[r.IntN(len(entries))]
		if e == `{"Manager":"odd"}` || e == `null` {
			if r.IntN(8) != 0 {
				continue
			}
		}
		picked = append(picked, e)
	}
	return "[" + strings.Join(picked, ",") + "]"
}

// TestHistoryLockstepMatchesTrees: a history compared as written is the
// history compared decoded, field managers and JSON included, for the
// benchmark's ConfigMaps and Deployments and for random sequences of
// changing objects with changing managedFields.
func TestHistoryLockstepMatchesTrees(t *testing.T) {
	for _, recs := range [][]event.Record{configMapVersions(30), deploymentVersions(30)} {
		var bodies [][]byte
		for _, r := range recs {
			bodies = append(bodies, r.Object)
		}
		for _, cc := range lockstepConfigs(t) {
			checkHistoryLockstep(t, *cc, bodies)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	n := 300
	if testing.Short() {
		n = 30
	}
	configs := lockstepConfigs(t)
	for range n {
		doc := genObject(r, 4)
		var bodies [][]byte
		mf := managedVariant(r, 0)
		for i := range 20 {
			if r.IntN(2) == 0 {
				doc = mutate(r, doc)
			}
			if r.IntN(3) == 0 {
				mf = managedVariant(r, i)
			}
			var b bytes.Buffer
			writeStyle{r: r, spaced: r.IntN(6) == 0, escape: r.IntN(6) == 0, dups: r.IntN(12) == 0}.write(&b, doc)
			body := b.Bytes()
			// Put the managedFields into metadata, written as they are.
			meta := `{"name":"web","resourceVersion":"` + strconv.Itoa(i) + `","managedFields":` + mf + `}`
			switch r.IntN(20) {
			case 0:
				meta = `null`
			case 1:
				meta = `{"managedFields":null}`
			case 2:
				meta = `{"ManagedFields":` + mf + `}`
			}
			if len(body) > 2 && body[0] == '{' {
				body = append([]byte(`{"metadata":`+meta+`,`), body[1:]...)
				if bytes.Equal(body[len(body)-2:], []byte(",}")) {
					body = append(body[:len(body)-2], '}')
				}
			}
			if !json.Valid(body) && r.IntN(2) == 0 {
				continue
			}
			if r.IntN(30) == 0 {
				body = append(body, " x"...)
			}
			bodies = append(bodies, body)
		}
		checkHistoryLockstep(t, *configs[r.IntN(len(configs))], bodies)
	}
}

// checkScanAfter checks that scanning cur after prev finds what scanning
// it alone finds: whether the fast decoder takes it, whether it is
// compact and whole, its members, and the objects and lists it parsed.
func checkScanAfter(t testing.TB, prevRaw, curRaw []byte) {
	t.Helper()
	cache := newBodyCache(&compareConfig{}, 0)
	prev := &body{raw: prevRaw, cache: cache}
	prev.scan()
	after := &body{raw: curRaw, cache: cache}
	after.scanAfter(prev)
	alone := &body{raw: curRaw}
	alone.scan()
	if after.scanOK != alone.scanOK || after.scanOK && (after.compact != alone.compact || after.whole != alone.whole) {
		t.Fatalf("after %q\nscanning %q: ok %v compact %v whole %v; alone: ok %v compact %v whole %v", prevRaw, curRaw,
			after.scanOK, after.compact, after.whole, alone.scanOK, alone.compact, alone.whole)
	}
	if !after.scanOK {
		return
	}
	same := func(what string, got, want rawObject) {
		if got.at != want.at || got.tree != want.tree || (len(got.fields) > 0 || len(want.fields) > 0) && !reflect.DeepEqual(got.fields, want.fields) {
			t.Fatalf("after %q\nscanning %q: %s %+v, alone %+v", prevRaw, curRaw, what, got, want)
		}
	}
	same("top", after.top, alone.top)
	for _, p := range after.parsed {
		if p.list.data != nil {
			want, ok := alone.listAt(span{p.start, len(curRaw)})
			if !ok || (len(p.list.items) > 0 || len(want.items) > 0) && !reflect.DeepEqual(p.list.items, want.items) {
				t.Fatalf("after %q\nscanning %q: list at %d %v, alone %v", prevRaw, curRaw, p.start, p.list.items, want.items)
			}
			continue
		}
		want, ok := alone.objectAt(span{p.start, len(curRaw)})
		if !ok {
			t.Fatalf("after %q\nscanning %q: no object at %d", prevRaw, curRaw, p.start)
		}
		same("object", p.obj, want)
	}
}

// corrupt returns raw with a byte inserted, removed or replaced.
func corrupt(r *rand.Rand, raw []byte) []byte {
	if len(raw) == 0 {
		return raw
	}
	out := append([]byte(nil), raw...)
	i := r.IntN(len(out))
	const alphabet = "{}[]\",:0-.e tfn\\x\x01"
	c := alphabet[r.IntN(len(alphabet))]
	switch r.IntN(3) {
	case 0:
		return append(out[:i], append([]byte{c}, out[i:]...)...)
	case 1:
		return append(out[:i], out[i+1:]...)
	}
	out[i] = c
	return out
}

// TestScanAfterMatchesScan: checking a body against the version before it
// accepts and parses what checking it alone does, for the seeds, random
// pairs and their corruptions, and the benchmark's versions.
func TestScanAfterMatchesScan(t *testing.T) {
	for _, p := range lockstepSeeds {
		checkScanAfter(t, []byte(p[0]), []byte(p[1]))
		checkScanAfter(t, []byte(p[1]), []byte(p[0]))
	}
	for _, recs := range [][]event.Record{configMapVersions(5), deploymentVersions(12)} {
		for i := 1; i < len(recs); i++ {
			checkScanAfter(t, recs[i-1].Object, recs[i].Object)
		}
	}
	// Nested about as deep as the fast decoder takes, then deeper.
	nested := func(depth int, inner string) []byte {
		return []byte(strings.Repeat(`{"a":[`, depth/2) + inner + strings.Repeat(`]}`, depth/2))
	}
	for _, d := range []int{maxFastDepth - 4, maxFastDepth - 2, maxFastDepth} {
		checkScanAfter(t, nested(d, `1`), nested(d, `{"b":[[[{"c":2}]]]}`))
		checkScanAfter(t, nested(d, `{"b":[1]}`), nested(d, `{"b":[[[[[[1]]]]]]}`))
	}
	r := rand.New(rand.NewPCG(7, 8))
	n := 20000
	if testing.Short() {
		n = 2000
	}
	for range n {
		before, after := genPair(r)
		if r.IntN(3) == 0 {
			after = corrupt(r, after)
		}
		checkScanAfter(t, before, after)
	}
}

func FuzzScanAfter(f *testing.F) {
	for _, p := range lockstepSeeds {
		f.Add([]byte(p[0]), []byte(p[1]))
	}
	f.Fuzz(func(t *testing.T, prev, cur []byte) { checkScanAfter(t, prev, cur) })
}
