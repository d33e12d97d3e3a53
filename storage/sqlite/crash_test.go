package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/sqlite"
)

// The crash test re-executes the test binary as a child that appends
// batches to a journal until it is killed with SIGKILL.
const (
	crashJournalEnv = "KRPLY_CRASH_JOURNAL"
	crashStartEnv   = "KRPLY_CRASH_START"
)

func TestMain(m *testing.M) {
	runChildRole()
	if path := os.Getenv(crashJournalEnv); path != "" {
		start, _ := strconv.Atoi(os.Getenv(crashStartEnv))
		if err := crashChild(path, start); err != nil {
			fmt.Fprintln(os.Stderr, "crash child:", err)
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// crashBatch is batch b of the crash workload: 1–40 object changes of one
// stream (its resourceVersions are "b-i") and a checkpoint "b-cp".
func crashBatch(w *workload, b int) []event.Record {
	size := 1 + (b*7919)%40
	k := b % len(w.kinds)
	at := time.Unix(1_700_000_000, 0).Add(time.Duration(b) * time.Second)
	recs := make([]event.Record, 0, size+1)
	for i := range size {
		obj := (b*13+i*3)%300 - (b*13+i*3)%300%len(w.kinds) + k // an object of kind k
		rec := w.event(obj, b, at)
		rec.Resource.ResourceVersion = fmt.Sprintf("%d-%d", b, i)
		rec.EventID = event.EventID(rec.StreamID, event.TypeEvent, rec.Resource, rec.WatchType)
		recs = append(recs, rec)
	}
	stream := w.kinds[k].stream
	cp := event.Record{Type: event.TypeCheckpoint, ClusterID: stream.ClusterID, StreamID: stream.ID(), ObservedAt: at,
		Checkpoint: &event.Checkpoint{ResourceVersion: fmt.Sprintf("%d-cp", b), Bookmark: true}}
	cp.EventID = event.EventID(cp.StreamID, event.TypeCheckpoint, event.ResourceRef{ResourceVersion: cp.Checkpoint.ResourceVersion}, event.Bookmark)
	return append(recs, cp)
}

func crashChild(path string, start int) error {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		return err
	}
	w := newWorkload(&testing.B{})
	for b := start; ; b++ {
		if _, err := s.Append(ctx, crashBatch(w, b)); err != nil {
			return err
		}
		// Unbuffered: the parent knows the batch was committed.
		fmt.Fprintf(os.Stdout, "ok %d\n", b)
	}
}

func TestCrashSafety(t *testing.T) {
	kills := 32
	if testing.Short() {
		kills = 8
	}
	path := filepath.Join(t.TempDir(), "journal.db")
	w := newWorkload(t)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	durable := 0 // batches [0, durable) are verified durable
	var verifiedSeq int64
	var totalRecords int64
	start := time.Now()
	for round := range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashJournalEnv+"="+path, crashStartEnv+"="+strconv.Itoa(durable))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acked := make(chan int, 1<<16)
		go func() {
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if n, err := strconv.Atoi(strings.TrimPrefix(sc.Text(), "ok ")); err == nil {
					acked <- n
				}
			}
			close(acked)
		}()
		// Mostly kill while batches are flowing (a random time after one
		// to three of them); sometimes while the child is still opening,
		// or creating, the journal. Counting acknowledged batches rather
		// than waiting a time makes every such round add to the journal
		// however slow the machine (-race under load commits about one
		// batch in 150ms).
		lastAcked := -1
		var delay time.Duration
		if rng.IntN(5) == 0 {
			delay = time.Duration(rng.IntN(40)) * time.Millisecond
		} else {
		wait:
			for range 1 + rng.IntN(3) {
				select {
				case n, ok := <-acked:
					if !ok {
						break wait
					}
					lastAcked = n
				case <-time.After(10 * time.Second):
					t.Fatalf("round %d: the child wrote nothing in 10s: %s", round, stderr.String())
				}
			}
			delay = time.Duration(rng.IntN(150)) * time.Millisecond
		}
		time.Sleep(delay)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		for n := range acked {
			lastAcked = n
		}
		err = cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() {
			t.Fatalf("round %d: child ended on its own (%v): %s", round, err, stderr.String())
		}

		// The file is intact.
		db, err := sql.Open("sqlite", path+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		var check string
		if _, statErr := os.Stat(path); statErr == nil {
			if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
				t.Fatalf("round %d: integrity_check = %q, %v", round, check, err)
			}
		}
		db.Close()

		// Every batch is all or nothing, batches form a prefix, and
		// every acknowledged batch is there.
		ctx := context.Background()
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
		}
		counts := map[int]int{}
		q := storage.Query{AfterSeq: verifiedSeq, WithoutBodies: true}
		for {
			page, err := s.Records(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, rec := range page.Records {
				rv := rec.Resource.ResourceVersion
				if rec.Checkpoint != nil {
					rv = rec.Checkpoint.ResourceVersion
				}
				b, err := strconv.Atoi(rv[:strings.IndexByte(rv, '-')])
				if err != nil {
					t.Fatalf("record %d: resourceVersion %q", rec.IngestSeq, rv)
				}
				counts[b]++
				verifiedSeq = rec.IngestSeq
			}
			if page.Next == "" {
				break
			}
			q.Cursor = page.Next
		}
		newDurable := durable
		for counts[newDurable] > 0 {
			if want := len(crashBatch(w, newDurable)); counts[newDurable] != want {
				t.Fatalf("round %d: batch %d has %d of its %d records", round, newDurable, counts[newDurable], want)
			}
			totalRecords += int64(counts[newDurable])
			delete(counts, newDurable)
			newDurable++
		}
		if len(counts) > 0 {
			t.Fatalf("round %d: batches %v stored after a missing batch %d", round, counts, newDurable)
		}
		if newDurable <= lastAcked {
			t.Fatalf("round %d: batch %d was acknowledged but only batches before %d are stored", round, lastAcked, newDurable)
		}
		durable = newDurable

		// Each stream's checkpoint is its last durable batch's.
		for k, kd := range w.kinds {
			last := durable - 1
			for last >= 0 && last%len(w.kinds) != k {
				last--
			}
			st, err := s.StreamStatus(ctx, kd.stream.ID())
			switch {
			case last < 0:
				continue
			case err != nil:
				t.Fatalf("round %d: stream %s: %v", round, kd.stream.ID(), err)
			case st.CheckpointRV != fmt.Sprintf("%d-cp", last):
				t.Fatalf("round %d: stream %s checkpoint %q, want %q", round, kd.stream.ID(), st.CheckpointRV, fmt.Sprintf("%d-cp", last))
			}
		}
		if stats, err := s.Stats(ctx); err != nil || stats.Records != totalRecords {
			t.Fatalf("round %d: Stats.Records = %d (%v), want %d", round, stats.Records, err, totalRecords)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: killed after %v, %d batches durable (last acknowledged %d)", round, delay, durable, lastAcked)
	}
	if durable < kills {
		t.Errorf("only %d batches were written in %d rounds; the kills came too early to mean much", durable, kills)
	}
	t.Logf("%d kills, %d batches, %d records in %v", kills, durable, totalRecords, time.Since(start))
}
