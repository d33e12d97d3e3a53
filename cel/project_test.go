package cel

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// paths lists the paths a projection reads whole, sorted; nil for a nil
// projection (all of the value).
func (p *projection) paths() []string {
	if p == nil {
		return nil
	}
	out := []string{}
	var walk func(p *projection, prefix string)
	walk = func(p *projection, prefix string) {
		if p.whole {
			out = append(out, prefix)
			return
		}
		for f, c := range p.fields {
			walk(c, prefix+"/"+f)
		}
	}
	walk(p, "")
	sort.Strings(out)
	return out
}

// TestProjectionOf: the paths each expression reads, or all of object.
func TestProjectionOf(t *testing.T) {
	for _, c := range []struct {
		expr string
		want []string // nil: all of object
	}{
		{`object.data.version == "3"`, []string{"/data/version"}},
		{`object.spec.replicas < 2 && object.metadata.name.startsWith("web")`, []string{"/metadata/name", "/spec/replicas"}},
		{`has(object.metadata.labels) && object.metadata.labels.app == "x"`, []string{"/metadata/labels"}},
		{`object.spec.template.spec.containers.exists(c, c.image == "x:1.2")`, []string{"/spec/template/spec/containers"}},
		{`object.metadata.name == "a" || object.metadata == {}`, []string{"/metadata"}},
		{`size(object.data) > 2`, []string{"/data"}},
		{`true`, []string{}},
		{`object.data["version"] == "3"`, []string{"/data"}},
		// object itself as a value, indexed, optional: all of it.
		{`object == {}`, nil},
		{`object["data"].version == "3"`, nil},
		{`object.?data.?version.orValue("") == "3"`, nil},
		{`size(object) > 0`, nil},
		// A comprehension's variable named object: all of it.
		{`object.data.version == "3" || [1].exists(object, object == 2)`, nil},
	} {
		e, err := Compile(c.expr)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		if got := e.proj.paths(); !slices.Equal(got, c.want) || (got == nil) != (c.want == nil) {
			t.Errorf("%s: reads %q, want %q (nil: all of object)", c.expr, got, c.want)
		}
	}
}

// projectedDocs are versions with what a projection must get right:
// escapes, non-ASCII and invalid UTF-8, numbers of each kind, nulls and
// scalars where the expressions expect objects, duplicate keys, empty
// objects and lists, nesting.
var projectedDocs = []string{
	`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"web-1","labels":{"app":"x","tier":"a\"b"},"annotations":{"k":"v"}},"data":{"version":"3","debug":"true"}}`,
	`{"metadata":{"name":"web-2","labels":null},"data":{"version":3}}`,
	`{"metadata":{"name":"db"},"data":"not an object"}`,
	`{"metadata":{"name":"wéb-ü","labels":{}},"data":{"version":"3","version":"4"}}`,
	`{"metadata":{"name":"x"},"data":{"version":"3"},"data":{"other":"y"}}`,
	`{"spec":{"replicas":1,"ratio":0.5,"big":12345678901234567890,"neg":-0,"exp":1e3,"template":{"spec":{"containers":[{"name":"a","image":"x:1.2"},{"name":"b","image":"y"}]}}}}`,
	`{"spec":{"replicas":3,"template":{"spec":{"containers":[]}}},"metadata":{"name":"\u0077eb-esc","na\u006de":"dup by escape"}}`,
	` { "metadata" : { "name" : "spaced" } , "data" : { "version" : "3" } } `,
	`{"metadata":{"name":"tab\there","labels":{"app":"\ud83d\ude00"}},"data":{"version":"3\n"}}`,
	"{\"metadata\":{\"name\":\"bad-\xff-utf8\"},\"data\":{\"version\":\"3\"}}",
	`{}`,
	`[]`,
	`"a string"`,
	`{"data":{"version":["3"]},"spec":{"replicas":"2"}}`,
	`{"data":{"version":"3"},"spec":null,"metadata":[1,{"a":[{}]}]}`,
}

// projectedExprs are conditions of every shape projectionOf handles.
var projectedExprs = []string{
	`object.data.version == "3"`,
	`has(object.data.version)`,
	`has(object.metadata.labels) && object.metadata.labels.app == "x"`,
	`object.metadata.name.startsWith("web")`,
	`object.metadata.name in ["web-esc", "dup by escape", "bad-\uFFFD-utf8", "tab\there"] || object.data.version == "3\n"`,
	`object.spec.replicas < 2`,
	`object.spec.template.spec.containers.exists(c, c.image == "x:1.2")`,
	`object.spec.big > 1.0 && object.spec.exp == 1000.0 && object.spec.neg == 0`,
	`size(object.data) == 2`,
	`object.metadata == {"name": "db"}`,
	`object.data["version"] == "3"`,
	`true`,
	`object == {}`,
	`object.?data.?version.orValue("") == "3"`,
	`[1].exists(object, object == 1) && object.data.version == "3"`,
}

// TestProjectedMatchesWhole: on every version, every condition gives with
// the projection what it gives on the version decoded whole: the same
// answer, or the same error.
func TestProjectedMatchesWhole(t *testing.T) {
	ctx := context.Background()
	for _, expr := range projectedExprs {
		e, err := Compile(expr)
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
		whole := *e
		whole.proj = nil
		for _, doc := range projectedDocs {
			got, gotErr := e.Predicate().Match(ctx, json.RawMessage(doc))
			want, wantErr := whole.Predicate().Match(ctx, json.RawMessage(doc))
			if got != want || (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
				t.Errorf("%s on %s: %v, %v with the projection %q; %v, %v decoded whole", expr, doc, got, gotErr, e.proj.paths(), want, wantErr)
			}
		}
	}
}

// prune returns what p projects of a value decoded whole.
func prune(v any, p *projection) any {
	m, ok := v.(map[string]any)
	if p == nil || p.whole || !ok {
		return v
	}
	out := map[string]any{}
	for f, c := range p.fields {
		if fv, ok := m[f]; ok {
			out[f] = prune(fv, c)
		}
	}
	return out
}

// FuzzDecodeProjected: of valid JSON, decodeProjected decodes what decode
// decodes, pruned to the projection; of any input it returns without
// panicking.
func FuzzDecodeProjected(f *testing.F) {
	for _, doc := range projectedDocs {
		f.Add([]byte(doc))
	}
	f.Add([]byte(`{"data":{"version":"3"`))
	f.Add([]byte(`{"data":{"version":"3"}} x`))
	f.Add([]byte(`{"data" "x"}`))
	var projs []*projection
	for _, expr := range projectedExprs {
		e, err := Compile(expr)
		if err != nil {
			f.Fatal(err)
		}
		projs = append(projs, e.proj)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		whole, wholeErr := decode(raw)
		for _, p := range projs {
			got, err := decodeProjected(raw, p)
			if wholeErr != nil {
				continue // invalid JSON: a projection may skip the part that is wrong
			}
			if err != nil {
				t.Fatalf("%q projected %q: %v; decoded whole: no error", raw, p.paths(), err)
			}
			if want := prune(whole, p); !reflect.DeepEqual(got, want) {
				t.Fatalf("%q projected %q: %#v, want %#v", raw, p.paths(), got, want)
			}
		}
	})
}

// TestDecodeProjectedErrors: the ends of the data and what follows a
// value are checked even where nothing is read.
func TestDecodeProjectedErrors(t *testing.T) {
	p := &projection{fields: map[string]*projection{"data": {whole: true}}}
	for _, raw := range []string{``, `{`, `{"a":`, `{"a":1`, `{"a" 1}`, `{"a":1,}`, `{"a":"x}`, `{"data":1} x`, `{"a":[1,2}`, `{"a":}`} {
		if _, err := decodeProjected([]byte(raw), p); err == nil {
			t.Errorf("%q: no error", raw)
		} else if !strings.Contains(err.Error(), "json") && !strings.Contains(err.Error(), "JSON") && !strings.Contains(err.Error(), "unexpected") {
			t.Errorf("%q: %v, want an error about the JSON", raw, err)
		}
	}
}
