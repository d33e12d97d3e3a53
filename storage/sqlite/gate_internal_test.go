package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage/storagetest"
)

// TestGateSeesEveryEarlierCommit asks the change gate for the generation
// from 16 goroutines while the writer commits, and checks what the
// readers' caches rely on: a call that begins after a commit that began
// after another call returned gets a later generation than that call
// did, and each goroutine's generations never go back. A gate whose calls
// shared a check begun before them would fail.
func TestGateSeesEveryEarlierCommit(t *testing.T) {
	ctx := context.Background()
	s := openInternal(t)
	st := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	// clock orders the beginnings and ends of the calls and the commits.
	var clock atomic.Int64
	type call struct {
		begin, end int64
		gen        uint64
	}
	const readers, calls, commits = 16, 300, 200
	results := make([][]call, readers)
	var commitSpans [][2]int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(stop)
		for i := range commits {
			v := fmt.Sprint(i + 1)
			ref := storagetest.Ref(st, "ConfigMap", "shop", "a", "ua", v)
			rec := storagetest.Event(st, event.Modified, ref, storagetest.ConfigMap("shop", "a", "ua", v, nil), t0.Add(time.Duration(i)*time.Millisecond))
			begin := clock.Add(1)
			if _, err := s.Append(ctx, []event.Record{rec}); err != nil {
				t.Error(err)
				return
			}
			commitSpans = append(commitSpans, [2]int64{begin, clock.Add(1)})
		}
	}()
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range calls {
				begin := clock.Add(1)
				gen, err := s.gate.generation(ctx)
				if err != nil {
					t.Error(err)
					return
				}
				results[r] = append(results[r], call{begin, clock.Add(1), gen})
				select {
				case <-stop:
					return
				default:
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	var all []call
	for r, res := range results {
		for i := 1; i < len(res); i++ {
			if res[i].gen < res[i-1].gen {
				t.Fatalf("reader %d: generation %d after %d", r, res[i].gen, res[i-1].gen)
			}
		}
		all = append(all, res...)
	}
	// For each commit, the latest generation returned before it began
	// and the calls that began after it ended.
	checked := 0
	for _, k := range commitSpans {
		var before uint64
		for _, c := range all {
			if c.end < k[0] && c.gen > before {
				before = c.gen
			}
		}
		for _, c := range all {
			if c.begin > k[1] && c.gen <= before {
				t.Fatalf("a call begun after a commit (clock %d..%d) got generation %d, which a call that returned before that commit had", c.begin, c.end, c.gen)
			}
			if c.begin > k[1] {
				checked++
			}
		}
	}
	if checked == 0 {
		t.Fatal("no call began after a commit: the test checked nothing")
	}
}

// openInternal opens a journal in a temporary directory, closed when the
// test ends.
func openInternal(t *testing.T) *Store {
	t.Helper()
	s, err := Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}
