package watch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/krply/krply/internal/jsonscan"
)

// This file reads the few fields the Collector needs from JSON bodies as the
// API server sent them, without decoding the rest: a list page's
// resourceVersion, continue token and items, a watch event's type and
// object, and an object's kind, apiVersion and identifying metadata. Every
// byte is still checked (by jsonscan), so a body that is not valid JSON (by
// the rules of encoding/json.Valid) is an error, never a record.

// stringMember checks the value at data[start] and, when it is a string,
// stores it in *dst; a value of another type stores "".
func stringMember(data []byte, start, room int, dst *string) (int, error) {
	end, err := jsonscan.Skip(data, start, room)
	if err == nil {
		*dst, _ = stringValue(data[start:end])
	}
	return end, err
}

// keyIs says whether key (a JSON string, quotes included) is name. Keys
// match case-sensitively, as in Kubernetes' own decoding.
func keyIs(key []byte, name string) bool {
	if bytes.IndexByte(key, '\\') < 0 {
		return string(key[1:len(key)-1]) == name
	}
	return jsonscan.Unquote(key) == name
}

// stringValue returns the value of a JSON string (quotes included), and
// false when v is not a string.
func stringValue(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	return jsonscan.Unquote(v), true
}

// objectMeta is what the Collector reads of an object's body.
type objectMeta struct {
	kind, apiVersion                      string
	name, namespace, uid, resourceVersion string
	// hasKind and hasAPIVersion: the key is present (whatever its value).
	hasKind, hasAPIVersion bool
	// annotations is the raw metadata.annotations value, read only for
	// bookmarks.
	annotations []byte
}

// readObjectMeta checks that data is one JSON object and reads its
// objectMeta. Fields of an unexpected type read as empty, as they do
// through unstructured.Unstructured's getters.
func readObjectMeta(data []byte) (objectMeta, error) {
	var m objectMeta
	err := jsonscan.TopObject(data, func(key []byte, start, room int) (int, error) {
		switch {
		case keyIs(key, "kind"):
			m.hasKind = true
			return stringMember(data, start, room, &m.kind)
		case keyIs(key, "apiVersion"):
			m.hasAPIVersion = true
			return stringMember(data, start, room, &m.apiVersion)
		case keyIs(key, "metadata") && at(data, start) == '{':
			m.name, m.namespace, m.uid, m.resourceVersion, m.annotations = "", "", "", "", nil
			return jsonscan.Object(data, start, room, func(key []byte, start, room int) (int, error) {
				switch {
				case keyIs(key, "name"):
					return stringMember(data, start, room, &m.name)
				case keyIs(key, "namespace"):
					return stringMember(data, start, room, &m.namespace)
				case keyIs(key, "uid"):
					return stringMember(data, start, room, &m.uid)
				case keyIs(key, "resourceVersion"):
					return stringMember(data, start, room, &m.resourceVersion)
				case keyIs(key, "annotations"):
					end, err := jsonscan.Skip(data, start, room)
					if err == nil {
						m.annotations = data[start:end]
					}
					return end, err
				}
				return jsonscan.Skip(data, start, room)
			})
		case keyIs(key, "metadata"):
			m.name, m.namespace, m.uid, m.resourceVersion, m.annotations = "", "", "", "", nil
		}
		return jsonscan.Skip(data, start, room)
	})
	return m, err
}

// annotation returns the value of one annotation of m, read from the raw
// annotations.
func (m *objectMeta) annotation(name string) (string, error) {
	if len(m.annotations) == 0 || m.annotations[0] != '{' {
		return "", nil
	}
	var ann map[string]string
	if err := json.Unmarshal(m.annotations, &ann); err != nil {
		return "", fmt.Errorf("annotations: %w", err)
	}
	return ann[name], nil
}

// listPage is one page of a list as the server sent it: items are spans
// of body.
type listPage struct {
	resourceVersion string
	continueToken   string
	items           [][]byte
}

// readListPage checks that body is one JSON object and reads a list's
// metadata.resourceVersion, metadata.continue and items (each a slice of
// body that cannot be appended to in place).
func readListPage(body []byte) (listPage, error) {
	var p listPage
	err := jsonscan.TopObject(body, func(key []byte, start, room int) (int, error) {
		switch {
		case keyIs(key, "metadata") && at(body, start) == '{':
			p.resourceVersion, p.continueToken = "", ""
			return jsonscan.Object(body, start, room, func(key []byte, start, room int) (int, error) {
				switch {
				case keyIs(key, "resourceVersion"):
					return stringMember(body, start, room, &p.resourceVersion)
				case keyIs(key, "continue"):
					return stringMember(body, start, room, &p.continueToken)
				}
				return jsonscan.Skip(body, start, room)
			})
		case keyIs(key, "metadata"):
			p.resourceVersion, p.continueToken = "", ""
		case keyIs(key, "items") && at(body, start) == '[':
			p.items = nil
			return jsonscan.Array(body, start, room, func(start, room int) (int, error) {
				end, err := jsonscan.Skip(body, start, room)
				if err != nil {
					return 0, err
				}
				if body[start] != '{' {
					return 0, fmt.Errorf("list item %d is not a JSON object", len(p.items))
				}
				p.items = append(p.items, body[start:end:end])
				return end, nil
			})
		case keyIs(key, "items"):
			p.items = nil
		}
		return jsonscan.Skip(body, start, room)
	})
	return p, err
}

// readWatchEvent checks that frame is one JSON object and reads a watch
// event's type and object (a slice of frame).
func readWatchEvent(frame []byte) (typ string, object []byte, err error) {
	err = jsonscan.TopObject(frame, func(key []byte, start, room int) (int, error) {
		switch {
		case keyIs(key, "type"):
			return stringMember(frame, start, room, &typ)
		case keyIs(key, "object"):
			end, err := jsonscan.Skip(frame, start, room)
			if err == nil {
				object = frame[start:end]
			}
			return end, err
		}
		return jsonscan.Skip(frame, start, room)
	})
	return typ, object, err
}

// withTypeMeta returns obj (a JSON object) with "kind" and "apiVersion"
// members inserted first when m says they are missing, as they are from
// the items of a built-in type's list. The rest of obj is kept byte for
// byte, so the result is what a GET of the object returns.
func withTypeMeta(obj []byte, m objectMeta, kind, apiVersion string) ([]byte, error) {
	if m.hasKind && m.hasAPIVersion {
		return obj, nil
	}
	var head bytes.Buffer
	head.Grow(len(obj) + len(kind) + len(apiVersion) + 32)
	head.WriteByte('{')
	sep := ""
	for _, f := range []struct {
		name, value string
		has         bool
	}{{"kind", kind, m.hasKind}, {"apiVersion", apiVersion, m.hasAPIVersion}} {
		if f.has {
			continue
		}
		v, err := json.Marshal(f.value)
		if err != nil {
			return nil, err
		}
		head.WriteString(sep + `"` + f.name + `":`)
		head.Write(v)
		sep = ","
	}
	rest := obj[1:]
	if j := jsonscan.Space(rest, 0); j < len(rest) && rest[j] != '}' {
		head.WriteByte(',')
	}
	head.Write(rest)
	return head.Bytes(), nil
}

// at returns data[i], or 0 past the end of data.
func at(data []byte, i int) byte {
	if i < len(data) {
		return data[i]
	}
	return 0
}

// rawFramer frames a JSON watch stream into events with the scanner above:
// each frame is one JSON object, checked but not decoded. It replaces
// client-go's JSON framer, which runs encoding/json's scanner twice over
// every event.
type rawFramer struct{}

// NewFrameWriter implements runtime.Framer; JSON values frame themselves.
func (rawFramer) NewFrameWriter(w io.Writer) io.Writer { return w }

// NewFrameReader implements runtime.Framer.
func (rawFramer) NewFrameReader(r io.ReadCloser) io.ReadCloser { return &rawFrameReader{r: r} }

// rawFrameMinRead is the free space a read from the stream gets at first;
// every read gets at least half of it.
const rawFrameMinRead = 32 << 10

// rawFrameReader returns one frame per Read, as client-go's JSON frame
// reader does: a frame longer than the caller's buffer is returned in
// parts, each but the last with io.ErrShortBuffer. At the end of the stream
// it returns io.EOF between frames and io.ErrUnexpectedEOF inside one.
type rawFrameReader struct {
	r         io.ReadCloser
	buf       []byte // buf[start:] is read from r and not returned yet
	start     int
	readErr   error  // the error r returned, once buf holds no frame
	remaining []byte // the rest of a frame the caller's buffer could not hold
	// end follows the brackets of the frame at buf[start:] across reads,
	// so that the frame is checked (jsonscan.Skip) when they close, not after
	// every read: a long frame that arrives in many small reads is
	// scanned a bounded number of times, not once a read.
	end frameEnd
}

func (f *rawFrameReader) Read(data []byte) (int, error) {
	frame := f.remaining
	if len(frame) == 0 {
		var err error
		if frame, err = f.next(); err != nil {
			return 0, err
		}
	}
	n := copy(data, frame)
	if n < len(frame) {
		f.remaining = append(f.remaining[:0:0], frame[n:]...)
		return n, io.ErrShortBuffer
	}
	f.remaining = nil
	return n, nil
}

// next returns the next frame; it is valid until the next call.
func (f *rawFrameReader) next() ([]byte, error) {
	for {
		i := jsonscan.Space(f.buf, f.start)
		f.start = i
		if i < len(f.buf) {
			if f.buf[i] != '{' {
				return nil, fmt.Errorf("watch stream: unexpected %q at offset %d, want a JSON object", f.buf[i], i)
			}
			if f.end.mayClose(f.buf[i:]) || f.readErr != nil {
				end, err := jsonscan.Skip(f.buf, i, jsonscan.MaxDepth)
				if err == nil {
					f.start, f.end = end, frameEnd{}
					return f.buf[i:end], nil
				}
				var se *jsonscan.SyntaxError
				if !errors.As(err, &se) || se.Offset < len(f.buf) {
					return nil, fmt.Errorf("watch stream: %w", err)
				}
				// The frame is cut short: read more, unless the stream ended.
				if f.readErr == io.EOF {
					return nil, io.ErrUnexpectedEOF
				}
			}
		}
		if f.readErr != nil {
			return nil, f.readErr
		}
		// Keep the unreturned bytes, and double the buffer when it has
		// less than half of rawFrameMinRead free, so that a long frame
		// that arrives in many reads is copied a bounded number of times.
		n := len(f.buf) - f.start
		if f.start > 0 {
			copy(f.buf, f.buf[f.start:])
			f.buf, f.start = f.buf[:n], 0
		}
		if cap(f.buf)-n < rawFrameMinRead/2 {
			grown := make([]byte, n, max(2*cap(f.buf), n+rawFrameMinRead))
			copy(grown, f.buf)
			f.buf = grown
		}
		m, err := f.r.Read(f.buf[n:cap(f.buf)])
		f.buf = f.buf[:n+m]
		if err != nil {
			f.readErr = err
		}
	}
}

// frameEnd follows the brackets of a frame (a JSON object) as its bytes
// arrive, outside strings, to tell when the frame may be complete. It does
// not check the frame; jsonscan.Skip does, when mayClose says so.
type frameEnd struct {
	scanned  int // bytes of the frame followed so far
	depth    int // brackets open after them
	inString bool
	escaped  bool // the last byte was a backslash in a string
	checked  int  // the frame's length at the last check
}

// mayClose follows frame (the frame's bytes read so far, from its opening
// brace) from where it stopped and reports whether the frame must be
// checked now: its brackets closed, or it doubled in length since the last
// check (which finds a syntax error within twice the bytes it is at, as a
// check after every read would, at a bounded cost).
func (e *frameEnd) mayClose(frame []byte) bool {
	for ; e.scanned < len(frame); e.scanned++ {
		c := frame[e.scanned]
		switch {
		case e.escaped:
			e.escaped = false
		case e.inString:
			e.inString, e.escaped = c != '"', c == '\\'
		case c == '"':
			e.inString = true
		case c == '{' || c == '[':
			e.depth++
		case c == '}' || c == ']':
			if e.depth--; e.depth <= 0 {
				e.scanned++
				e.checked = len(frame)
				return true
			}
		}
	}
	if len(frame) >= 2*e.checked {
		e.checked = len(frame)
		return true
	}
	return false
}

// Close closes the stream.
func (f *rawFrameReader) Close() error { return f.r.Close() }
