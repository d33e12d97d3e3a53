package watch

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest/testenv/faultproxy"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
)

// labelRule records the objects labelled record=yes.
var labelRule = RecordRuleFunc(`object.metadata.labels.record == "yes"`, func(_ context.Context, object json.RawMessage) (bool, error) {
	var o struct {
		Metadata struct {
			Labels map[string]string `json:"labels"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(object, &o); err != nil {
		return false, err
	}
	return o.Metadata.Labels["record"] == "yes", nil
})

func setRecordLabel(t *testing.T, dyn dynamic.Interface, ns, name, value string) string {
	t.Helper()
	cur, err := dyn.Resource(cmGVR).Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.SetLabels(map[string]string{"record": value})
	out, err := dyn.Resource(cmGVR).Namespace(ns).Update(context.Background(), cur, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("label %s/%s: %v", ns, name, err)
	}
	return out.GetResourceVersion()
}

// TestIntegrationRecordRule records the ConfigMaps labelled record=yes: the
// others are absent from the journal and every answer about them says
// "excluded by rule", never "absent" or "deleted" as if seen. An object
// that leaves the rule under the watch, one that leaves it during an
// outage (found by the relist) and one that enters it are each told
// apart; the deletion and the changes of an excluded object leave no
// record. It runs in parallel with the other tests.
func TestIntegrationRecordRule(t *testing.T) {
	t.Parallel()
	n := newNSTest(t, "kept", "skipped", "leaves", "joins")
	for _, name := range []string{"kept", "leaves"} {
		setRecordLabel(t, n.dyn, n.ns, name, "yes")
	}
	p := faultproxy.Start(t, n.env.Config())
	opts := realOpts(t, n.ns, WithRecordRule(labelRule))
	c := newReal(t, p.Config(), n.st, opts...)
	stop := run(t, c)
	waitSync(t, c)
	id := event.Stream{ClusterID: "it", Version: "v1", Resource: "configmaps", Namespace: n.ns,
		Selector: "labels:;fields:;rule:" + labelRule.Expression()}.ID()
	if got := c.Status(); len(got) != 1 || got[0].StreamID != id {
		t.Fatalf("streams %+v, want one: %s", got, id)
	}

	mustUpdateCM(t, n.dyn, n.ns, "skipped", "1")
	mustDeleteCM(t, n.dyn, n.ns, "skipped")
	leftRV := setRecordLabel(t, n.dyn, n.ns, "leaves", "no")
	joinedRV := setRecordLabel(t, n.dyn, n.ns, "joins", "yes")
	eventually(t, 30*time.Second, "the exclusion of leaves and the version of joins", func() bool {
		return journalState(t, n.st, id)["joins"] == joinedRV && journalState(t, n.st, id)["leaves"] == ""
	})
	// A later change, so that the outage below begins after the version
	// that entered the rule.
	laterRV := mustUpdateCM(t, n.dyn, n.ns, "joins", "2").GetResourceVersion()
	eventually(t, 30*time.Second, "the later version of joins", func() bool { return journalState(t, n.st, id)["joins"] == laterRV })

	// kept leaves the rule while the watches fail; the relist finds it.
	watchCM := faultproxy.Match{Verb: "watch", Resource: "configmaps", Namespace: n.ns}
	p.FailNext(1000, watchCM, faultproxy.Status(503))
	p.CutWatches(watchCM)
	setRecordLabel(t, n.dyn, n.ns, "kept", "no")
	p.ClearFaults()
	p.FailNext(1, watchCM, faultproxy.WatchError(410))
	eventually(t, 30*time.Second, "the relist", func() bool { return len(ofType(streamRecords(t, n.st, id), event.TypeBaseline)) == 4 })
	now := observedNow(t, c)

	recs := streamRecords(t, n.st, id)
	exclusions := map[string]event.Record{}
	for _, r := range ofType(recs, event.TypeEvent) {
		switch {
		case r.Resource.Name == "skipped":
			t.Errorf("a record of the excluded skipped: %s %s synthetic=%v", r.WatchType, r.Resource.ResourceVersion, r.Synthetic)
		case r.IsExclusion():
			exclusions[r.Resource.Name] = r
		case r.Inferred != nil:
			t.Errorf("an inferred deletion of %s (%s): it left the rule, it was not deleted", r.Resource.Name, r.Inferred.Reason)
		}
	}
	if ex, ok := exclusions["leaves"]; !ok || ex.BaselineID != "" || ex.Resource.ResourceVersion != leftRV || len(ex.Object) != 0 {
		t.Errorf("exclusion of leaves %+v; want one under the watch at resourceVersion %s, without a body", ex, leftRV)
	}
	if ex, ok := exclusions["kept"]; !ok || ex.BaselineID == "" || !ex.Inferred.From.Before(ex.Inferred.To) {
		t.Errorf("exclusion of kept %+v; want one by the relist, bounded by the outage", ex)
	}
	// The relist listed kept, leaves and joins, and recorded joins alone.
	if ends := ofType(recs, event.TypeBaseline); ends[3].Baseline.ItemCount != 1 {
		t.Errorf("the relist's end counts %d items, want 1: joins, the one the rule matched", ends[3].Baseline.ItemCount)
	}

	m, err := materialize.New(n.st)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	object := func(name string) storage.ObjectID {
		return storage.ObjectID{ClusterID: "it", Resource: "configmaps", Namespace: n.ns, Name: name}
	}
	for _, name := range []string{"skipped", "leaves", "kept"} {
		st, err := m.ObjectAt(ctx, object(name), now)
		if err != nil {
			t.Fatal(err)
		}
		if st.Exists || st.Covered || st.Inferred != nil || !strings.HasPrefix(st.ExcludedByRule, event.ExcludedByRule) || !strings.Contains(st.ExcludedByRule, labelRule.Expression()) {
			t.Errorf("ObjectAt(%s): exists=%v covered=%v inferred=%+v excludedByRule=%q; want unknown, excluded by the rule", name, st.Exists, st.Covered, st.Inferred, st.ExcludedByRule)
		}
	}
	if st, err := m.ObjectAt(ctx, object("joins"), now); err != nil || !st.Exists || !st.Covered || st.ExcludedByRule != "" {
		t.Errorf("ObjectAt(joins): %+v, %v; want it known, alive", st, err)
	}

	snap, err := m.Snapshot(ctx, materialize.Scope{ClusterID: "it", Namespaces: []string{n.ns}}, now)
	if err != nil {
		t.Fatal(err)
	}
	if snap.Complete || len(snap.Missing) != 1 || snap.Missing[0].StreamID != id || !strings.HasPrefix(snap.Missing[0].Reason, event.ExcludedByRule) {
		t.Errorf("snapshot complete=%v missing=%+v; want incomplete, the rule's exclusions missing", snap.Complete, snap.Missing)
	}

	always := materialize.PredicateFunc(func(context.Context, json.RawMessage) (bool, error) { return true, nil })
	found, err := m.Find(ctx, materialize.FindQuery{Scope: materialize.Scope{ClusterID: "it", Namespaces: []string{n.ns}}}, always)
	if err != nil {
		t.Fatal(err)
	}
	intervals := map[string][]materialize.Interval{}
	for _, o := range found.Objects {
		intervals[o.Object.Name] = o.Intervals
	}
	if iv := intervals["leaves"]; len(iv) != 1 || iv[0].Closed != nil || !strings.HasPrefix(iv[0].EndUnknown, event.ExcludedByRule) {
		t.Errorf("find: leaves %+v; want one interval whose end is unknown, excluded by rule", iv)
	}
	if iv := intervals["joins"]; len(iv) != 2 || !strings.HasPrefix(iv[0].StartUnknown, event.ExcludedByRule) || iv[0].Opened.ResourceVersion != joinedRV {
		t.Errorf("find: joins %+v; want two, the first from resourceVersion %s, its start unknown: excluded by rule before", iv, joinedRV)
	}
	if _, ok := intervals["skipped"]; ok {
		t.Errorf("find: skipped has intervals %+v", intervals["skipped"])
	}

	// A restart resumes the watch from the checkpoint, without a list:
	// the objects the journal holds are read back, so that one leaving
	// the rule now is excluded, not left alive in the journal forever.
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	restarted := newReal(t, n.env.Config(), n.st, opts...)
	run(t, restarted)
	waitSync(t, restarted)
	setRecordLabel(t, n.dyn, n.ns, "joins", "no")
	eventually(t, 30*time.Second, "the exclusion of joins", func() bool { return journalState(t, n.st, id)["joins"] == "" })
	recs = streamRecords(t, n.st, id)
	if last := recs[len(recs)-1]; !last.IsExclusion() || last.Resource.Name != "joins" || len(ofType(recs, event.TypeBaseline)) != 4 {
		t.Errorf("after the restart: last record %s %s %+v, %d baseline records; want the exclusion of joins, no new baseline", last.Type, last.Resource.Name, last.Inferred, len(ofType(recs, event.TypeBaseline)))
	}
}
