package krplytest

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/krply/krply/internal/testing/textdiff"
)

// UpdateFlag is the test flag that makes AssertGolden write golden files
// instead of comparing with them: go test ./pkg -run TestX -krplytest.update.
// Its name is not "update", so that it never clashes with a flag of your own
// test binary. A binary that already defines it (another copy of this
// package) keeps its own.
const UpdateFlag = "krplytest.update"

// UpdateEnv is the environment variable that does what UpdateFlag does when
// set to a true value (1, t, true): KRPLYTEST_UPDATE=1 go test ./... . Use
// it to update several packages at once, since go test passes a flag to
// every test binary and one that does not import krplytest rejects it.
const UpdateEnv = "KRPLYTEST_UPDATE"

func init() {
	if flag.Lookup(UpdateFlag) == nil {
		flag.Bool(UpdateFlag, false, "rewrite the golden files of krplytest.AssertGolden from today's results (review them with git diff)")
	}
}

// updating reports whether AssertGolden writes golden files.
func updating() bool {
	if f := flag.Lookup(UpdateFlag); f != nil && f.Value.String() == "true" {
		return true
	}
	v, err := strconv.ParseBool(os.Getenv(UpdateEnv))
	return err == nil && v
}

// AssertGolden checks a result — a *materialize.History, *Diff, *Snapshot,
// *ObjectState, or anything else in krply's JSON wire schema — against a
// golden file, conventionally under testdata/:
//
//	krplytest.AssertGolden(t, "testdata/pause.history.json", c.History("deploy", "shop", "web"))
//
// The result is compared as GoldenJSON renders it, with what varies from
// run to run replaced. A difference fails the test with a line diff (-
// golden, + now) and returns false; so does a missing file. With the
// -krplytest.update flag (UpdateFlag) or KRPLYTEST_UPDATE=1 (UpdateEnv) it
// writes the file instead, creating its folder, and returns true: review
// the file with git diff before committing it.
func AssertGolden(t TestingT, path string, result any) bool {
	t.Helper()
	got, err := GoldenJSON(result)
	if err != nil {
		t.Errorf("krplytest: golden %s: %v", path, err)
		return false
	}
	want, err := os.ReadFile(path)
	switch {
	case updating():
		if err == nil && bytes.Equal(want, got) {
			return true
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Errorf("krplytest: write golden file: %v", err)
			return false
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Errorf("krplytest: write golden file: %v", err)
			return false
		}
		fmt.Fprintf(os.Stderr, "krplytest: wrote %s (%d bytes): review it with git diff\n", path, len(got))
		return true
	case errors.Is(err, fs.ErrNotExist):
		t.Errorf("krplytest: golden file %s does not exist: run the test with -%s or %s=1 to write it from the result, then review it", path, UpdateFlag, UpdateEnv)
		return false
	case err != nil:
		t.Errorf("krplytest: read golden file: %v", err)
		return false
	case bytes.Equal(want, got):
		return true
	}
	t.Errorf("krplytest: %s differs from the result (- golden, + now); if the change is deliberate, rerun with -%s or %s=1 and review the file:\n%s",
		path, UpdateFlag, UpdateEnv, textdiff.Diff(string(want), string(got)))
	return false
}

// GoldenJSON renders a result as AssertGolden compares it: its wire-schema
// JSON (docs/reference/wire-schema.md), indented by two spaces with object keys
// sorted, and with what differs from one run to the next replaced by
// placeholders:
//
//   - every time (an RFC 3339 string, anywhere, objects included) by
//     "<time>", except the zero time "0001-01-01T00:00:00Z", which means
//     unknown;
//   - values of uid and *UID keys by "<uid N>", of resourceVersion,
//     *ResourceVersion and *RV keys by "<rv N>", of *ID keys other than
//     clusterID and streamID (eventID, baselineID, …) by "<id N>", of
//     *Hash keys by "<hash N>": N numbers the distinct values in the order
//     they first appear, so equal values stay visibly equal;
//   - numbers of *Seq keys (ingestSeq) by "<seq>".
//
// Cluster IDs, names, stream IDs, field paths and object contents stay as
// they are.
func GoldenJSON(result any) ([]byte, error) {
	raw, err := json.Marshal(result)
	if err != nil {
		return nil, fmt.Errorf("marshal %T: %w", result, err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("decode %T's JSON: %w", result, err)
	}
	n := &normalizer{seen: map[string]map[string]int{}}
	v = n.value("", v)
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// normalizer numbers the distinct values of each kind of placeholder.
type normalizer struct {
	seen map[string]map[string]int // kind → value → number
}

func (n *normalizer) placeholder(kind, value string) string {
	m := n.seen[kind]
	if m == nil {
		m = map[string]int{}
		n.seen[kind] = m
	}
	if _, ok := m[value]; !ok {
		m[value] = len(m) + 1
	}
	return fmt.Sprintf("<%s %d>", kind, m[value])
}

// value normalizes v, the value of key (its field name, or "" in a list),
// walking maps in key order, the order of the output.
func (n *normalizer) value(key string, v any) any {
	switch v := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v[k] = n.value(k, v[k])
		}
		return v
	case []any:
		for i := range v {
			v[i] = n.value(key, v[i])
		}
		return v
	case json.Number:
		if strings.HasSuffix(key, "Seq") {
			return "<seq>"
		}
		return v
	case string:
		return n.str(key, v)
	}
	return v
}

func (n *normalizer) str(key, s string) string {
	if s == "" {
		return s
	}
	switch {
	case key == "uid" || strings.HasSuffix(key, "UID"):
		return n.placeholder("uid", s)
	case key == "resourceVersion" || strings.HasSuffix(key, "ResourceVersion") || strings.HasSuffix(key, "RV"):
		return n.placeholder("rv", s)
	case (key == "id" || strings.HasSuffix(key, "ID")) && key != "clusterID" && key != "streamID":
		return n.placeholder("id", s)
	case strings.HasSuffix(key, "Hash"):
		return n.placeholder("hash", s)
	}
	if len(s) >= len("2006-01-02T15:04:05Z") && s[4] == '-' && s[10] == 'T' {
		if tm, err := time.Parse(time.RFC3339Nano, s); err == nil && !tm.IsZero() {
			return "<time>"
		}
	}
	return s
}
