package cel

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/krply/krply/materialize"
)

// decodeProjected is a projector's scan and build of raw.
func decodeProjected(raw []byte, p *projection) (any, error) {
	d := projector{data: raw}
	if err := d.scan(p); err != nil {
		return nil, err
	}
	return d.build()
}

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
		// One Predicate for every version, twice over: the answers it
		// keeps by projection are the answers.
		shared := e.Predicate()
		for _, doc := range append(slices.Clone(projectedDocs), projectedDocs...) {
			got, gotErr := shared.Match(ctx, json.RawMessage(doc))
			want, wantErr := whole.Predicate().Match(ctx, json.RawMessage(doc))
			if got != want || (gotErr == nil) != (wantErr == nil) || gotErr != nil && gotErr.Error() != wantErr.Error() {
				t.Errorf("%s on %s, one Predicate for all: %v, %v; %v, %v decoded whole", expr, doc, got, gotErr, want, wantErr)
			}
		}
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

// FuzzProjectionKey: two versions with the same key under a projection
// decode to the same projection, so that an answer kept by key is the
// answer.
func FuzzProjectionKey(f *testing.F) {
	for i, doc := range projectedDocs {
		f.Add([]byte(doc), []byte(projectedDocs[(i+1)%len(projectedDocs)]))
		f.Add([]byte(doc), []byte(doc))
	}
	f.Add([]byte(`{"data":{"version":"3"}}`), []byte(`{"data":{"version":"3"},"kind":"x"}`))
	f.Add([]byte(`{"data":{"version":"3"}}`), []byte(`{"data":{"version":"\u0033"}}`))
	var projs []*projection
	for _, expr := range projectedExprs {
		e, err := Compile(expr)
		if err != nil {
			f.Fatal(err)
		}
		if e.proj != nil {
			projs = append(projs, e.proj)
		}
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		for _, p := range projs {
			da, db := projector{data: a}, projector{data: b}
			if da.scan(p) != nil || db.scan(p) != nil {
				continue
			}
			if !bytes.Equal(da.appendKey(nil), db.appendKey(nil)) {
				continue
			}
			va, errA := da.build()
			vb, errB := db.build()
			if (errA == nil) != (errB == nil) || !reflect.DeepEqual(va, vb) {
				t.Fatalf("%q and %q have the same key under %q but decode to %#v (%v) and %#v (%v)", a, b, p.paths(), va, errA, vb, errB)
			}
		}
	})
}

// TestAnswersKept: a Predicate answers a version whose projection it
// evaluated before without an evaluation (no budget spent), errors
// included, and evaluates another.
func TestAnswersKept(t *testing.T) {
	ctx := context.Background()
	doc := func(version, kind string) json.RawMessage {
		return json.RawMessage(`{"kind":"` + kind + `","data":{"version":` + version + `}}`)
	}
	probe, err := Compile(`object.data.version == "3"`)
	if err != nil {
		t.Fatal(err)
	}
	p := probe.Predicate()
	before := p.left.Load()
	if _, err := p.Match(ctx, doc(`"1"`, "a")); err != nil {
		t.Fatal(err)
	}
	cost := before - p.left.Load()
	e, err := Compile(`object.data.version == "3"`, WithBudget(cost))
	if err != nil {
		t.Fatal(err)
	}
	p = e.Predicate()
	if ok, err := p.Match(ctx, doc(`"3"`, "a")); !ok || err != nil {
		t.Fatalf("data.version 3: %v, %v", ok, err)
	}
	// The budget is spent; the same projection in another version is
	// answered all the same, another is not evaluated.
	if ok, err := p.Match(ctx, doc(`"3"`, "b")); !ok || err != nil {
		t.Errorf("data.version 3 again, another kind: %v, %v; want true from the answer kept", ok, err)
	}
	if _, err := p.Match(ctx, doc(`"4"`, "a")); !errors.Is(err, ErrBudgetExceeded) {
		t.Errorf("data.version 4 with the budget spent: %v, want ErrBudgetExceeded", err)
	}
	// An evaluation's error is kept as its answer.
	failing, err := Compile(`object.data.version.startsWith("3")`)
	if err != nil {
		t.Fatal(err)
	}
	p = failing.Predicate()
	_, first := p.Match(ctx, doc(`3`, "a"))
	left := p.left.Load()
	_, again := p.Match(ctx, doc(`3`, "b"))
	if !errors.Is(first, materialize.ErrEvaluation) || again == nil || again.Error() != first.Error() || p.left.Load() != left {
		t.Errorf("startsWith on an int: %v, then %v (budget %d then %d); want the same evaluation error, no budget spent", first, again, left, p.left.Load())
	}
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

// TestAnswersStopKept: a Predicate stops keeping answers when the
// projections it is asked about hardly repeat, and keeps them when they
// do; its answers are right either way.
func TestAnswersStopKept(t *testing.T) {
	ctx := context.Background()
	e, err := Compile(`object.data.version == "3"`)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		values  int
		stopped bool
	}{{keptAfter * 2, true}, {10, false}} {
		p := e.Predicate()
		for i := range keptAfter * 2 {
			v := strconv.Itoa(i % c.values)
			ok, err := p.Match(ctx, json.RawMessage(`{"data":{"version":"`+v+`"}}`))
			if err != nil || ok != (v == "3") {
				t.Fatalf("%d values, version %s: %v, %v", c.values, v, ok, err)
			}
		}
		if p.off.Load() != c.stopped {
			t.Errorf("%d values asked about %d times: keeping stopped %v, want %v", c.values, keptAfter*2, p.off.Load(), c.stopped)
		}
	}
}
