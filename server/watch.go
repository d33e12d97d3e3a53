package server

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/krply/krply/internal/broadcast"
	"github.com/krply/krply/storage"
)

// feedCursor reads where a change feed resumes: Last-Event-ID, else
// ?cursor=, else -1 (start after the journal's newest record).
func feedCursor(r *http.Request) (int64, error) {
	param, s := "Last-Event-ID", strings.TrimSpace(r.Header.Get("Last-Event-ID"))
	if s == "" {
		param, s = "cursor", r.URL.Query().Get("cursor")
	}
	if s == "" {
		return -1, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return 0, newError(http.StatusBadRequest, CodeInvalidCursor, param, "%s %q: want the id of a feed event (a record's ingestSeq, 0 for the journal's start)", param, s)
	}
	return n, nil
}

// newestSeq returns the IngestSeq of the journal's newest record, 0 when
// it has none.
func (h *handler) newestSeq(ctx context.Context) (int64, error) {
	page, err := h.j.Records(ctx, storage.Query{Descending: true, Limit: 1, WithoutBodies: true})
	if err != nil || len(page.Records) == 0 {
		return 0, err
	}
	return page.Records[0].IngestSeq, nil
}

func (h *handler) watch(w http.ResponseWriter, r *http.Request, u *user) {
	ctx := r.Context()
	p := h.params(r)
	// The feed's cursor is its own parameter: the scope parameters are
	// read without it.
	p.q.Del("cursor")
	fail := func(err error) { h.fail(w, r, err) }
	after, err := feedCursor(r)
	if err != nil {
		fail(err)
		return
	}
	f, err := h.newRecordFilter(ctx, p)
	if err != nil {
		fail(err)
		return
	}
	types, err := p.recordTypes()
	if err != nil {
		fail(err)
		return
	}
	q := f.query(types)
	bodies, err := p.boolean("bodies", true)
	if err != nil {
		fail(err)
		return
	}
	q.WithoutBodies = !bodies
	cf, err := h.newFeedFilter(p)
	if err != nil {
		fail(err)
		return
	}
	if err := h.authorizeRead(ctx, u, f.scope.Namespaces); err != nil {
		fail(err)
		return
	}
	fromNow := after < 0
	if fromNow {
		if after, err = h.newestSeq(ctx); err != nil {
			fail(err)
			return
		}
	}
	select {
	case h.feeds <- struct{}{}:
		defer func() { <-h.feeds }()
	default:
		w.Header().Set("Retry-After", strconv.Itoa(int(max(h.cfg.poll, time.Second).Seconds())))
		fail(newError(http.StatusTooManyRequests, CodeTooManyRequests, "", "this server already serves its limit of %d change feeds at once (WithMaxFeeds): retry later, or close a feed", cap(h.feeds)))
		return
	}
	if _, ok := w.(http.Flusher); !ok {
		fail(fmt.Errorf("server: the change feed needs a ResponseWriter that flushes (an http.Flusher); a middleware wraps it without one"))
		return
	}
	// Each write of the feed is within the request timeout: a client that
	// stops reading is cut off and its feed ends, freeing its place.
	out := newPacer(w, h.cfg.timeout)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	// Without a cursor, the first block names where the feed starts (an
	// id without data sets the last event ID without an event), so that a
	// client cut off before the first record resumes there, not after the
	// records appended meanwhile.
	first := fmt.Appendf(nil, "retry: %d\n", max(h.cfg.poll.Milliseconds(), 1000))
	if fromNow {
		first = fmt.Appendf(first, "id: %d\n", after)
	}
	if out.write(append(first, '\n')) != nil || out.flush() != nil {
		return
	}

	poll := time.NewTicker(h.cfg.poll)
	defer poll.Stop()
	lastSent := time.Now()
	var buf bytes.Buffer
	for {
		// Ask to be woken by the next append before reading, so that no
		// append between the read and the wait is missed.
		var appended <-chan struct{}
		if h.cfg.notifier != nil {
			appended = h.cfg.notifier.Appended()
		}
		lastRead := time.Now()
		// Read everything after the cursor, page by page.
		q.AfterSeq, q.Cursor = after, ""
		q.Limit = h.cfg.maxPage
		if cf != nil && cf.used {
			// A fresh budget for each read of the journal; the first
			// uses the filter compiled when the feed began.
			if err := cf.renew(); err != nil {
				writeFeedError(out, asError(err))
				return
			}
		}
		for {
			page, err := h.j.Records(ctx, q)
			if err != nil {
				if ctx.Err() != nil {
					return
				}
				writeFeedError(out, asError(err))
				return
			}
			buf.Reset()
			for i := range page.Records {
				rec := &page.Records[i]
				keep := f.keep(rec)
				if keep && cf != nil {
					if keep, err = cf.keep(ctx, rec); err != nil {
						if ctx.Err() != nil {
							return
						}
						writeFeedError(out, asError(err))
						return
					}
				}
				if keep {
					data, err := json.Marshal(rec)
					if err != nil {
						writeFeedError(out, asError(err))
						return
					}
					fmt.Fprintf(&buf, "id: %d\nevent: record\ndata: %s\n\n", rec.IngestSeq, data)
				}
				after = rec.IngestSeq
			}
			if cf != nil {
				if w := cf.warning(); w != "" {
					// Before the page's records: a client has it by the
					// time it reads them.
					data, _ := json.Marshal(feedWarning{Warning: w}) // a string
					if out.write(fmt.Appendf(nil, "event: warning\ndata: %s\n\n", data)) != nil {
						return
					}
				}
			}
			if buf.Len() > 0 {
				if out.write(buf.Bytes()) != nil || out.flush() != nil {
					return
				}
				lastSent = time.Now()
			}
			if page.Next == "" {
				break
			}
			q.Cursor = page.Next
		}
		if time.Since(lastSent) >= h.cfg.keepalive {
			if out.write([]byte(": keepalive\n\n")) != nil || out.flush() != nil {
				return
			}
			lastSent = time.Now()
		}
		select {
		case <-ctx.Done():
			return
		case <-poll.C:
		case <-appended:
			// A burst of appends is read at most once per feedWakeGap.
			if wait := feedWakeGap - time.Since(lastRead); wait > 0 {
				t := time.NewTimer(wait)
				select {
				case <-ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
		}
	}
}

// feedWakeGap is the shortest time between two reads of a change feed
// woken by appends: a recorder appending every few milliseconds makes a
// feed read the journal at most 40 times a second.
const feedWakeGap = 25 * time.Millisecond

// AppendSignal is an AppendNotifier for a writer of the journal to call
// Notify after each append. The zero value is ready; it is safe for
// concurrent use.
type AppendSignal struct {
	s broadcast.Signal
}

// Appended returns a channel closed at the next Notify.
func (s *AppendSignal) Appended() <-chan struct{} { return s.s.Wait() }

// Notify wakes every change feed waiting on s.
func (s *AppendSignal) Notify() { s.s.Notify() }

// feedWarning is the data of a warning event of the change feed.
type feedWarning struct {
	Warning string `json:"warning"`
}

// writeFeedError ends a feed with an error event.
func writeFeedError(out pacer, e *Error) {
	data, _ := json.Marshal(e) // strings and a number
	if out.write(fmt.Appendf(nil, "event: error\ndata: %s\n\n", data)) == nil {
		_ = out.flush()
	}
}
