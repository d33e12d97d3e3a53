package server

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/krply/krply/materialize"
)

// A request's answer is computed and encoded within its turn (one of
// WithMaxInFlight's slots), then sent outside it: a client reads at its
// own pace, and one that stops reading holds no turn from the others.
// Sending goes a chunk at a time, each within the request timeout, so a
// client that makes no progress for that long is cut off instead of
// holding its connection and a goroutine for ever; one that reads slowly
// is served.

// turn is a request's place among those answered at once.
type turn struct {
	slots chan struct{}
	held  bool
	// w is the request's ResponseWriter, for its body's read deadline
	// (readBy).
	w http.ResponseWriter
}

// release gives the turn back; once, whoever calls it first (the answer
// once encoded, or the end of the request).
func (t *turn) release() {
	if t != nil && t.held {
		t.held = false
		<-t.slots
	}
}

type turnKey struct{}

// turnOf returns the turn of r, nil when it waited for none (health, the
// change feed).
func turnOf(r *http.Request) *turn {
	t, _ := r.Context().Value(turnKey{}).(*turn)
	return t
}

// withTurn returns r carrying its turn.
func withTurn(r *http.Request, t *turn) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), turnKey{}, t))
}

// sendChunk is how much of an answer is written under one write deadline.
const sendChunk = 64 << 10

// answerBuffers holds the buffers answers are encoded into.
var answerBuffers = sync.Pool{New: func() any { return new([]byte) }}

// maxPooledAnswer is the largest buffer kept for reuse: a rare huge
// answer does not stay in memory.
const maxPooledAnswer = 1 << 20

// writeJSON writes v as JSON with the status, outside any turn (health,
// routing errors), each chunk within DefaultRequestTimeout.
func writeJSON(w http.ResponseWriter, status int, v any) {
	writeAnswer(w, nil, status, v, nil, DefaultRequestTimeout)
}

// answer writes v as the JSON answer to r with the status: encoded (and
// compressed, see gzipAbove) within r's turn, which it then gives up, and
// sent within the request timeout per chunk.
func (h *handler) answer(w http.ResponseWriter, r *http.Request, status int, v any) {
	writeAnswer(w, r, status, v, turnOf(r), h.cfg.timeout)
}

// gzipAbove is the size from which an answer is sent compressed to a
// client that accepts gzip (kube-apiserver's threshold): a snapshot of
// thousands of objects through a port-forward, not a history.
const gzipAbove = 128 << 10

func writeAnswer(w http.ResponseWriter, r *http.Request, status int, v any, t *turn, timeout time.Duration) {
	buf := answerBuffers.Get().(*[]byte)
	defer putAnswerBuffer(buf)
	raw, err := appendJSON((*buf)[:0], v)
	if err != nil {
		status = http.StatusInternalServerError
		raw, _ = appendJSON(raw[:0], newError(status, CodeInternal, "", "encode the answer: %v", err))
	}
	*buf = raw
	if len(raw) >= gzipAbove && acceptsGzip(r) {
		zbuf := answerBuffers.Get().(*[]byte)
		defer putAnswerBuffer(zbuf)
		*zbuf = gzipped((*zbuf)[:0], raw)
		raw = *zbuf
		w.Header().Set("Content-Encoding", "gzip")
	}
	t.release()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Add("Vary", "Accept-Encoding")
	send(w, status, raw, timeout)
}

func putAnswerBuffer(buf *[]byte) {
	if cap(*buf) <= maxPooledAnswer {
		answerBuffers.Put(buf)
	}
}

// acceptsGzip reports whether r's Accept-Encoding takes gzip (nil r: no).
func acceptsGzip(r *http.Request) bool {
	if r == nil {
		return false
	}
	for _, coding := range strings.Split(r.Header.Get("Accept-Encoding"), ",") {
		name, params, _ := strings.Cut(coding, ";")
		if strings.TrimSpace(name) != "gzip" {
			continue
		}
		q, ok := strings.CutPrefix(strings.ReplaceAll(params, " ", ""), "q=")
		return !ok || strings.Trim(q, "0.") != ""
	}
	return false
}

// gzipWriters holds gzip writers at BestSpeed, whose state is large.
var gzipWriters = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(nil, gzip.BestSpeed) // a valid level: no error
	return zw
}}

// gzipped appends raw compressed to b.
func gzipped(b, raw []byte) []byte {
	out := bytes.NewBuffer(b)
	zw := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(zw)
	zw.Reset(out)
	_, _ = zw.Write(raw) // a bytes.Buffer takes every write
	_ = zw.Close()
	return out.Bytes()
}

// appendJSON appends v as JSON and a newline to b, as json.Encoder
// writes it without escaping HTML.
func appendJSON(b []byte, v any) ([]byte, error) {
	if h, ok := v.(*materialize.History); ok {
		// History writes itself as the encoder would, faster; the encoder
		// would only scan its JSON once more.
		b, err := h.AppendJSON(b)
		return append(b, '\n'), err
	}
	out := bytes.NewBuffer(b)
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return out.Bytes(), err
}

// send writes the status and raw, its length said, at the client's pace
// (pacer). A failed write means the client went away or stopped reading:
// there is no one to tell.
func send(w http.ResponseWriter, status int, raw []byte, timeout time.Duration) {
	w.Header().Set("Content-Length", strconv.Itoa(len(raw)))
	w.WriteHeader(status)
	_ = newPacer(w, timeout).write(raw)
}

// pacer writes to a client a chunk at a time, each within timeout of the
// last: a client that makes no progress for timeout is cut off, one that
// reads slowly is served. (The http.Server resets the connection's write
// deadline after each request.)
type pacer struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	timeout time.Duration
}

func newPacer(w http.ResponseWriter, timeout time.Duration) pacer {
	return pacer{w: w, rc: http.NewResponseController(w), timeout: timeout}
}

// write writes b; a ResponseWriter without deadlines (a test recorder, a
// middleware that hides them) is written without.
func (p pacer) write(b []byte) error {
	for len(b) > 0 {
		if err := p.rc.SetWriteDeadline(time.Now().Add(p.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
			return err
		}
		n := min(len(b), sendChunk)
		if _, err := p.w.Write(b[:n]); err != nil {
			return err
		}
		b = b[n:]
	}
	return nil
}

// flush writes out what the ResponseWriter holds, within the timeout.
func (p pacer) flush() error {
	if err := p.rc.SetWriteDeadline(time.Now().Add(p.timeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return err
	}
	return p.rc.Flush()
}
