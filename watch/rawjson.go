package watch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// This file reads the few fields the Collector needs from JSON bodies as the
// API server sent them, without decoding the rest: a list page's
// resourceVersion, continue token and items, a watch event's type and
// object, and an object's kind, apiVersion and identifying metadata. Every
// byte is still checked, so a body that is not valid JSON (by the rules of
// encoding/json.Valid) is an error, never a record.

// maxJSONDepth bounds the nesting of a body, as encoding/json does.
const maxJSONDepth = 10000

var errJSONDepth = errors.New("exceeded max depth")

// jsonSyntaxError says where a body stops being valid JSON.
type jsonSyntaxError struct {
	offset int
	msg    string
}

func (e *jsonSyntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at offset %d: %s", e.offset, e.msg)
}

func syntaxErr(data []byte, i int, what string) error {
	if i >= len(data) {
		return &jsonSyntaxError{offset: i, msg: "unexpected end of input, want " + what}
	}
	return &jsonSyntaxError{offset: i, msg: fmt.Sprintf("unexpected %q, want %s", data[i], what)}
}

func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// skipValue checks the JSON value starting at data[i] (no leading space)
// and returns the index just after it.
func skipValue(data []byte, i, depth int) (int, error) {
	if i >= len(data) {
		return 0, syntaxErr(data, i, "a value")
	}
	switch c := data[i]; {
	case c == '{':
		return scanObject(data, i, depth+1, nil)
	case c == '[':
		return skipArray(data, i, depth+1)
	case c == '"':
		return skipString(data, i)
	case c == '-' || (c >= '0' && c <= '9'):
		return skipNumber(data, i)
	case c == 't':
		return skipLiteral(data, i, "true")
	case c == 'f':
		return skipLiteral(data, i, "false")
	case c == 'n':
		return skipLiteral(data, i, "null")
	}
	return 0, syntaxErr(data, i, "a value")
}

func skipLiteral(data []byte, i int, lit string) (int, error) {
	if !bytes.HasPrefix(data[i:], []byte(lit)) {
		if bytes.HasPrefix([]byte(lit), data[i:]) {
			// Cut short: the error is at the end, like every other
			// error of a truncated value (see rawFrameReader).
			return 0, syntaxErr(data, len(data), lit)
		}
		return 0, syntaxErr(data, i, lit)
	}
	return i + len(lit), nil
}

// skipString checks the string starting at data[i] ('"') and returns the
// index just after its closing quote.
func skipString(data []byte, i int) (int, error) {
	for j := i + 1; j < len(data); {
		switch c := data[j]; {
		case c == '"':
			return j + 1, nil
		case c == '\\':
			if j+1 >= len(data) {
				return 0, syntaxErr(data, j+1, "an escape")
			}
			switch data[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				for k := j + 2; k < j+6; k++ {
					if k >= len(data) || !isHex(data[k]) {
						return 0, syntaxErr(data, k, "a hex digit")
					}
				}
				j += 6
			default:
				return 0, syntaxErr(data, j+1, "an escape")
			}
		case c < 0x20:
			return 0, syntaxErr(data, j, "a string character")
		default:
			j++
		}
	}
	return 0, syntaxErr(data, len(data), "the end of a string")
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// skipNumber checks the number starting at data[i] and returns the index
// just after it.
func skipNumber(data []byte, i int) (int, error) {
	j := i
	if data[j] == '-' {
		j++
	}
	switch {
	case j < len(data) && data[j] == '0':
		j++
	case j < len(data) && data[j] >= '1' && data[j] <= '9':
		for j < len(data) && isDigit(data[j]) {
			j++
		}
	default:
		return 0, syntaxErr(data, j, "a digit")
	}
	if j < len(data) && data[j] == '.' {
		j++
		if j >= len(data) || !isDigit(data[j]) {
			return 0, syntaxErr(data, j, "a digit")
		}
		for j < len(data) && isDigit(data[j]) {
			j++
		}
	}
	if j < len(data) && (data[j] == 'e' || data[j] == 'E') {
		j++
		if j < len(data) && (data[j] == '+' || data[j] == '-') {
			j++
		}
		if j >= len(data) || !isDigit(data[j]) {
			return 0, syntaxErr(data, j, "a digit")
		}
		for j < len(data) && isDigit(data[j]) {
			j++
		}
	}
	return j, nil
}

func skipArray(data []byte, i, depth int) (int, error) {
	_, end, err := scanArray(data, i, depth, false)
	return end, err
}

// scanArray checks the array starting at data[i] ('[') and returns the
// index just after it, and with spans the [start, end) of its elements.
func scanArray(data []byte, i, depth int, spans bool) ([][2]int, int, error) {
	if depth > maxJSONDepth {
		return nil, 0, errJSONDepth
	}
	var elems [][2]int
	j := skipSpace(data, i+1)
	if j < len(data) && data[j] == ']' {
		return elems, j + 1, nil
	}
	for {
		end, err := skipValue(data, j, depth)
		if err != nil {
			return nil, 0, err
		}
		if spans {
			elems = append(elems, [2]int{j, end})
		}
		j = skipSpace(data, end)
		if j >= len(data) {
			return nil, 0, syntaxErr(data, j, "',' or ']'")
		}
		switch data[j] {
		case ',':
			j = skipSpace(data, j+1)
		case ']':
			return elems, j + 1, nil
		default:
			return nil, 0, syntaxErr(data, j, "',' or ']'")
		}
	}
}

// memberFunc is called by scanObject for each member of an object with the
// key (quotes included) and the start of its value at nesting depth; it
// checks the value (skipValue when it has no use for it) and returns the
// index just after it.
type memberFunc func(key []byte, start, depth int) (end int, err error)

// scanObject checks the object starting at data[i] ('{') and returns the
// index just after it. member, when not nil, checks each member's value.
func scanObject(data []byte, i, depth int, member memberFunc) (int, error) {
	if depth > maxJSONDepth {
		return 0, errJSONDepth
	}
	j := skipSpace(data, i+1)
	if j < len(data) && data[j] == '}' {
		return j + 1, nil
	}
	for {
		if j >= len(data) || data[j] != '"' {
			return 0, syntaxErr(data, j, "a key")
		}
		keyEnd, err := skipString(data, j)
		if err != nil {
			return 0, err
		}
		key := data[j:keyEnd]
		j = skipSpace(data, keyEnd)
		if j >= len(data) || data[j] != ':' {
			return 0, syntaxErr(data, j, "':'")
		}
		j = skipSpace(data, j+1)
		var end int
		if member != nil {
			end, err = member(key, j, depth)
		} else {
			end, err = skipValue(data, j, depth)
		}
		if err != nil {
			return 0, err
		}
		j = skipSpace(data, end)
		if j >= len(data) {
			return 0, syntaxErr(data, j, "',' or '}'")
		}
		switch data[j] {
		case ',':
			j = skipSpace(data, j+1)
		case '}':
			return j + 1, nil
		default:
			return 0, syntaxErr(data, j, "',' or '}'")
		}
	}
}

// stringMember checks the value at data[start] and, when it is a string,
// stores it in *dst; a value of another type stores "".
func stringMember(data []byte, start, depth int, dst *string) (int, error) {
	end, err := skipValue(data, start, depth)
	if err == nil {
		*dst, _ = stringValue(data[start:end])
	}
	return end, err
}

// scanTopObject checks that data is one JSON object, with nothing but space
// around it, and calls member for each of its members.
func scanTopObject(data []byte, member memberFunc) error {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return syntaxErr(data, i, "a JSON object")
	}
	end, err := scanObject(data, i, 1, member)
	if err != nil {
		return err
	}
	if j := skipSpace(data, end); j != len(data) {
		return syntaxErr(data, j, "the end of the input")
	}
	return nil
}

// keyIs says whether key (a JSON string, quotes included) is name. Keys
// match case-sensitively, as in Kubernetes' own decoding.
func keyIs(key []byte, name string) bool {
	if bytes.IndexByte(key, '\\') < 0 {
		return string(key[1:len(key)-1]) == name
	}
	var s string
	return json.Unmarshal(key, &s) == nil && s == name
}

// stringValue returns the value of a JSON string (quotes included), and
// false when v is not a string.
func stringValue(v []byte) (string, bool) {
	if len(v) < 2 || v[0] != '"' {
		return "", false
	}
	if bytes.IndexByte(v, '\\') < 0 {
		return string(v[1 : len(v)-1]), true
	}
	var s string
	if json.Unmarshal(v, &s) != nil {
		return "", false
	}
	return s, true
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
	err := scanTopObject(data, func(key []byte, start, depth int) (int, error) {
		switch {
		case keyIs(key, "kind"):
			m.hasKind = true
			return stringMember(data, start, depth, &m.kind)
		case keyIs(key, "apiVersion"):
			m.hasAPIVersion = true
			return stringMember(data, start, depth, &m.apiVersion)
		case keyIs(key, "metadata") && at(data, start) == '{':
			m.name, m.namespace, m.uid, m.resourceVersion, m.annotations = "", "", "", "", nil
			return scanObject(data, start, depth+1, func(key []byte, start, depth int) (int, error) {
				switch {
				case keyIs(key, "name"):
					return stringMember(data, start, depth, &m.name)
				case keyIs(key, "namespace"):
					return stringMember(data, start, depth, &m.namespace)
				case keyIs(key, "uid"):
					return stringMember(data, start, depth, &m.uid)
				case keyIs(key, "resourceVersion"):
					return stringMember(data, start, depth, &m.resourceVersion)
				case keyIs(key, "annotations"):
					end, err := skipValue(data, start, depth)
					if err == nil {
						m.annotations = data[start:end]
					}
					return end, err
				}
				return skipValue(data, start, depth)
			})
		case keyIs(key, "metadata"):
			m.name, m.namespace, m.uid, m.resourceVersion, m.annotations = "", "", "", "", nil
		}
		return skipValue(data, start, depth)
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
	err := scanTopObject(body, func(key []byte, start, depth int) (int, error) {
		switch {
		case keyIs(key, "metadata") && at(body, start) == '{':
			p.resourceVersion, p.continueToken = "", ""
			return scanObject(body, start, depth+1, func(key []byte, start, depth int) (int, error) {
				switch {
				case keyIs(key, "resourceVersion"):
					return stringMember(body, start, depth, &p.resourceVersion)
				case keyIs(key, "continue"):
					return stringMember(body, start, depth, &p.continueToken)
				}
				return skipValue(body, start, depth)
			})
		case keyIs(key, "metadata"):
			p.resourceVersion, p.continueToken = "", ""
		case keyIs(key, "items") && at(body, start) == '[':
			spans, end, err := scanArray(body, start, depth+1, true)
			if err != nil {
				return 0, err
			}
			p.items = make([][]byte, len(spans))
			for i, s := range spans {
				if body[s[0]] != '{' {
					return 0, fmt.Errorf("list item %d is not a JSON object", i)
				}
				p.items[i] = body[s[0]:s[1]:s[1]]
			}
			return end, nil
		case keyIs(key, "items"):
			p.items = nil
		}
		return skipValue(body, start, depth)
	})
	return p, err
}

// readWatchEvent checks that frame is one JSON object and reads a watch
// event's type and object (a slice of frame).
func readWatchEvent(frame []byte) (typ string, object []byte, err error) {
	err = scanTopObject(frame, func(key []byte, start, depth int) (int, error) {
		switch {
		case keyIs(key, "type"):
			return stringMember(frame, start, depth, &typ)
		case keyIs(key, "object"):
			end, err := skipValue(frame, start, depth)
			if err == nil {
				object = frame[start:end]
			}
			return end, err
		}
		return skipValue(frame, start, depth)
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
	if j := skipSpace(rest, 0); j < len(rest) && rest[j] != '}' {
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
	// so that the frame is checked (skipValue) when they close, not after
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
		i := skipSpace(f.buf, f.start)
		f.start = i
		if i < len(f.buf) {
			if f.buf[i] != '{' {
				return nil, fmt.Errorf("watch stream: %w", syntaxErr(f.buf, i, "a JSON object"))
			}
			if f.end.mayClose(f.buf[i:]) || f.readErr != nil {
				end, err := skipValue(f.buf, i, 0)
				if err == nil {
					f.start, f.end = end, frameEnd{}
					return f.buf[i:end], nil
				}
				var se *jsonSyntaxError
				if !errors.As(err, &se) || se.offset < len(f.buf) {
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
// not check the frame; skipValue does, when mayClose says so.
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
