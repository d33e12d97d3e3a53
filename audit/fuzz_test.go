package audit

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReader feeds arbitrary bytes to the line reader with a small maximum
// event size. Whatever the input — garbage, truncated lines, oversized
// lines, gzip headers — the reader must end, never panic, report every
// problem as a *LineError with increasing line numbers (a fatal error only
// for gzip input), never return more events and errors than the input has
// lines, and hold at most the maximum event size in memory.
func FuzzReader(f *testing.F) {
	data, err := os.ReadFile(filepath.Join("..", "testdata", "audit", "handwritten.log"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		f.Add(line)
		if len(line) > 10 {
			f.Add(line[:len(line)/2])
		}
	}
	f.Add([]byte("\n\n\r\n"))
	f.Add(bytes.Repeat([]byte("x"), 3000))
	f.Add([]byte{0x1f, 0x8b, 0x08, 0x00})
	f.Add([]byte(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"x","stage":"ResponseComplete","verb":"get","requestReceivedTimestamp":"2026-01-05T10:00:00Z","objectRef":{"resource":7}}`))

	const max = 2048
	f.Fuzz(func(t *testing.T, input []byte) {
		r, err := NewReader(bytes.NewReader(input), "fuzz", WithMaxEventBytes(max))
		if err != nil {
			t.Fatal(err)
		}
		lines := int64(bytes.Count(input, []byte("\n")) + 1)
		gzipInput := len(input) >= 2 && input[0] == 0x1f && input[1] == 0x8b
		var results, last int64
		for {
			evt, err := r.Next(context.Background())
			if err == io.EOF {
				break
			}
			var le *LineError
			switch {
			case errors.As(err, &le):
				if le.Line <= last {
					t.Fatalf("line error at %d after line %d", le.Line, last)
				}
				last = le.Line
				if !errors.Is(le, ErrMalformed) && !errors.Is(le, ErrTooLarge) {
					t.Fatalf("line error %v wraps neither ErrMalformed nor ErrTooLarge", le)
				}
			case err != nil:
				if !gzipInput {
					t.Fatalf("fatal error on plain input: %v", err)
				}
				return
			default:
				if evt.AuditID == "" || evt.Stage == "" || evt.Verb == "" || evt.RequestReceivedTimestamp.IsZero() {
					t.Fatalf("accepted an event without its required fields: %+v", evt)
				}
				if r.Line() <= last {
					t.Fatalf("event at line %d after line %d", r.Line(), last)
				}
				last = r.Line()
			}
			results++
			if !gzipInput && results > lines {
				t.Fatalf("%d results from %d lines", results, lines)
			}
			if cap(r.buf) > max {
				t.Fatalf("line buffer grew to %d, limit %d", cap(r.buf), max)
			}
		}
	})
}

// FuzzEventListReader: any body either yields items and line errors and
// ends, or stops with an error; it never panics or loops.
func FuzzEventListReader(f *testing.F) {
	f.Add([]byte(`{"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},"items":[{"auditID":"a","stage":"ResponseComplete","verb":"get","requestReceivedTimestamp":"2026-01-05T10:00:00Z"},7]}`))
	f.Add([]byte(`{"items":null}`))
	f.Add([]byte(`{"items":[`))
	f.Fuzz(func(t *testing.T, input []byte) {
		r, err := NewEventListReader(bytes.NewReader(input), "fuzz", WithMaxEventBytes(1024))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i <= len(input)+1; i++ {
			_, err := r.Next(context.Background())
			var le *LineError
			if err != nil && !errors.As(err, &le) {
				return // io.EOF or fatal
			}
		}
		t.Fatalf("no end after %d calls on %d bytes", len(input)+2, len(input))
	})
}
