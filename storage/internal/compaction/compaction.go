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
//   - When the stream is covered at `before` (storage.CoverageAt) and B
//     ended before it, B's begin and end are replaced by a synthetic
//     baseline (Reason "compaction", ID CompactionBaselineID(before)) whose
//     begin reuses B's begin sequence and whose end reuses the largest
//     sequence removed from the stream; the end carries the watermark's
//     resourceVersion, the count of objects alive in the stream, and the
//     watermark's ObservedAt (so WatermarkAt is unchanged too). The markers
//     therefore sort exactly where B did relative to every kept gap, and
//     after every kept record that B's state includes.
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
// before. The argument assumes that ObservedAt does not decrease along a
// stream's IngestSeq order, which is how the collector writes.
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
	replace     *baselineMarkers
	coverage    storage.Coverage
}

// Decide computes the compaction plan of the journal r sees, for
// Compact(ctx, before). r must not change while Decide runs.
func Decide(ctx context.Context, r storage.Reader, before time.Time) (Plan, error) {
	plan := Plan{Before: before}
	streams := map[string]*streamInfo{}
	lastS := map[streamObject]recInfo{}
	lastG := map[storage.ObjectID]recInfo{}
	open, err := openBaselines(ctx, r)
	if err != nil {
		return plan, fmt.Errorf("compaction before %s: %w", before.UTC().Format(time.RFC3339Nano), err)
	}
	// openItem returns the open baseline rec is an item of, or nil.
	openItem := func(rec *event.Record) *openBaseline {
		if !storage.IsBaselineItem(rec) {
			return nil
		}
		return open[rec.StreamID][rec.BaselineID]
	}

	// Pass 1: the last record of every object (per stream and overall),
	// each stream's baselines and watermark record.
	err = scan(ctx, r, before, func(rec *event.Record) {
		if rec.StreamID == "" {
			return
		}
		si := streams[rec.StreamID]
		if si == nil {
			si = &streamInfo{clusterID: rec.ClusterID, baselines: map[string]*baselineMarkers{}, open: open[rec.StreamID]}
			streams[rec.StreamID] = si
		}
		if o := openItem(rec); o != nil {
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
			if cur, ok := lastS[info.key]; !ok || later(info, cur) {
				lastS[info.key] = info
			}
			if cur, ok := lastG[info.key.obj]; !ok || later(info, cur) {
				lastG[info.key.obj] = info
			}
		}
		if _, ok := storage.ProgressRV(*rec); ok {
			si.lastProg, si.hasProg, si.lastProgObj = info, true, rec.IsObjectChange()
		}
		if rec.Type == event.TypeBaseline && rec.Baseline != nil {
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
	})
	if err != nil {
		return plan, err
	}

	// Which object records survive.
	keep := map[int64]bool{}
	keptObj := map[storage.ObjectID]bool{}
	keepKey := func(key streamObject) {
		keep[lastS[key].seq] = true
		keptObj[key.obj] = true
	}
	for key, info := range lastS {
		if !info.deleted {
			keepKey(key)
		}
	}
	for id, si := range streams {
		if si.hasProg {
			keep[si.lastProg.seq] = true
			if si.lastProgObj {
				keepKey(si.lastProg.key)
			}
		}
		// Coverage at before decides the control records and markers.
		c, err := storage.CoverageAt(ctx, r, id, before)
		if err != nil {
			return plan, fmt.Errorf("compaction before %s: %w", before.UTC().Format(time.RFC3339Nano), err)
		}
		si.coverage = c
		if c.BaselineID == "" {
			continue
		}
		b := si.baselines[c.BaselineID]
		if b == nil || b.endSeq == 0 {
			continue
		}
		si.keepFrom = b.beginSeq
		if si.keepFrom == 0 {
			si.keepFrom = b.endSeq
		}
		if c.Covered && b.beginSeq != 0 && b.endAt.Before(before) {
			si.replace = b
		}
	}
	for obj := range keptObj {
		keep[lastG[obj].seq] = true
	}

	// Pass 2: what goes.
	removedEvents := map[string]bool{}
	type correlation struct {
		seq    int64
		target string
	}
	var correlations []correlation
	err = scan(ctx, r, before, func(rec *event.Record) {
		if !rec.ObservedAt.Before(before) {
			return
		}
		var remove bool
		if o := openItem(rec); o != nil {
			// Not part of any state: it leaves with its abandoned
			// baseline, and does not place the compaction marker.
			if o.removable(before) {
				removedEvents[rec.EventID] = true
				plan.Remove = append(plan.Remove, rec.IngestSeq)
			}
			return
		}
		switch rec.Type {
		case event.TypeEvent:
			remove = rec.IsObjectChange() && !keep[rec.IngestSeq]
			if remove {
				removedEvents[rec.EventID] = true
			}
		case event.TypeCheckpoint:
			remove = !keep[rec.IngestSeq]
		case event.TypeBaseline, event.TypeGap, event.TypeCoverageChange:
			si := streams[rec.StreamID]
			remove = rec.IngestSeq < si.keepFrom && !keep[rec.IngestSeq]
			if rec.Type == event.TypeBaseline {
				if b := si.baselines[rec.BaselineID]; b != nil && b.endSeq >= si.keepFrom && si.keepFrom > 0 {
					remove = false // the begin of a baseline whose end is kept
				}
				if si.replace != nil && (rec.IngestSeq == si.replace.beginSeq || rec.IngestSeq == si.replace.endSeq) {
					remove = true
				}
				if o := si.open[rec.BaselineID]; o != nil && rec.Baseline.Phase == event.BaselineBegin {
					// Its items stay invisible only while it is there.
					if o.removable(before) {
						plan.Remove = append(plan.Remove, rec.IngestSeq)
					}
					return
				}
			}
		case event.TypeAuditCorrelation:
			correlations = append(correlations, correlation{rec.IngestSeq, rec.Audit.TargetEventID})
		}
		if remove {
			plan.Remove = append(plan.Remove, rec.IngestSeq)
			if si := streams[rec.StreamID]; si != nil && rec.IngestSeq > si.maxRemoved {
				si.maxRemoved = rec.IngestSeq
			}
		}
	})
	if err != nil {
		return plan, err
	}
	for _, c := range correlations {
		if removedEvents[c.target] {
			plan.Remove = append(plan.Remove, c.seq)
		}
	}
	sort.Slice(plan.Remove, func(i, j int) bool { return plan.Remove[i] < plan.Remove[j] })

	// The compaction baselines.
	ids := make([]string, 0, len(streams))
	for id := range streams {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	alive := map[string]int{}
	for key, info := range lastS {
		if !info.deleted {
			alive[key.stream]++
		}
	}
	baselineID := CompactionBaselineID(before)
	for _, id := range ids {
		si := streams[id]
		if si.replace == nil {
			continue
		}
		at := si.replace.endAt
		if si.coverage.Watermark != "" && si.coverage.WatermarkAt.After(at) {
			at = si.coverage.WatermarkAt
		}
		marker := func(seq int64, phase event.BaselinePhase) event.Record {
			rec := event.Record{
				Type:       event.TypeBaseline,
				EventID:    event.EventID(id, event.TypeBaseline, event.ResourceRef{}, "", baselineID, string(phase)),
				IngestSeq:  seq,
				ClusterID:  si.clusterID,
				StreamID:   id,
				ObservedAt: at,
				Synthetic:  true,
				BaselineID: baselineID,
				Baseline:   &event.Baseline{ID: baselineID, Phase: phase, Reason: CompactionReason},
			}
			if phase == event.BaselineEnd {
				rec.Baseline.ResourceVersion = si.coverage.Watermark
				rec.Baseline.ItemCount = alive[id]
			}
			return rec
		}
		plan.Markers = append(plan.Markers,
			marker(si.replace.beginSeq, event.BaselineBegin),
			marker(si.maxRemoved, event.BaselineEnd))
		plan.Streams++
	}
	return plan, nil
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
			return fmt.Errorf("compaction before %s: scan: %w", before.UTC().Format(time.RFC3339Nano), err)
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
