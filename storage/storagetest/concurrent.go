package storagetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// appendCall is what one Append of testConcurrentAppends did.
type appendCall struct {
	writer, batch int
	records       []event.Record
	// own holds the indexes in records of the writer's own records,
	// which no other writer appends: this call stores them.
	own []int
	res storage.AppendResult
	err error
	// start and end order the calls in real time: a call whose end is
	// smaller than another's start returned before that one began.
	start, end int64
}

// concurrentJournal returns the batches each of writers goroutines appends
// in testConcurrentAppends: each writer has a stream of its own (events
// and checkpoints), and every batch k of every writer also holds record k
// of a shared stream between its own records (so that the Append that
// stores it can be told) and, at its end, record k-1 again.
func concurrentJournal(writers, batches int) (perWriter [][][]event.Record, own [][][]int, shared []event.Record) {
	sharedStream := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shared"}
	for k := 0; k < batches; k++ {
		when := at(k)
		if k%3 == 2 {
			shared = append(shared, Checkpoint(sharedStream, fmt.Sprint(1000+k), true, when))
		} else {
			shared = append(shared, cm(sharedStream, event.Modified, "shared", fmt.Sprintf("s%d", k%4), fmt.Sprintf("us%d", k%4), fmt.Sprint(1000+k), when))
		}
	}
	perWriter = make([][][]event.Record, writers)
	own = make([][][]int, writers)
	for w := 0; w < writers; w++ {
		s := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: fmt.Sprintf("w%d", w)}
		rv := 0
		for k := 0; k < batches; k++ {
			var batch []event.Record
			var mine []int
			add := func(r event.Record, isOwn bool) {
				if isOwn {
					mine = append(mine, len(batch))
				}
				batch = append(batch, r)
			}
			n := 8 + (w+k)%5
			for i := 0; i < n; i++ {
				rv++
				when := at(k).Add(time.Duration(i) * time.Millisecond)
				if i == n-1 && (w+k)%3 == 0 {
					add(Checkpoint(s, fmt.Sprint(rv), k%2 == 0, when), true)
				} else {
					name := fmt.Sprintf("o%d", rv%5)
					add(cm(s, event.Modified, s.Namespace, name, "u"+name, fmt.Sprint(rv), when), true)
				}
				if i == n/2 {
					add(shared[k], false)
				}
			}
			if k > 0 {
				add(shared[k-1], false)
			}
			perWriter[w] = append(perWriter[w], batch)
			own[w] = append(own[w], mine)
		}
	}
	return perWriter, own, shared
}

// testConcurrentAppends appends from many goroutines at once, the same
// records from several of them, and checks that every record is stored
// once, that each Append's records take sequence numbers that no other
// Append's fall between (in the order the Appends committed, which
// follows real time), that each stream holds its records in the order
// they were appended, and that each stream's checkpoint is its last
// progress record's.
func testConcurrentAppends(t *testing.T, s storage.Store) {
	ctx := context.Background()
	const writers, batches = 8, 25
	perWriter, own, shared := concurrentJournal(writers, batches)
	var clock atomic.Int64
	calls := make([][]appendCall, writers)
	// The writers append batch k all at once (they all hold shared
	// record k), and batch k+1 once all of them are done with it.
	for k := 0; k < batches; k++ {
		var wg sync.WaitGroup
		start := make(chan struct{})
		for w := 0; w < writers; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				c := appendCall{writer: w, batch: k, records: perWriter[w][k], own: own[w][k], start: clock.Add(1)}
				c.res, c.err = s.Append(ctx, c.records)
				c.end = clock.Add(1)
				calls[w] = append(calls[w], c)
			}()
		}
		close(start)
		wg.Wait()
	}

	var all []appendCall
	for _, cs := range calls {
		all = append(all, cs...)
	}
	seqOf := map[string]int64{} // EventID -> the seq every Append returned for it
	var inserted, duplicates, appended int
	for _, c := range all {
		if c.err != nil {
			t.Fatalf("writer %d, batch %d: Append: %v", c.writer, c.batch, c.err)
		}
		if len(c.res.Seqs) != len(c.records) {
			t.Fatalf("writer %d, batch %d: %d seqs for %d records", c.writer, c.batch, len(c.res.Seqs), len(c.records))
		}
		inserted, duplicates, appended = inserted+c.res.Inserted, duplicates+c.res.Duplicates, appended+len(c.records)
		for i, r := range c.records {
			if old, ok := seqOf[r.EventID]; ok && old != c.res.Seqs[i] {
				t.Fatalf("%s: one Append returned seq %d, another %d", r.EventID, old, c.res.Seqs[i])
			}
			seqOf[r.EventID] = c.res.Seqs[i]
		}
		for j := 1; j < len(c.own); j++ {
			if a, b := c.res.Seqs[c.own[j-1]], c.res.Seqs[c.own[j]]; b <= a {
				t.Fatalf("writer %d, batch %d: seq %d after %d within one batch", c.writer, c.batch, b, a)
			}
		}
	}
	if inserted != len(seqOf) || inserted+duplicates != appended {
		t.Fatalf("Inserted sum %d, Duplicates sum %d for %d records of %d distinct EventIDs", inserted, duplicates, appended, len(seqOf))
	}
	stored := allRecords(t, s, storage.Query{WithoutBodies: true})
	if len(stored) != len(seqOf) {
		t.Fatalf("the journal holds %d records, %d distinct EventIDs were appended", len(stored), len(seqOf))
	}
	for _, r := range stored {
		if seqOf[r.EventID] != r.IngestSeq {
			t.Fatalf("%s is stored under seq %d, Append returned %d", r.EventID, r.IngestSeq, seqOf[r.EventID])
		}
	}
	checkCommitOrder(t, all, shared, seqOf)

	// Each stream's records in the order they were appended.
	for w := 0; w < writers; w++ {
		var want []string
		for k, batch := range perWriter[w] {
			for _, i := range own[w][k] {
				want = append(want, batch[i].EventID)
			}
		}
		checkStream(t, s, perWriter[w][0][0].StreamID, want)
	}
	checkStream(t, s, shared[0].StreamID, eventIDs(shared))
}

// checkCommitOrder checks that the Appends' sequence numbers do not
// interleave and follow real time, and that the Append that stored a
// shared record is one that appended it.
func checkCommitOrder(t *testing.T, all []appendCall, shared []event.Record, seqOf map[string]int64) {
	t.Helper()
	type span struct {
		lo, hi int64
		c      *appendCall
	}
	spans := make([]span, len(all))
	for i := range all {
		c := &all[i]
		spans[i] = span{c.res.Seqs[c.own[0]], c.res.Seqs[c.own[len(c.own)-1]], c}
	}
	slices.SortFunc(spans, func(a, b span) int { return int(a.lo - b.lo) })
	for i := 1; i < len(spans); i++ {
		a, b := spans[i-1], spans[i]
		if b.lo <= a.hi {
			t.Fatalf("the seqs of two Appends interleave: writer %d batch %d took %d..%d, writer %d batch %d %d..%d",
				a.c.writer, a.c.batch, a.lo, a.hi, b.c.writer, b.c.batch, b.lo, b.hi)
		}
		if b.c.end < a.c.start {
			t.Fatalf("writer %d batch %d returned before writer %d batch %d began, yet its seqs %d..%d follow %d..%d",
				b.c.writer, b.c.batch, a.c.writer, a.c.batch, b.lo, b.hi, a.lo, a.hi)
		}
	}
	for k, r := range shared {
		seq := seqOf[r.EventID]
		i := slices.IndexFunc(spans, func(sp span) bool { return sp.lo <= seq && seq <= sp.hi })
		if i < 0 || spans[i].c.batch != k {
			t.Fatalf("shared record %d (seq %d) lies in the seqs of no Append that appended it", k, seq)
		}
	}
}

// checkStream checks that a stream holds the records want, in order, and
// that its status agrees: count, last seq, and the checkpoint of its last
// progress record.
func checkStream(t *testing.T, s storage.Store, streamID string, want []string) {
	t.Helper()
	got := allRecords(t, s, storage.Query{StreamID: streamID, WithoutBodies: true})
	if !slices.Equal(eventIDs(got), want) {
		t.Fatalf("stream %s holds %d records, %d appended, or in another order:\n got %v\nwant %v", streamID, len(got), len(want), eventIDs(got), want)
	}
	st, err := s.StreamStatus(context.Background(), streamID)
	if err != nil {
		t.Fatal(err)
	}
	var rv string
	var rvAt time.Time
	for _, r := range got {
		if p, ok := storage.ProgressRV(r); ok {
			rv, rvAt = p, r.ObservedAt
		}
	}
	if st.CheckpointRV != rv || !st.CheckpointAt.Equal(rvAt) {
		t.Fatalf("stream %s: checkpoint %q at %s, its last progress record says %q at %s", streamID, st.CheckpointRV, st.CheckpointAt, rv, rvAt)
	}
	if st.Records != int64(len(got)) || st.LastSeq != got[len(got)-1].IngestSeq {
		t.Fatalf("stream %s: status counts %d records up to seq %d, it holds %d up to %d", streamID, st.Records, st.LastSeq, len(got), got[len(got)-1].IngestSeq)
	}
}
