package server

import (
	"testing"
	"time"

	"github.com/krply/krply/materialize"
)

// TestFoundCache: the answers of paged finds are remembered for foundTTL,
// at most maxFound of them, the ones that expire first forgotten first,
// and an answer of more than maxRememberedFound objects not at all.
func TestFoundCache(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	var c foundCache
	answer := func(objects int) *materialize.Found {
		return &materialize.Found{Objects: make([]materialize.FoundObject, objects)}
	}
	answers := map[uint64]*materialize.Found{}
	for i := range uint64(maxFound + 1) {
		answers[i] = answer(1)
		c.put(foundKey{params: i}, answers[i], t0.Add(time.Duration(i)*time.Second))
	}
	now := t0.Add(maxFound * time.Second)
	if c.get(foundKey{params: 0}, now) != nil {
		t.Errorf("%d answers remembered: the first is still there", maxFound+1)
	}
	for i := uint64(1); i <= maxFound; i++ {
		if c.get(foundKey{params: i}, now) != answers[i] {
			t.Errorf("answer %d forgotten among the last %d", i, maxFound)
		}
	}
	// Other windows of the same parameters are other answers.
	if c.get(foundKey{params: 1, until: 5}, now) != nil {
		t.Error("an answer of another window")
	}
	// After foundTTL, forgotten.
	if c.get(foundKey{params: maxFound}, t0.Add(maxFound*time.Second+foundTTL)) != nil {
		t.Error("an answer remembered past foundTTL")
	}
	// Too large an answer is not remembered; remembering one near the
	// bound forgets the others.
	c.put(foundKey{params: 100}, answer(maxRememberedFound+1), now)
	if c.get(foundKey{params: 100}, now) != nil {
		t.Errorf("an answer of %d objects remembered", maxRememberedFound+1)
	}
	big := answer(maxRememberedFound)
	now = now.Add(time.Second)
	c.put(foundKey{params: 101}, big, now)
	if c.get(foundKey{params: 101}, now) != big || c.get(foundKey{params: maxFound}, now) != nil {
		t.Errorf("after an answer of %d objects: %d answers remembered, want that one alone", maxRememberedFound, len(c.answers))
	}
}
