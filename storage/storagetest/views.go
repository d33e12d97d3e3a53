package storagetest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// SameAnswers checks that two readers of one journal answer alike while
// it is written: a backend's cached or indexed view (view) against the
// same backend answering without it (reference). For each seed, open
// returns the journal's writers, the reference and the view; the
// simulated journal's batches are appended by the writers in turn (a
// writer that is another process, or another connection, and the view's
// own store, say), and after each batch the two readers are asked every
// question answers asks, and LatestAt record for record, about times
// around the records (every question after some batches, LatestAt after
// every one); twice per seed the first writer compacts the
// journal in its middle. The first difference fails the test, naming the
// seed, the batch and both answers.
func SameAnswers(t *testing.T, open func(t *testing.T) (writers []storage.Store, reference, view storage.Reader), seeds ...uint64) {
	t.Helper()
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) {
			writers, reference, view := open(t)
			sameAnswers(t, seed, writers, reference, view)
		})
	}
}

func sameAnswers(t *testing.T, seed uint64, writers []storage.Store, reference, view storage.Reader) {
	ctx := context.Background()
	m := newSim(seed)
	batches := m.journal(160)
	rnd := rand.New(rand.NewPCG(seed, 11))
	objSet := map[storage.ObjectID]bool{}
	var objs []storage.ObjectID
	var times []time.Time
	streams := []event.Stream{cmShop, cmAll, deployShop}
	compactAt := map[int]bool{len(batches) / 3: true, 2 * len(batches) / 3: true}
	for i, b := range batches {
		mustAppend(t, writers[i%len(writers)], b...)
		for _, r := range b {
			times = append(times, r.ObservedAt)
			if id := objectID(r); r.IsObjectChange() && !objSet[id] {
				objSet[id] = true
				objs = append(objs, id)
			}
		}
		sort.Slice(objs, func(i, j int) bool { return fmt.Sprint(objs[i]) < fmt.Sprint(objs[j]) })
		if compactAt[i] {
			if _, err := writers[0].Compact(ctx, times[len(times)/2]); err != nil {
				t.Fatalf("Compact: %v", err)
			}
		}
		// Probes: a record's time, just before and after it, and the
		// newest time.
		tp := times[rnd.IntN(len(times))]
		probes := []time.Time{times[len(times)-1], tp, tp.Add(-time.Millisecond), times[rnd.IntN(len(times))].Add(time.Millisecond)}
		for k, tp := range probes {
			what := fmt.Sprintf("seed %d, after batch %d of %d, at %s", seed, i, len(batches), tp.UTC().Format(time.RFC3339Nano))
			if k < 2 && (i%20 == 0 || compactAt[i] || i == len(batches)-1) {
				diffLines(t, what+" (reference, then view)", answers(t, reference, objs, streams, tp), answers(t, view, objs, streams, tp))
			}
			for _, obj := range objs {
				sameLatest(t, what, reference, view, obj, tp)
			}
		}
	}
}

// sameLatest compares the LatestAt answers of two readers, record for
// record.
func sameLatest(t *testing.T, what string, reference, view storage.Reader, obj storage.ObjectID, tp time.Time) {
	t.Helper()
	ctx := context.Background()
	want, werr := reference.LatestAt(ctx, obj, tp)
	got, gerr := view.LatestAt(ctx, obj, tp)
	if errors.Is(werr, storage.ErrNotFound) && errors.Is(gerr, storage.ErrNotFound) {
		return
	}
	if werr != nil || gerr != nil || !reflect.DeepEqual(want, got) {
		t.Fatalf("%s: LatestAt(%+v):\nreference: %+v (error %v)\n     view: %+v (error %v)", what, obj, want, werr, got, gerr)
	}
}
