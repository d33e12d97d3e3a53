package transfer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"
	"unicode/utf8"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/journal"
)

// header is the first line: {"krplyExport":{...}}.
type header struct {
	Format   string     `json:"format"`
	Version  int        `json:"version"`
	Clusters []string   `json:"clusters"`
	Since    *time.Time `json:"since,omitempty"`
	Until    *time.Time `json:"until,omitempty"`
}

// trailer is the last line: {"end":{...}}.
type trailer struct {
	Records int64 `json:"records"`
	Streams int   `json:"streams"`
}

// line is any line of the stream. A record line is an event.Record; the
// other kinds are objects with one key.
type line struct {
	event.Record
	ObjectBase64 []byte                `json:"objectBase64,omitempty"`
	Header       *header               `json:"krplyExport,omitempty"`
	Stream       *storage.StreamStatus `json:"stream,omitempty"`
	End          *trailer              `json:"end,omitempty"`
}

// appendRecordLine appends rec as one line (with its newline) to buf. The
// body goes in verbatim as "object" when that keeps it byte for byte —
// valid JSON, valid UTF-8, on one line, without surrounding whitespace —
// and as "objectBase64" otherwise. IngestSeq is left out: the importing
// store assigns its own, in the same order.
func appendRecordLine(buf []byte, rec event.Record) ([]byte, error) {
	body := rec.Object
	rec.Object = nil
	rec.IngestSeq = 0
	journal.InUTC(&rec)
	var extra []byte
	if len(body) > 0 && !embeddable(body) {
		b64, err := json.Marshal([]byte(body)) // base64
		if err != nil {
			return buf, err
		}
		extra = append(append([]byte(`,"objectBase64":`), b64...), '}')
		body = nil
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return buf, fmt.Errorf("transfer: encode record %q: %w", rec.EventID, err)
	}
	switch {
	case extra != nil:
		buf = append(append(buf, data[:len(data)-1]...), extra...)
	case len(body) > 0:
		buf = append(append(buf, data[:len(data)-1]...), `,"object":`...)
		buf = append(append(buf, body...), '}')
	default:
		buf = append(buf, data...)
	}
	return append(buf, '\n'), nil
}

// embeddable reports whether body can be written into a line as JSON and
// read back byte for byte.
func embeddable(body []byte) bool {
	if bytes.IndexAny(body, "\n\r") >= 0 || !utf8.Valid(body) {
		return false
	}
	switch body[0] {
	case ' ', '\t':
		return false
	}
	switch body[len(body)-1] {
	case ' ', '\t':
		return false
	}
	return json.Valid(body)
}

func marshalLine(key string, v any) ([]byte, error) {
	data, err := json.Marshal(map[string]any{key: v})
	if err != nil {
		return nil, fmt.Errorf("transfer: encode %s line: %w", key, err)
	}
	return append(data, '\n'), nil
}

// lineReader reads the lines of a stream, counting them and their bytes.
type lineReader struct {
	r     *bufio.Reader
	buf   []byte
	line  int64
	bytes int64
}

func newLineReader(r io.Reader) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 1<<20)}
}

// next returns the next line without its newline, valid until the next
// call; io.EOF after the last. A last line without a newline is an error:
// the stream was cut.
func (lr *lineReader) next() ([]byte, error) {
	lr.buf = lr.buf[:0]
	for {
		chunk, err := lr.r.ReadSlice('\n')
		lr.buf = append(lr.buf, chunk...)
		switch {
		case err == nil:
			lr.line++
			lr.bytes += int64(len(lr.buf))
			return lr.buf[:len(lr.buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(lr.buf) == 0:
			return nil, io.EOF
		case errors.Is(err, io.EOF):
			lr.line++
			return nil, fmt.Errorf("%w: the line ends without a newline after %d bytes: the stream was cut short", ErrInvalidStream, len(lr.buf))
		default:
			lr.line++
			return nil, fmt.Errorf("transfer: read: %w", err)
		}
	}
}

// objectKey is how a record line written by Export holds its body: the
// last key. Inside a JSON string a quote is escaped, so the first place
// these bytes occur is a key.
var objectKey = []byte(`,"object":`)

// parseLine decodes one line strictly: unknown keys are an error.
func parseLine(data []byte) (*line, error) {
	if l := parseRecordLine(data); l != nil {
		return l, nil
	}
	return parseAny(data)
}

// parseRecordLine decodes a record line as Export writes it, with its
// body last, decoding what precedes the body and checking the body as
// JSON, instead of decoding the whole line: twice as fast for a line that
// is mostly body. It returns nil for any other line, which parseAny then
// decodes (and rejects, when it is wrong) as a whole.
func parseRecordLine(data []byte) *line {
	i := bytes.Index(data, objectKey)
	if i < 0 || len(data) < i+len(objectKey)+2 || data[len(data)-1] != '}' {
		return nil
	}
	body := data[i+len(objectKey) : len(data)-1]
	if !embeddable(body) {
		return nil
	}
	head := make([]byte, 0, i+1)
	head = append(append(head, data[:i]...), '}')
	l, err := parseAny(head)
	if err != nil || l.Type == "" || l.Object != nil || l.ObjectBase64 != nil {
		return nil
	}
	l.Object = bytes.Clone(body)
	return l
}

// parseAny decodes any line as a whole.
func parseAny(data []byte) (*line, error) {
	var l line
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("%w: not a line of an export: %s", ErrInvalidStream, jsonProblem(err))
	}
	if dec.More() {
		return nil, fmt.Errorf("%w: more than one JSON value on the line", ErrInvalidStream)
	}
	kinds := 0
	for _, set := range []bool{l.Header != nil, l.Stream != nil, l.End != nil, l.Type != "" || l.EventID != ""} {
		if set {
			kinds++
		}
	}
	switch {
	case kinds == 0:
		return nil, fmt.Errorf("%w: the line is neither a header, a record, a stream nor a trailer", ErrInvalidStream)
	case kinds > 1:
		return nil, fmt.Errorf("%w: the line mixes a record, a header, a stream or a trailer", ErrInvalidStream)
	case l.IngestSeq != 0:
		return nil, fmt.Errorf("%w: record %q has an ingestSeq: the importing journal assigns those", ErrInvalidStream, l.EventID)
	case l.ObjectBase64 != nil && l.Object != nil:
		return nil, fmt.Errorf("%w: record %q has both object and objectBase64", ErrInvalidStream, l.EventID)
	case l.ObjectBase64 != nil:
		l.Object = l.ObjectBase64
		l.ObjectBase64 = nil
	}
	return &l, nil
}
