package truth

import (
	"context"
	"fmt"
	"math/rand"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/storage/memory"
)

// synthetic makes a scenario of one stream with versions writes over objects
// names, and a gap every gapEvery writes that the next gapEvery writes fall
// into, closed by a baseline with the inferred deletions a Collector would
// write.
func synthetic(versions, objects, gapEvery int) *scenario {
	s := newScenario()
	rnd := rand.New(rand.NewSource(1))
	s.baseline(0, "b0", nil, nil, time.Time{})
	ms, lastObserved := 10, s.at(2)
	alive := map[string]Version{} // what the journal holds alive
	var gapFrom time.Time
	inGap := false
	// closeGap relists: the server's live objects, and an inferred
	// deletion of every object the journal held alive that the list lacks.
	closeGap := func() {
		var names []string
		for n := range s.last {
			names = append(names, n)
		}
		slices.Sort(names)
		var items, inferred []Version
		for _, n := range names {
			if cur := s.last[n]; cur.Op != OpDelete {
				items = append(items, cur)
			} else if jv, ok := alive[n]; ok {
				inferred = append(inferred, jv)
			}
		}
		s.baseline(ms, fmt.Sprintf("b%d", ms), items, inferred, gapFrom)
		lastObserved = s.at(ms + 2)
		ms += 10
		alive = map[string]Version{}
		for _, v := range items {
			alive[v.Object.Name] = v
		}
		inGap = false
	}
	for i := 0; i < versions; i++ {
		name := fmt.Sprintf("o%d", rnd.Intn(objects))
		last, ok := s.last[name]
		var v Version
		switch {
		case !ok || last.Op == OpDelete:
			v = s.write(ms, OpCreate, name)
		case rnd.Intn(5) == 0:
			v = s.write(ms, OpDelete, name)
		default:
			v = s.write(ms, OpUpdate, name)
		}
		if !inGap {
			s.observe(ms+2, v)
			lastObserved = s.at(ms + 2)
			if v.Op == OpDelete {
				delete(alive, name)
			} else {
				alive[name] = v
			}
		}
		ms += 10
		if (i+1)%gapEvery != 0 {
			continue
		}
		if !inGap {
			s.gap(ms, lastObserved, "")
			gapFrom, inGap = lastObserved, true
			ms += 10
			continue
		}
		closeGap()
	}
	if inGap {
		closeGap()
	}
	s.oracle.Quiescent(s.at(ms + 100))
	s.progress(ms + 150)
	return s
}

func TestSyntheticJournalIsIntact(t *testing.T) {
	s := synthetic(3000, 50, 200)
	r := checkScenario(t, s, s.store(t, nil))
	if len(r.Mismatches) != 0 || r.InsideGaps == 0 || r.Inferred == 0 {
		t.Fatalf("%s\n%s", r.Summary(), mismatchLines(r))
	}
}

// BenchmarkCheck checks a journal of 10,000 versions of 200 objects with a
// gap every 500 writes, with 40 random times and 40 snapshots in gaps, on
// the in-memory store.
func BenchmarkCheck(b *testing.B) {
	s := synthetic(10000, 200, 500)
	st := memory.New()
	defer st.Close()
	ctx := context.Background()
	if _, err := st.Append(ctx, s.records); err != nil {
		b.Fatal(err)
	}
	cfg := Config{ClusterID: testCluster, Namespaces: []string{testNS}, Resources: []schema.GroupResource{{Resource: "configmaps"}},
		RandomTimes: 40, GapSnapshots: 40, Seed: 1}
	b.ResetTimer()
	for b.Loop() {
		r, err := Check(ctx, s.oracle, st, cfg)
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Mismatches) != 0 {
			b.Fatalf("%s", r.Summary())
		}
	}
	b.ReportMetric(float64(len(s.oracle.Versions())), "versions")
}

// TestBrokenCollectorsOnSyntheticJournal runs the corruptions TestTruth
// applies to its recorded journal on a synthetic one, without a control
// plane.
func TestBrokenCollectorsOnSyntheticJournal(t *testing.T) {
	s := synthetic(3000, 50, 200)
	intact := checkScenario(t, s, s.store(t, nil))
	cfg := Config{ClusterID: testCluster, Namespaces: []string{testNS}, Resources: []schema.GroupResource{{Resource: "configmaps"}}}
	checkBrokenJournals(t, s.oracle, s.store(t, nil), cfg, intact)
}
