package materialize_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/sqlite"
)

// A stream with a recording rule, on both stores: a and b listed at 1, a
// changed at 2 and leaving the rule at 3 (an exclusion, without a body),
// c entering it at 4. The answers say "excluded by rule" where the
// journal does not know, and know the objects the rule holds.
func TestRecordingRuleAnswers(t *testing.T) {
	sq, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "rule.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sq.Close() })
	for name, j := range map[string]*journal{"memory": newJournal(t), "sqlite": newJournalIn(t, sq)} {
		t.Run(name, func(t *testing.T) { checkRuleAnswers(t, j) })
	}
}

func checkRuleAnswers(t *testing.T, j *journal) {
	ctx := context.Background()
	s := j.stream("", "v1", "configmaps", "shop")
	s.Selector = "labels:;fields:" + event.RuleSeparator + `object.data.v != "x"`
	a, b := cm("shop", "a", "ua", map[string]any{"v": "1"}), cm("shop", "b", "ub", map[string]any{"v": "1"})
	j.baseline(s, "b1", at(1), a, b)
	a.body["data"] = map[string]any{"v": "2"}
	j.watch(s, event.Modified, a, at(2))
	leftRV := j.nextRV()
	ref := j.ref(s, a, leftRV)
	j.append(event.Record{Type: event.TypeEvent, EventID: event.EventID(s.ID(), event.TypeEvent, ref, event.Deleted, "", event.ExcludedByRule),
		ClusterID: j.cluster, StreamID: s.ID(), ObservedAt: at(3), WatchType: event.Deleted, Synthetic: true, Resource: ref,
		Inferred: &event.InferredDeletion{From: at(3), To: at(3), Reason: event.ExcludedByRule + ": resourceVersion " + leftRV + " does not match"}})
	c := cm("shop", "c", "uc", map[string]any{"v": "1"})
	entered := j.watch(s, event.Modified, c, at(4))
	j.progress(s, at(60))

	m := j.materializer()
	id := func(name string) storage.ObjectID {
		return storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: name}
	}
	for name, want := range map[string]string{"a": "excluded by rule: resourceVersion " + leftRV + " does not match at ", "never": "excluded by rule: stream "} {
		st, err := m.ObjectAt(ctx, id(name), at(5))
		if err != nil {
			t.Fatal(err)
		}
		if st.Exists || st.Covered || st.Inferred != nil || !strings.HasPrefix(st.ExcludedByRule, want) || !strings.Contains(st.ExcludedByRule, "object.data.v") {
			t.Errorf("ObjectAt(%s): exists=%v covered=%v inferred=%+v excludedByRule=%q; want unknown, %q…", name, st.Exists, st.Covered, st.Inferred, st.ExcludedByRule, want)
		}
	}
	for _, name := range []string{"b", "c"} {
		if st, err := m.ObjectAt(ctx, id(name), at(5)); err != nil || !st.Exists || !st.Covered || st.ExcludedByRule != "" {
			t.Errorf("ObjectAt(%s): %+v, %v; want it known, alive", name, st, err)
		}
	}
	h, err := m.History(ctx, id("a"))
	if err != nil {
		t.Fatal(err)
	}
	if vs := h.Versions(); len(vs) != 3 || vs[2].Origin != materialize.OriginExcluded || len(vs[2].Object) != 0 {
		t.Errorf("history of a: %d versions, the last %+v; want three, the last the exclusion", len(vs), vs[len(vs)-1])
	}
	snap, err := m.Snapshot(ctx, materialize.Scope{ClusterID: "c1"}, at(5))
	if err != nil {
		t.Fatal(err)
	}
	if snap.Complete || len(snap.Missing) != 1 || !strings.HasPrefix(snap.Missing[0].Reason, event.ExcludedByRule) || len(snap.Objects) != 2 {
		t.Errorf("snapshot: complete=%v missing=%+v, %d objects; want incomplete, the rule's exclusions missing, b and c", snap.Complete, snap.Missing, len(snap.Objects))
	}
	always := materialize.PredicateFunc(func(context.Context, json.RawMessage) (bool, error) { return true, nil })
	f, err := m.Find(ctx, materialize.FindQuery{Scope: materialize.Scope{ClusterID: "c1"}}, always)
	if err != nil {
		t.Fatal(err)
	}
	got := foundIntervals(f)
	if iv := got["configmaps:shop/a"]; len(iv) != 1 || !iv[0].to.Equal(at(3)) || iv[0].closed != "" || !strings.HasPrefix(iv[0].endUnk, event.ExcludedByRule) {
		t.Errorf("find: a %v; want one interval to 3, its end unknown: excluded by rule", iv)
	}
	if iv := got["configmaps:shop/c"]; len(iv) != 1 || !iv[0].from.Equal(at(4)) || iv[0].opened != entered.Resource.ResourceVersion || iv[0].startUnknown != event.ExcludedByRule+" before this version" {
		t.Errorf("find: c %v; want one interval from 4, its start unknown: excluded by rule before", iv)
	}
	if len(f.Missing) != 1 || f.Missing[0].StreamID != s.ID() {
		t.Errorf("find: missing %+v; want the rule's stream", f.Missing)
	}
}
