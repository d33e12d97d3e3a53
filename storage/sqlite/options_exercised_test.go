package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// Tests of the options no other test exercises, each asserting its effect
// on the connections or the writer, not just that Open accepts it.

// openOpts opens a fresh journal with opts.
func openOpts(t *testing.T, opts ...Option) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"), opts...)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestWithSynchronous(t *testing.T) {
	// SQLite reports synchronous as a number: 1 NORMAL, 2 FULL.
	for _, tc := range []struct {
		opts []Option
		want string
	}{
		{nil, "1"},
		{[]Option{WithSynchronous(SyncNormal)}, "1"},
		{[]Option{WithSynchronous(SyncFull)}, "2"},
	} {
		s := openOpts(t, tc.opts...)
		var got string
		if err := s.w.QueryRow("PRAGMA synchronous").Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("%d options: the writer's PRAGMA synchronous is %s, want %s", len(tc.opts), got, tc.want)
		}
	}
	if _, err := Open(context.Background(), filepath.Join(t.TempDir(), "j.db"), WithSynchronous(Synchronous(7))); err == nil ||
		!strings.Contains(err.Error(), "unknown synchronous setting 7") {
		t.Errorf("Open with Synchronous(7): %v, want an unknown-setting error", err)
	}
}

// WithReadConnections bounds the read pool: with every read connection
// held, a read waits (here until its deadline); a released one serves it.
func TestWithReadConnections(t *testing.T) {
	ctx := context.Background()
	if got := openOpts(t).r.Stats().MaxOpenConnections; got != 4 {
		t.Errorf("default read pool: %d connections, want 4", got)
	}
	s := openOpts(t, WithReadConnections(2))
	if got := s.r.Stats().MaxOpenConnections; got != 2 {
		t.Errorf("read pool: %d connections, want 2", got)
	}
	obj := storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: "a0"}
	held := make([]interface{ Close() error }, 2)
	for i := range held {
		c, err := s.r.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		held[i] = c
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := s.LatestAt(short, obj, time.Now()); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("LatestAt with both read connections held: %v, want it to wait until its deadline", err)
	}
	held[0].Close()
	if _, err := s.LatestAt(ctx, obj, time.Now()); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("LatestAt with a connection released: %v, want ErrNotFound", err)
	}
	held[1].Close()

	if _, err := Open(ctx, filepath.Join(t.TempDir(), "j.db"), WithReadConnections(0)); err == nil ||
		!strings.Contains(err.Error(), "at least one read connection") {
		t.Errorf("Open with no read connection: %v, want an error", err)
	}
}

// WithMmapSize sets mmap_size on every read connection (default 0) but
// AliveAt's scan pool, which maps scanMmapBytes, or as much as asked
// when that is more (one pool then).
func TestWithMmapSize(t *testing.T) {
	for _, tc := range []struct {
		opts       []Option
		read, scan int64
	}{
		{nil, 0, scanMmapBytes},
		{[]Option{WithMmapSize(64 << 20)}, 64 << 20, scanMmapBytes},
		{[]Option{WithMmapSize(scanMmapBytes)}, scanMmapBytes, scanMmapBytes},
	} {
		s := openOpts(t, append(tc.opts, WithReadConnections(3))...)
		ctx := context.Background()
		if (s.scan == s.r) != (tc.read == tc.scan) {
			t.Errorf("mmap %d: the scan pool is the read pool: %v", tc.read, s.scan == s.r)
		}
		for name, pool := range map[string]*sql.DB{"read": s.r, "scan": s.scan} {
			want := tc.read
			if name == "scan" {
				want = tc.scan
			}
			var held []*sql.Conn
			for i := range 3 { // every connection of the pool, each held while the next opens
				c, err := pool.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				held = append(held, c)
				var got int64
				if err := c.QueryRowContext(ctx, "PRAGMA mmap_size").Scan(&got); err != nil {
					t.Fatal(err)
				}
				if got != want {
					t.Errorf("%s connection %d: mmap_size %d, want %d", name, i, got, want)
				}
			}
			for _, c := range held {
				c.Close()
			}
		}
	}
	if _, err := Open(context.Background(), filepath.Join(t.TempDir(), "j.db"), WithMmapSize(-1)); err == nil {
		t.Error("Open with a negative mmap size: no error")
	}
}

// versions returns one event per object (a0 … a<n-1>) at version v.
func versions(n, v int) []event.Record {
	stream := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	recs := make([]event.Record, n)
	for i := range recs {
		wt := event.Modified
		if v == 1 {
			wt = event.Added
		}
		ref := event.ResourceRef{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "shop",
			Name: fmt.Sprintf("a%d", i), UID: fmt.Sprintf("u%d", i), ResourceVersion: fmt.Sprint(v*1000 + i)}
		recs[i] = event.Record{Type: event.TypeEvent, EventID: event.EventID(stream.ID(), event.TypeEvent, ref, wt), ClusterID: "c1",
			StreamID: stream.ID(), ObservedAt: time.Unix(int64(100*v), 0), WatchType: wt, Resource: ref,
			Object: fmt.Appendf(nil, `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a%d","namespace":"shop","resourceVersion":"%d"},"data":{"v":"%d","padding":"%s"}}`,
				i, v*1000+i, v, strings.Repeat("x", 200))}
	}
	return recs
}

// WithKeyframeCache bounds how many objects the writer remembers; objects
// that fell out of it (or all of them, with 0) still get their next
// versions stored and read back right.
func TestWithKeyframeCache(t *testing.T) {
	const objects = 10
	for _, tc := range []struct {
		opts []Option
		want int
	}{
		{nil, objects}, // the default, 32768, holds them all
		{[]Option{WithKeyframeCache(3)}, 3},
		{[]Option{WithKeyframeCache(0)}, 0},
	} {
		ctx := context.Background()
		s := openOpts(t, tc.opts...)
		for v := 1; v <= 3; v++ {
			if _, err := s.Append(ctx, versions(objects, v)); err != nil {
				t.Fatalf("Append version %d: %v", v, err)
			}
			if got := s.keyframes.len(); got != tc.want {
				t.Errorf("%v: after version %d the writer remembers %d objects, want %d", tc.opts, v, got, tc.want)
			}
		}
		for i := range objects {
			obj := storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: fmt.Sprintf("a%d", i)}
			for v := 1; v <= 3; v++ {
				rec, err := s.LatestAt(ctx, obj, time.Unix(int64(100*v), 0))
				if err != nil {
					t.Fatalf("LatestAt %s version %d: %v", obj.Name, v, err)
				}
				if want := versions(objects, v)[i].Object; string(rec.Object) != string(want) {
					t.Errorf("%v: %s version %d reads back as %s, want %s", tc.opts, obj.Name, v, rec.Object, want)
				}
			}
		}
	}
	if _, err := Open(context.Background(), filepath.Join(t.TempDir(), "j.db"), WithKeyframeCache(-1)); err == nil {
		t.Error("Open with a negative keyframe cache: no error")
	}
}

// WithLogger takes precedence over the logger in Open's context.
func TestWithLogger(t *testing.T) {
	var fromOption, fromContext []string
	optLog := funcr.New(func(_, args string) { fromOption = append(fromOption, args) }, funcr.Options{Verbosity: 1})
	ctxLog := funcr.New(func(_, args string) { fromContext = append(fromContext, args) }, funcr.Options{Verbosity: 1})
	path := filepath.Join(t.TempDir(), "journal.db")
	s, err := Open(logr.NewContext(context.Background(), ctxLog), path, WithLogger(optLog))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if len(fromOption) == 0 || !strings.Contains(strings.Join(fromOption, "\n"), `"msg"="journal opened"`) {
		t.Errorf("the option's logger got %q, want the journal opened message", fromOption)
	}
	if !strings.Contains(strings.Join(fromOption, "\n"), `"journal"=`) {
		t.Errorf("the option's logger got %q, want the journal's path as a value", fromOption)
	}
	if len(fromContext) != 0 {
		t.Errorf("the context's logger got %q, want nothing: WithLogger takes precedence", fromContext)
	}
}

// Only AliveAt reads through the mapped scan pool: the point reads keep
// the unmapped pool, whose pages a commit does not make them fault in
// again (see scanMmapBytes).
func TestPointReadsUnmapped(t *testing.T) {
	ctx := context.Background()
	s := openOpts(t)
	st := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	ref := event.ResourceRef{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "shop", Name: "a", UID: "ua", ResourceVersion: "2"}
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"shop","uid":"ua","resourceVersion":"2"}}`)
	rec := event.Record{Type: event.TypeEvent, EventID: event.EventID(st.ID(), event.TypeEvent, ref, event.Added), ClusterID: "c1",
		StreamID: st.ID(), ObservedAt: at, WatchType: event.Added, Resource: ref, Object: body, ObjectHash: event.ObjectHash(body)}
	if _, err := s.Append(ctx, []event.Record{rec}); err != nil {
		t.Fatal(err)
	}
	obj := storage.ObjectIDOf(rec)
	if _, err := s.LatestAt(ctx, obj, at); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ObjectHistory(ctx, obj, storage.HistoryQuery{Limit: 10}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Watermark(ctx, st.ID(), at); err != nil {
		t.Fatal(err)
	}
	if _, err := storage.GetMany(ctx, s, []string{rec.EventID}); err != nil {
		t.Fatal(err)
	}
	if n := s.scan.Stats().OpenConnections; n != 0 {
		t.Errorf("after point reads, the mapped scan pool has %d connections open, want none", n)
	}
	if recs, err := s.AliveAt(ctx, storage.AliveQuery{StreamID: st.ID(), At: at}); err != nil || len(recs) != 1 {
		t.Fatalf("AliveAt: %d records, %v", len(recs), err)
	}
	if n := s.scan.Stats().OpenConnections; n == 0 {
		t.Error("AliveAt did not read through the mapped scan pool")
	}
}
