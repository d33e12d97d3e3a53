package materialize

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/event"
)

func mustDecode(t testing.TB, s string) any {
	t.Helper()
	v, err := decodeJSON([]byte(s))
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return v
}

func render(changes []FieldChange) []string {
	var out []string
	for _, c := range changes {
		b, _ := json.Marshal(c.Before)
		a, _ := json.Marshal(c.After)
		out = append(out, fmt.Sprintf("%s %s %s→%s", c.Op, c.Path, b, a))
	}
	return out
}

func TestCompareValues(t *testing.T) {
	tests := []struct {
		name          string
		before, after string
		opts          []CompareOption
		want          []string
	}{
		{name: "equal", before: `{"a":1}`, after: `{"a":1}`},
		{name: "scalar", before: `{"spec":{"replicas":2}}`, after: `{"spec":{"replicas":5}}`, want: []string{"replace spec.replicas 2→5"}},
		{name: "absent to null", before: `{}`, after: `{"a":null}`, want: []string{"add a null→null"}},
		{name: "null to absent", before: `{"a":null}`, after: `{}`, want: []string{"remove a null→null"}},
		{name: "null to empty", before: `{"a":null}`, after: `{"a":{}}`, want: []string{"replace a null→{}"}},
		{name: "empty to absent", before: `{"a":[]}`, after: `{}`, want: []string{"remove a []→null"}},
		{name: "empty string to absent", before: `{"a":""}`, after: `{}`, want: []string{`remove a ""→null`}},
		{name: "type change", before: `{"a":"1"}`, after: `{"a":1}`, want: []string{`replace a "1"→1`}},
		{name: "numbers exact", before: `{"a":12345678901234567890}`, after: `{"a":12345678901234567891}`, want: []string{"replace a 12345678901234567890→12345678901234567891"}},
		{name: "quoted names", before: `{"metadata":{"annotations":{"example.com/x":"1"}}}`, after: `{"metadata":{"annotations":{"example.com/x":"2"}}}`,
			want: []string{`replace metadata.annotations["example.com/x"] "1"→"2"`}},
		{name: "index order is numeric", before: `{"l":[0,1,2,3,4,5,6,7,8,9,10,11]}`, after: `{"l":[0,1,9,3,4,5,6,7,8,9,0,11]}`,
			want: []string{"replace l[2] 2→9", "replace l[10] 10→0"}},
		{name: "list grows and shrinks", before: `{"l":[1,2,3],"m":[1]}`, after: `{"l":[1],"m":[1,2]}`,
			want: []string{"remove l[1] 2→null", "remove l[2] 3→null", "add m[1] null→2"}},
		{name: "containers by name, reorder is no change",
			before: `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"a:1"},{"name":"side","image":"s:1"}]}}}}`,
			after:  `{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"s:1"},{"name":"app","image":"a:2"}]}}}}`,
			want:   []string{`replace spec.template.spec.containers[name=app].image "a:1"→"a:2"`}},
		{name: "env by name added and removed",
			before: `{"env":[{"name":"A","value":"1"},{"name":"B","value":"2"}]}`,
			after:  `{"env":[{"name":"C","value":"3"},{"name":"A","value":"1"}]}`,
			want:   []string{`remove env[name=B] {"name":"B","value":"2"}→null`, `add env[name=C] null→{"name":"C","value":"3"}`}},
		{name: "ports by containerPort",
			before: `{"ports":[{"containerPort":80,"protocol":"TCP"},{"containerPort":443}]}`,
			after:  `{"ports":[{"containerPort":443},{"containerPort":80,"protocol":"UDP"}]}`,
			want:   []string{`replace ports[containerPort=80].protocol "TCP"→"UDP"`}},
		{name: "duplicate key falls back to index",
			before: `{"env":[{"name":"A","value":"1"},{"name":"A","value":"2"}]}`,
			after:  `{"env":[{"name":"A","value":"1"},{"name":"A","value":"3"}]}`,
			want:   []string{`replace env[1].value "2"→"3"`}},
		{name: "key that needs quoting", before: `{"env":[{"name":"a b","value":"1"}]}`, after: `{"env":[{"name":"a b","value":"2"}]}`,
			want: []string{`replace env[name="a b"].value "1"→"2"`}},
		{name: "server-owned metadata ignored",
			before: `{"metadata":{"resourceVersion":"1","uid":"u","generation":1,"managedFields":[],"creationTimestamp":"x","annotations":{"deployment.kubernetes.io/revision":"1","kubectl.kubernetes.io/last-applied-configuration":"{}"}}}`,
			after:  `{"metadata":{"resourceVersion":"2","uid":"v","generation":2,"managedFields":[{}],"creationTimestamp":"y","annotations":{"deployment.kubernetes.io/revision":"2","kubectl.kubernetes.io/last-applied-configuration":"{\"a\":1}"}}}`},
		{name: "status ignored by default", before: `{"status":{"ready":1}}`, after: `{"status":{"ready":2}}`},
		{name: "status on request", before: `{"status":{"ready":1}}`, after: `{"status":{"ready":2}}`, opts: []CompareOption{IncludeStatus(true)},
			want: []string{"replace status.ready 1→2"}},
		{name: "defaults off", before: `{"metadata":{"resourceVersion":"1"}}`, after: `{"metadata":{"resourceVersion":"2"}}`, opts: []CompareOption{WithoutDefaultIgnores()},
			want: []string{`replace metadata.resourceVersion "1"→"2"`}},
		{name: "custom pointer for the kind",
			before: `{"kind":"Deployment","spec":{"replicas":1,"paused":false}}`, after: `{"kind":"Deployment","spec":{"replicas":3,"paused":true}}`,
			opts: []CompareOption{WithIgnoreRules(IgnoreRule{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}})},
			want: []string{"replace spec.paused false→true"}},
		{name: "custom pointer for another kind does not apply",
			before: `{"kind":"Deployment","spec":{"replicas":1}}`, after: `{"kind":"Deployment","spec":{"replicas":3}}`,
			opts: []CompareOption{WithIgnoreRules(IgnoreRule{Kind: "StatefulSet", JSONPointers: []string{"/spec/replicas"}})},
			want: []string{"replace spec.replicas 1→3"}},
		{name: "pointer into a keyed list by position and wildcard",
			before: `{"containers":[{"name":"a","image":"1"},{"name":"b","image":"1","args":["x"]}]}`,
			after:  `{"containers":[{"name":"a","image":"2"},{"name":"b","image":"2","args":["y"]}]}`,
			opts:   []CompareOption{WithIgnoreRules(IgnoreRule{JSONPointers: []string{"/containers/*/image", "/containers/1/args"}})}},
		{name: "custom merge key", before: `{"rules":[{"id":"x","v":1},{"id":"y","v":1}]}`, after: `{"rules":[{"id":"y","v":1},{"id":"x","v":2}]}`,
			opts: []CompareOption{WithMergeKeys("rules", "id")}, want: []string{"replace rules[id=x].v 1→2"}},
		{name: "root type change", before: `[1]`, after: `{"a":1}`, want: []string{`replace  [1]→{"a":1}`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			changes, err := CompareObjects(event.ResourceRef{Group: "apps"}, json.RawMessage(tc.before), json.RawMessage(tc.after), tc.opts...)
			if err != nil {
				t.Fatal(err)
			}
			if got := render(changes); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("changes\n got %q\nwant %q", got, tc.want)
			}
			if err := checkApply(tc.before, tc.after, tc.opts, changes); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestCompareAbsentObjects(t *testing.T) {
	changes, err := CompareObjects(event.ResourceRef{}, nil, json.RawMessage(`{"a":1}`))
	if err != nil || len(changes) != 1 || changes[0].Op != OpAdd || changes[0].Path != "" {
		t.Fatalf("added object: %+v, %v", changes, err)
	}
	changes, err = CompareObjects(event.ResourceRef{}, json.RawMessage(`{"a":1}`), nil)
	if err != nil || len(changes) != 1 || changes[0].Op != OpRemove {
		t.Fatalf("removed object: %+v, %v", changes, err)
	}
	if _, err := CompareObjects(event.ResourceRef{}, json.RawMessage(`{`), json.RawMessage(`{}`)); err == nil {
		t.Fatal("no error for a malformed body")
	}
	if _, err := CompareObjects(event.ResourceRef{}, nil, nil, WithIgnoreRules(IgnoreRule{JSONPointers: []string{"spec"}})); err == nil {
		t.Fatal("no error for a pointer without '/'")
	}
}

func TestDefaultIgnorePointers(t *testing.T) {
	got := DefaultIgnorePointers()
	if len(got) != 8 || got[6] != "/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration" {
		t.Fatalf("%q", got)
	}
	got[0] = "changed"
	if DefaultIgnorePointers()[0] != "/metadata/managedFields" {
		t.Fatal("DefaultIgnorePointers shares its slice")
	}
}

// FuzzCompare checks that comparing never panics and that applying the
// changes to Before yields After, up to ignored fields and the order of
// lists matched by merge key.
func FuzzCompare(f *testing.F) {
	f.Add(`{"a":1}`, `{"a":2,"b":null}`)
	f.Add(`{"spec":{"containers":[{"name":"a","image":"x"},{"name":"b"}]}}`, `{"spec":{"containers":[{"name":"b","ports":[{"containerPort":80}]},{"name":"c"}]}}`)
	f.Add(`{"metadata":{"uid":"1","labels":{"x":"y"}},"status":{}}`, `{"metadata":{"uid":"2"},"status":{"a":[1,2]}}`)
	f.Add(`[1,2,3]`, `[3,{"a":null}]`)
	f.Add(`{"env":[{"name":"1"},{"name":1}]}`, `{"env":[{"name":1},{"name":"x y"}]}`)
	f.Add(`null`, `{"":{"~/":[]}}`)
	f.Fuzz(func(t *testing.T, before, after string) {
		if !json.Valid([]byte(before)) || !json.Valid([]byte(after)) {
			return
		}
		changes, err := CompareObjects(event.ResourceRef{}, json.RawMessage(before), json.RawMessage(after))
		if err != nil {
			t.Fatal(err)
		}
		if err := checkApply(before, after, nil, changes); err != nil {
			t.Fatal(err)
		}
		again, _ := CompareObjects(event.ResourceRef{}, json.RawMessage(before), json.RawMessage(after))
		if !reflect.DeepEqual(render(changes), render(again)) {
			t.Fatal("changes are not deterministic")
		}
	})
}

// checkApply applies changes to before and checks the result equals after
// once ignored fields are stripped and keyed lists put in key order.
func checkApply(before, after string, opts []CompareOption, changes []FieldChange) error {
	cc, err := newCompareConfig(opts)
	if err != nil {
		return err
	}
	b, err := decodeJSON([]byte(before))
	if err != nil {
		return err
	}
	a, err := decodeJSON([]byte(after))
	if err != nil {
		return err
	}
	got, err := applyChanges(b, changes)
	if err != nil {
		return fmt.Errorf("apply %q: %w", render(changes), err)
	}
	meta := objectMetaOf(event.ResourceRef{Group: "apps"}, a)
	ignore := cc.pointersFor(meta)
	// Ignored fields keep Before's value; compare without them. (Pointers
	// that name list positions address got by Before's order; the tests
	// that use them keep list lengths and orders.)
	gotC := canonical(stripIgnored(got, startPointers(ignore)), "", cc.mergeKeys)
	wantC := canonical(stripIgnored(a, startPointers(ignore)), "", cc.mergeKeys)
	if !reflect.DeepEqual(gotC, wantC) {
		g, _ := json.Marshal(gotC)
		w, _ := json.Marshal(wantC)
		return fmt.Errorf("applying %q to %s\n got %s\nwant %s", render(changes), before, g, w)
	}
	return nil
}

// canonical sorts the items of lists matched by merge key by that key.
func canonical(v any, field string, mergeKeys map[string][]string) any {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, c := range t {
			out[k] = canonical(c, k, mergeKeys)
		}
		return out
	case []any:
		out := make([]any, len(t))
		for i, c := range t {
			out[i] = canonical(c, "", mergeKeys)
		}
		c := comparer{mergeKeys: mergeKeys}
		if key := c.mergeKey(field, out, out); key != "" {
			sort.SliceStable(out, func(i, j int) bool {
				return keyLiteral(out[i].(map[string]any)[key]) < keyLiteral(out[j].(map[string]any)[key])
			})
		}
		return out
	}
	return v
}

// applyChanges applies field changes to a decoded document: replacements
// and additions in order, then removals in reverse order so list positions
// stay valid.
func applyChanges(doc any, changes []FieldChange) (any, error) {
	doc = deepCopy(doc)
	var removes []FieldChange
	for _, c := range changes {
		if c.Op == OpRemove {
			removes = append(removes, c)
			continue
		}
		var err error
		doc, err = setPath(doc, c.Path, c.After, c.Op)
		if err != nil {
			return nil, err
		}
	}
	for i := len(removes) - 1; i >= 0; i-- {
		var err error
		doc, err = setPath(doc, removes[i].Path, nil, OpRemove)
		if err != nil {
			return nil, err
		}
	}
	return doc, nil
}

func deepCopy(v any) any {
	b, _ := json.Marshal(v)
	out, _ := decodeJSON(b)
	return out
}

// parsePath parses a rendered path back into segments.
func parsePath(p string) ([]seg, error) {
	var out []seg
	for i := 0; i < len(p); {
		switch {
		case p[i] == '.':
			i++
		case p[i] == '[':
			end, s, err := parseBracket(p, i)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
			i = end
		default:
			j := i
			for j < len(p) && p[j] != '.' && p[j] != '[' {
				j++
			}
			out = append(out, seg{kind: segField, name: p[i:j]})
			i = j
		}
	}
	return out, nil
}

func parseBracket(p string, i int) (int, seg, error) {
	body := p[i+1:]
	if strings.HasPrefix(body, `"`) {
		q, err := strconv.QuotedPrefix(body)
		if err != nil {
			return 0, seg{}, err
		}
		name, _ := strconv.Unquote(q)
		return i + 1 + len(q) + 1, seg{kind: segField, name: name}, nil
	}
	if eq := strings.IndexAny(body, "=]"); eq >= 0 && body[eq] == '=' {
		key := body[:eq]
		rest := body[eq+1:]
		var val any
		var n int
		if strings.HasPrefix(rest, `"`) {
			q, err := strconv.QuotedPrefix(rest)
			if err != nil {
				return 0, seg{}, err
			}
			s, _ := strconv.Unquote(q)
			val, n = s, len(q)
		} else {
			n = strings.IndexByte(rest, ']')
			lit := rest[:n]
			if _, err := strconv.ParseFloat(lit, 64); err == nil || strings.ContainsAny(lit[:min(1, len(lit))], "-0123456789") {
				val = json.Number(lit)
			} else {
				val = lit
			}
		}
		return i + 1 + eq + 1 + n + 1, seg{kind: segKey, name: key, value: val}, nil
	}
	end := strings.IndexByte(body, ']')
	idx, err := strconv.Atoi(body[:end])
	if err != nil {
		return 0, seg{}, err
	}
	return i + 1 + end + 1, seg{kind: segIndex, index: idx}, nil
}

func setPath(doc any, path string, value any, op ChangeOp) (any, error) {
	segs, err := parsePath(path)
	if err != nil {
		return nil, err
	}
	if renderPath(segs) != path {
		return nil, fmt.Errorf("path %q renders back as %q", path, renderPath(segs))
	}
	return setSegs(doc, segs, value, op)
}

func setSegs(node any, segs []seg, value any, op ChangeOp) (any, error) {
	if len(segs) == 0 {
		return value, nil
	}
	s := segs[0]
	last := len(segs) == 1
	switch s.kind {
	case segField:
		m, ok := node.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("field %q of a %T", s.name, node)
		}
		if last && op == OpRemove {
			delete(m, s.name)
			return m, nil
		}
		child, err := setSegs(m[s.name], segs[1:], value, op)
		if err != nil {
			return nil, err
		}
		m[s.name] = child
		return m, nil
	case segIndex:
		l, ok := node.([]any)
		if !ok {
			return nil, fmt.Errorf("index %d of a %T", s.index, node)
		}
		switch {
		case last && op == OpRemove:
			return append(l[:s.index:s.index], l[s.index+1:]...), nil
		case last && op == OpAdd && s.index == len(l):
			return append(l, value), nil
		case s.index >= len(l):
			return nil, fmt.Errorf("index %d of %d items", s.index, len(l))
		}
		child, err := setSegs(l[s.index], segs[1:], value, op)
		if err != nil {
			return nil, err
		}
		l[s.index] = child
		return l, nil
	default:
		l, ok := node.([]any)
		if !ok {
			return nil, fmt.Errorf("key %s of a %T", s.name, node)
		}
		want := keyLiteral(s.value)
		for i, item := range l {
			m, ok := item.(map[string]any)
			if !ok || keyLiteral(m[s.name]) != want {
				continue
			}
			if last && op == OpRemove {
				return append(l[:i:i], l[i+1:]...), nil
			}
			child, err := setSegs(item, segs[1:], value, op)
			if err != nil {
				return nil, err
			}
			l[i] = child
			return l, nil
		}
		if last && op == OpAdd {
			return append(l, value), nil
		}
		return nil, fmt.Errorf("no item with %s=%s", s.name, want)
	}
}

// TestBodyEntries: the managedFields entries a body reads from its decoded
// value are the ones managedEntries reads from its bytes, for bodies as
// the API server writes them and for unusual ones (which fall back to
// managedEntries).
func TestBodyEntries(t *testing.T) {
	const entry = `{"manager":"kubectl","operation":"Update","apiVersion":"v1","time":"2026-03-01T12:00:00+02:00","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:a":{}}}}`
	bodies := []string{
		``,
		`{}`,
		`[]`,
		`"text"`,
		`{"metadata":null}`,
		`{"metadata":"x"}`,
		`{"metadata":{}}`,
		`{"metadata":{"managedFields":null}}`,
		`{"metadata":{"managedFields":{}}}`,
		`{"metadata":{"managedFields":[]}}`,
		`{"metadata":{"managedFields":[` + entry + `]}}`,
		`{"metadata":{"managedFields":[` + entry + `,{"manager":"kube-controller-manager","operation":"Update","subresource":"status","time":null,"fieldsV1":"x"}]}}`,
		`{"metadata":{"managedFields":[` + entry + `,null]}}`,
		`{"metadata":{"managedFields":[{"manager":7}]}}`,
		`{"metadata":{"managedFields":[{"manager":"m","time":"yesterday"}]}}`,
		`{"metadata":{"managedFields":[{"manager":"m","time":5}]}}`,
		`{"metadata":{"managedFields":[{"Manager":"m"}]}}`,
		`{"metadata":{"ManagedFields":[` + entry + `]}}`,
		`{"Metadata":{"managedFields":[` + entry + `]}}`,
		`{"metadata":{"managedFields":[` + entry + `]}} trailing`,
		`{"metadata":{"managedFields":[` + entry + `]}} `,
		`{"metadata":{"managedFields":[` + entry + `]}`,
	}
	for _, raw := range bodies {
		got := (&body{raw: []byte(raw)}).entries()
		want := managedEntries([]byte(raw))
		if len(got) != len(want) {
			t.Errorf("%s: %d entries, want %d", raw, len(got), len(want))
			continue
		}
		for i := range got {
			if got[i].FieldManager != want[i].FieldManager || !equalJSON(got[i].fields, want[i].fields) {
				t.Errorf("%s: entry %d is %+v, want %+v", raw, i, got[i], want[i])
			}
		}
	}
	if got := (&body{raw: []byte(`{"metadata":{"managedFields":[` + entry + `]}}`)}).entries(); len(got) != 1 || got[0].Manager != "kubectl" ||
		!got[0].Time.Equal(time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)) || got[0].fields["f:data"] == nil {
		t.Errorf("entries of a body as the API server writes it: %+v", got)
	}
}
