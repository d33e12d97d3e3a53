package sqlite

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/storagetest"
)

// TestScanByObjectChunks checks that ScanByObject reads what
// RecordsByObject reads, in its order, whatever the number of objects it
// reads per transaction and whether the keyframes the deltas need are
// cached or not: many objects of two streams with alike bodies (a new
// object's body is a delta against another's keyframe), many versions
// each, interleaved, deletions and objects created again.
func TestScanByObjectChunks(t *testing.T) {
	ctx := context.Background()
	s := openInternal(t)
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	streams := []event.Stream{
		{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"},
		{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "bank"},
	}
	start := time.Date(2025, 3, 1, 0, 0, 0, 0, time.UTC)
	var batch []event.Record
	rv := 0
	alive := map[string]bool{}
	for i := range 3000 {
		st := streams[rng.IntN(len(streams))]
		name := "cm-" + strconv.Itoa(rng.IntN(40))
		key := st.Namespace + "/" + name
		rv++
		ref := storagetest.Ref(st, "ConfigMap", st.Namespace, name, "uid-"+key, strconv.Itoa(rv))
		wt := event.Modified
		switch {
		case !alive[key]:
			wt = event.Added
		case rng.IntN(20) == 0:
			wt = event.Deleted
		}
		alive[key] = wt != event.Deleted
		body := storagetest.ConfigMap(st.Namespace, name, "uid-"+key, strconv.Itoa(rv), map[string]string{
			"version": strconv.Itoa(rng.IntN(5)), "config.yaml": fmt.Sprintf("listen: 8080\nworkers: %d\n", rng.IntN(3))})
		batch = append(batch, storagetest.Event(st, wt, ref, body, start.Add(time.Duration(i)*time.Second)))
		if len(batch) == 100 {
			if _, err := s.Append(ctx, batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	defer func(n int) { scanChunkObjects = n }(scanChunkObjects)
	for _, st := range streams {
		for _, chunk := range []int{1, 2, 3, 7, 128} {
			scanChunkObjects = chunk
			for _, cold := range []bool{false, true} {
				for _, n := range []int{1, 3} {
					parts, err := s.SplitByObject(ctx, st.ID(), n)
					if err != nil {
						t.Fatal(err)
					}
					for _, cursor := range parts {
						for _, without := range []bool{false, true} {
							q := storage.Query{StreamID: st.ID(), Types: []event.RecordType{event.TypeEvent}, Cursor: cursor, WithoutBodies: without}
							var want []event.Record
							for {
								p, err := s.RecordsByObject(ctx, q)
								if err != nil {
									t.Fatal(err)
								}
								want = append(want, p.Records...)
								if p.Next == "" {
									break
								}
								q.Cursor = p.Next
							}
							q.Cursor = cursor
							if cold {
								s.bases.clear()
							}
							i := 0
							err := s.ScanByObject(ctx, q, func(r *event.Record) error {
								if i >= len(want) {
									return fmt.Errorf("record %d (seq %d) past the %d of RecordsByObject", i, r.IngestSeq, len(want))
								}
								w := want[i]
								i++
								if r.EventID != w.EventID || r.IngestSeq != w.IngestSeq || r.ObjectHash != w.ObjectHash || r.Resource != w.Resource ||
									r.StreamID != w.StreamID || r.ClusterID != w.ClusterID || !r.ObservedAt.Equal(w.ObservedAt) || r.WatchType != w.WatchType ||
									!bytes.Equal(r.Object, w.Object) {
									return fmt.Errorf("record %d is %+v, want %+v", i-1, *r, w)
								}
								return nil
							})
							if err == nil && i != len(want) {
								err = fmt.Errorf("%d records, want %d", i, len(want))
							}
							if err != nil {
								t.Fatalf("seed %d, stream %s, %d objects per transaction, keyframes cached %v, part %s of %d, without bodies %v: %v", seed, st.ID(), chunk, !cold, cursor, n, without, err)
							}
						}
					}
				}
			}
		}
	}
}
