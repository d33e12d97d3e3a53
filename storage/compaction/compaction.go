// Package compaction decides what Store.Compact(before) removes from a
// journal and which synthetic baseline markers it writes, independently of
// the backend. A backend calls Decide with a storage.Reader that sees a
// consistent view of the journal (the same transaction, or the write lock
// held), then applies the Plan in one transaction: delete the records whose
// IngestSeq is in Plan.Remove, insert Plan.Markers with the IngestSeq they
// carry (each one reuses a sequence number freed by Remove, which places it
// where the state it describes sits in the stream's order), then recompute
// the per-stream counters (journal.RebuildStatus) and drop bodies no record
// uses any more.
//
// # The rule
//
// Only records observed strictly before `before` are ever removed; every
// record at or after it is kept. Of the older ones:
//
//   - Object changes: per stream and object, the last record at or before
//     `before` is kept when it is not a deletion (a stream's AliveAt stays
//     right); per object, the last record across streams is kept whenever
//     any record of the object is kept (LatestAt stays right, also when it
//     is a deletion). Superseded versions and deleted objects go.
//   - Checkpoints go, except the record that sets a stream's watermark at
//     `before` (the last one carrying progress, storage.ProgressRV), which
//     is kept whatever its type so CoverageAt's Watermark stays the same.
//     Keeping an object record this way also keeps the last record of that
//     object in that stream.
//   - Baseline markers, gaps and coverage changes: let B be the complete
//     baseline CoverageAt(before) rests on. Everything recorded after B
//     began is kept (it decides coverage after `before`); everything recorded
//     earlier goes. Without a complete baseline, all of them are kept.
//   - When B stays (the stream is not continuous at `before`, or B did
//     not end before it), every object change of the stream recorded
//     since B began stays too: B still covers the times from its end to
//     the stream's first loss after it (or to `before`), and an answer
//     about such a time must stay what it was. A compacted journal may
//     forget a time, never change what it says about a covered one.
//   - When the stream is continuous at `before` (storage.CoverageAt: B
//     and no loss since; Coverage.Continuous, whether or not its evidence
//     reaches past `before` yet — the evidence, StreamStatus.CheckpointAt,
//     is kept as it is) and B ended before it, B's begin and end are replaced by a synthetic
//     baseline (Reason "compaction", ID CompactionBaselineID(before)) whose
//     begin reuses B's begin sequence and whose end reuses the largest
//     sequence removed from the stream up to its watermark record (the
//     last record carrying progress) or B's end, whichever is later; the end
//     carries the watermark's resourceVersion, the count of objects alive
//     in the stream, and the watermark's ObservedAt (so WatermarkAt is
//     unchanged too). The markers therefore sort exactly where B did
//     relative to every kept gap, and after every kept record that
//     carries progress or belongs to the timeline before the watermark.
//   - Audit correlations go with the event they point at; snapshots and
//     plans are always kept.
//   - A baseline without an end record (its items are invisible to every
//     object query, see storage.Reader) is ignored by the rules above: its
//     items are never anyone's last record, and its begin marker is kept.
//     Once a later baseline of its stream began (the restart's: the open
//     one was abandoned) strictly before `before`, its begin and its items
//     go together; they all precede that later begin. This assumes one
//     recorder per stream at a time, so that the baselines of a stream do
//     not interleave: when an item of the abandoned baseline follows the
//     later begin, nothing of it goes.
//
// With these, every answer of the storage.Reader interface about a time T'
// at or after `before` — LatestAt (a deletion may become ErrNotFound: both
// mean absent), AliveAt, ObjectHistory with Since >= before, and CoverageAt
// (Covered, Reason, Gaps and Watermark) — is the same after compaction as
// before; about an earlier time, LatestAt and AliveAt are the same
// wherever CoverageAt still says covered (storagetest.CompactRandom checks
// both). The argument assumes that ObservedAt does not decrease along a
// stream's IngestSeq order, which is how the collector writes.
//
// # Order in time
//
// Both markers are observed at the watermark's time W (the state they
// describe is the state at W: no record carrying progress came later
// before the cut), but they sit at B's begin and at or before the
// watermark record L, among kept records observed earlier than W. That is
// the one place where ObservedAt decreases along a stream's IngestSeq
// order, against storage.Writer.Append's rule for appended records.
// Queries bounded by time stay exact all the same, because both stores
// seek the same way: Records with a StreamID and an Until bounds its walk
// by the sequence number of the stream's last record in the order of
// (ObservedAt, IngestSeq) observed at or before Until, call it S. Every
// record observed at or before Until has a sequence number up to S: for
// Until before W the markers are not observed yet, and the other records
// keep their order in time; from W on, S is L or a record after it
// (L is observed at W, or the end marker took its place), and both
// markers sit at or before L. (Placing the end after L, at a freed
// sequence number of a record observed after W, would let S fall between
// the two and lose the end.) A store's WatermarkReader, which walks that
// order back from Until, finds the same progress record as the Records
// query for the same reason. The conformance subtests CompactUntil and
// Readers check both stores against this.
package compaction

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// Plan is what Compact(before) does to a journal.
type Plan struct {
	Before time.Time
	// Remove holds the IngestSeqs of the records to delete, ascending.
	Remove []int64
	// Markers are the synthetic baseline records to insert after the
	// removal. Each has its IngestSeq set: a sequence number from Remove.
	Markers []event.Record
	// Streams counts the streams folded into a compaction baseline.
	Streams int
}

// CompactionReason is the Baseline.Reason of compaction markers.
const CompactionReason = "compaction"

// CompactionBaselineID is the baseline ID of the markers written by a
// compaction before the given time.
func CompactionBaselineID(before time.Time) string {
	return "compaction-" + before.UTC().Format(time.RFC3339Nano)
}

// page is the page size of Decide's scans.
const page = 1000

type streamObject struct {
	stream string
	obj    storage.ObjectID
}

// recInfo is what Decide remembers of a record.
type recInfo struct {
	seq     int64
	at      time.Time
	deleted bool
	key     streamObject
}

func later(a, b recInfo) bool {
	if !a.at.Equal(b.at) {
		return a.at.After(b.at)
	}
	return a.seq > b.seq
}

type baselineMarkers struct {
	beginSeq, endSeq int64
	endAt            time.Time
}

// openBaseline is a baseline without an end record.
type openBaseline struct {
	// nextBegin is the seq of the first baseline begin of the stream after
	// this one's (0 when there is none), and nextBeginAt its ObservedAt.
	nextBegin   int64
	nextBeginAt time.Time
	// interleaved is set when an item follows nextBegin.
	interleaved bool
}

// removable reports whether the abandoned baseline goes, with its items.
func (o *openBaseline) removable(before time.Time) bool {
	return o.nextBegin != 0 && o.nextBeginAt.Before(before) && !o.interleaved
}

type streamInfo struct {
	clusterID string
	baselines map[string]*baselineMarkers
	// open holds the stream's baselines without an end, by ID.
	open        map[string]*openBaseline
	lastProg    recInfo // the last record carrying progress, by seq
	hasProg     bool
	lastProgObj bool // lastProg is an object change
	maxRemoved  int64
	keepFrom    int64 // control records with a smaller seq go
	// keepObjects is set when the baseline coverage rests on at before
	// stays (it is not replaced): every object change of the stream
	// recorded since it began (objectsFrom; 0: all) stays too.
	keepObjects bool
	objectsFrom int64
	replace     *baselineMarkers
	coverage    storage.Coverage
}

// markerBound is the largest sequence number the end of the stream's
// compaction baseline may take: that of its watermark record or of the
// end it replaces, whichever is later (the end carries progress unless it
// has no resourceVersion).
func (si *streamInfo) markerBound() int64 {
	bound := si.lastProg.seq
	if si.replace != nil {
		bound = max(bound, si.replace.endSeq)
	}
	return bound
}

// Decide computes the compaction plan of the journal r sees, for
// Compact(ctx, before). r must not change while Decide runs.
func Decide(ctx context.Context, r storage.Reader, before time.Time) (Plan, error) {
	return decide(ctx, r, before, nil)
}

// DecideResources computes the plan of
// storage.ResourceCompactor.CompactResources(ctx, before, resources): the
// rule above, applied to the streams of those resources alone ("resource"
// for the core group, "resource.group" otherwise); the records of every
// other stream stay. An object's records all lie in streams of its own
// resource (an ObjectID names the resource), so the rule's per-object
// parts see every record they need. Audit correlations go with the events
// they point at, whatever their stream.
func DecideResources(ctx context.Context, r storage.Reader, before time.Time, resources []string) (Plan, error) {
	if len(resources) == 0 {
		return Plan{Before: before}, nil
	}
	want := map[string]bool{}
	for _, res := range resources {
		want[res] = true
	}
	return decide(ctx, r, before, func(streamID string) bool {
		st, err := event.ParseStreamID(streamID)
		if err != nil {
			return false
		}
		name := st.Resource
		if st.Group != "" {
			name += "." + st.Group
		}
		return want[name]
	})
}

func decide(ctx context.Context, r storage.Reader, before time.Time, only func(streamID string) bool) (Plan, error) {
	d := &decider{
		plan: Plan{Before: before}, before: before, streams: map[string]*streamInfo{},
		lastS: map[streamObject]recInfo{}, lastG: map[storage.ObjectID]recInfo{},
		keep: map[int64]bool{}, removedEvents: map[string]bool{}, only: only, chosen: map[string]bool{},
	}
	var err error
	if d.open, err = openBaselines(ctx, r); err != nil {
		return d.plan, fmt.Errorf("compaction before %s: %w", stamp(before), err)
	}
	if err := scan(ctx, r, before, d.observe); err != nil {
		return d.plan, err
	}
	if err := d.decideKept(ctx, r); err != nil {
		return d.plan, fmt.Errorf("compaction before %s: %w", stamp(before), err)
	}
	if err := scan(ctx, r, before, d.sweep); err != nil {
		return d.plan, err
	}
	d.removeCorrelations()
	sort.Slice(d.plan.Remove, func(i, j int) bool { return d.plan.Remove[i] < d.plan.Remove[j] })
	d.addMarkers()
	return d.plan, nil
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// decider is the state of one Decide: what its first pass learns of the
// records observed at or before `before`, what must stay, and the plan
// its second pass builds.
type decider struct {
	plan   Plan
	before time.Time
	// open holds the baselines without an end, per stream and ID.
	open    map[string]map[string]*openBaseline
	streams map[string]*streamInfo
	// lastS and lastG hold the last record of each object, per stream
	// and across streams.
	lastS map[streamObject]recInfo
	lastG map[storage.ObjectID]recInfo
	// keep holds the IngestSeqs of the records that must stay.
	keep map[int64]bool
	// removedEvents and correlations serve the removal of the audit
	// correlations of removed events.
	removedEvents map[string]bool
	correlations  []correlation
	// only, when set, chooses the streams compacted; chosen caches its
	// answers.
	only   func(streamID string) bool
	chosen map[string]bool
}

// skips reports whether rec belongs to a stream that is not compacted.
func (d *decider) skips(rec *event.Record) bool {
	if d.only == nil || rec.StreamID == "" {
		return false
	}
	ok, seen := d.chosen[rec.StreamID]
	if !seen {
		ok = d.only(rec.StreamID)
		d.chosen[rec.StreamID] = ok
	}
	return !ok
}

// correlation is an audit correlation record: its IngestSeq and the
// EventID it points at.
type correlation struct {
	seq    int64
	target string
}

// openItem returns the open baseline rec is an item of, or nil.
func (d *decider) openItem(rec *event.Record) *openBaseline {
	if !storage.IsBaselineItem(rec) {
		return nil
	}
	return d.open[rec.StreamID][rec.BaselineID]
}

// stream returns the streamInfo of rec's stream, made on first use.
func (d *decider) stream(rec *event.Record) *streamInfo {
	si := d.streams[rec.StreamID]
	if si == nil {
		si = &streamInfo{clusterID: rec.ClusterID, baselines: map[string]*baselineMarkers{}, open: d.open[rec.StreamID]}
		d.streams[rec.StreamID] = si
	}
	return si
}

// observe is the first pass: the last record of every object (per stream
// and overall), each stream's baselines and watermark record.
func (d *decider) observe(rec *event.Record) {
	if rec.StreamID == "" || d.skips(rec) {
		return
	}
	si := d.stream(rec)
	if o := d.openItem(rec); o != nil {
		// Invisible: no object's last record.
		if o.nextBegin != 0 && rec.IngestSeq > o.nextBegin {
			o.interleaved = true
		}
		return
	}
	info := recInfo{seq: rec.IngestSeq, at: rec.ObservedAt}
	if rec.IsObjectChange() {
		info.deleted = rec.WatchType == event.Deleted
		info.key = streamObject{rec.StreamID, storage.ObjectIDOf(*rec)}
		if cur, ok := d.lastS[info.key]; !ok || later(info, cur) {
			d.lastS[info.key] = info
		}
		if cur, ok := d.lastG[info.key.obj]; !ok || later(info, cur) {
			d.lastG[info.key.obj] = info
		}
	}
	if _, ok := storage.ProgressRV(*rec); ok {
		si.lastProg, si.hasProg, si.lastProgObj = info, true, rec.IsObjectChange()
	}
	if rec.Type == event.TypeBaseline && rec.Baseline != nil {
		si.observeBaseline(rec)
	}
}

// observeBaseline remembers where a baseline's begin or end is.
func (si *streamInfo) observeBaseline(rec *event.Record) {
	b := si.baselines[rec.BaselineID]
	if b == nil {
		b = &baselineMarkers{}
		si.baselines[rec.BaselineID] = b
	}
	if rec.Baseline.Phase == event.BaselineBegin {
		b.beginSeq = rec.IngestSeq
	} else {
		b.endSeq, b.endAt = rec.IngestSeq, rec.ObservedAt
	}
}

// decideKept marks the object records and watermark records that stay,
// and decides from each stream's coverage at `before` which of its
// control records stay and whether its baseline is replaced.
func (d *decider) decideKept(ctx context.Context, r storage.Reader) error {
	keptObj := map[storage.ObjectID]bool{}
	keepKey := func(key streamObject) {
		d.keep[d.lastS[key].seq] = true
		keptObj[key.obj] = true
	}
	for key, info := range d.lastS {
		if !info.deleted {
			keepKey(key)
		}
	}
	for id, si := range d.streams {
		if si.hasProg {
			d.keep[si.lastProg.seq] = true
			if si.lastProgObj {
				keepKey(si.lastProg.key)
			}
		}
		c, err := storage.CoverageAt(ctx, r, id, d.before)
		if err != nil {
			return err
		}
		si.planBaseline(c, d.before)
	}
	for obj := range keptObj {
		d.keep[d.lastG[obj].seq] = true
	}
	return nil
}

// planBaseline decides, from the stream's coverage at before, from which
// sequence number its control records stay, and whether the baseline
// coverage rests on is replaced by a compaction baseline.
func (si *streamInfo) planBaseline(c storage.Coverage, before time.Time) {
	si.coverage = c
	if c.BaselineID == "" {
		return
	}
	b := si.baselines[c.BaselineID]
	if b == nil || b.endSeq == 0 {
		return
	}
	si.keepFrom = b.beginSeq
	if si.keepFrom == 0 {
		si.keepFrom = b.endSeq
	}
	if c.Continuous() && b.beginSeq != 0 && b.endAt.Before(before) {
		si.replace = b
		return
	}
	// B stays, and with it the coverage of the times from its end to the
	// stream's first loss after it (or to before): the versions those
	// times answer with stay as well.
	si.keepObjects, si.objectsFrom = true, b.beginSeq
}

// keepsObject reports whether an object change of the stream stays
// because the baseline coverage rests on stays (see planBaseline).
func (si *streamInfo) keepsObject(seq int64) bool {
	return si != nil && si.keepObjects && seq >= si.objectsFrom
}

// sweep is the second pass: what goes of the records observed before
// `before`.
func (d *decider) sweep(rec *event.Record) {
	if !rec.ObservedAt.Before(d.before) || rec.Type != event.TypeAuditCorrelation && d.skips(rec) {
		return
	}
	if o := d.openItem(rec); o != nil {
		// Not part of any state: it leaves with its abandoned
		// baseline, and does not place the compaction marker.
		if o.removable(d.before) {
			d.removedEvents[rec.EventID] = true
			d.plan.Remove = append(d.plan.Remove, rec.IngestSeq)
		}
		return
	}
	switch rec.Type {
	case event.TypeEvent:
		if rec.IsObjectChange() && !d.keep[rec.IngestSeq] && !d.streams[rec.StreamID].keepsObject(rec.IngestSeq) {
			d.removedEvents[rec.EventID] = true
			d.remove(rec)
		}
	case event.TypeCheckpoint:
		if !d.keep[rec.IngestSeq] {
			d.remove(rec)
		}
	case event.TypeBaseline, event.TypeGap, event.TypeCoverageChange:
		d.sweepControl(rec)
	case event.TypeAuditCorrelation:
		d.correlations = append(d.correlations, correlation{rec.IngestSeq, rec.Audit.TargetEventID})
	}
}

// sweepControl decides about a baseline marker, gap or coverage change.
func (d *decider) sweepControl(rec *event.Record) {
	si := d.streams[rec.StreamID]
	if rec.Type == event.TypeBaseline && rec.Baseline.Phase == event.BaselineBegin {
		if o := si.open[rec.BaselineID]; o != nil {
			// Its items stay invisible only while it is there.
			if o.removable(d.before) {
				d.plan.Remove = append(d.plan.Remove, rec.IngestSeq)
			}
			return
		}
	}
	if si.controlGoes(rec, d.keep) {
		d.remove(rec)
	}
}

// controlGoes reports whether a control record of the stream goes: one
// recorded before the baseline coverage rests on began, unless kept; of
// the baselines, never the begin of one whose end stays, always the
// markers of the replaced one.
func (si *streamInfo) controlGoes(rec *event.Record, keep map[int64]bool) bool {
	goes := rec.IngestSeq < si.keepFrom && !keep[rec.IngestSeq]
	if rec.Type != event.TypeBaseline {
		return goes
	}
	if b := si.baselines[rec.BaselineID]; b != nil && b.endSeq >= si.keepFrom && si.keepFrom > 0 {
		goes = false // the begin of a baseline whose end is kept
	}
	if si.replace != nil && (rec.IngestSeq == si.replace.beginSeq || rec.IngestSeq == si.replace.endSeq) {
		goes = true
	}
	return goes
}

// remove adds rec to the plan's removals, and its sequence number to
// those its stream's compaction end may take.
func (d *decider) remove(rec *event.Record) {
	d.plan.Remove = append(d.plan.Remove, rec.IngestSeq)
	if si := d.streams[rec.StreamID]; si != nil && rec.IngestSeq > si.maxRemoved && rec.IngestSeq <= si.markerBound() {
		si.maxRemoved = rec.IngestSeq
	}
}

// removeCorrelations removes the audit correlations of removed events.
func (d *decider) removeCorrelations() {
	for _, c := range d.correlations {
		if d.removedEvents[c.target] {
			d.plan.Remove = append(d.plan.Remove, c.seq)
		}
	}
}

// addMarkers adds the compaction baselines of the streams whose baseline
// is replaced, in stream order.
func (d *decider) addMarkers() {
	ids := make([]string, 0, len(d.streams))
	for id := range d.streams {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	alive := map[string]int{}
	for key, info := range d.lastS {
		if !info.deleted {
			alive[key.stream]++
		}
	}
	baselineID := CompactionBaselineID(d.before)
	for _, id := range ids {
		si := d.streams[id]
		if si.replace == nil {
			continue
		}
		d.plan.Markers = append(d.plan.Markers,
			si.marker(id, baselineID, si.replace.beginSeq, event.BaselineBegin, 0),
			si.marker(id, baselineID, si.maxRemoved, event.BaselineEnd, alive[id]))
		d.plan.Streams++
	}
}

// marker returns a marker of the stream's compaction baseline, observed
// when the state it stands for was: at the watermark, or at the end of
// the baseline it replaces if that came later.
func (si *streamInfo) marker(streamID, baselineID string, seq int64, phase event.BaselinePhase, alive int) event.Record {
	at := si.replace.endAt
	if si.coverage.Watermark != "" && si.coverage.WatermarkAt.After(at) {
		at = si.coverage.WatermarkAt
	}
	rec := event.Record{
		Type:       event.TypeBaseline,
		EventID:    event.StreamRecordID(streamID, event.TypeBaseline, event.ResourceRef{}, baselineID, string(phase)),
		IngestSeq:  seq,
		ClusterID:  si.clusterID,
		StreamID:   streamID,
		ObservedAt: at,
		Synthetic:  true,
		BaselineID: baselineID,
		Baseline:   &event.Baseline{ID: baselineID, Phase: phase, Reason: CompactionReason},
	}
	if phase == event.BaselineEnd {
		rec.Baseline.ResourceVersion = si.coverage.Watermark
		rec.Baseline.ItemCount = alive
	}
	return rec
}

// openBaselines returns, per stream, the baselines without an end record,
// from the streams' whole timelines (an end may follow before).
func openBaselines(ctx context.Context, r storage.Reader) (map[string]map[string]*openBaseline, error) {
	timelines, err := storage.Timelines(ctx, r, "")
	if err != nil {
		return nil, err
	}
	out := map[string]map[string]*openBaseline{}
	for _, tl := range timelines {
		ids := tl.OpenBaselines()
		if len(ids) == 0 {
			continue
		}
		m := make(map[string]*openBaseline, len(ids))
		for id, beginSeq := range ids {
			o := &openBaseline{}
			for _, rec := range tl.Records {
				if rec.IngestSeq > beginSeq && rec.Type == event.TypeBaseline && rec.Baseline != nil && rec.Baseline.Phase == event.BaselineBegin {
					o.nextBegin, o.nextBeginAt = rec.IngestSeq, rec.ObservedAt
					break
				}
			}
			m[id] = o
		}
		out[tl.StreamID] = m
	}
	return out, nil
}

// scan calls f for every record observed at or before `before`, in
// IngestSeq order, without bodies.
func scan(ctx context.Context, r storage.Reader, before time.Time, f func(*event.Record)) error {
	q := storage.Query{Until: before, Limit: page, WithoutBodies: true}
	for {
		p, err := r.Records(ctx, q)
		if err != nil {
			return fmt.Errorf("compaction before %s: scan: %w", stamp(before), err)
		}
		for i := range p.Records {
			f(&p.Records[i])
		}
		if p.Next == "" {
			return nil
		}
		q.Cursor = p.Next
	}
}
