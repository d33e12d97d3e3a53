package watch

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"
	"time"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
)

var rawJSONSeeds = []string{
	synthBody(7, 8),
	`{}`,
	` { "kind" : "ConfigMap" , "metadata" : { "name" : "a\u0062c" } } `,
	`{"kind":"","apiVersion":null,"metadata":{"name":5,"uid":"u"}}`,
	`{"metadata":"nope","items":[{"a":[1,-2.5e+3,true,false,null,{}]}]}`,
	`{"\u006bind":"Widget","metadata":{"resourceVersion":"12","annotations":{"k8s.io/initial-events-end":"true"}}}`,
	`{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"x"}}}`,
	`{"metadata":{"resourceVersion":"9","continue":"abc"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}`,
	`{"a":1,}`, `{"a" 1}`, `[1,2]`, `{"a":01}`, `{"a":1.}`, `{"a":"\x"}`, `{"a":tru}`, `{"a":"` + "\x01" + `"}`,
	`{"a":1} x`, `{"a":[1,]}`, `{"a":-}`, `{"a":"\u12"}`, `{`, `{"a":{"b":[`, ``, `{"a":1e}`,
}

// FuzzReadObjectMeta checks the scanner against encoding/json (the list
// and watch event readers too): it accepts
// exactly the single JSON objects encoding/json accepts, and reads the same
// fields as unstructured.Unstructured's getters (keys match exactly, the
// last of duplicates wins).
func FuzzReadObjectMeta(f *testing.F) {
	for _, s := range rawJSONSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := readListPage(data); err == nil && !json.Valid(data) {
			t.Fatalf("readListPage accepted invalid JSON %q", data)
		}
		if _, _, err := readWatchEvent(data); err == nil && !json.Valid(data) {
			t.Fatalf("readWatchEvent accepted invalid JSON %q", data)
		}
		m, err := readObjectMeta(data)
		trimmed := bytes.TrimSpace(data)
		valid := json.Valid(data) && len(trimmed) > 0 && trimmed[0] == '{'
		if (err == nil) != valid {
			t.Fatalf("readObjectMeta(%q): error %v, but encoding/json says valid object = %v", data, err, valid)
		}
		if err != nil {
			return
		}
		var obj map[string]any
		if err := json.Unmarshal(data, &obj); err != nil {
			t.Fatal(err)
		}
		if !utf8.Valid(data) {
			return // encoding/json replaces invalid UTF-8; the server sends none
		}
		u := unstructured.Unstructured{Object: obj}
		want := [6]string{u.GetKind(), u.GetAPIVersion(), u.GetName(), u.GetNamespace(), string(u.GetUID()), u.GetResourceVersion()}
		got := [6]string{m.kind, m.apiVersion, m.name, m.namespace, m.uid, m.resourceVersion}
		if got != want {
			t.Fatalf("readObjectMeta(%q) = %q, want %q", data, got, want)
		}
		_, hasKind := obj["kind"]
		_, hasAPIVersion := obj["apiVersion"]
		if m.hasKind != hasKind || m.hasAPIVersion != hasAPIVersion {
			t.Fatalf("readObjectMeta(%q): presence kind %v apiVersion %v, want %v %v", data, m.hasKind, m.hasAPIVersion, hasKind, hasAPIVersion)
		}
	})
}

func TestReadListPage(t *testing.T) {
	body := []byte(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"42","continue":"tok"},"items":[` +
		`{"metadata":{"name":"a","namespace":"n","uid":"u1","resourceVersion":"7"},"data":{"k":"v"}}, ` + synthBody(3, 4) + `]}`)
	p, err := readListPage(body)
	if err != nil {
		t.Fatal(err)
	}
	if p.resourceVersion != "42" || p.continueToken != "tok" || len(p.items) != 2 {
		t.Fatalf("page = %q %q %d items", p.resourceVersion, p.continueToken, len(p.items))
	}
	if got := string(p.items[1]); got != synthBody(3, 4) {
		t.Errorf("item 1 = %s, want the bytes as sent", got)
	}
	m, err := readObjectMeta(p.items[0])
	if err != nil {
		t.Fatal(err)
	}
	raw, err := withTypeMeta(p.items[0], m, "ConfigMap", "v1")
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"n","uid":"u1","resourceVersion":"7"},"data":{"k":"v"}}`; string(raw) != want {
		t.Errorf("withTypeMeta = %s, want %s", raw, want)
	}
	// Appending to an item must not overwrite the next one.
	_ = append(p.items[0], 'x')
	if string(p.items[1]) != synthBody(3, 4) {
		t.Error("appending to an item changed the next")
	}
	for _, bad := range []string{`{"items":[1]}`, `{"items":[{}`, `{"metadata":{"resourceVersion":"1"}}x`} {
		if _, err := readListPage([]byte(bad)); err == nil {
			t.Errorf("readListPage(%s) succeeded", bad)
		}
	}
}

func TestWithTypeMeta(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{}`, `{"kind":"K","apiVersion":"g/v1"}`},
		{`{ }`, `{"kind":"K","apiVersion":"g/v1" }`},
		{`{"kind":"K","metadata":{}}`, `{"apiVersion":"g/v1","kind":"K","metadata":{}}`},
		{`{"apiVersion":"x/v2","kind":"Other"}`, `{"apiVersion":"x/v2","kind":"Other"}`},
	} {
		m, err := readObjectMeta([]byte(tc.in))
		if err != nil {
			t.Fatal(err)
		}
		got, err := withTypeMeta([]byte(tc.in), m, "K", "g/v1")
		if err != nil || string(got) != tc.want {
			t.Errorf("withTypeMeta(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
		}
	}
}

func TestReadWatchEvent(t *testing.T) {
	obj := synthBody(1, 2)
	typ, raw, err := readWatchEvent([]byte(`{"type":"MODIFIED","object":` + obj + "}\n"))
	if err != nil || typ != "MODIFIED" || string(raw) != obj {
		t.Fatalf("readWatchEvent = %q, %.40q, %v", typ, raw, err)
	}
	if _, _, err := readWatchEvent([]byte(`{"type":"ADDED","object":{}`)); err == nil {
		t.Error("a truncated event was accepted")
	}
}

func TestRawObjectDecoderStatus(t *testing.T) {
	obj, _, err := rawObjectDecoder{}.Decode([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,"message":"too old"}`), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := apierrors.FromObject(obj); !isGone(err) {
		t.Errorf("status decoded to %T %v, want a 410", obj, err)
	}
}

func TestRawFrameReader(t *testing.T) {
	big := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"big","resourceVersion":"9"},"data":{"k":"` + strings.Repeat("x\\\"y", 40000) + `"}}`
	objects := []string{synthBody(1, 2), `{"metadata":{"name":"a b"},"v":[1,-2.5e3,true,false,null]}`, big, synthBody(3, 4)}
	var stream strings.Builder
	for i, o := range objects {
		stream.WriteString([]string{"", " \n", "\r\n\t"}[i%3])
		stream.WriteString(`{"type":"MODIFIED","object":` + o + `}`)
		stream.WriteString("\n")
	}
	for name, wrap := range map[string]func(io.Reader) io.Reader{
		"whole": func(r io.Reader) io.Reader { return r }, "onebyte": iotest.OneByteReader, "half": iotest.HalfReader,
	} {
		t.Run(name, func(t *testing.T) {
			r := io.NopCloser(wrap(strings.NewReader(stream.String())))
			dec := streaming.NewDecoder(rawFramer{}.NewFrameReader(r), rawEventDecoder{})
			for i, want := range objects {
				var ev metav1.WatchEvent
				if _, _, err := dec.Decode(nil, &ev); err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				if ev.Type != "MODIFIED" || string(ev.Object.Raw) != want {
					t.Fatalf("event %d: %s %.60s, want the object as sent", i, ev.Type, ev.Object.Raw)
				}
			}
			if _, _, err := dec.Decode(nil, &metav1.WatchEvent{}); err != io.EOF {
				t.Fatalf("after the last event: %v, want io.EOF", err)
			}
		})
	}
	for _, tc := range []struct {
		stream string
		want   error
	}{
		{`{"type":"ADDED","object":{"a":tr`, io.ErrUnexpectedEOF},
		{`{"type":"ADDED","object":{}} {"type":`, io.ErrUnexpectedEOF},
		{`{"type":"ADDED","object":{}} {"type":x}`, nil},
		{`[1]`, nil},
	} {
		fr := rawFramer{}.NewFrameReader(io.NopCloser(iotest.OneByteReader(strings.NewReader(tc.stream))))
		var err error
		buf := make([]byte, 1<<10)
		for err == nil {
			_, err = fr.Read(buf)
		}
		if tc.want != nil && err != tc.want || tc.want == nil && (err == io.EOF || err == io.ErrUnexpectedEOF) {
			t.Errorf("stream %q ended with %v, want %v (nil: a syntax error)", tc.stream, err, tc.want)
		}
	}
}

// A frame is returned as soon as its last byte arrives, however it is cut
// into reads, without waiting for more of the stream (a quiet watch sends
// nothing after its last event): brackets, quotes and backslashes inside
// strings do not end it, nor hold it back.
func TestRawFrameReaderReturnsAFrameAtItsLastByte(t *testing.T) {
	frames := []string{
		`{"type":"ADDED","object":{"a":"}\"{]","b":[{},[]],"c":"\\"}}`,
		`{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"7"}}}`,
	}
	pr, pw := io.Pipe()
	go func() {
		for _, f := range frames {
			for i := range len(f) {
				if _, err := pw.Write([]byte{f[i]}); err != nil {
					return
				}
			}
			pw.Write([]byte("\n")) //nolint:errcheck // the reader closes the pipe at the end of the test
		}
	}()
	fr := rawFramer{}.NewFrameReader(pr)
	defer fr.Close()
	buf := make([]byte, 1<<10)
	for i, want := range frames {
		got := make(chan string, 1)
		go func() {
			n, err := fr.Read(buf)
			if err != nil {
				got <- "error: " + err.Error()
				return
			}
			got <- string(buf[:n])
		}()
		select {
		case g := <-got:
			if g != want {
				t.Fatalf("frame %d = %s, want %s", i, g, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("frame %d not returned 10 s after its last byte: the reader waits for more of the stream", i)
		}
	}
}

// A long frame that arrives in many small reads is copied and checked a
// bounded number of times, not once a read: the reader's allocations grow
// with the logarithm of the frame's length (they grew with every read
// once the frame passed 32 KiB, and every read rescanned the frame: the
// one-byte case of TestRawFrameReader took minutes under -race).
//
// testing.AllocsPerRun counts the allocations of the whole process, and
// other goroutines allocate meanwhile: TestIntegrationPeriodicBookmark's
// Collector and its ConfigMap writes run through the sequential tests. They
// only add to the count, so the test keeps the fewest of up to five runs
// (one run under -race on a loaded machine once counted 312).
func TestRawFrameReaderLongFrameInSmallReads(t *testing.T) {
	frame := `{"type":"MODIFIED","object":{"data":{"k":"` + strings.Repeat(`}x\"{`, 1<<16) + `"}}}`
	buf := make([]byte, len(frame))
	var allocs float64
	for i := 0; i < 5 && (i == 0 || allocs > 100); i++ {
		a := testing.AllocsPerRun(1, func() {
			fr := rawFramer{}.NewFrameReader(io.NopCloser(iotest.OneByteReader(strings.NewReader(frame))))
			n, err := fr.Read(buf)
			if err != nil || string(buf[:n]) != frame {
				t.Fatalf("read %d bytes, %v; want the frame of %d", n, err, len(frame))
			}
		})
		if i == 0 || a < allocs {
			allocs = a
		}
	}
	if allocs > 100 {
		t.Fatalf("%v allocations to read a frame of %d bytes one byte at a time; want at most 100", allocs, len(frame))
	}
	var e frameEnd
	checks := 0
	for i := 1; i <= len(frame); i++ {
		if e.mayClose([]byte(frame[:i])) {
			checks++
		}
	}
	if checks > 25 {
		t.Fatalf("a frame of %d bytes, one more byte at a time, checked %d times; want at most 25 (when it doubled, and at its end)", len(frame), checks)
	}
}

// FuzzRawFrameReader checks that the frames of a stream, and how it ends
// (io.EOF, io.ErrUnexpectedEOF or a syntax error), do not depend on how
// the stream is cut into reads.
func FuzzRawFrameReader(f *testing.F) {
	for i, s := range rawJSONSeeds {
		f.Add([]byte(s+"\n"+s), uint8(i))
	}
	f.Add([]byte(`{"a":"}\"{"} {"b":[{}]}`+"\r\n"+`{"c":"\\"}`), uint8(1))
	f.Fuzz(func(t *testing.T, stream []byte, chunk uint8) {
		read := func(r io.Reader) (frames []string, end string) {
			fr := rawFramer{}.NewFrameReader(io.NopCloser(r))
			buf := make([]byte, len(stream)+1)
			for {
				n, err := fr.Read(buf)
				switch {
				case err == io.EOF || err == io.ErrUnexpectedEOF:
					return frames, err.Error()
				case err != nil:
					return frames, "a syntax error"
				}
				frames = append(frames, string(buf[:n]))
			}
		}
		wantFrames, wantEnd := read(bytes.NewReader(stream))
		gotFrames, gotEnd := read(&chunkReader{data: stream, size: int(chunk%7) + 1})
		if !slices.Equal(gotFrames, wantFrames) || gotEnd != wantEnd {
			t.Fatalf("stream %q in reads of %d bytes: frames %q, then %s; want %q, then %s", stream, chunk%7+1, gotFrames, gotEnd, wantFrames, wantEnd)
		}
	})
}

// chunkReader returns data in reads of at most size bytes.
type chunkReader struct {
	data []byte
	size int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), r.size)], r.data)
	r.data = r.data[n:]
	return n, nil
}
