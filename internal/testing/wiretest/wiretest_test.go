package wiretest

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/krplytest/golden"
)

func TestJSONName(t *testing.T) {
	for goName, want := range map[string]string{
		"ID":               "id",
		"UID":              "uid",
		"At":               "at",
		"EventID":          "eventID",
		"CheckpointRV":     "checkpointRV",
		"APIVersion":       "apiVersion",
		"JSONPointers":     "jsonPointers",
		"IPs":              "ips",
		"IDsSeen":          "idsSeen",
		"SourceIPs":        "sourceIPs",
		"SourceClusterUID": "sourceClusterUID",
		"AllowRBAC":        "allowRBAC",
		"already":          "already",
	} {
		if got := JSONName(goName); got != want {
			t.Errorf("JSONName(%q) = %q, want %q", goName, got, want)
		}
	}
}

type inner struct {
	Code int `json:"code,omitempty"`
}

type tagged struct {
	Name    string    `json:"name"`
	At      time.Time `json:"at,omitzero"`
	Skipped string    `json:"-"`
	inner
	Inner *inner `json:"inner,omitempty"`
}

type untagged struct {
	GV        schema.GroupVersion `json:"gv"`
	Name      string
	EventID   string `json:"eventId"`
	Count     int    `json:"count,string"`
	Reference *inner `json:"reference"`
}

func TestTagProblems(t *testing.T) {
	if p := tagProblems(map[string]any{"x": tagged{}}); len(p) != 0 {
		t.Errorf("tagged: problems %q, want none", p)
	}
	got := strings.Join(tagProblems(map[string]any{"x": []untagged{}}), "\n")
	for _, want := range []string{
		"wiretest.untagged.Name has no json tag: give it `json:\"name\"`",
		`wiretest.untagged.EventID is written as "eventId"; the naming rule says "eventID"`,
		`wiretest.untagged.Count has the tag option "string"`,
		"schema.GroupVersion (of k8s.io/apimachinery/pkg/runtime/schema) has fields without json tags",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems of untagged:\n%s\nwant a line with %q", got, want)
		}
	}
	if strings.Contains(got, "Reference") {
		t.Errorf("a tagged pointer field is reported:\n%s", got)
	}
}

func TestUnsetFields(t *testing.T) {
	own := map[string]bool{Module + "/internal/testing/wiretest": true}
	examples := map[string]any{
		"a": tagged{Name: "a", inner: inner{Code: 1}},
		"b": &tagged{At: At(0), Skipped: "s", Inner: &inner{}},
	}
	got := unsetFields(examples, own)
	// Inner.Code is set through the embedded field, which is the same type;
	// nothing of tagged is zero everywhere.
	if len(got) != 0 {
		t.Errorf("unset fields %q, want none", got)
	}
	got = unsetFields(map[string]any{"a": tagged{Name: "a"}}, own)
	want := []string{"wiretest.inner.Code", "wiretest.tagged.At", "wiretest.tagged.Inner"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("unset fields %q, want %q", got, want)
	}
	if got := unsetFields(map[string]any{"a": tagged{}}, map[string]bool{}); len(got) != 0 {
		t.Errorf("types of other packages are reported: %q", got)
	}
}

// lossy loses a field in decoding: its JSON cannot decode into it.
type lossy struct {
	Value any `json:"value"`
}

func TestRoundTrip(t *testing.T) {
	if err := roundTrip(tagged{Name: "a", At: At(1)}); err != nil {
		t.Errorf("tagged: %v", err)
	}
	if err := roundTrip(lossy{Value: json.Number("1.50")}); err == nil || !strings.Contains(err.Error(), "changes the JSON") {
		t.Errorf("lossy: err %v, want a changed JSON", err)
	}
}

func TestConstants(t *testing.T) {
	got, err := constants("testdata/enum", "Kind")
	if want := []string{"plain", "two-words", "snake_case", "Upper"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("constants of Kind = %q (%v), want %q", got, err, want)
	}
	problems := notLowerCase("enum.Kind", got)
	if len(problems) != 1 || !strings.Contains(problems[0], `"Upper"`) {
		t.Errorf("notLowerCase = %q, want one problem naming \"Upper\"", problems)
	}
}

func TestAt(t *testing.T) {
	b, err := json.Marshal(At(2))
	if err != nil || string(b) != `"2025-01-02T03:04:07.123456789Z"` {
		t.Errorf("At(2) marshals as %s (%v), want RFC 3339 with nanoseconds", b, err)
	}
}

// TestSchemaPackagesTagged fails when an exported struct type of the
// packages whose results make up the schema has a field without a json
// tag, unless the type is an input or an error (listed here, with the
// reason) or writes its JSON itself. A new result type needs tags, and a
// family of testdata/wire to show them.
func TestSchemaPackagesTagged(t *testing.T) {
	notInSchema := map[string]string{
		"storage.Query":        "an input of Reader.Records",
		"storage.HistoryQuery": "an input of Reader.ObjectHistory",
		"storage.AliveQuery":   "an input of Reader.AliveAt",
		"materialize.Params":   "the options of History and Diff resolved for the query API's client",
	}
	fields, err := Untagged(golden.ModuleRoot(t), "event", "storage", "storage/transfer", "watch", "watch/status", "materialize", "replay", "replay/replayapi", "audit", "server", "server/apiv1")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fields {
		typ := f[:strings.LastIndexByte(f, '.')]
		if _, ok := notInSchema[typ]; ok || strings.HasSuffix(typ, "Error") {
			continue
		}
		t.Errorf("%s has no json tag: every result type is part of the wire schema (docs/reference/wire-schema.md)", f)
	}
}

func TestUntagged(t *testing.T) {
	got, err := Untagged("testdata", "enum")
	if want := []string{"enum.Result.Untagged"}; err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("Untagged = %q (%v), want %q", got, err, want)
	}
}
