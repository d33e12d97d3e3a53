package memory

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// These quick tests pin the basics; the full behaviour is checked by the
// conformance suite in memory_test.go.

var (
	t0     = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	stream = event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
)

func cmEvent(name, uid, rv string, wt event.WatchType, at time.Time) event.Record {
	ref := event.ResourceRef{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "shop", Name: name, UID: uid, ResourceVersion: rv}
	return event.Record{
		Type: event.TypeEvent, EventID: event.EventID(stream.ID(), event.TypeEvent, ref, wt),
		ClusterID: "c1", StreamID: stream.ID(), ObservedAt: at, WatchType: wt, Resource: ref,
		Object: []byte(`{"kind":"ConfigMap","metadata":{"name":"` + name + `","resourceVersion":"` + rv + `"}}`),
	}
}

func TestQuickAppendDedupLatest(t *testing.T) {
	ctx := context.Background()
	s := New()
	defer s.Close()
	a := cmEvent("a", "u1", "10", event.Added, t0)
	m := cmEvent("a", "u1", "11", event.Modified, t0.Add(time.Second))
	res, err := s.Append(ctx, []event.Record{a, m, a})
	if err != nil {
		t.Fatal(err)
	}
	if res.Inserted != 2 || res.Duplicates != 1 || res.Seqs[0] != 1 || res.Seqs[1] != 2 || res.Seqs[2] != 1 {
		t.Fatalf("append result %+v", res)
	}
	obj := storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: "a"}
	got, err := s.LatestAt(ctx, obj, t0.Add(500*time.Millisecond))
	if err != nil || got.Resource.ResourceVersion != "10" {
		t.Fatalf("LatestAt = %v, %v; want rv 10", got.Resource.ResourceVersion, err)
	}
	if _, err := s.LatestAt(ctx, obj, t0.Add(-time.Second)); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("LatestAt before first: err %v, want ErrNotFound", err)
	}
	st, err := s.StreamStatus(ctx, stream.ID())
	if err != nil || st.CheckpointRV != "11" || st.Records != 2 {
		t.Fatalf("status %+v, %v", st, err)
	}
	got.Object[0] = 'X'
	again, _ := s.Get(ctx, got.EventID)
	if again.Object[0] != '{' {
		t.Fatal("a returned record shares its body with the store")
	}
	bad := cmEvent("b", "u2", "12", event.Added, t0)
	bad.EventID = ""
	if _, err := s.Append(ctx, []event.Record{cmEvent("c", "u3", "13", event.Added, t0), bad}); !errors.Is(err, storage.ErrInvalidRecord) {
		t.Fatalf("invalid batch: err %v", err)
	}
	if st, _ := s.Stats(ctx); st.Records != 2 {
		t.Fatalf("an invalid batch stored %d records, want 2 in total", st.Records)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, a.EventID); !errors.Is(err, storage.ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func TestWithLoggerReportsCompaction(t *testing.T) {
	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 1})
	s := New(WithLogger(log), nil)
	defer s.Close()
	ctx := context.Background()
	if _, err := s.Append(ctx, []event.Record{
		cmEvent("a", "u1", "10", event.Added, t0),
		cmEvent("a", "u1", "11", event.Modified, t0.Add(time.Second)),
		cmEvent("a", "u1", "12", event.Modified, t0.Add(2*time.Second)),
	}); err != nil {
		t.Fatal(err)
	}
	res, err := s.Compact(ctx, t0.Add(1500*time.Millisecond))
	if err != nil || res.RecordsRemoved != 1 {
		t.Fatalf("Compact: %+v, %v; want 1 record removed", res, err)
	}
	if len(lines) != 1 || !strings.Contains(lines[0], `"recordsRemoved"=1`) {
		t.Fatalf("log lines %q, want one compaction report", lines)
	}
}
