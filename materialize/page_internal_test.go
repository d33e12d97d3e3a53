package materialize

import (
	"testing"
	"time"
)

// pageStates remembers at most maxPageStates states of at most
// maxRememberedObjects objects in all, each for pageStateTTL, the oldest
// forgotten first.
func TestPageStatesBounds(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	scope := Scope{ClusterID: "c1"}
	state := func(sec, objects int) *scopeState {
		return &scopeState{at: t0.Add(time.Duration(sec) * time.Second), objects: make([]stateObject, objects)}
	}
	remembered := func(c *pageStates, now time.Time, secs ...int) []int {
		var out []int
		for _, sec := range secs {
			if c.get(scope, t0.Add(time.Duration(sec)*time.Second), now) != nil {
				out = append(out, sec)
			}
		}
		return out
	}
	same := func(got []int, want ...int) bool {
		if len(got) != len(want) {
			return false
		}
		for i := range got {
			if got[i] != want[i] {
				return false
			}
		}
		return true
	}

	var c pageStates
	for sec := 1; sec <= 5; sec++ {
		c.put(scope, state(sec, 10), t0)
	}
	if got := remembered(&c, t0, 1, 2, 3, 4, 5); !same(got, 2, 3, 4, 5) {
		t.Errorf("after 5 states: remembered %v, want the last %d", got, maxPageStates)
	}
	if got := remembered(&c, t0.Add(pageStateTTL), 2, 3, 4, 5); len(got) != 0 {
		t.Errorf("after the TTL: remembered %v, want none", got)
	}
	c.forget(scope, t0.Add(3*time.Second))
	if got := remembered(&c, t0, 2, 3, 4, 5); !same(got, 2, 4, 5) {
		t.Errorf("after forgetting 3: remembered %v", got)
	}

	c = pageStates{}
	big := maxRememberedObjects * 6 / 10
	c.put(scope, state(1, big), t0)
	c.put(scope, state(2, big), t0)
	if got := remembered(&c, t0, 1, 2); !same(got, 2) {
		t.Errorf("two states of %d objects: remembered %v, want the second alone (at most %d objects)", big, got, maxRememberedObjects)
	}
	c.put(scope, state(3, maxRememberedObjects+1), t0)
	if got := remembered(&c, t0, 2, 3); !same(got, 2) {
		t.Errorf("a state of %d objects: remembered %v, want it not remembered", maxRememberedObjects+1, got)
	}
	// Again at the same time: one entry, not two.
	c.put(scope, state(2, 1), t0)
	if n := len(c.entries); n != 1 {
		t.Errorf("%d entries after putting the same state again, want 1", n)
	}
}
