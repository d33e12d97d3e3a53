package truth

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/audit"
	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/replay"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
)

// The scenario of check_test.go with the seams, as a correct journal shared
// by processes holds them:
//
//	relist bk after the gap, killed after one item (x3): it never ends
//	every version written by one of three users, with an audit ID
//	audit correlations: exact to each watch event; x3 and w1 (lost in the
//	gap) to their items of baseline b1, not exactly; y's deletion to its
//	inferred deletion
//	a snapshot saved at 105 (Complete: z's deletion observed at 112 is
//	evidence after it), one at 300 (after the last evidence, the progress
//	checkpoint at 250: not Complete), and a replay plan at 105
type seamScenario struct {
	*scenario
	records []event.Record // the whole journal, saved snapshots and plans included
	saved   []Saved
	users   map[string]string // audit ID → user
}

var seamUsers = []string{"admin", "alice", "bob"}

func buildSeams(t *testing.T) *seamScenario {
	t.Helper()
	s := build()
	ss := &seamScenario{scenario: s, users: map[string]string{}}
	for i := range s.oracle.versions {
		v := &s.oracle.versions[i]
		v.User, v.AuditID = seamUsers[i%len(seamUsers)], fmt.Sprintf("audit-%d", i)
		ss.users[v.AuditID] = v.User
	}
	// The killed relist: its begin and one item, between the gap (80) and b1 (90).
	b1 := nth(s.records, 0, func(r event.Record) bool { return r.Type == event.TypeBaseline && r.BaselineID == "b1" })
	x3 := s.oracle.versions[4]
	ref := s.ref(x3, x3.ResourceVersion)
	killed := []event.Record{
		{Type: event.TypeBaseline, EventID: "bk-begin", ClusterID: testCluster, StreamID: s.stream, ObservedAt: s.at(85), BaselineID: "bk",
			Baseline: &event.Baseline{ID: "bk", Phase: event.BaselineBegin}},
		{Type: event.TypeEvent, EventID: event.EventID(s.stream, event.TypeEvent, ref, event.Added, "bk"), ClusterID: testCluster, StreamID: s.stream,
			ObservedAt: s.at(85), WatchType: event.Added, Synthetic: true, Resource: ref, Object: x3.Body, BaselineID: "bk"},
	}
	recs := slices.Insert(slices.Clone(s.records), b1, killed...)
	// The correlations, made as the audit package makes them.
	byVersion := func(v Version, synthetic bool) event.Record {
		for _, r := range recs {
			if r.Type == event.TypeEvent && r.Resource.UID == v.UID && r.Synthetic == synthetic && r.BaselineID != "bk" &&
				(r.WatchType == event.Deleted) == (v.Op == OpDelete) && (v.Op == OpDelete || r.Resource.ResourceVersion == v.ResourceVersion) {
				return r
			}
		}
		t.Fatalf("no record of %s", v)
		return event.Record{}
	}
	for _, v := range s.oracle.versions {
		switch v.Object.Name + string(v.Op) {
		case "wcreate", "xupdate":
			if v.ResourceVersion == x3.ResourceVersion || v.Object.Name == "w" {
				recs = append(recs, correlation(v, byVersion(v, true), "seen-through-relist", 0.5))
				continue
			}
		case "ydelete":
			recs = append(recs, correlation(v, byVersion(v, true), audit.RuleInferredDeletion, audit.ConfidenceInferredDeletion))
			continue
		}
		rule := audit.RuleExactResourceVersion
		if v.Op == OpDelete {
			rule = audit.RuleExactUIDDeletion
		}
		recs = append(recs, correlation(v, byVersion(v, false), rule, audit.ConfidenceExact))
	}
	st := memory.New()
	t.Cleanup(func() { _ = st.Close() })
	ctx := context.Background()
	if _, err := st.Append(ctx, recs); err != nil {
		t.Fatal(err)
	}
	mat, err := materialize.New(st)
	if err != nil {
		t.Fatal(err)
	}
	for _, ms := range []int{105, 300} {
		snap, err := mat.Snapshot(ctx, seamScope(), s.at(ms))
		if err == nil {
			err = mat.SaveSnapshot(ctx, snap, "scenario")
		}
		if err != nil {
			t.Fatal(err)
		}
		ss.saved = append(ss.saved, Saved{Kind: SavedSnapshot, By: "scenario", ID: snap.ID, At: snap.At, Complete: snap.Complete, Objects: len(snap.Objects)})
	}
	planner, err := replay.NewPlanner(st)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := planner.Plan(ctx, replay.Source{ClusterID: testCluster, Namespaces: []string{testNS}, At: s.at(105)}, replay.Target{Namespaces: map[string]string{testNS: "copy"}})
	if err == nil {
		err = planner.SavePlan(ctx, plan)
	}
	if err != nil {
		t.Fatal(err)
	}
	ss.saved = append(ss.saved, Saved{Kind: SavedPlan, By: "scenario", ID: plan.ID, At: plan.Source.At, Complete: plan.Coverage.Complete, Objects: len(plan.Objects), Hash: plan.Hash})
	// Whatever a plan saves besides itself (nothing, once reads never
	// write) is reported by whoever saved it.
	all, err := allRecords(ctx, st, storage.Query{ClusterID: testCluster})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range all {
		if r.Type == event.TypeSnapshot && !slices.ContainsFunc(ss.saved, func(s Saved) bool { return s.ID == r.EventID }) {
			var snap materialize.Snapshot
			if err := json.Unmarshal(r.Object, &snap); err != nil {
				t.Fatal(err)
			}
			ss.saved = append(ss.saved, Saved{Kind: SavedSnapshot, By: "the plan", ID: snap.ID, At: snap.At, Complete: snap.Complete, Objects: len(snap.Objects)})
		}
	}
	ss.records = all
	return ss
}

func seamScope() materialize.Scope {
	return materialize.Scope{ClusterID: testCluster, Namespaces: []string{testNS}, Resources: []schema.GroupResource{{Resource: "configmaps"}}}
}

// correlation links v's audit event to target as the audit package would.
func correlation(v Version, target event.Record, rule string, confidence float64) event.Record {
	return event.Record{Type: event.TypeAuditCorrelation, EventID: audit.CorrelationID(v.AuditID, target), ClusterID: testCluster,
		ObservedAt: v.RespondedAt, Resource: target.Resource, Audit: &event.AuditCorrelation{TargetEventID: target.EventID,
			AuditID: v.AuditID, User: v.User, Verb: string(v.Op), RequestReceivedAt: v.IssuedAt, Confidence: confidence, Rule: rule}}
}

// store copies the scenario's journal, as mutate leaves it, into a new
// store.
func (ss *seamScenario) store(t *testing.T, mutate func([]event.Record) []event.Record) storage.Store {
	t.Helper()
	return mutatedJournal(t, ss.records, mutate)
}

func (ss *seamScenario) check(t *testing.T, st storage.Store, saved []Saved) *Report {
	t.Helper()
	r, err := Check(context.Background(), ss.oracle, st, Config{
		ClusterID: testCluster, Namespaces: []string{testNS}, Resources: []schema.GroupResource{{Resource: "configmaps"}},
		RandomTimes: 50, GapSnapshots: 10, Seed: 1, Saved: saved, AuditIngested: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestCheckSeamsIntact(t *testing.T) {
	ss := buildSeams(t)
	r := ss.check(t, ss.store(t, nil), ss.saved)
	if len(r.Mismatches) != 0 {
		t.Fatalf("intact journal: %s\n%s", r.Summary(), mismatchLines(r))
	}
	if r.UnfinishedItems != 1 || r.Correlations != 9 || r.Attributed != 6 || r.ThroughRelist != 3 || r.Unattributed != 0 {
		t.Fatalf("counts: %s", r.Summary())
	}
	if r.SavedSnapshots < 2 || r.SavedPlans != 1 || r.SavedComplete < 2 || r.SavedChecked != len(ss.saved) {
		t.Fatalf("saved: %s", r.Summary())
	}
}

// isCorrelation selects the correlation of one audit ID.
func isCorrelation(auditID string) func(event.Record) bool {
	return func(r event.Record) bool { return r.Audit != nil && r.Audit.AuditID == auditID }
}

// savedRecord selects the saved snapshot (or plan) with an ID.
func savedRecord(id string) func(event.Record) bool {
	return func(r event.Record) bool { return r.EventID == id }
}

// TestCheckCatchesBrokenSeams corrupts the scenario's journal the way a
// broken store, correlator or materializer would, and expects the checker
// to say so.
func TestCheckCatchesBrokenSeams(t *testing.T) {
	ss := buildSeams(t)
	x3 := ss.oracle.versions[4] // lost in the gap, an item of b1
	z1 := ss.oracle.versions[3] // a watch event, and an item of b1
	complete, incomplete := ss.saved[0], ss.saved[1]
	if !complete.Complete || incomplete.Complete {
		t.Fatalf("the scenario's snapshots: at %s Complete=%v, at %s Complete=%v; want true, false", stamp(complete.At), complete.Complete, stamp(incomplete.At), incomplete.Complete)
	}
	itemOf := func(recs []event.Record, v Version, baseline string) event.Record {
		return recs[nth(recs, 0, func(r event.Record) bool {
			return r.Synthetic && r.BaselineID == baseline && r.Resource.UID == v.UID && r.Resource.ResourceVersion == v.ResourceVersion
		})]
	}
	relink := func(recs []event.Record, i int, target event.Record, rule string, confidence float64) {
		a := *recs[i].Audit
		a.TargetEventID, a.Rule, a.Confidence = target.EventID, rule, confidence
		recs[i].Audit, recs[i].Resource = &a, target.Resource
		recs[i].EventID = audit.CorrelationID(a.AuditID, target)
	}
	tests := []struct {
		name   string
		mutate func([]event.Record) []event.Record
		saved  []Saved
		want   string
	}{
		{"links a write exactly to the baseline item that shows it after a relist", func(recs []event.Record) []event.Record {
			i := nth(recs, 0, isCorrelation(z1.AuditID))
			relink(recs, i, itemOf(recs, z1, "b1"), audit.RuleExactResourceVersion, audit.ConfidenceExact)
			return recs
		}, ss.saved, KindAuditSynthetic},
		{"links a create exactly to its inferred deletion", func(recs []event.Record) []event.Record {
			y1 := ss.oracle.versions[2]
			i := nth(recs, 0, isCorrelation(y1.AuditID))
			relink(recs, i, recs[nth(recs, 0, func(r event.Record) bool { return r.Inferred != nil })], audit.RuleExactUIDDeletion, audit.ConfidenceExact)
			return recs
		}, ss.saved, KindAuditSynthetic},
		{"links a write again when its audit log is ingested after another relist", func(recs []event.Record) []event.Record {
			again := relinked(recs[nth(recs, 0, isCorrelation(z1.AuditID))], itemOf(recs, z1, "b1"), "seen-through-relist", 0.5)
			return append(recs, again)
		}, ss.saved, KindAuditDuplicate},
		{"links a write exactly to another version's event", func(recs []event.Record) []event.Record {
			i := nth(recs, 0, isCorrelation(ss.oracle.versions[1].AuditID)) // x's update, to x's create
			relink(recs, i, recs[nth(recs, 0, isEvent("x", event.Added, false))], audit.RuleExactResourceVersion, audit.ConfidenceExact)
			return recs
		}, ss.saved, KindAuditWrong},
		{"attributes a write to another user", func(recs []event.Record) []event.Record {
			i := nth(recs, 0, isCorrelation(z1.AuditID))
			a := *recs[i].Audit
			a.User = "mallory"
			recs[i].Audit = &a
			return recs
		}, ss.saved, KindAuditWrong},
		{"loses the link of a recorded write", func(recs []event.Record) []event.Record {
			return slices.DeleteFunc(recs, isCorrelation(z1.AuditID))
		}, ss.saved, KindAuditMissing},
		{"links a write to an item of a baseline that never ended", func(recs []event.Record) []event.Record {
			i := nth(recs, 0, isCorrelation(x3.AuditID))
			relink(recs, i, itemOf(recs, x3, "bk"), "seen-through-relist", 0.5)
			return recs
		}, ss.saved, KindUnfinishedVisible},
		{"lists again over a trusted baseline without a loss of continuity", func(recs []event.Record) []event.Record {
			// b2 repeats b1 right after it: the same versions as items twice.
			var again []event.Record
			for _, r := range recs {
				if r.BaselineID == "b1" && r.Inferred == nil {
					r.BaselineID, r.EventID = "b2", r.EventID+"-b2"
					if r.Baseline != nil {
						b := *r.Baseline
						b.ID = "b2"
						r.Baseline = &b
					}
					r.ObservedAt = r.ObservedAt.Add(3 * time.Millisecond)
					again = append(again, r)
				}
			}
			i := nth(recs, 0, func(r event.Record) bool {
				return r.Baseline != nil && r.BaselineID == "b1" && r.Baseline.Phase == event.BaselineEnd
			})
			return slices.Insert(recs, i+1, again...)
		}, ss.saved, KindHistoryDuplicate},
		{"recomputes a Complete snapshot as incomplete (a gap reaching back)", func(recs []event.Record) []event.Record {
			gap := event.Record{Type: event.TypeGap, EventID: "late-gap", ClusterID: testCluster, StreamID: ss.stream, ObservedAt: ss.at(400),
				Gap: &event.Gap{From: complete.At.Add(-time.Millisecond), To: ss.at(400), Reason: "410 Gone"}}
			return append(recs, gap)
		}, ss.saved, KindFlip},
		{"recomputes a Complete snapshot with other objects (a version inserted before it)", func(recs []event.Record) []event.Record {
			i := nth(recs, 0, isEvent("x", event.Modified, false))
			ph := recs[i]
			ph.Resource.Name, ph.EventID, ph.Resource.UID = "ghost", "ghost", "uid-ghost"
			return slices.Insert(recs, i+1, ph)
		}, ss.saved, KindFlip},
		{"says Complete for a time after the last evidence", func(recs []event.Record) []event.Record {
			i := nth(recs, 0, savedRecord(incomplete.ID))
			var snap materialize.Snapshot
			if err := json.Unmarshal(recs[i].Object, &snap); err != nil {
				t.Fatal(err)
			}
			snap.Complete, snap.Missing = true, nil
			recs[i].Object, _ = json.Marshal(snap)
			recs[i].ObjectHash = event.ObjectHash(recs[i].Object)
			return recs
		}, withComplete(ss.saved, incomplete.ID), KindPastEvidence},
		{"loses a saved snapshot", func(recs []event.Record) []event.Record {
			return slices.DeleteFunc(recs, savedRecord(complete.ID))
		}, ss.saved, KindSaved},
		{"saves what nobody asked to save", nil, slices.DeleteFunc(slices.Clone(ss.saved), func(s Saved) bool { return s.ID == complete.ID }), KindSaved},
		{"stores a plan preview", nil, append(slices.Clone(ss.saved[:2]), previewOf(ss.saved[2])), KindSaved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := ss.check(t, ss.store(t, tt.mutate), tt.saved)
			if r.Kinds()[tt.want] == 0 {
				t.Fatalf("want a %q mismatch; got %s\n%s", tt.want, r.Summary(), mismatchLines(r))
			}
			t.Logf("%s\n%s", r.Summary(), mismatchLines(r))
		})
	}
}

func withComplete(saved []Saved, id string) []Saved {
	out := slices.Clone(saved)
	for i := range out {
		if out[i].ID == id {
			out[i].Complete = true
		}
	}
	return out
}

func previewOf(s Saved) Saved {
	s.Preview = true
	return s
}

// leakyStore answers object histories from the journal as stored, items of
// baselines that never ended included, as the stores did before they left
// those out. It reads the journal once, at the first question.
type leakyStore struct {
	storage.Store
	once     sync.Once
	err      error
	byObject map[storage.ObjectID][]event.Record
}

func newLeakyStore(st storage.Store) *leakyStore { return &leakyStore{Store: st} }

func (l *leakyStore) ObjectHistory(ctx context.Context, obj storage.ObjectID, q storage.HistoryQuery) ([]event.Record, error) {
	l.once.Do(func() {
		var recs []event.Record
		recs, l.err = allRecords(ctx, l.Store, storage.Query{Types: []event.RecordType{event.TypeEvent}, WithoutBodies: true})
		l.byObject = map[storage.ObjectID][]event.Record{}
		for _, r := range recs {
			if r.IsObjectChange() {
				l.byObject[storage.ObjectIDOf(r)] = append(l.byObject[storage.ObjectIDOf(r)], r)
			}
		}
	})
	return slices.Clone(l.byObject[obj]), l.err
}

// A store that shows the items of a killed baseline is caught however the
// journal was written.
func TestCheckCatchesUnfinishedBaselineShown(t *testing.T) {
	ss := buildSeams(t)
	r := ss.check(t, newLeakyStore(ss.store(t, nil)), ss.saved)
	kinds := r.Kinds()
	if kinds[KindUnfinishedVisible] == 0 || kinds[KindHistoryDuplicate] == 0 {
		t.Fatalf("want %q and %q mismatches; got %s\n%s", KindUnfinishedVisible, KindHistoryDuplicate, r.Summary(), mismatchLines(r))
	}
	t.Logf("%s\n%s", r.Summary(), mismatchLines(r))
}

// TestCheckAnswers gives the checker ObjectAt answers as a querying
// process would report them: a covered one that the journal still gives
// passes; a covered one naming another version, or at a time the journal
// does not cover, is a flip; an answer that was not covered is not held
// to anything.
func TestCheckAnswers(t *testing.T) {
	ss := buildSeams(t)
	st := ss.store(t, nil)
	m, err := materialize.New(st)
	if err != nil {
		t.Fatal(err)
	}
	obj := ss.oracle.versions[1].Object // x, updated
	asked := func(at time.Time) Answer {
		t.Helper()
		state, err := m.ObjectAt(context.Background(), obj, at)
		if err != nil {
			t.Fatal(err)
		}
		return answerOf("query-0", obj, at, state)
	}
	good := asked(ss.at(105))
	if !good.Covered || !good.Exists {
		t.Fatalf("the scenario's x at 105: %+v; want covered and existing", good)
	}
	other := good
	other.ResourceVersion += "0"
	absent := good
	absent.Exists, absent.ResourceVersion = false, ""
	late := asked(ss.at(300))
	if late.Covered {
		t.Fatalf("the scenario's x at 300 (after the last evidence): %+v; want not covered", late)
	}
	lateClaimed := late
	lateClaimed.Covered = true
	lateWrong := late
	lateWrong.ResourceVersion += "0"
	tests := []struct {
		name    string
		answers []Answer
		flips   int
	}{
		{"the same answer", []Answer{good}, 0},
		{"another version", []Answer{good, other}, 1},
		{"absent", []Answer{absent}, 1},
		{"covered at a time not covered", []Answer{lateClaimed}, 1},
		{"not covered, another version", []Answer{lateWrong}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Check(context.Background(), ss.oracle, st, Config{ClusterID: testCluster, Namespaces: []string{testNS},
				Resources: []schema.GroupResource{{Resource: "configmaps"}}, Seed: 1, Saved: ss.saved, Answers: tc.answers, AuditIngested: true})
			if err != nil {
				t.Fatal(err)
			}
			flips := 0
			for _, mm := range r.Mismatches {
				if mm.Kind != KindAnswerFlip {
					t.Errorf("mismatch %s; want only %s", mm, KindAnswerFlip)
				}
				flips++
			}
			covered := 0
			for _, a := range tc.answers {
				if a.Covered {
					covered++
				}
			}
			if flips != tc.flips || r.AnswersCovered != covered {
				t.Fatalf("%d flips, %d covered answers asked again (%s); want %d, %d:\n%s", flips, r.AnswersCovered, r.Summary(), tc.flips, covered, mismatchLines(r))
			}
		})
	}
}
