package audit

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/krply/krply/storage"
)

// Sentinel errors of the readers. A *LineError wraps ErrMalformed or
// ErrTooLarge.
var (
	// ErrMalformed: a line (or EventList item) is not an audit.k8s.io/v1
	// Event: not JSON, the wrong kind or apiVersion, or missing the
	// auditID, stage, verb or requestReceivedTimestamp.
	ErrMalformed = errors.New("audit: malformed event")
	// ErrTooLarge: a line (or EventList item) is longer than the maximum
	// event size (WithMaxEventBytes).
	ErrTooLarge = errors.New("audit: event too large")
	// ErrInvalidArgument: an argument or option has a value that cannot
	// work. It is storage.ErrInvalidArgument, the sentinel of every krply
	// package.
	ErrInvalidArgument = storage.ErrInvalidArgument
)

// DefaultMaxEventBytes is the default of WithMaxEventBytes: 4 MiB, room for
// a RequestResponse event of a 1.5 MiB object (etcd's default request
// limit) in both the request and the response.
const DefaultMaxEventBytes = 4 << 20

// LineError reports one line (or EventList item) that is not a usable audit
// event. It is not fatal: the Source goes on with the next line.
type LineError struct {
	// Source names the input: the file name, or the name given to the
	// reader.
	Source string
	// Line is the 1-based line number, or for an EventList the 1-based
	// item number.
	Line int64
	// Bytes is the length of the line or item.
	Bytes int64
	// Err says what is wrong; it wraps ErrMalformed or ErrTooLarge.
	Err error
}

// Error implements error.
func (e *LineError) Error() string {
	return fmt.Sprintf("%s:%d: %v", e.Source, e.Line, e.Err)
}

// Unwrap returns e.Err.
func (e *LineError) Unwrap() error { return e.Err }

type lineErrorJSON struct {
	Source string `json:"source"`
	Line   int64  `json:"line"`
	Bytes  int64  `json:"bytes"`
	Error  string `json:"error"`
}

// MarshalJSON writes the error as its message.
func (e LineError) MarshalJSON() ([]byte, error) {
	msg := ""
	if e.Err != nil {
		msg = e.Err.Error()
	}
	return json.Marshal(lineErrorJSON{e.Source, e.Line, e.Bytes, msg})
}

// UnmarshalJSON reads what MarshalJSON wrote; Err keeps the message only.
func (e *LineError) UnmarshalJSON(data []byte) error {
	var v lineErrorJSON
	if err := json.Unmarshal(data, &v); err != nil {
		return err
	}
	*e = LineError{Source: v.Source, Line: v.Line, Bytes: v.Bytes, Err: errors.New(v.Error)}
	return nil
}

// Source yields audit events one at a time.
//
// Next returns io.EOF after the last event. An error that is a *LineError
// (check with errors.As) is not fatal: the line was counted and skipped, and
// the next call goes on. Any other error is fatal.
type Source interface {
	Next(ctx context.Context) (Event, error)
}

// ReadOption configures a reader.
type ReadOption interface {
	applyRead(*readConfig)
}

type readConfig struct {
	maxEventBytes int
}

type readOptionFunc func(*readConfig)

func (f readOptionFunc) applyRead(c *readConfig) { f(c) }

// WithMaxEventBytes caps the size of one line or EventList item (default
// DefaultMaxEventBytes). A longer line is reported as a *LineError wrapping
// ErrTooLarge and skipped; the reader never holds more than about this
// much of it in memory.
func WithMaxEventBytes(n int) ReadOption {
	return readOptionFunc(func(c *readConfig) { c.maxEventBytes = n })
}

func newReadConfig(opts []ReadOption) (readConfig, error) {
	c := readConfig{maxEventBytes: DefaultMaxEventBytes}
	for _, o := range opts {
		if o != nil {
			o.applyRead(&c)
		}
	}
	if c.maxEventBytes <= 0 {
		return c, fmt.Errorf("audit: %w: max event size %d, want > 0", ErrInvalidArgument, c.maxEventBytes)
	}
	return c, nil
}

// chunkSize is the read buffer of the line reader; longer lines are
// assembled from chunks, up to the maximum event size.
const chunkSize = 64 << 10

// Reader reads JSON lines, one audit event per line, as the API server's
// log backend writes them (--audit-log-format=json). Gzip-compressed input
// (a rotated file compressed by the log backend) is detected by its magic
// bytes and decompressed transparently. Blank lines are ignored.
//
// Memory stays bounded by the maximum event size, whatever the input size.
// A Reader is not safe for concurrent use.
type Reader struct {
	name   string
	src    io.Reader
	br     *bufio.Reader
	gz     *gzip.Reader
	max    int
	line   int64
	buf    []byte
	closed bool
}

// NewReader returns a Reader of r. name identifies r in errors (a file
// name, "stdin", …).
func NewReader(r io.Reader, name string, opts ...ReadOption) (*Reader, error) {
	cfg, err := newReadConfig(opts)
	if err != nil {
		return nil, err
	}
	return &Reader{name: name, src: r, max: cfg.maxEventBytes}, nil
}

// Line returns the number of the last line read.
func (r *Reader) Line() int64 { return r.line }

// Next returns the next event; see Source.
func (r *Reader) Next(ctx context.Context) (Event, error) {
	if r.br == nil {
		if err := r.start(); err != nil {
			return Event{}, err
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return Event{}, err
		}
		line, size, tooLong, err := r.readLine()
		if err != nil {
			if err == io.EOF {
				return Event{}, io.EOF
			}
			return Event{}, fmt.Errorf("audit: read %s after line %d: %w", r.name, r.line, err)
		}
		r.line++
		if tooLong {
			return Event{}, &LineError{Source: r.name, Line: r.line, Bytes: size,
				Err: fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, size, r.max)}
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		evt, err := decodeEvent(line, "Event")
		if err != nil {
			return Event{}, &LineError{Source: r.name, Line: r.line, Bytes: size, Err: err}
		}
		return evt, nil
	}
}

// start detects gzip input.
func (r *Reader) start() error {
	r.br = bufio.NewReaderSize(r.src, chunkSize)
	magic, err := r.br.Peek(2)
	if err != nil || magic[0] != 0x1f || magic[1] != 0x8b {
		return nil // plain text, or too short to be gzip: readLine reports it
	}
	gz, err := gzip.NewReader(r.br)
	if err != nil {
		return fmt.Errorf("audit: read %s: gzip: %w", r.name, err)
	}
	r.gz = gz
	r.br = bufio.NewReaderSize(gz, chunkSize)
	return nil
}

// readLine returns the next line without its newline. A line longer than
// the maximum is consumed to its end but not kept (tooLong). size is the
// line's length as read.
func (r *Reader) readLine() (line []byte, size int64, tooLong bool, err error) {
	r.buf = r.buf[:0]
	for {
		chunk, err := r.br.ReadSlice('\n')
		size += int64(len(chunk))
		content := bytes.TrimSuffix(chunk, []byte{'\n'})
		if !tooLong {
			if len(r.buf)+len(content) > r.max {
				tooLong = true
				r.buf = r.buf[:0]
			} else {
				r.grow(len(content))
				r.buf = append(r.buf, content...)
			}
		}
		switch {
		case err == bufio.ErrBufferFull:
			continue
		case err == io.EOF:
			if size == 0 {
				return nil, 0, false, io.EOF
			}
			return r.buf, size, tooLong, nil // last line without a newline
		case err != nil:
			return nil, size, false, err
		}
		return r.buf, size, tooLong, nil
	}
}

// grow makes room for n more bytes in the line buffer, never beyond the
// maximum event size (append alone would overshoot it).
func (r *Reader) grow(n int) {
	need := len(r.buf) + n
	if need <= cap(r.buf) {
		return
	}
	size := min(max(2*cap(r.buf), need, 512), r.max)
	buf := make([]byte, len(r.buf), size)
	copy(buf, r.buf)
	r.buf = buf
}

// decodeEvent decodes and checks one event. wantKind is "Event"; an empty
// kind or apiVersion is accepted (EventList items carry none).
func decodeEvent(data []byte, wantKind string) (Event, error) {
	var evt Event
	if err := json.Unmarshal(data, &evt); err != nil {
		if evt, err = decodeOtherTimes(data); err != nil {
			return Event{}, fmt.Errorf("%w: %v", ErrMalformed, err)
		}
	}
	switch {
	case evt.Kind != "" && evt.Kind != wantKind:
		return Event{}, fmt.Errorf("%w: kind %q, want %q", ErrMalformed, evt.Kind, wantKind)
	case evt.APIVersion != "" && !readableVersion(evt.APIVersion):
		return Event{}, fmt.Errorf("%w: apiVersion %q, want %q or %q", ErrMalformed, evt.APIVersion, APIVersion, APIVersionV1beta1)
	case evt.AuditID == "":
		return Event{}, fmt.Errorf("%w: no auditID", ErrMalformed)
	case evt.Stage == "":
		return Event{}, fmt.Errorf("%w: no stage", ErrMalformed)
	case evt.Verb == "":
		return Event{}, fmt.Errorf("%w: no verb", ErrMalformed)
	case evt.RequestReceivedTimestamp.IsZero():
		return Event{}, fmt.Errorf("%w: no requestReceivedTimestamp", ErrMalformed)
	}
	return evt, nil
}

// readableVersion reports whether events of apiVersion are read.
func readableVersion(apiVersion string) bool {
	return apiVersion == APIVersion || apiVersion == APIVersionV1beta1
}

// decodeOtherTimes decodes an event whose timestamps are RFC 3339 but not
// with the six fractional digits metav1.MicroTime reads (whole seconds,
// nanoseconds: written by other tools, or by hand), naming the event's
// apiVersion when they are not RFC 3339 at all.
func decodeOtherTimes(data []byte) (Event, error) {
	var evt struct {
		Event
		RequestReceivedTimestamp string `json:"requestReceivedTimestamp"`
		StageTimestamp           string `json:"stageTimestamp"`
	}
	if err := json.Unmarshal(data, &evt); err != nil {
		return Event{}, err
	}
	for _, ts := range []struct {
		name, value string
		to          *metav1.MicroTime
	}{
		{"requestReceivedTimestamp", evt.RequestReceivedTimestamp, &evt.Event.RequestReceivedTimestamp},
		{"stageTimestamp", evt.StageTimestamp, &evt.Event.StageTimestamp},
	} {
		if ts.value == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, ts.value)
		if err != nil {
			return Event{}, fmt.Errorf("apiVersion %q: %s %q is not an RFC 3339 time", evt.APIVersion, ts.name, ts.value)
		}
		*ts.to = metav1.NewMicroTime(t)
	}
	return evt.Event, nil
}

// FileReader reads audit log files in order, one after the other, each as
// a Reader does (JSON lines, gzip detected). Line errors name the file.
// The caller must Close it. A FileReader is not safe for concurrent use.
type FileReader struct {
	paths []string
	opts  []ReadOption
	next  int
	file  *os.File
	cur   *Reader
}

// OpenFiles returns a FileReader of the given files, read in the order
// given; RotatedFiles lists a log and its rotated backups oldest first.
// Files are opened one at a time as reading reaches them.
func OpenFiles(paths []string, opts ...ReadOption) (*FileReader, error) {
	if _, err := newReadConfig(opts); err != nil {
		return nil, err
	}
	return &FileReader{paths: append([]string(nil), paths...), opts: opts}, nil
}

// Next returns the next event; see Source. A file that cannot be opened or
// read (including a corrupt gzip stream) is a fatal error naming the file.
func (f *FileReader) Next(ctx context.Context) (Event, error) {
	for {
		if f.cur == nil {
			if f.next >= len(f.paths) {
				return Event{}, io.EOF
			}
			if err := ctx.Err(); err != nil {
				return Event{}, err
			}
			path := f.paths[f.next]
			f.next++
			file, err := os.Open(path)
			if err != nil {
				return Event{}, fmt.Errorf("audit: %w", err)
			}
			r, err := NewReader(file, path, f.opts...)
			if err != nil {
				file.Close()
				return Event{}, err
			}
			f.file, f.cur = file, r
		}
		evt, err := f.cur.Next(ctx)
		if err != io.EOF {
			return evt, err
		}
		if err := f.closeCurrent(); err != nil {
			return Event{}, err
		}
	}
}

func (f *FileReader) closeCurrent() error {
	if f.file == nil {
		return nil
	}
	err := f.file.Close()
	f.file, f.cur = nil, nil
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	return nil
}

// Close closes the file being read. It is safe to call more than once.
func (f *FileReader) Close() error {
	f.next = len(f.paths)
	return f.closeCurrent()
}

// rotatedTimeFormat is the timestamp the log backend (lumberjack) puts
// into the name of a rotated file: audit-2006-01-02T15-04-05.000.log.
const rotatedTimeFormat = "2006-01-02T15-04-05.000"

// RotatedFiles returns the rotated backups of the audit log at path, oldest
// first, followed by path itself when it exists. Backups are the files the
// log backend makes beside it: for "audit.log", "audit-<time>.log" and,
// with --audit-log-compress, "audit-<time>.log.gz", where <time> is
// 2006-01-02T15-04-05.000.
func RotatedFiles(path string) ([]string, error) {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	ext := filepath.Ext(base)
	prefix := strings.TrimSuffix(base, ext) + "-"
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("audit: rotated files of %s: %w", path, err)
	}
	type backup struct {
		path string
		at   time.Time
	}
	var backups []backup
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasPrefix(name, prefix) {
			continue
		}
		stamp := strings.TrimPrefix(name, prefix)
		stamp = strings.TrimSuffix(stamp, ".gz")
		if !strings.HasSuffix(stamp, ext) {
			continue
		}
		at, err := time.Parse(rotatedTimeFormat, strings.TrimSuffix(stamp, ext))
		if err != nil {
			continue
		}
		backups = append(backups, backup{filepath.Join(dir, name), at})
	}
	sort.SliceStable(backups, func(i, j int) bool {
		if !backups[i].at.Equal(backups[j].at) {
			return backups[i].at.Before(backups[j].at)
		}
		return backups[i].path < backups[j].path
	})
	out := make([]string, 0, len(backups)+1)
	for _, b := range backups {
		out = append(out, b.path)
	}
	if _, err := os.Stat(path); err == nil {
		out = append(out, path)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("audit: %w", err)
	}
	return out, nil
}

// ListReader reads an audit.k8s.io/v1 EventList, the body the webhook
// backend POSTs, one item at a time: the list is never held in memory as a
// whole. An item that is not a usable event is a *LineError whose Line is
// the item's number; a list that is not valid JSON is a fatal error
// wrapping ErrMalformed, since nothing after the damage can be trusted.
// A ListReader is not safe for concurrent use.
type ListReader struct {
	name    string
	dec     *json.Decoder
	max     int
	item    int64
	state   int // 0 before the list, 1 in items, 2 after items, 3 done
	sawList bool
}

// NewEventListReader returns a ListReader of r; name identifies r in
// errors.
func NewEventListReader(r io.Reader, name string, opts ...ReadOption) (*ListReader, error) {
	cfg, err := newReadConfig(opts)
	if err != nil {
		return nil, err
	}
	return &ListReader{name: name, dec: json.NewDecoder(r), max: cfg.maxEventBytes}, nil
}

// Next returns the next item; see Source.
func (l *ListReader) Next(ctx context.Context) (Event, error) {
	if err := ctx.Err(); err != nil {
		return Event{}, err
	}
	for {
		switch l.state {
		case 0:
			if err := l.expectDelim('{'); err != nil {
				return Event{}, err
			}
			l.state = 2
		case 1:
			if !l.dec.More() {
				if err := l.expectDelim(']'); err != nil {
					return Event{}, err
				}
				l.state = 2
				continue
			}
			var raw json.RawMessage
			if err := l.dec.Decode(&raw); err != nil {
				return Event{}, l.fatal(err)
			}
			l.item++
			if len(raw) > l.max {
				return Event{}, &LineError{Source: l.name, Line: l.item, Bytes: int64(len(raw)),
					Err: fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(raw), l.max)}
			}
			evt, err := decodeEvent(raw, "Event")
			if err != nil {
				return Event{}, &LineError{Source: l.name, Line: l.item, Bytes: int64(len(raw)), Err: err}
			}
			return evt, nil
		case 2:
			if !l.dec.More() {
				if err := l.expectDelim('}'); err != nil {
					return Event{}, err
				}
				l.state = 3
				continue
			}
			if err := l.field(); err != nil {
				return Event{}, err
			}
		default:
			if !l.sawList {
				return Event{}, fmt.Errorf("%w: %s: no items", ErrMalformed, l.name)
			}
			return Event{}, io.EOF
		}
	}
}

// field reads one member of the list object outside of items.
func (l *ListReader) field() error {
	tok, err := l.dec.Token()
	if err != nil {
		return l.fatal(err)
	}
	key, _ := tok.(string)
	if key == "items" {
		tok, err := l.dec.Token()
		if err != nil {
			return l.fatal(err)
		}
		if tok == nil { // "items": null is an empty list
			l.sawList = true
			return nil
		}
		if d, ok := tok.(json.Delim); !ok || d != '[' {
			return fmt.Errorf("%w: %s: items is not an array", ErrMalformed, l.name)
		}
		l.sawList = true
		l.state = 1
		return nil
	}
	var value json.RawMessage
	if err := l.dec.Decode(&value); err != nil {
		return l.fatal(err)
	}
	var s string
	switch key {
	case "kind":
		if json.Unmarshal(value, &s) != nil || s != "EventList" {
			return fmt.Errorf("%w: %s: kind %s, want \"EventList\"", ErrMalformed, l.name, value)
		}
	case "apiVersion":
		if json.Unmarshal(value, &s) != nil || !readableVersion(s) {
			return fmt.Errorf("%w: %s: apiVersion %s, want %q or %q", ErrMalformed, l.name, value, APIVersion, APIVersionV1beta1)
		}
	}
	return nil
}

func (l *ListReader) expectDelim(want json.Delim) error {
	tok, err := l.dec.Token()
	if err != nil {
		return l.fatal(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("%w: %s: want %q, got %v", ErrMalformed, l.name, want, tok)
	}
	return nil
}

func (l *ListReader) fatal(err error) error {
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	var syn *json.SyntaxError
	if errors.As(err, &syn) || err == io.ErrUnexpectedEOF {
		return fmt.Errorf("%w: %s after item %d: %v", ErrMalformed, l.name, l.item, err)
	}
	return fmt.Errorf("audit: read %s after item %d: %w", l.name, l.item, err)
}

// sliceSource is the Source of Events.
type sliceSource struct {
	events []Event
	next   int
}

// Events returns a Source of the given events, for events decoded
// elsewhere.
func Events(events ...Event) Source {
	return &sliceSource{events: events}
}

func (s *sliceSource) Next(ctx context.Context) (Event, error) {
	if err := ctx.Err(); err != nil {
		return Event{}, err
	}
	if s.next >= len(s.events) {
		return Event{}, io.EOF
	}
	s.next++
	return s.events[s.next-1], nil
}
