package truth

import (
	"math/rand"
	"slices"
	"testing"
	"time"
)

// TestActs checks a querying child's schedule: the first round makes a
// plan, ObjectAt answers and two snapshots in that order, each later round
// makes each of them again, and an audit ingest slower than its period
// comes between two other acts, never twice in a row. The pgtruth run of
// seed 854593597 in make test made 5 ingests, 4 snapshots, 2 ObjectAt
// answers and no plan in 3m40s: each ingest took longer than the period,
// the next act was an ingest again, and "the seams prove little" (0 saved
// plans) failed the run.
func TestActs(t *testing.T) {
	now := time.Unix(0, 0)
	a := newActs(rand.New(rand.NewSource(1)), now)
	var got []int
	for range 4 {
		got = append(got, a.next(now))
	}
	if want := []int{actPlan, actAnswers, actSnapshot, actSnapshot2}; !slices.Equal(got, want) {
		t.Fatalf("first round %v, want %v", got, want)
	}

	// Every ingest takes twice the period: the acts alternate.
	counts := map[int]int{}
	prev := -1
	for range 400 {
		n := a.next(now)
		if n == actIngest {
			if prev == actIngest {
				t.Fatal("two ingests in a row")
			}
			now = now.Add(2 * queryAuditPeriod)
			a.ingested(now)
		} else {
			now = now.Add(queryPause)
		}
		counts[n]++
		prev = n
	}
	if counts[actIngest] == 0 || counts[actIngest] > 200 {
		t.Errorf("%d ingests in 400 acts, want some and at most every other act", counts[actIngest])
	}
	// 400 acts of which at most 200 ingests: at least 50 rounds.
	for _, n := range []int{actPlan, actAnswers} {
		if counts[n] < 50 {
			t.Errorf("act %d made %d times in 400 acts, want a round's share (>= 50): %v", n, counts[n], counts)
		}
	}
	if counts[actSnapshot]+counts[actSnapshot2] < 100 {
		t.Errorf("%d snapshots in 400 acts, want >= 100: %v", counts[actSnapshot]+counts[actSnapshot2], counts)
	}

	// Quick acts: an ingest once per period.
	a = newActs(rand.New(rand.NewSource(2)), now)
	ingests := 0
	for range 1000 {
		if a.next(now) == actIngest {
			ingests++
			a.ingested(now)
		}
		now = now.Add(queryPause)
	}
	// One per period, rounded up to whole acts.
	if lo, hi := int(1000*queryPause/(queryAuditPeriod+2*queryPause)), int(1000*queryPause/queryAuditPeriod); ingests < lo || ingests > hi {
		t.Errorf("%d ingests in %s, want %d to %d (one per %s)", ingests, 1000*queryPause, lo, hi, queryAuditPeriod)
	}
}
