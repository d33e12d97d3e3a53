package storagetest

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/krply/krply/event"
)

// sim plays a small cluster and a collector watching it through three
// streams (configmaps of shop, configmaps of all namespaces, deployments of
// shop), with creations, updates, deletions, bookmarks, silent breaks found
// later by a 410 (gap, relist, inferred deletions), streams becoming
// unavailable and available again, baselines interrupted by a crash (one
// of whose items is an object no other record shows), audit
// correlations and saved snapshots. It writes what the collector would, in
// the batches it would.
type sim struct {
	rnd     *rand.Rand
	now     time.Time
	rv      int
	uids    int
	objects map[string]*simObject
	streams []*simStream
	batches [][]event.Record
	events  []event.Record // real watch events, for correlations
	nextID  int
}

type simObject struct {
	kind, ns, name, uid, rv string
	replicas                int
}

type simStream struct {
	s        event.Stream
	kind     string
	state    string // "up", "broken" (missing events silently), "unavailable"
	lastAt   time.Time
	lastRV   string
	believed map[string]event.Record
}

func newSim(seed uint64) *sim {
	m := &sim{rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), now: t0, objects: map[string]*simObject{}}
	for _, sp := range []struct {
		s    event.Stream
		kind string
	}{{cmShop, "ConfigMap"}, {cmAll, "ConfigMap"}, {deployShop, "Deployment"}} {
		m.streams = append(m.streams, &simStream{s: sp.s, kind: sp.kind, state: "starting", believed: map[string]event.Record{}})
	}
	return m
}

func (m *sim) tick() {
	// Mostly forward, sometimes several records at the same instant.
	if m.rnd.IntN(8) > 0 {
		m.now = m.now.Add(time.Duration(1+m.rnd.IntN(5000)) * time.Millisecond)
	}
}

func (m *sim) key(kind, ns, name string) string { return kind + "/" + ns + "/" + name }

func (ss *simStream) sees(o *simObject) bool {
	return o.kind == ss.kind && (ss.s.Namespace == "" || ss.s.Namespace == o.ns)
}

func (m *sim) body(o *simObject) []byte {
	if o.kind == "Deployment" {
		return Deployment(o.ns, o.name, o.uid, o.rv, o.replicas, "registry.example/app:"+o.rv)
	}
	return ConfigMap(o.ns, o.name, o.uid, o.rv, map[string]string{"rv": o.rv, "owner": o.name})
}

func (m *sim) ref(ss *simStream, o *simObject) event.ResourceRef {
	return Ref(ss.s, o.kind, o.ns, o.name, o.uid, o.rv)
}

// change creates, updates or deletes an object and records it in every
// stream that is up and sees it.
func (m *sim) change() {
	kind := "ConfigMap"
	if m.rnd.IntN(10) < 3 {
		kind = "Deployment"
	}
	ns := "shop"
	if kind == "ConfigMap" && m.rnd.IntN(3) == 0 {
		ns = "web"
	}
	name := fmt.Sprintf("%s-%d", map[string]string{"ConfigMap": "cm", "Deployment": "app"}[kind], m.rnd.IntN(6))
	k := m.key(kind, ns, name)
	m.rv++
	o, exists := m.objects[k]
	wt := event.Modified
	switch {
	case !exists:
		m.uids++
		o = &simObject{kind: kind, ns: ns, name: name, uid: fmt.Sprintf("uid-%d", m.uids), replicas: 1}
		m.objects[k] = o
		wt = event.Added
	case m.rnd.IntN(10) < 3:
		delete(m.objects, k)
		wt = event.Deleted
	default:
		o.replicas = 1 + m.rnd.IntN(5)
	}
	o.rv = fmt.Sprint(m.rv)
	var batch []event.Record
	for _, ss := range m.streams {
		if ss.state != "up" || !ss.sees(o) {
			continue
		}
		rec := Event(ss.s, wt, m.ref(ss, o), m.body(o), m.now)
		batch = append(batch, rec)
		m.events = append(m.events, rec)
		if wt == event.Deleted {
			delete(ss.believed, k)
		} else {
			ss.believed[k] = rec
		}
		ss.lastAt, ss.lastRV = m.now, o.rv
	}
	m.emit(batch...)
}

func (m *sim) emit(recs ...event.Record) {
	if len(recs) > 0 {
		m.batches = append(m.batches, recs)
	}
}

// relist takes a baseline of ss (perhaps after an interrupted one) and
// infers the deletions of objects the journal believed alive.
func (m *sim) relist(ss *simStream, gapFrom time.Time) {
	var items []Item
	listed := map[string]bool{}
	for _, k := range sortedKeys(m.objects) {
		o := m.objects[k]
		if ss.sees(o) {
			items = append(items, Item{Ref: m.ref(ss, o), Object: m.body(o)})
			listed[k] = true
		}
	}
	if m.rnd.IntN(3) == 0 {
		// The interrupted list also saw an object created and deleted
		// before the next one: nothing else ever records it, and it must
		// stay invisible (through compactions too).
		m.nextID++
		m.uids++
		ns := ss.s.Namespace
		if ns == "" {
			ns = "web"
		}
		ghost := &simObject{kind: ss.kind, ns: ns, name: fmt.Sprintf("ghost-%d", m.nextID), uid: fmt.Sprintf("uid-%d", m.uids), rv: fmt.Sprint(m.rv), replicas: 1}
		crashed := append(items[:len(items)/2:len(items)/2], Item{Ref: m.ref(ss, ghost), Object: m.body(ghost)})
		m.emit(BaselineBegin(ss.s, fmt.Sprintf("crashed-%d", m.nextID), m.now, crashed)...)
		m.tick()
	}
	m.nextID++
	id := fmt.Sprintf("baseline-%d", m.nextID)
	batch := Baseline(ss.s, id, m.now, fmt.Sprint(m.rv), items)
	for _, k := range sortedKeys(ss.believed) {
		if !listed[k] {
			batch = append(batch, InferredDelete(ss.s, ss.believed[k], gapFrom, m.now, id))
		}
	}
	m.emit(batch...)
	ss.believed = map[string]event.Record{}
	for _, rec := range batch {
		if rec.Synthetic && rec.WatchType == event.Added {
			ss.believed[m.key(rec.Resource.Kind, rec.Resource.Namespace, rec.Resource.Name)] = rec
		}
	}
	ss.state, ss.lastAt, ss.lastRV = "up", m.now, fmt.Sprint(m.rv)
}

func (m *sim) step() {
	m.tick()
	ss := m.streams[m.rnd.IntN(len(m.streams))]
	switch p := m.rnd.IntN(100); {
	case p < 55:
		m.change()
	case p < 65:
		if ss.state == "up" {
			m.emit(Checkpoint(ss.s, fmt.Sprint(m.rv), true, m.now))
			ss.lastAt, ss.lastRV = m.now, fmt.Sprint(m.rv)
		}
	case p < 70:
		if ss.state == "up" {
			ss.state = "broken"
		}
	case p < 74:
		if ss.state == "up" {
			m.emit(CoverageChange(ss.s, false, "403 Forbidden", 403, m.now))
			ss.state = "unavailable"
		}
	case p < 88:
		switch ss.state {
		case "broken":
			from := ss.lastAt
			m.emit(Gap(ss.s, from, m.now, "410 Gone: too old resource version", ss.lastRV))
			m.tick()
			m.relist(ss, from)
		case "unavailable":
			m.emit(CoverageChange(ss.s, true, "access restored", 0, m.now))
			m.relist(ss, m.now)
		}
	case p < 95:
		if len(m.events) > 0 {
			target := m.events[m.rnd.IntN(len(m.events))]
			m.nextID++
			m.emit(Correlation(target, fmt.Sprintf("audit-%d", m.nextID), "alice", m.now))
		}
	default:
		m.nextID++
		m.emit(Document(event.TypeSnapshot, "c1", fmt.Sprintf("snap-%d", m.nextID), "", m.now, m.rnd.IntN(2) == 0, []byte(`{"kind":"Snapshot"}`)))
	}
}

// journal runs the simulation: objects that exist before the collector
// starts, an initial baseline per stream, then steps.
func (m *sim) journal(steps int) [][]event.Record {
	for i := 0; i < 8; i++ {
		m.change()
	}
	m.batches = nil
	m.events = nil
	for _, ss := range m.streams {
		m.tick()
		m.relist(ss, m.now)
	}
	for i := 0; i < steps; i++ {
		m.step()
	}
	return m.batches
}
