package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// writeModule writes files (slash paths relative to the root) into a new
// module example.com/m and returns its root.
func writeModule(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files["go.mod"] = "module example.com/m\n\ngo 1.26\n"
	for name, content := range files {
		file := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(file, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// apicheck runs the command with args and returns its exit status and
// output.
func apicheck(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// diffLines returns the lines of out that are a difference (+ or -).
func diffLines(out string) []string {
	var d []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "+pkg ") || strings.HasPrefix(l, "-pkg ") {
			d = append(d, l)
		}
	}
	return d
}

const samplePkg = `package p

import (
	"context"
	"time"
)

const Default = 30 * time.Second
const Name = "p"
const Ratio = 0.9

type Mode string

const Fast Mode = "fast"

var ErrNope error

type Record struct {
	ID      string            ` + "`json:\"id\"`" + `
	At      time.Time         ` + "`json:\"at,omitempty\"`" + `
	Labels  map[string]string
	private int
	Inner
}

type Inner struct{ N int }

type Reader interface {
	Read(ctx context.Context, ids ...string) ([]Record, error)
	sealed()
}

type Alias = Record

type List[T any] struct{ Items []T }

func (r *Record) Key() string { return r.ID }
func (Mode) String() string   { return "" }
func (r *Record) hidden()     {}

func Open(ctx context.Context, path string, opts ...func(*Record)) (*Record, error) { return nil, nil }
func Map[K comparable, V any](m map[K]V) []K                                        { return nil }
`

// The record's format: one line per identifier, struct fields with their
// tags, interfaces with their methods, constants with their values,
// parameter names left out; nothing unexported.
func TestRecordFormat(t *testing.T) {
	dir := writeModule(t, map[string]string{"p/p.go": samplePkg, "internal/q/q.go": "package q\n\nfunc Hidden() {}\n"})
	if code, _, stderr := apicheck(t, "-C", dir, "-w"); code != 0 {
		t.Fatalf("apicheck -w: exit %d: %s", code, stderr)
	}
	got, err := readRecord(dir, "api/krply.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"pkg example.com/m/p, const Default time.Duration = 30000000000",
		"pkg example.com/m/p, const Fast Mode = \"fast\"",
		"pkg example.com/m/p, const Name = \"p\"",
		"pkg example.com/m/p, const Ratio = 0.9",
		"pkg example.com/m/p, func Map[K comparable, V any](map[K]V) []K",
		"pkg example.com/m/p, func Open(context.Context, string, ...func(*Record)) (*Record, error)",
		"pkg example.com/m/p, method (*Record) Key() string",
		"pkg example.com/m/p, method (Mode) String() string",
		"pkg example.com/m/p, type Alias = Record",
		"pkg example.com/m/p, type Inner struct",
		"pkg example.com/m/p, type Inner struct, N int",
		"pkg example.com/m/p, type List[T any] struct",
		"pkg example.com/m/p, type List[T any] struct, Items []T",
		"pkg example.com/m/p, type Mode string",
		"pkg example.com/m/p, type Reader interface { Read, unexported methods }",
		"pkg example.com/m/p, type Reader interface, Read(context.Context, ...string) ([]Record, error)",
		"pkg example.com/m/p, type Reader interface, unexported methods",
		"pkg example.com/m/p, type Record struct",
		"pkg example.com/m/p, type Record struct, At time.Time `json:\"at,omitempty\"`",
		"pkg example.com/m/p, type Record struct, ID string `json:\"id\"`",
		"pkg example.com/m/p, type Record struct, Labels map[string]string",
		"pkg example.com/m/p, type Record struct, embedded Inner",
		"pkg example.com/m/p, var ErrNope error",
	}
	if !slices.Equal(got, want) {
		t.Errorf("record:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if code, stdout, stderr := apicheck(t, "-C", dir); code != 0 || !strings.Contains(stdout, "matches api/krply.txt") {
		t.Errorf("check of an unchanged module: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// A changed JSON tag, a removed and an added function each fail the check,
// which prints exactly those lines and the command that updates the record.
func TestCheckFailsOnChange(t *testing.T) {
	dir := writeModule(t, map[string]string{"p/p.go": samplePkg})
	if code, _, stderr := apicheck(t, "-C", dir, "-w"); code != 0 {
		t.Fatalf("apicheck -w: exit %d: %s", code, stderr)
	}
	changed := strings.Replace(samplePkg, `json:"id"`, `json:"uid"`, 1)
	changed = strings.Replace(changed, "func Map[", "func Keys[", 1)
	changed += "\nfunc Close() error { return nil }\n"
	if err := os.WriteFile(filepath.Join(dir, "p", "p.go"), []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := apicheck(t, "-C", dir)
	if code != 1 {
		t.Fatalf("check of a changed API: exit %d, want 1; stderr:\n%s", code, stderr)
	}
	want := []string{
		"+pkg example.com/m/p, func Close() error",
		"+pkg example.com/m/p, func Keys[K comparable, V any](map[K]V) []K",
		"-pkg example.com/m/p, func Map[K comparable, V any](map[K]V) []K",
		"-pkg example.com/m/p, type Record struct, ID string `json:\"id\"`",
		"+pkg example.com/m/p, type Record struct, ID string `json:\"uid\"`",
	}
	if got := diffLines(stderr); !slices.Equal(got, want) {
		t.Errorf("difference:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(stderr, "make api") {
		t.Errorf("the failure does not name the command that updates the record:\n%s", stderr)
	}
}

// In krply itself: a dummy exported function added to the root package (by
// a build overlay, the checkout untouched) fails the check with exactly
// that line.
func TestCheckFailsOnNewFuncInKrply(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	record := filepath.Join(t.TempDir(), "krply.txt")
	if code, _, stderr := apicheck(t, "-C", root, "-w", "-record", record); code != 0 {
		t.Fatalf("apicheck -w: exit %d: %s", code, stderr)
	}
	if _, _, stderr := apicheck(t, "-C", root, "-record", record); strings.Contains(stderr, "differs") {
		t.Fatalf("the check differs from the record it just wrote:\n%s", stderr)
	}

	probe := filepath.Join(t.TempDir(), "probe.go")
	if err := os.WriteFile(probe, []byte("package krply\n\nimport \"context\"\n\n// APICheckProbe is not API.\nfunc APICheckProbe(context.Context) error { return nil }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	overlay := filepath.Join(t.TempDir(), "overlay.json")
	ov := `{"Replace":{` + jsonString(filepath.Join(root, "zz_apicheck_probe.go")) + `:` + jsonString(probe) + `}}`
	if err := os.WriteFile(overlay, []byte(ov), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := apicheck(t, "-C", root, "-record", record, "-overlay", overlay)
	if code != 1 {
		t.Fatalf("check with a new exported function: exit %d, want 1; stderr:\n%s", code, stderr)
	}
	want := []string{"+pkg github.com/krply/krply, func APICheckProbe(context.Context) error"}
	if got := diffLines(stderr); !slices.Equal(got, want) {
		t.Errorf("difference:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(stderr, "make api") {
		t.Errorf("the failure does not name the command that updates the record:\n%s", stderr)
	}
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

const optionsPkg = `package o

type Option interface{ apply(*config) }
type QueryOption interface{ query() }
type config struct{}
type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// FieldManager is an option by conversion.
type FieldManager string

func (FieldManager) apply(*config) {}

func WithA() Option       { return optionFunc(nil) }
func WithB() Option       { return optionFunc(nil) }
func WithUnrelated() int  { return 0 }
func Since() QueryOption  { return nil }
func Limit() QueryOption  { return nil }
func WithSelf() Option    { return optionFunc(nil) }
func New(...Option) error { return nil }
`

// Option constructors are With* functions, functions returning an option
// type and types that are options by conversion; the check names those no
// test and no example references.
func TestOptionsExercised(t *testing.T) {
	dir := writeModule(t, map[string]string{
		"o/o.go": optionsPkg,
		// An external test references WithA and Since through the import,
		"o/o_test.go": "package o_test\n\nimport (\n\t\"testing\"\n\n\topts \"example.com/m/o\"\n)\n\nfunc TestA(t *testing.T) { _ = opts.New(opts.WithA()); _ = opts.Since() }\n",
		// an internal test WithSelf by its bare name,
		"o/internal_test.go": "package o\n\nimport \"testing\"\n\nfunc TestSelf(t *testing.T) { _ = New(WithSelf()) }\n",
		// an example main FieldManager;
		"examples/x/main.go": "package main\n\nimport \"example.com/m/o\"\n\nfunc main() { _ = o.New(o.FieldManager(\"x\")) }\n",
		// non-test code does not count.
		"o/use.go": "package o\n\nvar _, _ = WithB(), Limit()\n",
	})
	if code, _, stderr := apicheck(t, "-C", dir, "-w"); code != 0 {
		t.Fatalf("apicheck -w: exit %d: %s", code, stderr)
	}
	code, _, stderr := apicheck(t, "-C", dir)
	if code != 1 {
		t.Fatalf("check: exit %d, want 1; stderr:\n%s", code, stderr)
	}
	var got []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "\t") {
			got = append(got, strings.TrimSpace(l))
		}
	}
	want := []string{"example.com/m/o.Limit", "example.com/m/o.WithB", "example.com/m/o.WithUnrelated"}
	if !slices.Equal(got, want) {
		t.Errorf("unexercised options: %q, want %q; stderr:\n%s", got, want, stderr)
	}
	if strings.Contains(stderr, "differs") {
		t.Errorf("the API check failed too:\n%s", stderr)
	}
}
