package truth

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
)

// journalRecords returns the records of a cluster's streams, in IngestSeq
// order.
func journalRecords(t *testing.T, st storage.Reader, cluster string) []event.Record {
	t.Helper()
	recs, err := allRecords(context.Background(), st, storage.Query{ClusterID: cluster})
	if err != nil {
		t.Fatal(err)
	}
	return slices.DeleteFunc(recs, func(r event.Record) bool { return r.StreamID == "" })
}

// copyJournal appends recs to a new in-memory store, in order.
func copyJournal(t *testing.T, recs []event.Record) storage.Store {
	t.Helper()
	st := memory.New()
	t.Cleanup(func() { _ = st.Close() })
	for len(recs) > 0 {
		n := min(len(recs), 500)
		batch := slices.Clone(recs[:n])
		for i := range batch {
			batch[i].IngestSeq = 0
		}
		if _, err := st.Append(context.Background(), batch); err != nil {
			t.Fatal(err)
		}
		recs = recs[n:]
	}
	return st
}

// corruption is a way a broken Collector would have written the journal.
type corruption struct {
	name string
	// apply returns the corrupted records, or nil when the journal offers
	// nothing to corrupt this way.
	apply func([]event.Record) []event.Record
	want  []string // any of these mismatch kinds proves the breakage caught
}

// isWatchEvent reports whether rec is an object change a watch delivered.
func isWatchEvent(rec event.Record) bool { return rec.IsObjectChange() && !rec.Synthetic }

func brokenCollectors() []corruption {
	return []corruption{
		{"drops a watch event inside covered time", func(recs []event.Record) []event.Record {
			// The first watch event of a stream that records another one
			// after it without a gap in between.
			for i, rec := range recs {
				if !isWatchEvent(rec) {
					continue
				}
				for _, later := range recs[i+1:] {
					if later.StreamID != rec.StreamID {
						continue
					}
					if _, loss := storage.LossStart(later); loss || later.Type == event.TypeBaseline {
						break
					}
					if isWatchEvent(later) {
						return slices.Delete(slices.Clone(recs), i, i+1)
					}
				}
			}
			return nil
		}, []string{KindLost}},
		{"resumes a cut watch from a later resourceVersion", func(recs []event.Record) []event.Record {
			// Three watch events of a stream skipped, followed by a
			// fourth before any gap or baseline: a reconnect that
			// resumed past them.
			byStream := map[string][]int{}
			for i, rec := range recs {
				_, loss := storage.LossStart(rec)
				switch {
				case loss || rec.Type == event.TypeBaseline:
					byStream[rec.StreamID] = nil
				case isWatchEvent(rec):
					run := append(byStream[rec.StreamID], i)
					if len(run) == 5 {
						out := slices.Clone(recs)
						for _, j := range slices.Backward(run[1:4]) {
							out = slices.Delete(out, j, j+1)
						}
						return out
					}
					byStream[rec.StreamID] = run
				}
			}
			return nil
		}, []string{KindLost}},
		{"stores a redelivered event again under a new EventID", func(recs []event.Record) []event.Record {
			i := slices.IndexFunc(recs, isWatchEvent)
			if i < 0 {
				return nil
			}
			dup := recs[i]
			dup.EventID += "-redelivered"
			dup.ObservedAt = dup.ObservedAt.Add(time.Millisecond)
			return slices.Insert(slices.Clone(recs), i+1, dup)
		}, []string{KindDuplicate}},
		{"writes no gap", func(recs []event.Record) []event.Record {
			out := slices.DeleteFunc(slices.Clone(recs), func(r event.Record) bool { _, loss := storage.LossStart(r); return loss })
			if len(out) == len(recs) {
				return nil
			}
			return out
		}, []string{KindLost}},
		{"skips the relist after a gap", func(recs []event.Record) []event.Record {
			first := map[string]string{} // stream → its first baseline
			for _, r := range recs {
				if r.Type == event.TypeBaseline && first[r.StreamID] == "" {
					first[r.StreamID] = r.BaselineID
				}
			}
			out := slices.DeleteFunc(slices.Clone(recs), func(r event.Record) bool {
				_, loss := storage.LossStart(r)
				return loss || (r.BaselineID != "" && r.BaselineID != first[r.StreamID]) || r.Inferred != nil
			})
			if len(out) == len(recs) {
				return nil
			}
			return out
		}, []string{KindLost}},
		{"infers no deletion after a relist", func(recs []event.Record) []event.Record {
			out := slices.DeleteFunc(slices.Clone(recs), func(r event.Record) bool { return r.Inferred != nil })
			if len(out) == len(recs) {
				return nil
			}
			return out
		}, []string{KindInferredMissing}},
		{"stamps gaps when the loss was detected", func(recs []event.Record) []event.Record {
			out := slices.Clone(recs)
			n := 0
			for i := range out {
				if g := out[i].Gap; g != nil && !g.From.Equal(g.To) {
					moved := *g
					moved.From = g.To
					out[i].Gap = &moved
					n++
				}
			}
			if n == 0 {
				return nil
			}
			return out
		}, []string{KindGapStart, KindInferred}},
	}
}

// checkBrokenJournals corrupts the recorded journal the way broken
// Collectors would have written it and expects Check to catch each.
func checkBrokenJournals(t *testing.T, o *Oracle, st storage.Reader, cfg Config, intact *Report) {
	t.Helper()
	recs := journalRecords(t, st, cfg.ClusterID)
	cfg.RandomTimes, cfg.GapSnapshots = 0, 0 // the journal checks suffice, and are quick
	cfg.Saved, cfg.AuditIngested = nil, false // the streams' records only: no saved snapshots, no correlations
	for _, c := range brokenCollectors() {
		t.Run("broken collector "+c.name, func(t *testing.T) {
			corrupted := c.apply(recs)
			if corrupted == nil {
				t.Fatalf("the run offers nothing to corrupt this way: it proves too little (%s)", intact.Summary())
			}
			r, err := Check(context.Background(), o, copyJournal(t, corrupted), cfg)
			if err != nil {
				t.Fatal(err)
			}
			kinds := r.Kinds()
			if !slices.ContainsFunc(c.want, func(k string) bool { return kinds[k] > 0 }) {
				t.Fatalf("a Collector that %s goes unnoticed: want a mismatch of kind %v; %s", c.name, c.want, r.Summary())
			}
			first := r.Mismatches[slices.IndexFunc(r.Mismatches, func(m Mismatch) bool { return slices.Contains(c.want, m.Kind) })]
			t.Logf("caught: %d mismatches %v; e.g. %s", len(r.Mismatches), kinds, first)
		})
	}
}
