package materialize_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
)

// outageJournal is one ConfigMap stream in namespace shop:
//
//	1   baseline b1: a, b
//	2   a modified (data v=2)
//	3   c added
//	4   b deleted
//	5   c modified — the last durable record before the outage
//	8   410 detected: gap from 5 to 8 (c was deleted during the outage)
//	9   baseline b2: a; c inferred deleted (absent from relist)
//	60  progress checkpoint: the watch is still healthy
type outageJournal struct {
	*journal
	cms event.Stream
}

func newOutageJournal(t *testing.T) outageJournal {
	return newOutageJournalIn(newJournal(t))
}

func newOutageJournalIn(jr *journal) outageJournal {
	j := outageJournal{journal: jr}
	j.cms = j.stream("", "v1", "configmaps", "shop")
	a := cm("shop", "a", "ua", map[string]any{"v": "1"})
	b := cm("shop", "b", "ub", map[string]any{"v": "1"})
	c := cm("shop", "c", "uc", map[string]any{"v": "1"})
	j.baseline(j.cms, "b1", at(1), a, b)
	a.body["data"] = map[string]any{"v": "2"}
	j.watch(j.cms, event.Modified, a, at(2))
	j.watch(j.cms, event.Added, c, at(3))
	j.watch(j.cms, event.Deleted, b, at(4))
	c.body["data"] = map[string]any{"v": "2"}
	last := j.watch(j.cms, event.Modified, c, at(5))
	j.gap(j.cms, at(5), at(8))
	j.baseline(j.cms, "b2", at(9), a)
	j.inferredDelete(j.cms, c, last.Resource.ResourceVersion, at(5), at(9), "b2")
	j.progress(j.cms, at(60))
	return j
}

func dataOf(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var o struct {
		Data map[string]string `json:"data"`
	}
	if err := json.Unmarshal(raw, &o); err != nil {
		t.Fatalf("body %s: %v", raw, err)
	}
	return o.Data["v"]
}

func TestObjectAt(t *testing.T) {
	j := newOutageJournal(t)
	m := j.materializer()
	tests := []struct {
		name      string
		object    string
		at        time.Time
		exists    bool
		data      string // data.v of the version returned
		covered   bool
		inferred  bool
		synthetic bool
		gaps      int // coverage-breaking gaps of the stream
	}{
		{name: "before the first baseline", object: "a", at: at(0.5)},
		{name: "exactly at the baseline", object: "a", at: at(1), exists: true, data: "1", covered: true, synthetic: true},
		{name: "exactly at a modification", object: "a", at: at(2), exists: true, data: "2", covered: true},
		{name: "just before a modification", object: "a", at: at(2).Add(-time.Nanosecond), exists: true, data: "1", covered: true, synthetic: true},
		{name: "just before a real deletion", object: "b", at: at(4).Add(-time.Nanosecond), exists: true, data: "1", covered: true, synthetic: true},
		{name: "exactly at a real deletion", object: "b", at: at(4), covered: true},
		{name: "just before the gap's start", object: "c", at: at(5).Add(-time.Nanosecond), exists: true, data: "1", covered: true},
		// storage.CoverageAt counts a gap from its From on, inclusive.
		{name: "exactly at the gap's start", object: "c", at: at(5), exists: true, data: "2", gaps: 1},
		{name: "inside the gap, before it was detected", object: "c", at: at(6), exists: true, data: "2", gaps: 1},
		{name: "inside the gap, after detection, before the relist", object: "c", at: at(8.5), exists: true, data: "2", gaps: 1},
		{name: "after the inferred deletion", object: "c", at: at(9), covered: true, inferred: true},
		{name: "unchanged object after the relist", object: "a", at: at(10), exists: true, data: "2", covered: true, synthetic: true},
		{name: "never existed, covered", object: "zz", at: at(3), covered: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := m.ObjectAt(context.Background(), idOf(j.cms, tc.object, "shop"), tc.at)
			if err != nil {
				t.Fatal(err)
			}
			if st.Exists != tc.exists || st.Covered != tc.covered {
				t.Fatalf("exists=%v covered=%v, want exists=%v covered=%v (coverage %+v)", st.Exists, st.Covered, tc.exists, tc.covered, st.Coverage)
			}
			if tc.exists {
				if got := dataOf(t, st.Object); got != tc.data {
					t.Errorf("data.v = %q, want %q", got, tc.data)
				}
				if st.Record.Synthetic != tc.synthetic {
					t.Errorf("synthetic = %v, want %v", st.Record.Synthetic, tc.synthetic)
				}
			} else if st.Object != nil {
				t.Errorf("object %s, want none", st.Object)
			}
			if (st.Inferred != nil) != tc.inferred {
				t.Errorf("inferred = %+v, want %v", st.Inferred, tc.inferred)
			}
			if tc.inferred && (!st.Inferred.From.Equal(at(5)) || !st.Inferred.To.Equal(at(9))) {
				t.Errorf("inferred bounds %v..%v, want %v..%v", st.Inferred.From, st.Inferred.To, at(5), at(9))
			}
			if len(st.Coverage) != 1 || len(st.Coverage[0].Gaps) != tc.gaps {
				t.Fatalf("coverage %+v, want one stream with %d breaking gaps", st.Coverage, tc.gaps)
			}
		})
	}
}

func TestObjectAtWatermarkAndNearbyGaps(t *testing.T) {
	j := newOutageJournal(t)
	m := j.materializer()
	st, err := m.ObjectAt(context.Background(), idOf(j.cms, "c", "shop"), at(6))
	if err != nil {
		t.Fatal(err)
	}
	cov := st.Coverage[0]
	if cov.WatermarkAt != at(5) || cov.Watermark == "" {
		t.Errorf("watermark %q at %v, want the last durable record at %v", cov.Watermark, cov.WatermarkAt, at(5))
	}
	if len(st.NearbyGaps) != 1 || st.NearbyGaps[0].Gap == nil || !st.NearbyGaps[0].Gap.From.Equal(at(5)) {
		t.Fatalf("nearby gaps %+v, want the gap from minute 5", st.NearbyGaps)
	}
	if !strings.Contains(cov.Reason, "gap from") {
		t.Errorf("reason %q", cov.Reason)
	}
}

// A baseline whose end was never written (a crash in the middle of the
// list, or a list still running) is never trusted: not for coverage, and
// its items are not observations (storage.Reader leaves them out) until
// the end exists.
func TestObjectAtBaselineWithoutEnd(t *testing.T) {
	j := newJournal(t)
	deploys := j.stream("apps", "v1", "deployments", "shop")
	web := obj{kind: "Deployment", namespace: "shop", name: "web", uid: "uw", body: map[string]any{"spec": map[string]any{"replicas": 2}}}
	recs := j.baselineRecords(deploys, "b1", at(1), true, web)
	j.append(recs[:len(recs)-1]...)
	m := j.materializer()
	st, err := m.ObjectAt(context.Background(), idOf(deploys, "web", "shop"), at(2))
	if err != nil {
		t.Fatal(err)
	}
	if st.Covered || st.Exists {
		t.Fatalf("covered=%v exists=%v, want an uncovered time and no observation", st.Covered, st.Exists)
	}
	if st.Coverage[0].Reason != "no complete baseline at or before this time" {
		t.Errorf("reason %q", st.Coverage[0].Reason)
	}
	j.append(recs[len(recs)-1])
	j.progress(deploys, at(3))
	if st, err = m.ObjectAt(context.Background(), idOf(deploys, "web", "shop"), at(2)); err != nil || !st.Covered || !st.Exists {
		t.Fatalf("once the baseline ended: covered=%v exists=%v, %v; want the item, covered", st.Covered, st.Exists, err)
	}
}

// An inferred deletion written just after the end of the baseline that
// revealed it counts from that end.
func TestObjectAtInferredDeletionCountsFromBaselineEnd(t *testing.T) {
	j := newJournal(t)
	cms := j.stream("", "v1", "configmaps", "shop")
	c := cm("shop", "c", "uc", map[string]any{"v": "1"})
	j.baseline(cms, "b1", at(1), c)
	last := j.watch(cms, event.Modified, c, at(2))
	j.gap(cms, at(2), at(3))
	j.baseline(cms, "b2", at(4))
	j.inferredDelete(cms, c, last.Resource.ResourceVersion, at(2), at(4).Add(time.Second), "b2")
	j.progress(cms, at(5))
	m := j.materializer()
	st, err := m.ObjectAt(context.Background(), idOf(cms, "c", "shop"), at(4))
	if err != nil {
		t.Fatal(err)
	}
	if st.Exists || !st.Covered {
		t.Fatalf("exists=%v covered=%v at the relist's end, want deleted and covered", st.Exists, st.Covered)
	}
	snap, err := m.Snapshot(context.Background(), materialize.Scope{ClusterID: "c1"}, at(4))
	if err != nil {
		t.Fatal(err)
	}
	if !snap.Complete || len(snap.Objects) != 0 {
		t.Fatalf("snapshot complete=%v objects=%d, want complete and empty", snap.Complete, len(snap.Objects))
	}
}

// ObjectAt of an object unchanged since a baseline looks for the
// baseline's inferred deletions right after its end: a small first page,
// since what follows the end is most often a change, then pages growing
// through a long tail of deletions, the object's found at its end.
func TestObjectAtReadsTheBaselineTailByGrowingPages(t *testing.T) {
	ctx := context.Background()
	j := newJournal(t)
	cms := j.stream("", "v1", "configmaps", "shop")
	c := cm("shop", "c", "uc", map[string]any{"v": "1"})
	var others []obj
	for i := range 40 {
		others = append(others, cm("shop", fmt.Sprintf("o%02d", i), fmt.Sprintf("uo%02d", i), map[string]any{"v": "1"}))
	}
	j.baseline(cms, "b1", at(1), append([]obj{c}, others...)...)
	for i, o := range others {
		j.watch(cms, event.Modified, o, at(2).Add(time.Duration(i)*time.Second))
	}
	j.progress(cms, at(3).Add(time.Second))
	counted := &afterSeqCounter{Store: j.store}
	m, err := materialize.New(counted)
	if err != nil {
		t.Fatal(err)
	}
	st, err := m.ObjectAt(ctx, idOf(cms, "c", "shop"), at(3))
	if err != nil || !st.Exists || !st.Covered {
		t.Fatalf("c after the baseline: exists=%v covered=%v, %v; want it, covered", st != nil && st.Exists, st != nil && st.Covered, err)
	}
	if counted.read > 2 {
		t.Errorf("ObjectAt read %d records past the baseline's end to learn that none is an inferred deletion, want at most 2", counted.read)
	}

	// A relist that found the 40 others and c absent: c's deletion is the
	// last of a tail of 41.
	last := j.watch(cms, event.Modified, c, at(3).Add(2*time.Second))
	j.gap(cms, at(4), at(5))
	j.baseline(cms, "b2", at(6))
	for _, o := range others {
		j.inferredDelete(cms, o, "1", at(4), at(6).Add(time.Second), "b2")
	}
	j.inferredDelete(cms, c, last.Resource.ResourceVersion, at(4), at(6).Add(time.Second), "b2")
	j.progress(cms, at(7))
	counted.read = 0
	if st, err = m.ObjectAt(ctx, idOf(cms, "c", "shop"), at(6)); err != nil || st.Exists || !st.Covered {
		t.Fatalf("c at the relist's end: exists=%v covered=%v, %v; want deleted, covered", st != nil && st.Exists, st != nil && st.Covered, err)
	}
	if counted.read < 41 {
		t.Errorf("ObjectAt read %d records of the relist's tail of 41", counted.read)
	}
}

// afterSeqCounter counts the records Records answers to queries after a
// sequence number.
type afterSeqCounter struct {
	storage.Store
	read int
}

func (c *afterSeqCounter) Records(ctx context.Context, q storage.Query) (storage.Page, error) {
	page, err := c.Store.Records(ctx, q)
	if q.AfterSeq > 0 {
		c.read += len(page.Records)
	}
	return page, err
}

func TestObjectAtErrors(t *testing.T) {
	j := newJournal(t)
	m := j.materializer()
	_, err := m.ObjectAt(context.Background(), storage.ObjectID{ClusterID: "c1", Name: "x"}, at(1))
	if !errors.Is(err, materialize.ErrInvalidArgument) {
		t.Fatalf("err %v, want ErrInvalidArgument", err)
	}
	if _, err := materialize.New(nil); !errors.Is(err, materialize.ErrInvalidArgument) {
		t.Fatalf("New(nil) err %v", err)
	}
}

// statusHook is a memory store that runs before, once, at its first
// StreamStatus or Streams, and afterLatest, once, right after its first
// LatestAt: what a writer appends while ObjectAt reads the evidence of
// the streams, or the object's record.
type statusHook struct {
	*memory.Store
	before      func()
	afterLatest func()
}

func (h *statusHook) LatestAt(ctx context.Context, obj storage.ObjectID, at time.Time) (event.Record, error) {
	rec, err := h.Store.LatestAt(ctx, obj, at)
	if f := h.afterLatest; f != nil {
		h.afterLatest = nil
		f()
	}
	return rec, err
}

// objectAtOf asks ObjectAt of a Materializer over store.
func objectAtOf(t *testing.T, store storage.ReadWriter, obj storage.ObjectID, when time.Time) *materialize.ObjectState {
	t.Helper()
	m, err := materialize.New(store)
	if err != nil {
		t.Fatal(err)
	}
	st, err := m.ObjectAt(context.Background(), obj, when)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func (h *statusHook) fire() {
	if f := h.before; f != nil {
		h.before = nil
		f()
	}
}

func (h *statusHook) StreamStatus(ctx context.Context, streamID string) (storage.StreamStatus, error) {
	h.fire()
	return h.Store.StreamStatus(ctx, streamID)
}

func (h *statusHook) Streams(ctx context.Context, clusterID string) ([]storage.StreamStatus, error) {
	h.fire()
	return h.Store.Streams(ctx, clusterID)
}

func newStatusHook(t *testing.T) (*statusHook, outageJournal) {
	h := &statusHook{Store: memory.New()}
	t.Cleanup(func() { _ = h.Store.Close() })
	return h, newOutageJournalIn(newJournalIn(t, h.Store))
}

// A gap appended with newer evidence while ObjectAt reads the streams is
// seen: the evidence is read before the timelines that hold the gap, so
// a time inside the gap is not covered by the newer evidence.
func TestObjectAtEvidenceBeforeTimelines(t *testing.T) {
	h, j := newStatusHook(t)
	h.before = func() {
		j.gap(j.cms, at(60), at(64))
		j.progress(j.cms, at(70))
	}
	st := objectAtOf(t, h, idOf(j.cms, "a", "shop"), at(62))
	if h.before != nil {
		t.Fatal("ObjectAt read no stream status")
	}
	if st.Covered || len(st.Coverage) != 1 || st.Coverage[0].Covered {
		t.Fatalf("covered=%v, coverage %+v: want minute 62 not covered (the gap from 60, or evidence to 60 only)", st.Covered, st.Coverage)
	}
}

// A stream that records the object and begins while ObjectAt reads the
// evidence of the others is in the answer with its own evidence.
func TestObjectAtStreamBeginsMeanwhile(t *testing.T) {
	h, j := newStatusHook(t)
	all := j.stream("", "v1", "configmaps", "")
	h.before = func() {
		j.baseline(all, "w1", at(20), cm("shop", "a", "ua", map[string]any{"v": "2"}))
		j.progress(all, at(80))
	}
	st := objectAtOf(t, h, idOf(j.cms, "a", "shop"), at(70))
	if len(st.Coverage) != 2 {
		t.Fatalf("coverage %+v, want both streams", st.Coverage)
	}
	for _, c := range st.Coverage {
		if c.StreamID == all.ID() && (!c.Covered || !c.EvidenceUntil.Equal(at(80))) {
			t.Errorf("new stream: covered=%v, evidence %v (%s), want covered with evidence to minute 80", c.Covered, c.EvidenceUntil, c.Reason)
		}
	}
	if !st.Covered || !st.Exists {
		t.Errorf("covered=%v exists=%v, want both", st.Covered, st.Exists)
	}
}

// A stream that records the object and began after the Materializer's
// last ObjectAt of the resource is in the answer, with its evidence.
func TestObjectAtStreamBeginsBetweenCalls(t *testing.T) {
	j := newOutageJournal(t)
	m := j.materializer()
	id := idOf(j.cms, "a", "shop")
	if st, err := m.ObjectAt(context.Background(), id, at(30)); err != nil || len(st.Coverage) != 1 {
		t.Fatalf("first ObjectAt: %v, %+v", err, st)
	}
	all := j.stream("", "v1", "configmaps", "")
	j.baseline(all, "w1", at(20), cm("shop", "a", "ua", map[string]any{"v": "2"}))
	j.progress(all, at(80))
	st, err := m.ObjectAt(context.Background(), id, at(70))
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Coverage) != 2 || st.Coverage[0].StreamID != all.ID() || !st.Coverage[0].Covered || !st.Coverage[0].EvidenceUntil.Equal(at(80)) {
		t.Fatalf("coverage %+v, want both streams, the new one covered with evidence to minute 80", st.Coverage)
	}
	if !st.Covered || !st.Exists {
		t.Errorf("covered=%v exists=%v, want both", st.Covered, st.Exists)
	}
}

// A batch appended while ObjectAt reads, holding a change of the object
// observed before the time asked and evidence past it (what a recorder
// appends a few milliseconds after it observed them, so at for a time
// asked as "now"), does not make an answer without that change covered:
// the evidence is read before the object's record, so the answer is
// either the new version, covered, or not covered.
func TestObjectAtEvidenceBeforeRecord(t *testing.T) {
	h, j := newStatusHook(t)
	a := cm("shop", "a", "ua", map[string]any{"v": "3"})
	h.afterLatest = func() {
		j.watch(j.cms, event.Modified, a, at(61))
		j.progress(j.cms, at(63))
	}
	st := objectAtOf(t, h, idOf(j.cms, "a", "shop"), at(62))
	if h.afterLatest != nil {
		t.Fatal("ObjectAt read no record of the object")
	}
	if st.Covered && (!st.Exists || dataOf(t, st.Object) != "3") {
		t.Fatalf("covered with data.v %q (evidence %v): a covered answer at minute 62 must hold the change of minute 61", dataOf(t, st.Object), st.Coverage[0].EvidenceUntil)
	}
	// The same question asked once the batch is in answers the change,
	// covered: the first answer must not have claimed otherwise.
	again := objectAtOf(t, h, idOf(j.cms, "a", "shop"), at(62))
	if !again.Covered || dataOf(t, again.Object) != "3" {
		t.Fatalf("asked again: covered=%v data.v %q, want covered with 3", again.Covered, dataOf(t, again.Object))
	}
}
