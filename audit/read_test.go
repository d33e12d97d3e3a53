package audit

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// readAll drains src, returning the events and the line errors; it fails
// the test on a fatal error.
func readAll(t *testing.T, src Source) ([]Event, []*LineError) {
	t.Helper()
	var events []Event
	var lineErrs []*LineError
	for {
		evt, err := src.Next(context.Background())
		if err == io.EOF {
			return events, lineErrs
		}
		var le *LineError
		if errors.As(err, &le) {
			lineErrs = append(lineErrs, le)
			continue
		}
		if err != nil {
			t.Fatalf("fatal read error after %d events: %v", len(events), err)
		}
		events = append(events, evt)
	}
}

func auditIDs(events []Event) []string {
	ids := make([]string, len(events))
	for i, e := range events {
		ids[i] = e.AuditID
	}
	return ids
}

func lineNumbers(errs []*LineError) []int64 {
	lines := make([]int64, len(errs))
	for i, e := range errs {
		lines[i] = e.Line
	}
	return lines
}

func openReader(t *testing.T, path string, opts ...ReadOption) *FileReader {
	t.Helper()
	f, err := OpenFiles([]string{path}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestReaderHandwrittenLog(t *testing.T) {
	events, lineErrs := readAll(t, openReader(t, filepath.Join("..", "testdata", "audit", "handwritten.log")))

	wantIDs := []string{
		"a0000001-0000-4000-8000-000000000001", "a0000001-0000-4000-8000-000000000002",
		"a0000001-0000-4000-8000-000000000003", "a0000001-0000-4000-8000-000000000004",
		"a0000001-0000-4000-8000-000000000006", "a0000001-0000-4000-8000-000000000007",
		"a0000001-0000-4000-8000-000000000008",
	}
	if got := auditIDs(events); !reflect.DeepEqual(got, wantIDs) {
		t.Errorf("audit IDs = %v, want %v", got, wantIDs)
	}
	// Line 5 is not JSON, line 9 is cut off in the middle (no newline).
	if got := lineNumbers(lineErrs); !reflect.DeepEqual(got, []int64{5, 9}) {
		t.Fatalf("line errors at %v, want [5 9]: %v", got, lineErrs)
	}
	for _, le := range lineErrs {
		if !errors.Is(le, ErrMalformed) || !strings.HasSuffix(le.Source, "handwritten.log") {
			t.Errorf("line error %v: want ErrMalformed naming the file", le)
		}
	}

	create := events[0]
	if create.User.Username != "alice" || create.Verb != "create" || create.Level != LevelRequestResponse ||
		create.Stage != StageResponseComplete || create.ResponseStatus.Code != 201 ||
		create.ObjectRef.Resource != "configmaps" || create.ObjectRef.Namespace != "shop" || create.ObjectRef.Name != "settings" {
		t.Errorf("create event decoded as %+v", create)
	}
	if got := create.RequestReceivedTimestamp.UTC().Format("15:04:05.000000"); got != "10:00:00.100000" {
		t.Errorf("requestReceivedTimestamp = %s", got)
	}
	var resp responseMeta
	if err := json.Unmarshal(create.ResponseObject, &resp); err != nil || resp.Metadata.ResourceVersion != "1001" {
		t.Errorf("response object %s: rv %q, err %v", create.ResponseObject, resp.Metadata.ResourceVersion, err)
	}
}

// TestEventDecodesEveryField proves that Event knows every field of the
// audit log fixtures: strict decoding accepts each line, and encoding the
// decoded event again gives the same JSON document.
func TestEventDecodesEveryField(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "testdata", "audit", "*.log"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no fixtures: %v", err)
	}
	checked := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range bytes.Split(data, []byte("\n")) {
			var probe map[string]any
			if json.Unmarshal(line, &probe) != nil {
				continue // the deliberately malformed lines
			}
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.DisallowUnknownFields()
			var evt Event
			if err := dec.Decode(&evt); err != nil {
				t.Errorf("%s:%d: strict decode: %v", file, i+1, err)
				continue
			}
			again, err := json.Marshal(evt)
			if err != nil {
				t.Fatal(err)
			}
			var back map[string]any
			if err := json.Unmarshal(again, &back); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(probe, back) {
				t.Errorf("%s:%d: round trip changed the event:\n in: %s\nout: %s", file, i+1, line, again)
			}
			checked++
		}
	}
	if checked < 7 {
		t.Fatalf("checked %d events, want at least 7", checked)
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func gzipped(t *testing.T, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// fixtureLines returns the lines of the handwritten fixture, newline kept.
func fixtureLines(t *testing.T) [][]byte {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "audit", "handwritten.log"))
	if err != nil {
		t.Fatal(err)
	}
	return bytes.SplitAfter(data, []byte("\n"))
}

func TestRotatedFilesAndGzip(t *testing.T) {
	lines := fixtureLines(t)
	dir := t.TempDir()
	log := filepath.Join(dir, "audit.log")
	// Oldest backup compressed, the next one plain, then the live file.
	writeFile(t, filepath.Join(dir, "audit-2026-01-05T09-00-00.000.log.gz"), gzipped(t, bytes.Join(lines[0:2], nil)))
	writeFile(t, filepath.Join(dir, "audit-2026-01-05T09-30-00.000.log"), bytes.Join(lines[2:5], nil))
	writeFile(t, log, bytes.Join(lines[5:8], nil))
	// Not backups of audit.log.
	writeFile(t, filepath.Join(dir, "audit-notatime.log"), []byte("garbage\n"))
	writeFile(t, filepath.Join(dir, "other-2026-01-05T09-00-00.000.log"), []byte("garbage\n"))
	writeFile(t, filepath.Join(dir, "audit-2026-01-05T09-00-00.000.txt"), []byte("garbage\n"))

	files, err := RotatedFiles(log)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		filepath.Join(dir, "audit-2026-01-05T09-00-00.000.log.gz"),
		filepath.Join(dir, "audit-2026-01-05T09-30-00.000.log"),
		log,
	}
	if !reflect.DeepEqual(files, want) {
		t.Fatalf("RotatedFiles = %v, want %v", files, want)
	}

	r, err := OpenFiles(files)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	events, lineErrs := readAll(t, r)
	if len(events) != 7 {
		t.Errorf("read %d events across the files, want 7: %v", len(events), auditIDs(events))
	}
	// The garbage line is line 3 of the second file.
	if len(lineErrs) != 1 || lineErrs[0].Line != 3 || lineErrs[0].Source != want[1] {
		t.Errorf("line errors = %v, want one at %s:3", lineErrs, want[1])
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	missing, err := RotatedFiles(filepath.Join(dir, "none.log"))
	if err != nil || len(missing) != 0 {
		t.Errorf("RotatedFiles of a missing log = %v, %v; want none", missing, err)
	}
}

func TestReaderOversizedLines(t *testing.T) {
	lines := fixtureLines(t)
	small := lines[1] // the get, under 1 KiB
	const max = 1024
	huge := append(bytes.Repeat([]byte("x"), 200<<10), '\n') // longer than the read buffer too
	medium := append([]byte(`{"pad":"`+strings.Repeat("y", 2000)+`"}`), '\n')
	input := bytes.Join([][]byte{small, huge, small, medium, small}, nil)

	r, err := NewReader(bytes.NewReader(input), "big", WithMaxEventBytes(max))
	if err != nil {
		t.Fatal(err)
	}
	events, lineErrs := readAll(t, r)
	if len(events) != 3 {
		t.Errorf("read %d events, want 3", len(events))
	}
	if got := lineNumbers(lineErrs); !reflect.DeepEqual(got, []int64{2, 4}) {
		t.Fatalf("oversized lines reported at %v, want [2 4]", got)
	}
	if !errors.Is(lineErrs[0], ErrTooLarge) || lineErrs[0].Bytes != int64(len(huge)) {
		t.Errorf("first oversized line: %v (%d bytes), want ErrTooLarge of %d bytes", lineErrs[0], lineErrs[0].Bytes, len(huge))
	}
	if cap(r.buf) > max {
		t.Errorf("line buffer grew to %d bytes, the limit is %d", cap(r.buf), max)
	}

	if _, err := NewReader(bytes.NewReader(nil), "x", WithMaxEventBytes(0)); !errors.Is(err, ErrInvalidArgument) {
		t.Errorf("max 0: err = %v, want ErrInvalidArgument", err)
	}
}

func TestReaderRejectsOtherKindsAndVersions(t *testing.T) {
	input := strings.Join([]string{
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1alpha1","level":"Metadata","auditID":"x","stage":"ResponseComplete","verb":"get","requestReceivedTimestamp":"2026-01-05T10:00:00.000000Z"}`,
		`{"kind":"Pod","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"x","stage":"ResponseComplete","verb":"get","requestReceivedTimestamp":"2026-01-05T10:00:00.000000Z"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","stage":"ResponseComplete","verb":"get","requestReceivedTimestamp":"2026-01-05T10:00:00.000000Z"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"x","stage":"ResponseComplete","verb":"get"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"x","stage":"ResponseComplete","verb":"get","requestReceivedTimestamp":"yesterday"}`,
		`[]`,
		``,
		`   `,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"ok","stage":"ResponseComplete","verb":"get","requestReceivedTimestamp":"2026-01-05T10:00:00.000000Z"}`,
	}, "\r\n")
	r, err := NewReader(strings.NewReader(input), "kinds")
	if err != nil {
		t.Fatal(err)
	}
	events, lineErrs := readAll(t, r)
	if got := auditIDs(events); !reflect.DeepEqual(got, []string{"ok"}) {
		t.Errorf("events = %v, want [ok]", got)
	}
	if got := lineNumbers(lineErrs); !reflect.DeepEqual(got, []int64{1, 2, 3, 4, 5, 6}) {
		t.Errorf("line errors at %v, want lines 1-6 (blank lines are no events and no errors)", got)
	}
}

// Events of audit.k8s.io/v1beta1 (API servers before Kubernetes 1.24,
// with their deprecated timestamp field) are read, and so are RFC 3339
// times with other than six fractional digits; a time that is not RFC
// 3339 is an error naming the event's apiVersion.
func TestReaderV1beta1AndOtherTimes(t *testing.T) {
	input := strings.Join([]string{
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1beta1","level":"Metadata","timestamp":"2026-01-05T10:00:00Z","auditID":"beta","stage":"ResponseComplete","verb":"update","requestReceivedTimestamp":"2026-01-05T10:00:00.123456Z","stageTimestamp":"2026-01-05T10:00:00.234567Z"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1beta1","level":"Metadata","auditID":"seconds","stage":"ResponseComplete","verb":"get","requestReceivedTimestamp":"2026-01-05T10:00:01Z","stageTimestamp":"2026-01-05T10:00:02+01:00"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"nanos","stage":"ResponseComplete","verb":"get","requestReceivedTimestamp":"2026-01-05T10:00:03.123456789Z"}`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1beta1","level":"Metadata","auditID":"bad","stage":"ResponseComplete","verb":"get","requestReceivedTimestamp":"05/01/2026 10:00"}`,
	}, "\n")
	r, err := NewReader(strings.NewReader(input), "beta")
	if err != nil {
		t.Fatal(err)
	}
	events, lineErrs := readAll(t, r)
	if got := auditIDs(events); !reflect.DeepEqual(got, []string{"beta", "seconds", "nanos"}) {
		t.Fatalf("events = %v, want beta, seconds, nanos", got)
	}
	want := []struct{ received, stage time.Time }{
		{time.Date(2026, 1, 5, 10, 0, 0, 123456000, time.UTC), time.Date(2026, 1, 5, 10, 0, 0, 234567000, time.UTC)},
		{time.Date(2026, 1, 5, 10, 0, 1, 0, time.UTC), time.Date(2026, 1, 5, 9, 0, 2, 0, time.UTC)},
		{time.Date(2026, 1, 5, 10, 0, 3, 123456789, time.UTC), time.Time{}},
	}
	for i, evt := range events {
		if !evt.RequestReceivedTimestamp.Time.Equal(want[i].received) || !evt.StageTimestamp.Time.Equal(want[i].stage) {
			t.Errorf("%s: received %s, stage %s; want %s, %s", evt.AuditID, evt.RequestReceivedTimestamp, evt.StageTimestamp, want[i].received, want[i].stage)
		}
	}
	if len(lineErrs) != 1 || lineErrs[0].Line != 4 || !strings.Contains(lineErrs[0].Error(), `apiVersion "audit.k8s.io/v1beta1": requestReceivedTimestamp "05/01/2026 10:00" is not an RFC 3339 time`) {
		t.Errorf("line errors %v, want line 4's, naming the apiVersion and the time", lineErrs)
	}
}

func TestEventListReader(t *testing.T) {
	lines := fixtureLines(t)
	item := func(i int) string { return string(bytes.TrimSpace(lines[i])) }
	body := `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[` +
		item(0) + `,42,` + item(2) + `,{"auditID":""},` + item(3) + `]}`

	r, err := NewEventListReader(strings.NewReader(body), "webhook")
	if err != nil {
		t.Fatal(err)
	}
	events, lineErrs := readAll(t, r)
	want := []string{"a0000001-0000-4000-8000-000000000001", "a0000001-0000-4000-8000-000000000003", "a0000001-0000-4000-8000-000000000004"}
	if got := auditIDs(events); !reflect.DeepEqual(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
	if got := lineNumbers(lineErrs); !reflect.DeepEqual(got, []int64{2, 4}) {
		t.Errorf("bad items reported at %v, want items [2 4]", got)
	}

	empty, err := NewEventListReader(strings.NewReader(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":null}`), "empty")
	if err != nil {
		t.Fatal(err)
	}
	if evts, errs := readAll(t, empty); len(evts)+len(errs) != 0 {
		t.Errorf("empty list yielded %d events, %d errors", len(evts), len(errs))
	}

	for name, body := range map[string]string{
		"wrong kind":    `{"kind":"PodList","items":[]}`,
		"wrong version": `{"apiVersion":"audit.k8s.io/v1alpha1","items":[]}`,
		"no items":      `{"kind":"EventList"}`,
		"not an object": `[1,2]`,
		"truncated":     `{"kind":"EventList","items":[` + item(0) + `,{"kind":"Ev`,
		"items object":  `{"items":{}}`,
	} {
		t.Run(name, func(t *testing.T) {
			r, err := NewEventListReader(strings.NewReader(body), name)
			if err != nil {
				t.Fatal(err)
			}
			var fatal error
			for fatal == nil {
				_, err := r.Next(context.Background())
				var le *LineError
				if err != nil && !errors.As(err, &le) {
					fatal = err
				}
			}
			if !errors.Is(fatal, ErrMalformed) {
				t.Errorf("fatal error = %v, want ErrMalformed", fatal)
			}
		})
	}
}

func TestReaderStopsOnCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	r, err := NewReader(bytes.NewReader(bytes.Join(fixtureLines(t), nil)), "x")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Next on a cancelled context = %v, want context.Canceled", err)
	}
}

// TestRealWebhookBody reads an EventList a kube-apiserver's webhook backend
// POSTed: every item is an event, and EventList knows every field.
func TestRealWebhookBody(t *testing.T) {
	path := filepath.Join("..", "testdata", "audit", "kube-apiserver-v1.37.2-webhook.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewEventListReader(bytes.NewReader(data), path)
	if err != nil {
		t.Fatal(err)
	}
	events, lineErrs := readAll(t, r)
	if len(lineErrs) != 0 || len(events) == 0 {
		t.Fatalf("%d events, line errors %v", len(events), lineErrs)
	}
	var creates int
	for _, e := range events {
		if e.Verb == "create" && e.ObjectRef != nil && e.ObjectRef.Name == "hooked" {
			creates++
			if e.User.Username != "alice" || len(e.ResponseObject) == 0 {
				t.Errorf("create of hooked: user %q, response %s", e.User.Username, e.ResponseObject)
			}
		}
	}
	if creates != 1 {
		t.Errorf("%d creates of hooked, want 1", creates)
	}

	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var list EventList
	if err := dec.Decode(&list); err != nil {
		t.Fatalf("strict decode: %v", err)
	}
	again, err := json.Marshal(list)
	if err != nil {
		t.Fatal(err)
	}
	var in, out map[string]any
	if err := json.Unmarshal(data, &in); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(again, &out); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(in, out) {
		t.Errorf("round trip changed the list:\n in: %s\nout: %s", data, again)
	}
}
