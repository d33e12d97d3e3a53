package server_test

import (
	"errors"
	"io"
	"net"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/server"
	"github.com/krply/krply/server/client"
)

// cutter is a TCP proxy in front of a server whose open connections a test
// cuts at once, as a dropped network or a proxy's idle timeout would.
type cutter struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func newCutter(t *testing.T, upstream string) (*cutter, string) {
	t.Helper()
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &cutter{l: l}
	t.Cleanup(func() { l.Close(); p.cut() })
	go func() {
		for {
			down, err := l.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", u.Host)
			if err != nil {
				down.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, down, up)
			p.mu.Unlock()
			go func() { _, _ = io.Copy(up, down); up.Close() }()
			go func() { _, _ = io.Copy(down, up); down.Close() }()
		}
	}()
	return p, "http://" + l.Addr().String()
}

// cut closes every connection open through the proxy.
func (p *cutter) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// The feed client resumes by itself after its connection drops — before
// its first record, and between records with more on the way — from the
// last record it returned: every record appended is read once, in order,
// none lost, none twice.
func TestWatchResumesAfterDroppedConnection(t *testing.T) {
	j := newRecorded(t)
	_, base := j.serve(server.WithPollInterval(10 * time.Millisecond))
	proxy, proxied := newCutter(t, base)
	c, err := client.New(proxied)
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.Watch(ctx, client.WatchQuery{Scope: materialize.Scope{Namespaces: []string{"shop"}}, Types: []event.RecordType{event.TypeEvent}})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	start := f.Cursor()

	// Cut before the first record: the records appended while it is cut
	// come after the feed's start, which the server named.
	proxy.cut()
	var appended []int64
	for i := range 3 {
		appended = append(appended, j.change("a"+strconv.Itoa(i), at(21+float64(i)/10)).IngestSeq)
	}
	got := readFeed(t, f, 3)
	if f.Cursor() == start && start != "" {
		t.Fatalf("the cursor stayed at %s", start)
	}
	// Cut with records sent and on the way, twice.
	for round := range 2 {
		for i := range 4 {
			appended = append(appended, j.change("b"+strconv.Itoa(round)+strconv.Itoa(i), at(22+float64(round)+float64(i)/10)).IngestSeq)
		}
		got = append(got, readFeed(t, f, 1)...)
		proxy.cut()
		got = append(got, readFeed(t, f, 3)...)
	}
	// One more: the last cut's reconnection has happened once it is read
	// (the three before may have been read from what was received).
	appended = append(appended, j.change("c", at(25)).IngestSeq)
	got = append(got, readFeed(t, f, 1)...)
	if !slices.Equal(seqs(got), appended) {
		t.Fatalf("records read across dropped connections: %v\nwant exactly %v", seqs(got), appended)
	}
	if f.Reconnects() != 3 {
		t.Errorf("reconnects %d, want 3 (one per cut)", f.Reconnects())
	}

	// Close ends a Next waiting for a record.
	done := make(chan error, 1)
	go func() { _, err := f.Next(); done <- err }()
	f.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("Next after Close returned a record")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Next did not return after Close")
	}
	if _, err := f.Next(); err == nil || errors.Is(err, io.EOF) {
		t.Errorf("Next on a closed feed = %v, want the feed closed", err)
	}
}
