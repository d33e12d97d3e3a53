package truth

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/audit"
	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
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
	cfg.RandomTimes, cfg.GapSnapshots = 0, 0  // the journal checks suffice, and are quick
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

// isSaved selects the saved snapshots and plans.
func isSaved(r event.Record) bool { return r.Type == event.TypeSnapshot || r.Type == event.TypePlan }

// seamCorruption is a way a broken store, correlator or materializer would
// have left the journal. apply gets the journal without its saved
// snapshots and plans, and those; it returns the corrupted journal, or nil
// when the run offers nothing to corrupt this way. Each corruption is a
// few breakages at once, each of a kind of its own, to keep the run short
// (the unit tests in check_seams_test.go break one thing at a time).
type seamCorruption struct {
	name  string
	apply func(recs, saved []event.Record) []event.Record
	// leaky answers object histories with the items of baselines that
	// never ended, as a store that does not leave them out.
	leaky bool
	want  []string // every one of these mismatch kinds must be found
}

// twin is a version the journal holds both as a watch event and as an item
// of a later complete baseline (a relist showed it again), and a
// correlation linked to one of the two.
type twin struct {
	corr       int // index of the correlation
	real, item event.Record
}

// twins returns up to n twins, with different correlations.
func twins(recs []event.Record, n int) []twin {
	type key struct{ stream, uid, rv string }
	ended := map[string]bool{}
	for _, r := range recs {
		if r.Baseline != nil && r.Baseline.Phase == event.BaselineEnd {
			ended[r.BaselineID] = true
		}
	}
	real, item := map[key]event.Record{}, map[key]event.Record{}
	byID := map[string]key{}
	for _, r := range recs {
		if !r.IsObjectChange() || r.WatchType == event.Deleted {
			continue
		}
		k := key{r.StreamID, r.Resource.UID, r.Resource.ResourceVersion}
		byID[r.EventID] = k
		switch {
		case !r.Synthetic:
			real[k] = r
		case ended[r.BaselineID]:
			item[k] = r
		}
	}
	var out []twin
	for i, r := range recs {
		if len(out) == n {
			break
		}
		if r.Audit == nil {
			continue
		}
		k, ok := byID[r.Audit.TargetEventID]
		e, hasReal := real[k]
		b, hasItem := item[k]
		if ok && hasReal && hasItem {
			out = append(out, twin{i, e, b})
		}
	}
	return out
}

// relinkTwins breaks a journal's correlations four ways, each on a
// correlation of its own: one linked exactly to the baseline item of its
// version (audit-exact-synthetic), one linked again to the other record of
// its version (audit-duplicate), one given another user (audit-wrong) and
// one removed (audit-missing). It returns nil when the journal has fewer
// than two twins.
func relinkTwins(recs []event.Record) []event.Record {
	tw := twins(recs, 2)
	if len(tw) < 2 {
		return nil
	}
	out := slices.Clone(recs)
	out[tw[0].corr] = relinked(out[tw[0].corr], tw[0].item, audit.RuleExactResourceVersion, audit.ConfidenceExact)
	// Linked to both records of the version.
	again := relinked(recs[tw[1].corr], tw[1].item, "seen-through-relist", 0.5)
	if again.EventID == recs[tw[1].corr].EventID {
		again = relinked(recs[tw[1].corr], tw[1].real, audit.RuleExactResourceVersion, audit.ConfidenceExact)
	}
	out = append(out, again)
	// The user changed and the correlation lost are two other exact
	// correlations: changing or removing one of the two above would
	// take its own breakage away.
	untouched := func(from int) int {
		for i := from; i < len(recs); i++ {
			if i != tw[0].corr && i != tw[1].corr && out[i].Audit != nil && out[i].Audit.Confidence >= 1 {
				return i
			}
		}
		return -1
	}
	other := untouched(0)
	lost := untouched(other + 1)
	if other < 0 || lost < 0 {
		return nil
	}
	a := *out[other].Audit
	a.User = "mallory"
	out[other].Audit = &a
	return slices.Delete(out, lost, lost+1)
}

// relinked returns a correlation linked to target by rule.
func relinked(corr, target event.Record, rule string, confidence float64) event.Record {
	a := *corr.Audit
	a.TargetEventID, a.Rule, a.Confidence = target.EventID, rule, confidence
	corr.Audit, corr.Resource, corr.EventID, corr.IngestSeq = &a, target.Resource, audit.CorrelationID(a.AuditID, target), 0
	return corr
}

func brokenSeams() []seamCorruption {
	return []seamCorruption{
		{"links writes exactly to the baseline items of a relist, again after another relist, to another user, and loses one", func(recs, _ []event.Record) []event.Record {
			return relinkTwins(recs)
		}, false, []string{KindAuditSynthetic, KindAuditDuplicate, KindAuditWrong, KindAuditMissing}},
		{"shows the items of a killed baseline", func(recs, _ []event.Record) []event.Record { return recs }, true, []string{KindUnfinishedVisible}},
		{"recomputes a Complete snapshot as incomplete (a gap reaching back) and says Complete after the last evidence", func(recs, saved []event.Record) []event.Record {
			var flips, past *event.Record
			var gap event.Record
			for _, s := range saved {
				var snap materialize.Snapshot
				if s.Type != event.TypeSnapshot || json.Unmarshal(s.Object, &snap) != nil {
					continue
				}
				if i := slices.IndexFunc(recs, func(r event.Record) bool { return r.StreamID != "" && inScope(streamOfRecord(r), snap.Scope) }); flips == nil && snap.Complete && i >= 0 {
					gap = event.Record{Type: event.TypeGap, EventID: "late-gap", ClusterID: recs[i].ClusterID, StreamID: recs[i].StreamID,
						ObservedAt: time.Now(), Gap: &event.Gap{From: snap.At.Add(-time.Millisecond), To: time.Now(), Reason: "410 Gone"}}
					flips = &s
				}
				// A snapshot taken while nothing recorded, of now.
				if past == nil && !snap.Complete && strings.HasPrefix(snap.Name, "truth probe") && snap.At.Sub(snap.CreatedAt).Abs() < time.Second {
					snap.Complete, snap.Missing = true, nil
					s.Object, _ = json.Marshal(snap)
					s.ObjectHash = event.ObjectHash(s.Object)
					past = &s
				}
			}
			if flips == nil || past == nil {
				return nil
			}
			return append(slices.Clone(recs), *flips, *past, gap)
		}, false, []string{KindFlip, KindPastEvidence}},
	}
}

// streamOfRecord returns the stream a record's StreamID names, as far as
// scopes go.
func streamOfRecord(r event.Record) event.Stream {
	return event.Stream{ClusterID: r.ClusterID, Group: r.Resource.Group, Resource: r.Resource.Resource, Namespace: r.Resource.Namespace}
}

// checkBrokenSeams corrupts the recorded journal, its correlations and
// saved snapshots the way a broken store, correlator or materializer would
// have, and expects Check to catch each.
func checkBrokenSeams(t *testing.T, o *Oracle, st storage.Reader, cfg Config, intact *Report) {
	t.Helper()
	all, err := allRecords(context.Background(), st, storage.Query{ClusterID: cfg.ClusterID})
	if err != nil {
		t.Fatal(err)
	}
	var recs, saved []event.Record
	for _, r := range all {
		switch {
		case isSaved(r):
			saved = append(saved, r)
		default:
			recs = append(recs, r)
		}
	}
	cfg.RandomTimes, cfg.GapSnapshots, cfg.Saved = 0, 0, nil
	for _, c := range brokenSeams() {
		t.Run("broken seam "+c.name, func(t *testing.T) {
			corrupted := c.apply(recs, saved)
			if corrupted == nil {
				t.Fatalf("the run offers nothing to corrupt this way: it proves too little (%s)", intact.Summary())
			}
			var journal storage.Store = copyJournal(t, corrupted)
			if c.leaky {
				journal = newLeakyStore(journal)
			}
			r, err := Check(context.Background(), o, journal, cfg)
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range c.want {
				if r.Kinds()[want] == 0 {
					t.Errorf("a journal that %s goes unnoticed: want a mismatch of kind %s; %s", c.name, want, r.Summary())
					continue
				}
				t.Logf("caught: %s", r.Mismatches[slices.IndexFunc(r.Mismatches, func(m Mismatch) bool { return m.Kind == want })])
			}
			t.Logf("%d mismatches %v", len(r.Mismatches), r.Kinds())
		})
	}
}

// TestRelinkTwinsKeepsEachBreakage checks the broken seam that breaks
// correlations four ways at once on a journal whose first exact
// correlation comes before the twins' ones, as in the run of seed
// 208589444: the correlation given another user and the one removed were
// the next exact ones, so the one linked to a baseline item was removed and
// no audit-exact-synthetic could be found.
func TestRelinkTwinsKeepsEachBreakage(t *testing.T) {
	obj := func(id, rv string, item bool) event.Record {
		r := event.Record{Type: event.TypeEvent, WatchType: event.Modified, EventID: id, StreamID: "s",
			Resource: event.ResourceRef{Resource: "configmaps", Namespace: "n", Name: "c", UID: "u", ResourceVersion: rv}}
		if item {
			r.Synthetic, r.BaselineID = true, "b"
		}
		return r
	}
	corr := func(auditID, target string) event.Record {
		return event.Record{Type: event.TypeAuditCorrelation, EventID: "corr-" + auditID,
			Audit: &event.AuditCorrelation{TargetEventID: target, AuditID: auditID, User: "alice", Verb: "update",
				Confidence: audit.ConfidenceExact, Rule: audit.RuleExactResourceVersion}}
	}
	recs := []event.Record{
		obj("r0", "4", false),
		corr("a0", "r0"), // the first exact correlation, before the twins'
		obj("r1", "5", false),
		obj("r2", "6", false),
		{Type: event.TypeBaseline, EventID: "begin", StreamID: "s", BaselineID: "b", Baseline: &event.Baseline{ID: "b", Phase: event.BaselineBegin}},
		obj("i1", "5", true),
		obj("i2", "6", true),
		{Type: event.TypeBaseline, EventID: "end", StreamID: "s", BaselineID: "b", Baseline: &event.Baseline{ID: "b", Phase: event.BaselineEnd}},
		corr("a1", "r1"),
		corr("a2", "r2"),
		corr("a3", "r0"),
		corr("a4", "r0"),
	}
	out := relinkTwins(recs)
	if out == nil {
		t.Fatal("relinkTwins found nothing to break")
	}
	var toItem, toVersion2, mallory int
	var audits []string
	for _, r := range out {
		if r.Audit == nil {
			continue
		}
		audits = append(audits, r.Audit.AuditID)
		switch {
		case r.Audit.TargetEventID == "i1" && r.Audit.Confidence >= 1:
			toItem++
		case r.Audit.AuditID == "a2":
			toVersion2++
		}
		if r.Audit.User == "mallory" {
			mallory++
			if r.Audit.AuditID != "a0" {
				t.Errorf("audit event %s was given another user, want a0, the first exact correlation the twins do not use", r.Audit.AuditID)
			}
		}
	}
	if toItem != 1 || toVersion2 != 2 || mallory != 1 {
		t.Errorf("exact links to the baseline item %d, links of audit event a2 %d, correlations of mallory %d: want 1, 2, 1 (audit events %v)",
			toItem, toVersion2, mallory, audits)
	}
	if want := []string{"a0", "a1", "a2", "a4", "a2"}; !slices.Equal(audits, want) {
		t.Errorf("correlations %v, want %v (a3 removed, a2 linked again)", audits, want)
	}
}
