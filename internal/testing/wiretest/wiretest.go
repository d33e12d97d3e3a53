// Package wiretest pins krply's JSON wire schema (docs/reference/wire-schema.md): the
// JSON form of every public result type, checked against golden files
// under testdata/wire at the module root, one file per type family.
//
// A family's test builds deterministic example values that together set
// every field of the family's own types, and calls Check. Check fails when
//
//   - the JSON differs from the golden file (a renamed, removed or added
//     field, a changed tag or option, a changed encoding of a value);
//   - a field of a type of the family's packages is zero in every example
//     (a new field the examples, and so the golden file, do not show);
//   - a field of any krply type the examples reach has no explicit JSON
//     tag, or its name does not follow the naming rule (JSONName);
//   - an example does not survive decoding its own JSON and encoding it
//     again.
//
// Persisted checks the documents a journal keeps (testdata/wire/persisted,
// never rewritten) against today's types, and Untagged finds exported
// fields without tags in the schema's packages, reached by no family.
//
// Rewrite a golden file for a deliberate, compatible change (a field
// added) with
//
//	go test ./pkg -run TestWire -update
//
// and review it with git diff: a field renamed or removed, or an enum
// value changed, breaks every client and every journal that stored the
// old form.
package wiretest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/krplytest/golden"
)

// Module is the path of krply's module; the rules apply to its types.
const Module = "github.com/krply/krply"

// Dir is the folder of the golden files, relative to the module root.
const Dir = "testdata/wire"

// Check compares the JSON form of a family's examples, keyed by example
// name, with Dir/<family>.json, and checks the examples against the rules
// of the schema (see the package documentation). The file also holds, for
// each struct type among the examples, the JSON of its zero value (under
// "zero <package>.<Type>"), which pins the fields that are always written.
func Check(t *testing.T, family string, examples map[string]any) {
	t.Helper()
	all := make(map[string]any, len(examples))
	own := map[string]bool{}
	for name, v := range examples {
		all[name] = v
		typ := reflect.TypeOf(v)
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		if typ.Kind() == reflect.Struct && isOurs(typ) {
			own[typ.PkgPath()] = true
			all["zero "+typeName(typ)] = reflect.New(typ).Interface()
		}
	}
	for _, problem := range tagProblems(examples) {
		t.Error(problem)
	}
	for _, field := range unsetFields(examples, own) {
		t.Errorf("%s is zero in every example of family %q: set it, so that the golden file shows it", field, family)
	}
	for name, v := range all {
		if err := roundTrip(v); err != nil {
			t.Errorf("example %q: %v", name, err)
		}
	}
	got, err := encode(all)
	if err != nil {
		t.Fatalf("encode family %q: %v", family, err)
	}
	golden.Check(t, filepath.Join(golden.ModuleRoot(t), Dir, family+".json"), got,
		"A renamed or removed field, a changed tag or a changed enum value breaks the wire schema's promise (docs/reference/wire-schema.md): "+
			"add a field instead. Only a new field may be accepted with -update.")
}

// encode writes v as indented JSON, without HTML escaping.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// roundTrip checks that v's JSON decodes into a value of v's type that
// encodes to the same JSON.
func roundTrip(v any) error {
	first, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode: %v", err)
	}
	back := reflect.New(reflect.TypeOf(v))
	if err := json.Unmarshal(first, back.Interface()); err != nil {
		return fmt.Errorf("decode its own JSON: %v", err)
	}
	second, err := json.Marshal(back.Elem().Interface())
	if err != nil {
		return fmt.Errorf("encode the decoded value: %v", err)
	}
	if !bytes.Equal(first, second) {
		return fmt.Errorf("decoding and encoding again changes the JSON (- first, + again):\n%s", golden.Diff(indent(first), indent(second)))
	}
	return nil
}

func isOurs(t reflect.Type) bool {
	p := t.PkgPath()
	return p == Module || strings.HasPrefix(p, Module+"/")
}

// typeName returns "<package>.<Type>" with the package's last element.
func typeName(t reflect.Type) string {
	return filepath.Base(t.PkgPath()) + "." + t.Name()
}

var marshaler = reflect.TypeFor[json.Marshaler]()

// reachable returns the struct types that values of the types of vs can
// hold, through fields, pointers, slices, arrays and maps: krply's types
// and the other modules' types they hold (whose fields it does not follow).
func reachable(vs map[string]any) []reflect.Type {
	seen := map[reflect.Type]bool{}
	var out []reflect.Type
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			walk(t.Elem())
			return
		case reflect.Struct:
		default:
			return
		}
		if seen[t] {
			return
		}
		if !isOurs(t) {
			seen[t] = true
			out = append(out, t)
			return
		}
		seen[t] = true
		out = append(out, t)
		for _, f := range encoded(t) {
			walk(f.Type)
		}
	}
	for _, v := range vs {
		walk(reflect.TypeOf(v))
	}
	sort.Slice(out, func(i, j int) bool { return typeName(out[i]) < typeName(out[j]) })
	return out
}

// encoded returns the fields of a struct type that encoding/json writes:
// the exported ones not tagged "-", and embedded structs (whose fields it
// inlines when they have no tag, exported or not).
func encoded(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		embedded := f.Anonymous && (f.Type.Kind() == reflect.Struct ||
			f.Type.Kind() == reflect.Pointer && f.Type.Elem().Kind() == reflect.Struct)
		if (f.IsExported() || embedded) && f.Tag.Get("json") != "-" {
			out = append(out, f)
		}
	}
	return out
}

// tagProblems lists the exported fields of the krply types the examples
// reach that have no explicit JSON tag, a name against the rule, or an
// option other than omitempty and omitzero. An embedded struct without a
// tag is inlined, as encoding/json does; a type with its own MarshalJSON
// decides its form itself.
func tagProblems(vs map[string]any) []string {
	var out []string
	for _, t := range reachable(vs) {
		if t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler) {
			continue
		}
		if !isOurs(t) {
			if !legacyExternal[t] && !allTagged(t) {
				out = append(out, fmt.Sprintf("%s.%s (of %s) has fields without json tags, so they are written in Go's case: use a type with tags",
					filepath.Base(t.PkgPath()), t.Name(), t.PkgPath()))
			}
			continue
		}
		for _, f := range encoded(t) {
			where := typeName(t) + "." + f.Name
			tag, ok := f.Tag.Lookup("json")
			if !ok {
				if f.Anonymous && f.Type.Kind() == reflect.Struct {
					continue
				}
				out = append(out, fmt.Sprintf("%s has no json tag: give it `json:%q`", where, JSONName(f.Name)))
				continue
			}
			name, opts, _ := strings.Cut(tag, ",")
			if want := JSONName(f.Name); name != want && legacyNames[where] != name {
				out = append(out, fmt.Sprintf("%s is written as %q; the naming rule says %q", where, name, want))
			}
			for opt := range strings.SplitSeq(opts, ",") {
				if opt != "" && opt != "omitempty" && opt != "omitzero" {
					out = append(out, fmt.Sprintf("%s has the tag option %q; the schema uses only omitempty and omitzero", where, opt))
				}
			}
		}
	}
	return out
}

// legacyExternal are the types of other modules without json tags that
// the schema holds, written with Go's field names, because they were
// persisted that way before the schema was pinned (see "Exceptions" in
// docs/reference/wire-schema.md). Add none.
var legacyExternal = map[reflect.Type]bool{
	reflect.TypeFor[schema.GroupResource](): true,
}

// legacyNames are fields whose Go name changed after their JSON name was
// persisted in journals: the JSON name stays (see "Exceptions" in
// docs/reference/wire-schema.md). Add none.
var legacyNames = map[string]string{
	"event.Record.Saved": "snapshot",
}

// allTagged reports whether every field encoding/json writes of t has a
// json tag.
func allTagged(t reflect.Type) bool {
	for _, f := range encoded(t) {
		if _, ok := f.Tag.Lookup("json"); !ok {
			return false
		}
	}
	return true
}

// JSONName returns the JSON name of a Go field name under the schema's
// rule, Kubernetes' own: the name with its first word lower-cased, where a
// leading initialism is one word — ID "id", UID "uid", EventID "eventID",
// APIVersion "apiVersion", JSONPointers "jsonPointers", IPs "ips".
func JSONName(goName string) string {
	r := []rune(goName)
	n := 0
	for n < len(r) && unicode.IsUpper(r[n]) {
		n++
	}
	switch {
	case n == 0:
		return goName
	case n == len(r):
		return strings.ToLower(goName)
	case n > 1 && r[n] == 's' && (n+1 == len(r) || unicode.IsUpper(r[n+1])):
		// A plural initialism ("IPs"): the 's' belongs to it.
		n++
	case n > 1:
		// The last capital begins the next word: "APIVersion".
		n--
	}
	return strings.ToLower(string(r[:n])) + string(r[n:])
}

// unsetFields returns "<package>.<Type>.<Field>" for every exported field
// of a reachable struct type of the packages in own that is zero wherever
// the examples hold a value of that type.
func unsetFields(vs map[string]any, own map[string]bool) []string {
	set := map[reflect.Type][]bool{}
	var walk func(reflect.Value)
	walk = func(v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(v.Elem())
			}
		case reflect.Slice, reflect.Array:
			for i := range v.Len() {
				walk(v.Index(i))
			}
		case reflect.Map:
			for it := v.MapRange(); it.Next(); {
				walk(it.Value())
			}
		case reflect.Struct:
			t := v.Type()
			if !isOurs(t) {
				return
			}
			if set[t] == nil {
				set[t] = make([]bool, t.NumField())
			}
			for _, f := range encoded(t) {
				i := f.Index[0]
				if !v.Field(i).IsZero() {
					set[t][i] = true
				}
				walk(v.Field(i))
			}
		}
	}
	for _, v := range vs {
		walk(reflect.ValueOf(v))
	}
	var out []string
	for _, t := range reachable(vs) {
		if !own[t.PkgPath()] {
			continue
		}
		for _, f := range encoded(t) {
			inlined := f.Anonymous && f.Tag.Get("json") == ""
			if !inlined && (set[t] == nil || !set[t][f.Index[0]]) {
				out = append(out, typeName(t)+"."+f.Name)
			}
		}
	}
	return out
}

// kubernetesSpelled are the enums whose values are Kubernetes' own, spelled
// as the API server spells them (upper case); every other enum is lower
// case.
var kubernetesSpelled = map[string]bool{
	Module + "/event.WatchType": true,
}

var lowerValue = regexp.MustCompile(`^[a-z][a-z0-9]*([_-][a-z0-9]+)*$`)

// Enums returns, for the string type of each value given (an enum such as
// event.RecordType("")), the values of all the constants of that type its
// package declares, in source order, keyed by "<package>.<Type>"; put it in
// a family's examples, so the golden file pins them. It fails t when a
// value is not lower case (words joined by '-' or '_'), except for the
// enums that carry Kubernetes' own values (event.WatchType).
func Enums(t *testing.T, types ...any) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	root := golden.ModuleRoot(t)
	for _, v := range types {
		typ := reflect.TypeOf(v)
		if typ.Kind() != reflect.String || !isOurs(typ) {
			t.Fatalf("wiretest.Enums: %v is not a string type of %s", typ, Module)
		}
		dir := filepath.Join(root, strings.TrimPrefix(strings.TrimPrefix(typ.PkgPath(), Module), "/"))
		values, err := constants(dir, typ.Name())
		if err != nil {
			t.Fatalf("wiretest.Enums: %v", err)
		}
		if len(values) == 0 {
			t.Fatalf("wiretest.Enums: %s declares no constants of type %s", dir, typ.Name())
		}
		if !kubernetesSpelled[typ.PkgPath()+"."+typ.Name()] {
			for _, problem := range notLowerCase(typeName(typ), values) {
				t.Error(problem)
			}
		}
		out[typeName(typ)] = values
	}
	return out
}

// notLowerCase lists the values of an enum that are not lower case with
// words joined by '-' or '_'.
func notLowerCase(enum string, values []string) []string {
	var out []string
	for _, val := range values {
		if !lowerValue.MatchString(val) {
			out = append(out, fmt.Sprintf("%s value %q is not lower case (words joined by '-' or '_')", enum, val))
		}
	}
	return out
}

// parseDir parses the package (not test) files of dir, in name order.
func parseDir(dir string) (*token.FileSet, []*ast.File, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, nil, err
	}
	sort.Strings(paths)
	fset := token.NewFileSet()
	var files []*ast.File
	for _, path := range paths {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, f)
	}
	return fset, files, nil
}

// constants returns the values of the string constants of type typeName
// declared in the package (not test) files of dir, in source order.
func constants(dir, typeName string) ([]string, error) {
	fset, files, err := parseDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				if id, ok := vs.Type.(*ast.Ident); !ok || id.Name != typeName {
					continue
				}
				for _, val := range vs.Values {
					lit, ok := val.(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						return nil, fmt.Errorf("%s: a constant of type %s is not a string literal", fset.Position(val.Pos()), typeName)
					}
					s, err := strconv.Unquote(lit.Value)
					if err != nil {
						return nil, err
					}
					out = append(out, s)
				}
			}
		}
	}
	return out, nil
}

// At returns the deterministic time of the examples numbered i: i seconds
// after 2025-01-02T03:04:05.123456789Z, nanoseconds included, so the golden
// files show that times keep them.
func At(i int) time.Time {
	return time.Date(2025, 1, 2, 3, 4, 5, 123456789, time.UTC).Add(time.Duration(i) * time.Second)
}

// PersistedDir holds documents as a released krply persisted them, one
// folder per version of the schema. The tests only read them: no flag
// rewrites them.
const PersistedDir = Dir + "/persisted"

// Persisted reads the persisted document Dir/persisted/<version>/<name>.json
// and decodes it into a T, refusing fields T does not have; its JSON must
// be what encoding that T gives again (compared compact). It fails t when
// a field of a persisted type was renamed or removed, or when a new field
// is written although zero (old documents would then encode, and hash,
// differently). It returns the value and the file's bytes.
func Persisted[T any](t *testing.T, version, name string) (T, []byte) {
	t.Helper()
	var v T
	path := filepath.Join(golden.ModuleRoot(t), PersistedDir, version, name+".json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read persisted document: %v", err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s, persisted by schema %s, no longer decodes into %T: %v (a field was renamed or removed: keep it)", path, version, v, err)
	}
	var want bytes.Buffer
	if err := json.Compact(&want, data); err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("%s, persisted by schema %s, encodes differently once decoded (- persisted, + today); a new field of a persisted type must be omitted when zero:\n%s",
			path, version, golden.Diff(indent(want.Bytes()), indent(got)))
	}
	return v, data
}

// indent returns compact JSON indented, one field a line, for a diff.
func indent(compact []byte) string {
	var buf bytes.Buffer
	if err := json.Indent(&buf, compact, "", "  "); err != nil {
		return string(compact)
	}
	return buf.String()
}

// Untagged returns "<package>.<Type>.<Field>" for every exported field
// without a json tag of the exported struct types declared in the package
// (not test) files of the module's folders dirs, except the types with a
// MarshalJSON method of their own. It finds types no family's examples
// reach, e.g. a result type added later.
func Untagged(root string, dirs ...string) ([]string, error) {
	var out []string
	for _, dir := range dirs {
		_, files, err := parseDir(filepath.Join(root, dir))
		if err != nil {
			return nil, err
		}
		custom := map[string]bool{}
		var found []string
		for _, f := range files {
			for _, decl := range f.Decls {
				switch d := decl.(type) {
				case *ast.FuncDecl:
					if d.Recv != nil && d.Name.Name == "MarshalJSON" && len(d.Recv.List) == 1 {
						typ := d.Recv.List[0].Type
						if star, ok := typ.(*ast.StarExpr); ok {
							typ = star.X
						}
						if id, ok := typ.(*ast.Ident); ok {
							custom[id.Name] = true
						}
					}
				case *ast.GenDecl:
					for _, spec := range d.Specs {
						ts, ok := spec.(*ast.TypeSpec)
						if !ok || !ts.Name.IsExported() {
							continue
						}
						st, ok := ts.Type.(*ast.StructType)
						if !ok {
							continue
						}
						for _, field := range st.Fields.List {
							if field.Tag != nil && strings.Contains(field.Tag.Value, `json:"`) {
								continue
							}
							for _, name := range field.Names {
								if name.IsExported() {
									found = append(found, ts.Name.Name+"."+name.Name)
								}
							}
						}
					}
				}
			}
		}
		for _, f := range found {
			if typ, _, _ := strings.Cut(f, "."); !custom[typ] {
				out = append(out, filepath.Base(dir)+"."+f)
			}
		}
	}
	return out, nil
}

// SameJSON fails t (without stopping it) unless got and want marshal to
// the same JSON, showing the neighbourhood of their first difference.
func SameJSON(t testing.TB, what string, got, want any) bool {
	t.Helper()
	g, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	w, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	if string(g) == string(w) {
		return true
	}
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	from := max(0, i-300)
	t.Errorf("%s differs at byte %d:\n got: …%s\nwant: …%s", what, i, g[from:min(len(g), i+300)], w[from:min(len(w), i+300)])
	return false
}
