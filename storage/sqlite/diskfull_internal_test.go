package sqlite

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/diskspace"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/storagetest"
)

// A write that fails for want of room says so, and what to do, when the
// journal's file system is (almost) full — SQLite's own words, such as
// "disk I/O error (778)" for a write-ahead log that cannot grow, say
// neither — and nothing of it is committed. The room runs out here through
// SQLite's page limit (SQLITE_FULL, as a full disk gives), with the free
// space the check reads replaced; with room on the file system the error is
// SQLite's.
func TestAppendOnAFullDiskSaysSo(t *testing.T) {
	ctx := context.Background()
	s := openInternal(t)
	st := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	batch := func(from int) []event.Record {
		var recs []event.Record
		for i := from; i < from+200; i++ {
			name, rv := fmt.Sprintf("cm-%05d", i), fmt.Sprint(i+1)
			body := storagetest.ConfigMap("shop", name, "u"+name, rv, map[string]string{"payload": strings.Repeat(fmt.Sprintf("%08d", i*7919), 64)})
			recs = append(recs, storagetest.Event(st, event.Added, storagetest.Ref(st, "ConfigMap", "shop", name, "u"+name, rv), body, t0.Add(time.Duration(i)*time.Millisecond)))
		}
		return recs
	}
	if _, err := s.Append(ctx, batch(0)); err != nil {
		t.Fatal(err)
	}
	var pages int64
	if err := s.w.QueryRowContext(ctx, "PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.ExecContext(ctx, fmt.Sprintf("PRAGMA max_page_count = %d", pages+2)); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		t.Helper()
		page, err := s.Records(ctx, storage.Query{StreamID: st.ID(), Limit: 10000})
		if err != nil {
			t.Fatal(err)
		}
		return len(page.Records)
	}
	for _, tc := range []struct {
		free int64
		full bool
	}{{1 << 20, true}, {1 << 40, false}} {
		freeSpace = func(string) (int64, error) { return tc.free, nil }
		_, err := s.Append(ctx, batch(1000))
		if err == nil {
			t.Fatal("Append past the page limit succeeded")
		}
		if got := errors.Is(err, ErrDiskFull); got != tc.full {
			t.Fatalf("%d bytes free: Append: %v; want ErrDiskFull: %v", tc.free, err, tc.full)
		}
		if tc.full && (!strings.Contains(err.Error(), "1048576 bytes free") || !strings.Contains(err.Error(), "free space there or move the journal")) {
			t.Fatalf("Append: %v; want the free space and what to do", err)
		}
		if n := count(); n != 200 {
			t.Fatalf("%d records after the failed Append; want the first batch's 200 only", n)
		}
	}
	freeSpace = diskspace.Free
	if _, err := s.w.ExecContext(ctx, "PRAGMA max_page_count = 4294967294"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, batch(1000)); err != nil {
		t.Fatalf("Append with room again: %v", err)
	}
	if n := count(); n != 400 {
		t.Fatalf("%d records; want 400", n)
	}
}
