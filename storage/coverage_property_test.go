package storage_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/storagetest"
)

// collectorModel writes one stream's journal the way the Collector does,
// at random: baselines (some cut short by a crash), watch events,
// bookmarks, progress checkpoints, clean stops with or without their
// checkpoint, crashes, restarts that resume or meet a 410, 410s while
// watching, and 403s that make the stream unavailable until access
// returns. Its rules are the Collector's:
//
//   - ObservedAt never decreases in append order (several records may
//     share an instant, as when the wall clock stepped back);
//   - evidence is a progress record (ProgressRV): a real event, a
//     checkpoint, a baseline end;
//   - a gap starts at the last evidence (Gap.From), whether it is found by
//     a 410 while watching, on a restart, or with a 403 while covered;
//   - a coverage change to unavailable while not covered is observed when
//     it is written.
type collectorModel struct {
	rnd *rand.Rand
	s   event.Stream
	now time.Time
	rv  int
	seq int

	running   bool // a Collector is running
	covered   bool // complete baseline, no loss since (the Collector's s.covered)
	available bool
	evidence  time.Time // the last evidence written
	alive     map[string]storagetest.Item
}

func newCollectorModel(seed uint64) *collectorModel {
	return &collectorModel{
		rnd:       rand.New(rand.NewPCG(seed, seed*0x9e3779b97f4a7c15+1)),
		s:         event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"},
		now:       t0,
		available: true,
		alive:     map[string]storagetest.Item{},
	}
}

// tick advances the clock: usually forward, sometimes not at all.
func (m *collectorModel) tick() {
	if m.rnd.IntN(5) > 0 {
		m.now = m.now.Add(time.Duration(1+m.rnd.IntN(3000)) * time.Millisecond)
	}
}

func (m *collectorModel) nextRV() string {
	m.rv++
	return fmt.Sprint(m.rv)
}

func (m *collectorModel) id(kind string) string {
	m.seq++
	return fmt.Sprintf("%s-%d", kind, m.seq)
}

func (m *collectorModel) gap(reason string) event.Record {
	g := storagetest.Gap(m.s, m.evidence, m.now, reason, fmt.Sprint(m.rv))
	g.EventID = m.id("gap")
	return g
}

func (m *collectorModel) coverageChange(available bool) event.Record {
	c := storagetest.CoverageChange(m.s, available, "403 Forbidden", 403, m.now)
	c.EventID = m.id("coverage")
	return c
}

func (m *collectorModel) checkpoint(bookmark bool) event.Record {
	c := storagetest.Checkpoint(m.s, fmt.Sprint(m.rv), bookmark, m.now)
	c.EventID = m.id("checkpoint")
	m.evidence = m.now
	return c
}

// relist returns the batches of a baseline, cut short by a crash with
// crash, and whatever precedes it (access restored).
func (m *collectorModel) relist(crash bool) [][]event.Record {
	var head []event.Record
	if !m.available {
		head = append(head, m.coverageChange(true))
	}
	id := m.id("baseline")
	var items []storagetest.Item
	for name := range m.alive {
		if m.rnd.IntN(4) == 0 {
			delete(m.alive, name) // deleted while the stream was not watched
			continue
		}
		items = append(items, item(m.s, name, m.nextRV()))
	}
	for range m.rnd.IntN(3) {
		it := item(m.s, m.id("cm"), m.nextRV())
		items = append(items, it)
	}
	batches := [][]event.Record{append(head, storagetest.BaselineBegin(m.s, id, m.now, items)...)}
	m.available = true
	if crash {
		m.running = false
		return batches
	}
	m.tick()
	end := storagetest.BaselineEnd(m.s, id, m.now, m.nextRV(), len(items))
	m.alive = map[string]storagetest.Item{}
	for _, it := range items {
		m.alive[it.Ref.Name] = it
	}
	m.covered, m.evidence = true, m.now
	return append(batches, []event.Record{end})
}

// step returns the batches the Collector appends next.
func (m *collectorModel) step() [][]event.Record {
	m.tick()
	if !m.running {
		// A (re)start: resume when the journal is continuous, and the
		// resume may meet a 410; relist otherwise.
		m.running = true
		if m.covered {
			if m.rnd.IntN(3) == 0 {
				g := m.gap("410 Gone on restart")
				m.covered = false
				return append([][]event.Record{{g}}, m.relist(m.rnd.IntN(6) == 0)...)
			}
			return nil
		}
		return m.relist(m.rnd.IntN(6) == 0)
	}
	if !m.covered {
		if !m.available && m.rnd.IntN(2) == 0 {
			return nil // still denied
		}
		return m.relist(m.rnd.IntN(6) == 0)
	}
	switch r := m.rnd.IntN(20); {
	case r < 8: // a watch event
		name := m.id("cm")
		wt := event.Added
		if len(m.alive) > 0 && m.rnd.IntN(2) == 0 {
			for n := range m.alive {
				name = n
				break
			}
			wt = event.Modified
			if m.rnd.IntN(3) == 0 {
				wt = event.Deleted
			}
		}
		rv := m.nextRV()
		ev := change(m.s, wt, name, rv, m.now)
		if wt == event.Deleted {
			delete(m.alive, name)
		} else {
			m.alive[name] = item(m.s, name, rv)
		}
		m.evidence = m.now
		return [][]event.Record{{ev}}
	case r < 10: // a bookmark at a new resourceVersion
		m.nextRV()
		return [][]event.Record{{m.checkpoint(true)}}
	case r < 13: // a progress checkpoint (a watch ended at its timeout)
		return [][]event.Record{{m.checkpoint(false)}}
	case r < 15: // a clean stop, healthy or not
		m.running = false
		if m.rnd.IntN(3) > 0 {
			return [][]event.Record{{m.checkpoint(false)}}
		}
		return nil
	case r < 16: // a crash
		m.running = false
		return nil
	case r < 18: // a 410 while watching
		g := m.gap("410 Gone")
		m.covered = false
		return [][]event.Record{{g}}
	default: // a 403 while watching
		recs := []event.Record{m.gap("403 Forbidden"), m.coverageChange(false)}
		m.covered, m.available = false, false
		return [][]event.Record{recs}
	}
}

// A Complete answer never turns incomplete: once CoverageAt says a time is
// covered, no later append the Collector can write changes the answer
// (covered, the baseline it rests on, the watermark), however the stream
// goes on — gaps from the last evidence, relists, crashes, restarts,
// coverage changes.
func TestCoverageOnceCoveredStaysCovered(t *testing.T) {
	stores := []struct {
		name  string
		seeds int
		steps int
		open  func(t *testing.T) storage.Store
	}{
		{"memory", 40, 80, func(t *testing.T) storage.Store { return memory.New() }},
		{"sqlite", 4, 60, func(t *testing.T) storage.Store {
			st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"))
			if err != nil {
				t.Fatal(err)
			}
			return st
		}},
	}
	for _, sc := range stores {
		t.Run(sc.name, func(t *testing.T) {
			coveredAnswers := 0
			for seed := range uint64(sc.seeds) {
				coveredAnswers += checkCoverageNeverFlips(t, sc.open(t), seed, sc.steps)
			}
			if coveredAnswers == 0 {
				t.Fatal("no time was ever covered: the model does not exercise the property")
			}
			t.Logf("%d covered answers held through every later append", coveredAnswers)
		})
	}
}

func checkCoverageNeverFlips(t *testing.T, st storage.Store, seed uint64, steps int) int {
	t.Helper()
	defer st.Close()
	ctx := context.Background()
	m := newCollectorModel(seed)
	id := m.s.ID()
	covered := map[time.Time]storage.Coverage{} // first covered answer per probe time
	var probes []time.Time
	seen := map[time.Time]bool{}
	probe := func(at time.Time) {
		if !seen[at] {
			seen[at] = true
			probes = append(probes, at)
		}
	}
	addProbes := func(at time.Time) {
		probe(at.Add(-time.Nanosecond))
		probe(at)
		probe(at.Add(time.Nanosecond))
	}
	for step := range steps {
		for _, batch := range m.step() {
			if len(batch) == 0 {
				continue
			}
			if _, err := st.Append(ctx, batch); err != nil {
				t.Fatalf("seed %d step %d: append: %v", seed, step, err)
			}
			for _, r := range batch {
				addProbes(r.ObservedAt)
				if r.Gap != nil {
					addProbes(r.Gap.From)
				}
			}
		}
		// A random time up to a while after now, too.
		probe(t0.Add(time.Duration(m.rnd.Int64N(int64(m.now.Sub(t0) + time.Minute)))))
		for _, at := range probes {
			c, err := storage.CoverageAt(ctx, st, id, at)
			if err != nil {
				t.Fatalf("seed %d step %d: CoverageAt(%s): %v", seed, step, at, err)
			}
			was, ok := covered[at]
			switch {
			case ok && (!c.Covered || c.BaselineID != was.BaselineID || c.Watermark != was.Watermark || !c.WatermarkAt.Equal(was.WatermarkAt)):
				t.Fatalf("seed %d step %d: at %s (t0+%s) the answer was covered (baseline %s, watermark %s, evidence to %s) and is now covered=%v %q (baseline %s, watermark %s)",
					seed, step, at.Format(time.RFC3339Nano), at.Sub(t0), was.BaselineID, was.Watermark, was.EvidenceUntil.Format(time.RFC3339Nano),
					c.Covered, c.Reason, c.BaselineID, c.Watermark)
			case !ok && c.Covered:
				if !c.EvidenceUntil.After(at) {
					t.Fatalf("seed %d step %d: covered at %s with evidence only to %s", seed, step, at, c.EvidenceUntil)
				}
				covered[at] = c
			}
		}
	}
	return len(covered)
}
