package materialize_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/sqlite"
)

// dataIs is the condition data.v == want; a version without data.v
// cannot be evaluated (materialize.ErrEvaluation), as a CEL expression
// reading a missing field cannot.
func dataIs(want string) materialize.Predicate {
	return materialize.PredicateFunc(func(_ context.Context, object json.RawMessage) (bool, error) {
		var o struct {
			Data map[string]string `json:"data"`
		}
		if err := json.Unmarshal(object, &o); err != nil {
			return false, err
		}
		v, ok := o.Data["v"]
		if !ok {
			return false, fmt.Errorf("%w: no such key: v", materialize.ErrEvaluation)
		}
		return v == want, nil
	})
}

// interval is an Interval reduced to what the tests compare.
type interval struct {
	from, to             time.Time
	startUnknown, endUnk string
	opened, closed       string // resourceVersions; "" for none
}

func (iv interval) String() string {
	s := fmt.Sprintf("[%s (rv %s", iv.from.Format("15:04:05.000"), iv.opened)
	if iv.startUnknown != "" {
		s += ", start unknown: " + iv.startUnknown
	}
	s += ") – "
	if iv.to.IsZero() {
		return s + "open]"
	}
	s += iv.to.Format("15:04:05.000") + " (rv " + iv.closed
	if iv.endUnk != "" {
		s += ", end unknown: " + iv.endUnk
	}
	return s + ")]"
}

func reduce(iv materialize.Interval) interval {
	out := interval{from: iv.From, to: iv.To, startUnknown: iv.StartUnknown, endUnk: iv.EndUnknown, opened: iv.Opened.ResourceVersion}
	if iv.Closed != nil {
		out.closed = iv.Closed.ResourceVersion
	}
	return out
}

// foundIntervals returns the answer of Find by object name.
func foundIntervals(f *materialize.Found) map[string][]interval {
	out := map[string][]interval{}
	for _, o := range f.Objects {
		key := o.Object.Resource + ":" + o.Object.Namespace + "/" + o.Object.Name
		for _, iv := range o.Intervals {
			out[key] = append(out[key], reduce(iv))
		}
	}
	return out
}

func TestFindOutageJournal(t *testing.T) {
	j := newOutageJournal(t)
	// bob made a's version 2 (resourceVersion 102, at minute 2).
	recs, err := j.store.ObjectHistory(context.Background(), idOf(j.cms, "a", "shop"), storage.HistoryQuery{})
	if err != nil {
		t.Fatal(err)
	}
	j.correlate(recs[1], "bob", "update", 1)
	m := j.materializer()
	scope := materialize.Scope{ClusterID: "c1"}
	before := "no complete baseline at or before this time"
	gap := "gap from 2025-03-01T12:05:00Z: 410 Gone: too old resource version"
	tests := []struct {
		name  string
		value string
		query materialize.FindQuery
		want  map[string][]interval
	}{
		{name: "true from the first baseline", value: "1", query: materialize.FindQuery{Scope: scope}, want: map[string][]interval{
			// a and b were listed at 1: true since before the first
			// baseline for all the journal can tell.
			"configmaps:shop/a": {{from: at(1), to: at(2), startUnknown: before, opened: "101", closed: "102"}},
			"configmaps:shop/b": {{from: at(1), to: at(4), startUnknown: before, opened: "101", closed: "104"}},
			// c changed at the very moment the gap begins: the journal
			// cannot tell what came after.
			"configmaps:shop/c": {{from: at(3), to: at(5), opened: "103", endUnk: gap}},
		}},
		{name: "across the gap", value: "2", query: materialize.FindQuery{Scope: scope}, want: map[string][]interval{
			// a was 2 when continuity was lost at 5 and when the relist
			// at 9 showed it: two intervals, neither joined across the gap.
			"configmaps:shop/a": {
				{from: at(2), to: at(5), opened: "102", endUnk: gap},
				{from: at(9), startUnknown: gap, opened: "106"},
			},
			// c became 2 at the very moment the gap begins: no moment
			// of it is known.
		}},
		{name: "first", value: "2", query: materialize.FindQuery{Scope: scope, First: true}, want: map[string][]interval{
			"configmaps:shop/a": {{from: at(2), to: at(5), opened: "102", endUnk: gap}},
		}},
		{name: "now", value: "2", query: materialize.FindQuery{Scope: scope, Now: true}, want: map[string][]interval{
			"configmaps:shop/a": {{from: at(9), startUnknown: gap, opened: "106"}},
		}},
		{name: "window", value: "1", query: materialize.FindQuery{Scope: scope, Since: at(2), Until: at(3)}, want: map[string][]interval{
			"configmaps:shop/b": {{from: at(1), to: at(4), startUnknown: before, opened: "101", closed: "104"}},
			"configmaps:shop/c": {{from: at(3), to: at(5), opened: "103", endUnk: gap}},
		}},
		{name: "label selector", value: "1", query: materialize.FindQuery{Scope: scope, LabelSelector: "app=none"}, want: map[string][]interval{}},
		{name: "excluded", value: "1", query: materialize.FindQuery{Scope: scope, ExcludeResources: []schema.GroupResource{{Resource: "configmaps"}}}, want: map[string][]interval{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := m.Find(context.Background(), tc.query, dataIs(tc.value))
			if err != nil {
				t.Fatal(err)
			}
			if got := foundIntervals(f); !equalIntervals(got, tc.want) {
				t.Errorf("intervals:\n%s\nwant:\n%s", showIntervals(got), showIntervals(tc.want))
			}
		})
	}
	f, err := m.Find(context.Background(), materialize.FindQuery{Scope: scope}, dataIs("2"))
	if err != nil {
		t.Fatal(err)
	}
	if p := f.Objects[0].Intervals[0].Opened.Provenance; len(p) != 1 || p[0].User != "bob" {
		t.Errorf("who opened a's first interval: %+v, want bob", p)
	}
	want := []materialize.UnknownSpan{{To: at(1), Reason: before}, {From: at(5), To: at(9), Reason: gap}}
	if len(f.Streams) != 1 || !slices.Equal(f.Streams[0].Unknown, want) || !f.Streams[0].EvidenceUntil.Equal(at(60)) {
		t.Errorf("streams %+v, want the unknown spans %+v and evidence until %s", f.Streams, want, at(60))
	}
	// Eight versions; the deletions are not evaluated.
	if f.Versions != 8 || f.Evaluated != 6 {
		t.Errorf("versions %d, evaluated %d; want 8 and 6", f.Versions, f.Evaluated)
	}
}

func TestFindErrors(t *testing.T) {
	j := newOutageJournal(t)
	m := j.materializer()
	scope := materialize.Scope{ClusterID: "c1"}
	for _, tc := range []struct {
		name  string
		query materialize.FindQuery
		cond  materialize.Predicate
		want  string
	}{
		{"no cluster", materialize.FindQuery{}, dataIs("1"), "scope without cluster ID"},
		{"no condition", materialize.FindQuery{Scope: scope}, nil, "Find without a condition"},
		{"bad selector", materialize.FindQuery{Scope: scope, LabelSelector: "a in (b"}, dataIs("1"), `label selector "a in (b"`},
		{"window backwards", materialize.FindQuery{Scope: scope, Since: at(3), Until: at(2)}, dataIs("1"), "is before since"},
	} {
		_, err := m.Find(context.Background(), tc.query, tc.cond)
		if !errors.Is(err, materialize.ErrInvalidArgument) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrInvalidArgument saying %q", tc.name, err, tc.want)
		}
	}
	// A predicate's own failure ends the Find; ErrEvaluation does not.
	budget := errors.New("cost budget exhausted")
	_, err := m.Find(context.Background(), materialize.FindQuery{Scope: scope},
		materialize.PredicateFunc(func(context.Context, json.RawMessage) (bool, error) { return false, budget }))
	if !errors.Is(err, budget) {
		t.Errorf("Find with a failing predicate: %v, want %v", err, budget)
	}
	f, err := m.Find(context.Background(), materialize.FindQuery{Scope: scope},
		materialize.PredicateFunc(func(context.Context, json.RawMessage) (bool, error) {
			return false, fmt.Errorf("%w: no such key: replicas", materialize.ErrEvaluation)
		}))
	if err != nil || len(f.Objects) != 0 || len(f.Warnings) != 1 || !strings.Contains(f.Warnings[0], "could not be evaluated on 6 versions") {
		t.Errorf("Find with an expression failing on every version: %+v, %v; want no object and one warning", f, err)
	}
}

func equalIntervals(a, b map[string][]interval) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.EqualFunc(v, b[k], func(x, y interval) bool {
			return x.from.Equal(y.from) && x.to.Equal(y.to) && x.startUnknown == y.startUnknown &&
				x.endUnk == y.endUnk && x.opened == y.opened && x.closed == y.closed
		}) {
			return false
		}
	}
	return true
}

func showIntervals(m map[string][]interval) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "  %s:\n", k)
		for _, iv := range m[k] {
			fmt.Fprintf(&b, "    %s\n", iv)
		}
	}
	return b.String()
}

// TestFindMatchesBruteForce compares Find with a brute-force answer on
// random journals with random gaps, losses of availability, relists with
// inferred deletions and a baseline killed mid-list: at every moment the
// journal mentions, the brute force asks the store for the stream's
// coverage (CoverageAt) and the object's version (LatestAt) and evaluates
// the condition; the intervals are the runs of moments at which both hold.
func TestFindMatchesBruteForce(t *testing.T) {
	stores := []struct {
		name  string
		open  func(t *testing.T) storage.Store
		seeds int
	}{
		{"memory", func(*testing.T) storage.Store { return memory.New() }, 60},
		{"sqlite", func(t *testing.T) storage.Store {
			s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "j.db"))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}, 15},
	}
	for _, st := range stores {
		t.Run(st.name, func(t *testing.T) {
			for seed := range st.seeds {
				store := st.open(t)
				rj := newRandomJournal(t, store, uint64(seed))
				rj.generate()
				rj.check()
				_ = store.Close()
				if t.Failed() {
					t.Fatalf("seed %d", seed)
				}
			}
		})
	}
}

// randomJournal writes a random journal of two streams the way the
// Collector would, remembering every moment it used.
type randomJournal struct {
	*journal
	rnd     *rand.Rand
	now     time.Time
	moments map[time.Time]bool
	streams []*randomStream
}

type randomStream struct {
	s event.Stream
	// server is the objects as the API server has them, by name; journal
	// which of them the journal believes alive, with their last version.
	server  map[string]obj
	journal map[string]string
	// broken is set while the stream has lost continuity (a gap or
	// unavailability) and has not relisted since.
	broken, unavailable bool
	evidence, lostAt    time.Time
	baselines           int
	objectNames         []string
}

func newRandomJournal(t *testing.T, store storage.Store, seed uint64) *randomJournal {
	rj := &randomJournal{journal: newJournalIn(t, store), rnd: rand.New(rand.NewPCG(seed, 38)), now: t0, moments: map[time.Time]bool{}}
	for _, ns := range []string{"shop", "web"} {
		rj.streams = append(rj.streams, &randomStream{s: rj.stream("", "v1", "configmaps", ns),
			server: map[string]obj{}, journal: map[string]string{}, broken: true, objectNames: []string{"a", "b", "c"}})
	}
	return rj
}

func (rj *randomJournal) tick() time.Time {
	if rj.rnd.IntN(5) > 0 {
		rj.now = rj.now.Add(time.Minute)
	}
	rj.moments[rj.now] = true
	return rj.now
}

func (rj *randomJournal) value() map[string]any {
	switch rj.rnd.IntN(5) {
	case 0:
		return map[string]any{"other": "1"}
	case 1, 2:
		return map[string]any{"v": "x"}
	}
	return map[string]any{"v": "y"}
}

func (rj *randomJournal) generate() {
	for _, rs := range rj.streams {
		if rj.rnd.IntN(4) == 0 {
			// A baseline killed mid-list: its items are never visible.
			rj.append(rj.baselineRecords(rs.s, fmt.Sprintf("%s-killed", rs.s.Namespace), rj.tick(), false,
				cm(rs.s.Namespace, "a", "killed", map[string]any{"v": "x"}))...)
		}
	}
	steps := 20 + rj.rnd.IntN(40)
	for range steps {
		rs := rj.streams[rj.rnd.IntN(len(rj.streams))]
		rj.step(rs)
	}
	for _, rs := range rj.streams {
		if !rs.broken && rj.rnd.IntN(2) == 0 {
			rj.progress(rs.s, rj.tick())
		}
	}
}

func (rj *randomJournal) step(rs *randomStream) {
	if rs.broken {
		if rj.rnd.IntN(3) == 0 {
			rj.serverChange(rs)
			return
		}
		rj.relist(rs)
		return
	}
	switch n := rj.rnd.IntN(20); {
	case n < 14:
		rj.serverChange(rs)
	case n < 16:
		rs.evidence = rj.tick()
		rj.progress(rs.s, rs.evidence)
	case n < 19:
		rj.gap(rs.s, rs.evidence, rj.tick())
		rs.broken, rs.lostAt = true, rs.evidence
	default:
		rs.lostAt = rj.tick()
		rj.coverage(rs.s, false, rs.lostAt)
		rs.broken, rs.unavailable = true, true
	}
}

// serverChange creates, changes or deletes an object on the server; a
// stream that is not broken records it as a watch event.
func (rj *randomJournal) serverChange(rs *randomStream) {
	name := rs.objectNames[rj.rnd.IntN(len(rs.objectNames))]
	o, alive := rs.server[name]
	wt := event.Modified
	switch {
	case !alive:
		o = cm(rs.s.Namespace, name, fmt.Sprintf("u%s%d", name, rj.rnd.IntN(1000)), rj.value())
		wt = event.Added
	case rj.rnd.IntN(4) == 0:
		wt = event.Deleted
	default:
		o.body = map[string]any{"data": rj.value()}
	}
	if wt == event.Deleted {
		delete(rs.server, name)
	} else {
		rs.server[name] = o
	}
	if rs.broken {
		rj.j().rv++ // the server's resourceVersion moves on unseen
		return
	}
	rec := rj.watch(rs.s, wt, o, rj.tick())
	rs.evidence = rec.ObservedAt
	if wt == event.Deleted {
		delete(rs.journal, name)
	} else {
		rs.journal[name] = rec.Resource.ResourceVersion
	}
}

func (rj *randomJournal) j() *journal { return rj.journal }

// relist lists the server's objects after a loss of continuity (or
// first), with inferred deletions for the objects the journal believed
// alive and the list lacks.
func (rj *randomJournal) relist(rs *randomStream) {
	when := rj.tick()
	if rs.unavailable {
		rj.coverage(rs.s, true, when)
		rs.unavailable = false
	}
	rs.baselines++
	id := fmt.Sprintf("%s-b%d", rs.s.Namespace, rs.baselines)
	names := make([]string, 0, len(rs.server))
	for name := range rs.server {
		names = append(names, name)
	}
	sort.Strings(names)
	objs := make([]obj, 0, len(names))
	for _, name := range names {
		objs = append(objs, rs.server[name])
	}
	recs := rj.baselineRecords(rs.s, id, when, true, objs...)
	rj.append(recs...)
	believed := make([]string, 0, len(rs.journal))
	for name := range rs.journal {
		believed = append(believed, name)
	}
	sort.Strings(believed)
	for _, name := range believed {
		if _, alive := rs.server[name]; !alive {
			rj.inferredDelete(rs.s, cm(rs.s.Namespace, name, "gone", map[string]any{"v": "x"}), rs.journal[name], rs.lostAt, when, id)
		}
	}
	rs.journal = map[string]string{}
	for _, r := range recs {
		if r.Type == event.TypeEvent {
			rs.journal[r.Resource.Name] = r.Resource.ResourceVersion
		}
	}
	rs.broken, rs.evidence = false, when
}

// check compares Find with the brute force, for every stream's objects,
// under a few queries.
func (rj *randomJournal) check() {
	t := rj.t.(*testing.T)
	t.Helper()
	ctx := context.Background()
	m := rj.materializer()
	moments := make([]time.Time, 0, len(rj.moments)+1)
	moments = append(moments, t0.Add(-time.Minute))
	for at := range rj.moments {
		moments = append(moments, at)
	}
	slices.SortFunc(moments, func(a, b time.Time) int { return a.Compare(b) })
	cond := dataIs("x")
	all := map[string][]interval{}
	for _, rs := range rj.streams {
		for _, name := range rs.objectNames {
			id := idOf(rs.s, name, rs.s.Namespace)
			if ivs := rj.bruteForce(ctx, rs.s.ID(), id, moments, cond); len(ivs) > 0 {
				all["configmaps:"+rs.s.Namespace+"/"+name] = ivs
			}
		}
	}
	since := moments[1+rj.rnd.IntN(len(moments)-1)]
	until := since.Add(time.Duration(rj.rnd.IntN(10)) * time.Minute)
	scope := materialize.Scope{ClusterID: "c1"}
	for _, q := range []materialize.FindQuery{
		{Scope: scope},
		{Scope: scope, Since: since, Until: until},
		{Scope: scope, Since: since, First: true},
		{Scope: scope, Now: true},
	} {
		f, err := m.Find(ctx, q, cond)
		if err != nil {
			t.Fatal(err)
		}
		want := filterIntervals(all, q)
		if got := foundIntervals(f); !equalIntervals(got, want) {
			t.Errorf("query %+v: Find says\n%s\nthe brute force\n%s", q, showIntervals(got), showIntervals(want))
		}
		if or, ok := rj.store.(storage.ObjectOrderReader); ok {
			// The same answer from the records in journal order, and
			// from pages by object (a store without
			// storage.ObjectOrderScanner).
			for _, other := range []struct {
				name  string
				store storage.Store
			}{{"in journal order", journalOrder{rj.store}}, {"from pages by object", pagesByObject{rj.store, or}}} {
				m, err := materialize.New(other.store)
				if err != nil {
					t.Fatal(err)
				}
				g, err := m.Find(ctx, q, cond)
				if err != nil {
					t.Fatal(err)
				}
				if a, b := mustJSON(t, f), mustJSON(t, g); a != b {
					t.Errorf("query %+v: Find says\n%s\n%s\n%s", q, a, other.name, b)
				}
			}
		}
	}
}

// journalOrder is a store without storage.ObjectOrderReader: Find reads
// it in journal order.
type journalOrder struct{ storage.Store }

// pagesByObject is a store with storage.ObjectOrderReader but without
// storage.ObjectOrderScanner: Find reads it in pages by object.
type pagesByObject struct {
	storage.Store
	storage.ObjectOrderReader
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// bruteForce evaluates the condition on the object at every moment.
func (rj *randomJournal) bruteForce(ctx context.Context, streamID string, id storage.ObjectID, moments []time.Time, cond materialize.Predicate) []interval {
	t := rj.t.(*testing.T)
	type state struct {
		known  bool
		reason string
		rv     string
		truth  bool
	}
	states := make([]state, len(moments))
	for i, at := range moments {
		cov, err := storage.CoverageAt(ctx, rj.store, streamID, at)
		if err != nil {
			t.Fatal(err)
		}
		s := state{known: cov.Continuous(), reason: cov.Reason}
		rec, err := rj.store.LatestAt(ctx, id, at)
		switch {
		case errors.Is(err, storage.ErrNotFound):
		case err != nil:
			t.Fatal(err)
		default:
			s.rv = rec.Resource.ResourceVersion
			if rec.WatchType != event.Deleted {
				ok, err := cond.Match(ctx, rec.Object)
				if err != nil && !errors.Is(err, materialize.ErrEvaluation) {
					t.Fatal(err)
				}
				s.truth = s.known && ok
			}
		}
		states[i] = s
	}
	var out []interval
	for i := 1; i < len(moments); i++ {
		if !states[i].truth || states[i-1].truth {
			continue
		}
		iv := interval{from: moments[i], opened: states[i].rv}
		if !states[i-1].known {
			iv.startUnknown = states[i-1].reason
		}
		k := i
		for k < len(moments) && states[k].truth {
			k++
		}
		if k < len(moments) {
			iv.to = moments[k]
			if states[k].known {
				iv.closed = states[k].rv
			} else {
				iv.endUnk = states[k].reason
			}
		}
		out = append(out, iv)
	}
	return out
}

// filterIntervals is FindQuery's window, First and Now, as documented.
func filterIntervals(all map[string][]interval, q materialize.FindQuery) map[string][]interval {
	out := map[string][]interval{}
	for k, ivs := range all {
		var kept []interval
		for _, iv := range ivs {
			open := iv.to.IsZero()
			if !q.Until.IsZero() && iv.from.After(q.Until) || !q.Since.IsZero() && !open && !iv.to.After(q.Since) || q.Now && !open {
				continue
			}
			if q.First && len(kept) == 1 {
				break
			}
			kept = append(kept, iv)
		}
		if len(kept) > 0 {
			out[k] = kept
		}
	}
	return out
}

// TestFindIgnoresRecordsAfterItsTimeline: records appended while Find reads
// a stream (a gap, then a relist that shows the object changed) come after
// the stream's timeline that Find read, so they must not be taken as
// versions of continuous time: the answer is the one of the journal as it
// was when the timeline was read, not an interval closed across a gap
// Find does not know of.
func TestFindIgnoresRecordsAfterItsTimeline(t *testing.T) {
	for _, st := range []struct {
		name string
		open func(t *testing.T) storage.Store
	}{
		{"memory", func(*testing.T) storage.Store { return memory.New() }},
		{"sqlite", func(t *testing.T) storage.Store {
			s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "j.db"))
			if err != nil {
				t.Fatal(err)
			}
			return s
		}},
	} {
		t.Run(st.name, func(t *testing.T) {
			ctx := context.Background()
			store := st.open(t)
			defer store.Close()
			j := newJournalIn(t, store)
			s := j.stream("", "v1", "configmaps", "shop")
			a := cm("shop", "a", "ua", map[string]any{"v": "x"})
			j.baseline(s, "b1", at(1), a)
			j.progress(s, at(3))
			q := materialize.FindQuery{Scope: materialize.Scope{ClusterID: "c1"}}
			before, err := j.materializer().Find(ctx, q, dataIs("x"))
			if err != nil {
				t.Fatal(err)
			}
			if len(before.Objects) != 1 || !before.Objects[0].Intervals[0].Open() {
				t.Fatalf("before: %s, want a's interval open", mustJSON(t, before))
			}
			// What another writer appends while Find reads: a gap from 3,
			// then a relist at 6 where a is no longer x.
			later := []event.Record{{Type: event.TypeGap, EventID: "gap-late", ClusterID: "c1", StreamID: s.ID(), ObservedAt: at(5),
				Gap: &event.Gap{From: at(3), To: at(5), Reason: "410 Gone: too old resource version"}}}
			a.body["data"] = map[string]any{"v": "y"}
			later = append(later, j.baselineRecords(s, "b2", at(6), true, a)...)
			// Each way Find reads the store, on a copy of the journal.
			readers := []func(h *appendOnRead) storage.Store{func(h *appendOnRead) storage.Store { return h }}
			if _, ok := store.(storage.ObjectOrderReader); ok {
				readers = append(readers, func(h *appendOnRead) storage.Store { return appendOnReadByObject{h} })
			}
			if _, ok := store.(storage.ObjectOrderScanner); ok {
				readers = append(readers, func(h *appendOnRead) storage.Store { return appendOnReadScanner{appendOnReadByObject{h}} })
			}
			for i, reader := range readers {
				copied := st.open(t)
				defer copied.Close()
				if err := copyJournal(ctx, store, copied); err != nil {
					t.Fatal(err)
				}
				h := &appendOnRead{Store: copied, later: later}
				m, err := materialize.New(reader(h))
				if err != nil {
					t.Fatal(err)
				}
				during, err := m.Find(ctx, q, dataIs("x"))
				if err != nil {
					t.Fatal(err)
				}
				if h.err != nil || !h.done {
					t.Fatalf("reader %d: the records were not appended during the read: appended %v, %v", i, h.done, h.err)
				}
				if a, b := mustJSON(t, during), mustJSON(t, before); a != b {
					t.Errorf("reader %d: Find while records were appended says\n%s\nwant the answer of the journal it read the timeline of\n%s", i, a, b)
				}
			}
		})
	}
}

// appendOnRead appends later to its store when Find first reads a
// stream's object changes.
type appendOnRead struct {
	storage.Store
	later []event.Record
	mu    sync.Mutex // parts of a stream are read side by side
	done  bool
	err   error
}

func (h *appendOnRead) hook(ctx context.Context, q storage.Query) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.done && slices.Equal(q.Types, []event.RecordType{event.TypeEvent}) {
		h.done = true
		_, h.err = h.Store.Append(ctx, h.later)
	}
}

func (h *appendOnRead) Records(ctx context.Context, q storage.Query) (storage.Page, error) {
	h.hook(ctx, q)
	return h.Store.Records(ctx, q)
}

// appendOnReadByObject is appendOnRead of a store that reads by object.
type appendOnReadByObject struct{ *appendOnRead }

func (h appendOnReadByObject) RecordsByObject(ctx context.Context, q storage.Query) (storage.Page, error) {
	h.hook(ctx, q)
	return h.Store.(storage.ObjectOrderReader).RecordsByObject(ctx, q)
}

func (h appendOnReadByObject) SplitByObject(ctx context.Context, streamID string, n int) ([]string, error) {
	return h.Store.(storage.ObjectOrderReader).SplitByObject(ctx, streamID, n)
}

// TestFindConcurrentCondition: Find calls a condition concurrently only
// when it says it may (materialize.ConcurrentPredicate), and then does,
// sweeping the parts of a SQLite journal's stream side by side.
func TestFindConcurrentCondition(t *testing.T) {
	ctx := context.Background()
	store, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "j.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	j := newJournalIn(t, store)
	s := j.stream("", "v1", "configmaps", "shop")
	var objs []obj
	for i := range 20 {
		objs = append(objs, cm("shop", fmt.Sprintf("cm-%02d", i), fmt.Sprintf("u%02d", i), map[string]any{"v": "x"}))
	}
	j.baseline(s, "b1", at(1), objs...)
	j.progress(s, at(3))
	q := materialize.FindQuery{Scope: materialize.Scope{ClusterID: "c1"}}

	// Not concurrent: never two calls at once.
	var inFlight, overlaps atomic.Int32
	serial := materialize.PredicateFunc(func(context.Context, json.RawMessage) (bool, error) {
		if inFlight.Add(1) > 1 {
			overlaps.Add(1)
		}
		time.Sleep(time.Millisecond)
		inFlight.Add(-1)
		return true, nil
	})
	f, err := j.materializer().Find(ctx, q, serial)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Objects) != len(objs) || overlaps.Load() != 0 {
		t.Errorf("a condition that is not a ConcurrentPredicate: %d objects found, want %d; %d calls overlapped another, want 0", len(f.Objects), len(objs), overlaps.Load())
	}

	// Concurrent: the first two calls wait for each other.
	var arrived atomic.Int32
	both := make(chan struct{})
	concurrent := concurrentPredicate(func(ctx context.Context, _ json.RawMessage) (bool, error) {
		if arrived.Add(1) == 2 {
			close(both)
		}
		select {
		case <-both:
			return true, nil
		case <-time.After(10 * time.Second):
			return false, errors.New("no other call came in 10 s: Find calls the condition in turn")
		}
	})
	f, err = j.materializer().Find(ctx, q, concurrent)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Objects) != len(objs) {
		t.Errorf("a ConcurrentPredicate: %d objects found, want %d", len(f.Objects), len(objs))
	}
}

// concurrentPredicate is a PredicateFunc that says it may be called
// concurrently.
type concurrentPredicate func(ctx context.Context, object json.RawMessage) (bool, error)

func (p concurrentPredicate) Match(ctx context.Context, object json.RawMessage) (bool, error) {
	return p(ctx, object)
}

func (concurrentPredicate) Concurrent() bool { return true }

// appendOnReadScanner is appendOnRead of a store that scans by object.
type appendOnReadScanner struct{ appendOnReadByObject }

func (h appendOnReadScanner) ScanByObject(ctx context.Context, q storage.Query, fn func(*event.Record) error) error {
	h.hook(ctx, q)
	return h.Store.(storage.ObjectOrderScanner).ScanByObject(ctx, q, fn)
}

// copyJournal appends every record of from to to, in journal order.
func copyJournal(ctx context.Context, from storage.Reader, to storage.Writer) error {
	q := storage.Query{Limit: 1000}
	for {
		p, err := from.Records(ctx, q)
		if err != nil {
			return err
		}
		if len(p.Records) > 0 {
			if _, err := to.Append(ctx, p.Records); err != nil {
				return err
			}
		}
		if p.Next == "" {
			return nil
		}
		q.Cursor = p.Next
	}
}

// TestFoundPage pages an answer: every object once, in order, an object
// of two streams never split between pages, Next only when more follow.
func TestFoundPage(t *testing.T) {
	obj := func(name string) storage.ObjectID {
		return storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: name}
	}
	f := &materialize.Found{Versions: 7, Warnings: []string{"w"}}
	for _, e := range []struct{ name, stream string }{{"a", "s1"}, {"b", "s1"}, {"b", "s2"}, {"c", "s1"}, {"d", "s1"}, {"d", "s2"}, {"e", "s1"}} {
		f.Objects = append(f.Objects, materialize.FoundObject{Object: obj(e.name), StreamID: e.stream})
	}
	for limit := 1; limit <= len(f.Objects)+1; limit++ {
		var got []materialize.FoundObject
		page := materialize.Page{Limit: limit}
		for pages := 0; ; pages++ {
			if pages > len(f.Objects) {
				t.Fatalf("limit %d: pages without end", limit)
			}
			p, err := f.Page(page)
			if err != nil {
				t.Fatal(err)
			}
			if p.Versions != 7 || len(p.Warnings) != 1 {
				t.Errorf("limit %d: a page lost the answer's counts or warnings: %+v", limit, p)
			}
			if len(p.Objects) == 0 {
				t.Fatalf("limit %d: an empty page after %d objects", limit, len(got))
			}
			if n := len(p.Objects); n > limit && p.Objects[n-1].Object != p.Objects[n-2].Object {
				t.Errorf("limit %d: a page of %d entries, more than an object's other stream", limit, n)
			}
			got = append(got, p.Objects...)
			if p.Next == nil {
				break
			}
			if *p.Next != p.Objects[len(p.Objects)-1].Object {
				t.Errorf("limit %d: next %v, want the page's last object", limit, *p.Next)
			}
			page.After = p.Next
		}
		if !slices.EqualFunc(got, f.Objects, func(a, b materialize.FoundObject) bool { return a.Object == b.Object && a.StreamID == b.StreamID }) {
			t.Errorf("limit %d: the pages hold\n%+v\nwant\n%+v", limit, got, f.Objects)
		}
	}
	if _, err := f.Page(materialize.Page{}); !errors.Is(err, materialize.ErrInvalidArgument) {
		t.Errorf("a page of no objects: %v, want ErrInvalidArgument", err)
	}
}
