package truth

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"reflect"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
)

// Mismatch kinds: each is a way the journal can break krply's promise.
const (
	// KindLost: a version the server committed while the stream was
	// continuous is not in the journal.
	KindLost = "lost"
	// KindPhantom: a journal event no write produced.
	KindPhantom = "phantom"
	// KindDuplicate: a version recorded more than once.
	KindDuplicate = "duplicate"
	// KindBody: a recorded version's body differs from the server's answer.
	KindBody = "body"
	// KindStale: a watch event for a version committed before the list its
	// stretch of continuity started from.
	KindStale = "stale"
	// KindOutside: a watch event recorded while the stream was not
	// continuous.
	KindOutside = "outside-coverage"
	// KindBaseline: a baseline item that is not the object's state at list
	// time, or an object alive at list time missing from the baseline.
	KindBaseline = "baseline"
	// KindInferred: an inferred deletion of an object that was not deleted
	// in the gap, or one with wrong bounds.
	KindInferred = "inferred"
	// KindInferredMissing: an object deleted in a gap that the journal
	// still holds alive after the relist.
	KindInferredMissing = "inferred-missing"
	// KindObjectAt: ObjectAt disagrees with the oracle.
	KindObjectAt = "object-at"
	// KindSnapshot: a snapshot claims coverage it does not have, or its
	// objects disagree with the oracle.
	KindSnapshot = "snapshot"
	// KindCoverage: a stream is not covered when the workload was
	// quiescent and every fault had ended.
	KindCoverage = "coverage"
	// KindStream: an object of the oracle that no stream records.
	KindStream = "stream"
	// KindGapStart: a gap starts after the stream's last durable record
	// before it (say, when the loss was detected), so the journal claims
	// coverage for part of the outage.
	KindGapStart = "gap-start"

	// The seams: what a journal shared by processes, audit correlation,
	// killed baselines and stopped recorders can break (see check_seams.go).

	// KindFlip: a snapshot (or a replay plan) that was saved Complete is
	// no longer Complete, or no longer holds the same objects, when
	// computed again for the same scope and time.
	KindFlip = "flip"
	// KindAnswerFlip: an ObjectAt answer a process got covered while the
	// journal was recorded (Config.Answers) is not covered, or names
	// another version (or existence), when asked again.
	KindAnswerFlip = "answer-flip"
	// KindPastEvidence: a snapshot (or a plan) was saved Complete for a
	// time after some stream's last durable evidence of continuity when it
	// was made: that time was not yet observed.
	KindPastEvidence = "past-evidence"
	// KindSaved: a snapshot or plan a process reported saved is not in the
	// journal as saved, a preview it did not save is, or the journal holds
	// one nobody saved (a query that wrote).
	KindSaved = "saved"
	// KindUnfinishedVisible: an item of a baseline that never ended (its
	// recorder was killed mid-list) shows in an answer: history, ObjectAt,
	// AliveAt, a snapshot, EventByResourceVersion or an audit match.
	KindUnfinishedVisible = "unfinished-visible"
	// KindHistoryDuplicate: an object's history shows the same version as
	// a baseline item twice in one stream with no loss of continuity in
	// between (a baseline listed again over one that was not trusted).
	KindHistoryDuplicate = "history-duplicate"
	// KindAuditSynthetic: an audit event is linked exactly (confidence 1)
	// to a baseline item or an inferred deletion, which shows a version
	// but is no evidence of the write.
	KindAuditSynthetic = "audit-exact-synthetic"
	// KindAuditDuplicate: one audit event linked more than once, or one
	// journal event linked exactly to more than one audit event.
	KindAuditDuplicate = "audit-duplicate"
	// KindAuditWrong: an audit event linked to a record of another
	// version, or attributed to a user other than the one who wrote.
	KindAuditWrong = "audit-wrong"
	// KindAuditMissing: a write recorded as a watch event is not linked
	// exactly to that event although its audit event was ingested.
	KindAuditMissing = "audit-missing"
)

// Mismatch is one way the journal disagrees with the oracle.
type Mismatch struct {
	Kind   string
	Detail string
}

func (m Mismatch) String() string { return m.Kind + ": " + m.Detail }

// Config says what Check checks beyond the journal itself.
type Config struct {
	// ClusterID is the cluster the journal records.
	ClusterID string
	// Namespaces and Resources are the scope of the workload, for the
	// snapshots taken at quiescent points.
	Namespaces []string
	Resources  []schema.GroupResource
	// RandomTimes is how many random times ObjectAt is checked at, for
	// every object of every stream covered then.
	RandomTimes int
	// GapSnapshots caps the snapshots taken inside gaps (0: none).
	GapSnapshots int
	// Seed makes the random times reproducible.
	Seed int64

	// Saved, when not nil, is every snapshot and replay plan that was
	// saved into the journal, as the processes that saved them reported
	// it, and the plan previews they made without saving: the journal must
	// hold exactly the saved ones.
	Saved []Saved
	// Answers are ObjectAt answers processes got while the journal was
	// recorded: each one covered must be the same when asked again.
	Answers []Answer
	// AuditIngested says the API server's audit log of every write of the
	// oracle (Version.AuditID) was ingested after the recording ended, at
	// a level that carries the response: every version recorded as a
	// watch event must then be linked exactly to it.
	AuditIngested bool
}

// Saved is a snapshot or a replay plan a process saved into the journal
// (or, Preview, made without saving).
type Saved struct {
	// Kind is SavedSnapshot or SavedPlan; By says who saved it.
	Kind string `json:"kind"`
	By   string `json:"by,omitempty"`
	ID   string `json:"id"`
	// At is the time it describes, Complete and Objects what it said.
	At       time.Time `json:"at"`
	Complete bool      `json:"complete"`
	Objects  int       `json:"objects"`
	// Hash is a plan's hash.
	Hash string `json:"hash,omitempty"`
	// Preview: a plan made and not saved; the journal must not hold it.
	Preview bool `json:"preview,omitempty"`
}

// Answer is an ObjectAt answer a process got while the journal was
// recorded.
type Answer struct {
	By     string           `json:"by,omitempty"`
	Object storage.ObjectID `json:"object"`
	At     time.Time        `json:"at"`
	// Covered and Exists are what the answer said, and ResourceVersion
	// the version it returned ("" when the object did not exist).
	Covered         bool   `json:"covered"`
	Exists          bool   `json:"exists"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// answerOf is the Answer st, ObjectAt's answer about obj at at, gives.
func answerOf(by string, obj storage.ObjectID, at time.Time, st *materialize.ObjectState) Answer {
	a := Answer{By: by, Object: obj, At: at, Covered: st.Covered, Exists: st.Exists}
	if st.Exists {
		a.ResourceVersion = st.Record.Resource.ResourceVersion
	}
	return a
}

// The kinds of Saved.
const (
	SavedSnapshot = "snapshot"
	SavedPlan     = "plan"
)

// Report is what Check found.
type Report struct {
	// Versions is the number of oracle versions; Recorded of them are in
	// the journal exactly once as watch events, InsideGaps are missing
	// inside a reported gap, BeforeRecording were written before the
	// first baseline of their stream ended.
	Versions, Recorded, InsideGaps, BeforeRecording int
	// Gaps counts the losses of continuity (gaps, unavailability).
	Gaps int
	// BaselineItems counts the items of complete baselines checked,
	// Inferred the inferred deletions, RecreatedInGap the objects deleted
	// and re-created under the same name inside a gap (the relist shows
	// the new UID, without an inferred deletion of the old one).
	BaselineItems, Inferred, RecreatedInGap int
	// ObjectAtChecks counts ObjectAt answers compared, SnapshotsInGaps and
	// SnapshotsCovered the snapshots checked.
	ObjectAtChecks, SnapshotsInGaps, SnapshotsCovered int
	// SavedSnapshots and SavedPlans count the snapshots and plans found
	// saved in the journal, SavedComplete those saved Complete (each
	// computed again: never-flips), SavedChecked the Saved reports
	// checked against the journal.
	SavedSnapshots, SavedPlans, SavedComplete, SavedChecked int
	// AnswersCovered counts the covered ObjectAt answers of Config.Answers
	// asked again.
	AnswersCovered int
	// UnfinishedItems counts the items of baselines that never ended.
	UnfinishedItems int
	// Correlations counts the audit correlations; Attributed the versions
	// linked exactly to the watch event that recorded them,
	// ThroughRelist the versions linked (not exactly) to a baseline item
	// or an inferred deletion, and Unattributed the audited versions
	// linked to nothing.
	Correlations, Attributed, ThroughRelist, Unattributed int
	// DeliveryLag is how long after the server's answer the Collector
	// observed the recorded versions (negative when the watch was faster
	// than the answer): its median, 99th percentile and maximum. Versions
	// made while nothing recorded count with the downtime.
	DeliveryLag [3]time.Duration
	Mismatches  []Mismatch
}

func (r *Report) add(kind, format string, args ...any) {
	r.Mismatches = append(r.Mismatches, Mismatch{Kind: kind, Detail: fmt.Sprintf(format, args...)})
}

// Kinds counts the mismatches by kind.
func (r *Report) Kinds() map[string]int {
	out := map[string]int{}
	for _, m := range r.Mismatches {
		out[m.Kind]++
	}
	return out
}

// Summary is a one-line account of the report.
func (r *Report) Summary() string {
	return fmt.Sprintf("oracle versions %d, recorded %d, inside gaps %d, before recording %d, gaps %d, baseline items %d, unfinished baseline items %d, inferred deletions %d, recreated in gaps %d, ObjectAt checks %d, snapshots in gaps %d, covered snapshots %d, saved snapshots %d, saved plans %d, of them Complete %d, saved reports %d, covered answers asked again %d, audit correlations %d, attributed %d, through a relist %d, unattributed %d, delivery lag p50/p99/max %v/%v/%v, mismatches %d %v",
		r.Versions, r.Recorded, r.InsideGaps, r.BeforeRecording, r.Gaps, r.BaselineItems, r.UnfinishedItems, r.Inferred, r.RecreatedInGap,
		r.ObjectAtChecks, r.SnapshotsInGaps, r.SnapshotsCovered,
		r.SavedSnapshots, r.SavedPlans, r.SavedComplete, r.SavedChecked, r.AnswersCovered, r.Correlations, r.Attributed, r.ThroughRelist, r.Unattributed,
		r.DeliveryLag[0].Round(time.Millisecond), r.DeliveryLag[1].Round(time.Millisecond), r.DeliveryLag[2].Round(time.Millisecond),
		len(r.Mismatches), r.Kinds())
}

// versionState is what Check learned about one oracle version.
type versionState struct {
	stream *streamJournal
	// recorded holds the watch events that carry the version.
	recorded []event.Record
	// segment is the index of the segment whose events hold it, or whose
	// loss excuses its absence (excused).
	segment int
	excused bool
}

// checker holds the state of one Check.
type checker struct {
	cfg      Config
	st       storage.ReadWriter
	mat      *materialize.Materializer
	report   *Report
	versions []Version
	state    []versionState
	streams  []*streamJournal
	// perStream holds the indexes of each stream's versions, in write order.
	perStream map[*streamJournal][]int
	// perObject holds the indexes of each object's versions, in write order.
	perObject map[storage.ObjectID][]int
	seams     seams
}

// Check compares a journal with the oracle of the workload that produced
// it. It only reads the store (a journal opened read-only will do). An
// error means the check could not be made; disagreements are
// Report.Mismatches.
//
// The rules, for each stream (writes are sequential, so write order is
// commit order):
//
//   - The journal is cut into segments of continuity: a complete baseline,
//     the watch events after it, and the gap or unavailability that ended
//     it.
//   - A version is expected in the segment whose baseline ended before
//     the write was issued. Inside a segment the recorded versions of a
//     stream must be contiguous in write order; a missing version is
//     excused only when it comes after the last one the segment recorded
//     and the segment ended with a loss (it lies inside that gap).
//   - Every watch event is an oracle version (same object, UID,
//     resourceVersion, watch type, body), recorded once, committed after
//     the list its segment started from.
//   - Every baseline item is an oracle version that was not superseded
//     before the list began; every object alive from before the list
//     began until after it ended is in the baseline.
//   - Every gap starts no later than the stream's last durable record
//     before it.
//   - Every inferred deletion is a real deletion that lies inside the gap
//     the baseline closed, bounded by that gap's start (or earlier) and the
//     baseline's end; every deletion inside a gap of an object the journal
//     held alive is inferred.
//   - At each quiescent point every stream is covered, ObjectAt of every
//     object equals the oracle's last version, and a snapshot of the whole
//     scope is Complete and holds exactly the oracle's live objects.
//   - At random times, for every stream covered then, ObjectAt equals the
//     last version (in write order) that the journal had observed by then.
//   - A snapshot at a time inside a gap is not Complete and names the
//     stream.
//
// And over the whole journal, the rules of the seams (see the package
// documentation): a snapshot or plan saved Complete stays Complete with
// the same objects, and had evidence past its time when it was made; what
// was reported saved (cfg.Saved) is in the journal once, and nothing else
// is; no item of a baseline that never ended shows in any answer, and no
// history repeats a baseline item without a loss in between; every audit
// link names the version's writer and a record of that version, exactly
// only a watch event, at most once; and with cfg.AuditIngested, every
// version recorded as a watch event is linked exactly to it.
func Check(ctx context.Context, o *Oracle, st storage.ReadWriter, cfg Config) (*Report, error) {
	mat, err := materialize.New(st)
	if err != nil {
		return nil, fmt.Errorf("truth: %w", err)
	}
	c := &checker{cfg: cfg, st: st, mat: mat, report: &Report{}, versions: o.Versions(),
		perStream: map[*streamJournal][]int{}, perObject: map[storage.ObjectID][]int{}}
	c.report.Versions = len(c.versions)
	c.state = make([]versionState, len(c.versions))
	if err := c.readJournal(ctx); err != nil {
		return nil, fmt.Errorf("truth: read the journal: %w", err)
	}
	if err := c.readSeams(ctx); err != nil {
		return nil, fmt.Errorf("truth: read the journal: %w", err)
	}
	c.matchEvents()
	c.checkSegments()
	c.checkBaselines()
	c.checkInferred()
	if err := c.checkHistories(ctx); err != nil {
		return nil, fmt.Errorf("truth: histories: %w", err)
	}
	c.checkAudit()
	if err := c.checkQuiescent(ctx, o.QuiescentPoints()); err != nil {
		return nil, fmt.Errorf("truth: quiescent points: %w", err)
	}
	if err := c.checkRandomTimes(ctx, o.QuiescentPoints()); err != nil {
		return nil, fmt.Errorf("truth: random times: %w", err)
	}
	if err := c.checkGapSnapshots(ctx); err != nil {
		return nil, fmt.Errorf("truth: snapshots in gaps: %w", err)
	}
	if err := c.checkSaved(ctx); err != nil {
		return nil, fmt.Errorf("truth: saved snapshots and plans: %w", err)
	}
	if err := c.checkAnswers(ctx); err != nil {
		return nil, fmt.Errorf("truth: answers got while recording: %w", err)
	}
	return c.report, nil
}

func (c *checker) readJournal(ctx context.Context) error {
	statuses, err := c.st.Streams(ctx, c.cfg.ClusterID)
	if err != nil {
		return fmt.Errorf("streams: %w", err)
	}
	for _, s := range statuses {
		sj, err := readStream(ctx, c.st, s)
		if err != nil {
			return err
		}
		c.streams = append(c.streams, sj)
		for _, seg := range sj.segments {
			if seg.loss != nil {
				c.report.Gaps++
			}
		}
	}
	for i, v := range c.versions {
		c.perObject[v.Object] = append(c.perObject[v.Object], i)
		sj := c.streamOf(v.Object)
		if sj == nil {
			c.report.add(KindStream, "no stream records %s", v)
			continue
		}
		c.state[i].stream = sj
		c.state[i].segment = -1
		c.perStream[sj] = append(c.perStream[sj], i)
	}
	return nil
}

// streamOf returns the stream that records obj: the one of its namespace,
// or else the one across all namespaces.
func (c *checker) streamOf(obj storage.ObjectID) *streamJournal {
	var all *streamJournal
	for _, sj := range c.streams {
		if sj.stream.Group != obj.Group || sj.stream.Resource != obj.Resource || sj.stream.Selector != "" {
			continue
		}
		switch sj.stream.Namespace {
		case obj.Namespace:
			return sj
		case "":
			all = sj
		}
	}
	return all
}

func eventKey(obj storage.ObjectID, uid, rv string, wt event.WatchType) string {
	if wt == event.Deleted {
		rv = "" // a delete is known by its UID; its resourceVersion only from the watch
	}
	return strings.Join([]string{obj.Group, obj.Resource, obj.Namespace, obj.Name, uid, rv, string(wt)}, "\x00")
}

// matchEvents matches every watch event to the version it carries.
func (c *checker) matchEvents() {
	byKey := map[string]int{}
	for i, v := range c.versions {
		byKey[eventKey(v.Object, v.UID, v.ResourceVersion, v.Op.WatchType())] = i
	}
	for _, sj := range c.streams {
		for _, rec := range sj.outside {
			c.report.add(KindOutside, "%s: %s %s rv=%s observed %s while the stream was not continuous", sj.id, rec.WatchType, rec.Resource.ObjectKey(), rec.Resource.ResourceVersion, stamp(rec.ObservedAt))
		}
		for _, seg := range sj.segments {
			for _, rec := range seg.events {
				obj := storage.ObjectIDOf(rec)
				i, ok := byKey[eventKey(obj, rec.Resource.UID, rec.Resource.ResourceVersion, rec.WatchType)]
				if !ok || c.state[i].stream != sj {
					c.report.add(KindPhantom, "%s: %s %s uid=%s rv=%s observed %s: no write produced it", sj.id, rec.WatchType, rec.Resource.ObjectKey(), short(rec.Resource.UID), rec.Resource.ResourceVersion, stamp(rec.ObservedAt))
					continue
				}
				v := c.versions[i]
				st := &c.state[i]
				st.recorded = append(st.recorded, rec)
				if len(st.recorded) > 1 {
					c.report.add(KindDuplicate, "%s: %s recorded %d times (EventIDs %s, %s)", sj.id, v, len(st.recorded), st.recorded[0].EventID, rec.EventID)
					continue
				}
				st.segment = seg.index
				if !sameBody(v, rec.Object) {
					c.report.add(KindBody, "%s: %s: recorded body differs from the server's answer", sj.id, v)
				}
				if !seg.listStart.IsZero() && v.RespondedAt.Before(seg.listStart) {
					c.report.add(KindStale, "%s: %s answered %s, before the list of baseline %s began (after %s)", sj.id, v, stamp(v.RespondedAt), seg.end.BaselineID, stamp(seg.listStart))
				}
			}
		}
	}
	var lags []time.Duration
	for i := range c.state {
		if len(c.state[i].recorded) > 0 {
			c.report.Recorded++
			lags = append(lags, c.state[i].recorded[0].ObservedAt.Sub(c.versions[i].RespondedAt))
		}
	}
	if len(lags) > 0 {
		slices.Sort(lags)
		c.report.DeliveryLag = [3]time.Duration{lags[len(lags)/2], lags[len(lags)*99/100], lags[len(lags)-1]}
	}
}

// checkSegments decides, for every version not recorded, whether its
// absence is excused by a gap.
func (c *checker) checkSegments() {
	for _, sj := range c.streams {
		for _, seg := range sj.segments {
			if from := seg.lossStart(); seg.loss != nil && from.After(seg.lastProgressAt) {
				c.report.add(KindGapStart, "%s: the loss of continuity recorded %s starts at %s, after the stream's last durable record (%s)",
					sj.id, stamp(seg.loss.ObservedAt), stamp(from), stamp(seg.lastProgressAt))
			}
		}
	}
	for sj, idx := range c.perStream {
		// last[k] is the position (in idx) of the last version segment k recorded.
		last := make([]int, len(sj.segments))
		for k := range last {
			last[k] = -1
		}
		for p, i := range idx {
			if st := c.state[i]; len(st.recorded) > 0 && st.segment >= 0 {
				last[st.segment] = max(last[st.segment], p)
			}
		}
		for p, i := range idx {
			st := &c.state[i]
			if len(st.recorded) > 0 {
				continue
			}
			v := c.versions[i]
			k := sj.segmentOf(v.IssuedAt)
			switch {
			case k < 0:
				c.report.BeforeRecording++
			case p < last[k]:
				later := c.versions[idx[last[k]]]
				c.report.add(KindLost, "%s: %s (written %s) is missing, though the stream recorded the later %s without a gap in between", sj.id, v, stamp(v.IssuedAt), later)
			case sj.segments[k].loss != nil:
				st.segment, st.excused = k, true
				c.report.InsideGaps++
			case k == len(sj.segments)-1:
				c.report.add(KindLost, "%s: %s (written %s) is missing; the stream is continuous since baseline %s ended at %s", sj.id, v, stamp(v.IssuedAt), sj.segments[k].end.BaselineID, stamp(sj.segments[k].end.ObservedAt))
			default:
				c.report.add(KindLost, "%s: %s (written %s) is missing, and no gap separates baseline %s from the next baseline %s", sj.id, v, stamp(v.IssuedAt), sj.segments[k].end.BaselineID, sj.segments[k+1].end.BaselineID)
			}
		}
	}
}

// checkBaselines checks the items of every baseline.
func (c *checker) checkBaselines() {
	for sj, idx := range c.perStream {
		byObject := map[storage.ObjectID][]int{}
		for _, i := range idx {
			byObject[c.versions[i].Object] = append(byObject[c.versions[i].Object], i)
		}
		complete := map[string]*segment{}
		for _, seg := range sj.segments {
			complete[seg.end.BaselineID] = seg
		}
		for baselineID, items := range sj.items {
			seg := complete[baselineID]
			inBaseline := map[storage.ObjectID]event.Record{}
			for _, item := range items {
				obj := storage.ObjectIDOf(item)
				inBaseline[obj] = item
				vs := byObject[obj]
				j := slices.IndexFunc(vs, func(i int) bool {
					v := c.versions[i]
					return v.Op != OpDelete && v.UID == item.Resource.UID && v.ResourceVersion == item.Resource.ResourceVersion
				})
				if j < 0 {
					c.report.add(KindBaseline, "%s: baseline %s holds %s uid=%s rv=%s, which no write produced", sj.id, baselineID, item.Resource.ObjectKey(), short(item.Resource.UID), item.Resource.ResourceVersion)
					continue
				}
				v := c.versions[vs[j]]
				if !sameBody(v, item.Object) {
					c.report.add(KindBody, "%s: baseline %s: %s: body differs from the server's answer", sj.id, baselineID, v)
				}
				if seg == nil {
					continue // an unfinished baseline is never trusted; its items only must not be made up
				}
				c.report.BaselineItems++
				if v.IssuedAt.After(seg.end.ObservedAt) {
					c.report.add(KindBaseline, "%s: baseline %s ended %s but holds %s, written %s", sj.id, baselineID, stamp(seg.end.ObservedAt), v, stamp(v.IssuedAt))
				}
				if j+1 < len(vs) && !seg.listStart.IsZero() && c.versions[vs[j+1]].RespondedAt.Before(seg.listStart) {
					c.report.add(KindBaseline, "%s: baseline %s holds %s, superseded by %s before the list began", sj.id, baselineID, v, c.versions[vs[j+1]])
				}
			}
			if seg == nil || seg.listStart.IsZero() {
				continue
			}
			// Objects whose state was settled from before the list began
			// until after it ended must be in it exactly so.
			for obj, vs := range byObject {
				j := -1
				for n, i := range vs {
					if c.versions[i].RespondedAt.Before(seg.listStart) {
						j = n
					}
				}
				if j < 0 || (j+1 < len(vs) && !c.versions[vs[j+1]].IssuedAt.After(seg.end.ObservedAt)) {
					continue
				}
				v := c.versions[vs[j]]
				item, ok := inBaseline[obj]
				switch {
				case v.Op == OpDelete && ok && item.Resource.UID == v.UID:
					c.report.add(KindBaseline, "%s: baseline %s holds %s, deleted before the list began", sj.id, baselineID, v)
				case v.Op != OpDelete && !ok:
					c.report.add(KindBaseline, "%s: baseline %s lacks %s, alive throughout the list", sj.id, baselineID, v)
				case v.Op != OpDelete && (item.Resource.UID != v.UID || item.Resource.ResourceVersion != v.ResourceVersion):
					c.report.add(KindBaseline, "%s: baseline %s holds %s at uid=%s rv=%s, want %s", sj.id, baselineID, obj.Name, short(item.Resource.UID), item.Resource.ResourceVersion, v)
				}
			}
		}
	}
}

// checkInferred checks the inferred deletions against the deletions that
// lie inside gaps.
func (c *checker) checkInferred() {
	deletes := map[string]int{} // UID → delete version
	for i, v := range c.versions {
		if v.Op == OpDelete {
			deletes[v.UID] = i
		}
	}
	for _, sj := range c.streams {
		for _, seg := range sj.segments {
			for _, rec := range seg.inferred {
				c.report.Inferred++
				i, ok := deletes[rec.Resource.UID]
				if !ok || c.state[i].stream != sj {
					c.report.add(KindInferred, "%s: baseline %s infers the deletion of %s uid=%s, which was never deleted", sj.id, seg.end.BaselineID, rec.Resource.ObjectKey(), short(rec.Resource.UID))
					continue
				}
				d, st := c.versions[i], c.state[i]
				switch {
				case len(st.recorded) > 0:
					c.report.add(KindInferred, "%s: baseline %s infers %s, whose deletion the journal recorded", sj.id, seg.end.BaselineID, d)
				case !st.excused || st.segment != seg.index-1:
					c.report.add(KindInferred, "%s: baseline %s infers %s, which does not lie in the gap this baseline closes", sj.id, seg.end.BaselineID, d)
				case rec.Inferred.To.Before(d.IssuedAt):
					c.report.add(KindInferred, "%s: %s inferred up to %s, before it was written (%s)", sj.id, d, stamp(rec.Inferred.To), stamp(d.IssuedAt))
				case rec.Inferred.From.After(sj.segments[seg.index-1].lossStart()):
					c.report.add(KindInferred, "%s: %s inferred from %s, after the gap's start %s", sj.id, d, stamp(rec.Inferred.From), stamp(sj.segments[seg.index-1].lossStart()))
				case rec.Inferred.To.After(seg.end.ObservedAt) || (seg.begin != nil && rec.Inferred.To.Before(seg.begin.ObservedAt)):
					c.report.add(KindInferred, "%s: %s inferred up to %s, outside the baseline that revealed it (%s to %s)", sj.id, d, stamp(rec.Inferred.To), stamp(seg.listStart), stamp(seg.end.ObservedAt))
				}
				if len(rec.Object) == 0 {
					c.report.add(KindInferred, "%s: inferred deletion of %s carries no body", sj.id, d)
				}
			}
		}
	}
	// The inferred deletions of a baseline that never ended must still be
	// real deletions.
	for _, sj := range c.streams {
		for _, rec := range sj.unfinished {
			c.report.Inferred++
			if i, ok := deletes[rec.Resource.UID]; !ok || c.state[i].stream != sj || len(c.state[i].recorded) > 0 {
				c.report.add(KindInferred, "%s: unfinished baseline %s infers the deletion of %s uid=%s, which was not deleted unseen", sj.id, rec.Inferred.BaselineID, rec.Resource.ObjectKey(), short(rec.Resource.UID))
			}
		}
	}
	// Every deletion inside a gap of an object the journal held alive
	// must be inferred by the baseline that closed the gap.
	for i, d := range c.versions {
		st := c.state[i]
		if d.Op != OpDelete || !st.excused || st.segment+1 >= len(st.stream.segments) {
			continue
		}
		sj := st.stream
		next := sj.segments[st.segment+1]
		if !c.aliveBefore(sj, d, next.end.IngestSeq) {
			continue
		}
		if slices.ContainsFunc(next.inferred, func(r event.Record) bool { return r.Resource.UID == d.UID }) {
			continue
		}
		if slices.ContainsFunc(next.items, func(r event.Record) bool { return r.Resource.Name == d.Object.Name && r.Resource.UID != d.UID }) {
			c.report.RecreatedInGap++
			continue
		}
		c.report.add(KindInferredMissing, "%s: %s lies in the gap from %s, but baseline %s does not infer it", sj.id, d, stamp(sj.segments[st.segment].lossStart()), next.end.BaselineID)
	}
}

// aliveBefore reports whether the journal's last record of d's UID before
// seq is not a deletion.
func (c *checker) aliveBefore(sj *streamJournal, d Version, seq int64) bool {
	alive := false
	for _, rec := range sj.byObject[d.Object] {
		if rec.IngestSeq >= seq {
			break
		}
		if rec.Resource.UID == d.UID {
			alive = rec.WatchType != event.Deleted
		}
	}
	return alive
}

// checkQuiescent checks coverage, ObjectAt and a snapshot at every
// quiescent point against the oracle's state then.
func (c *checker) checkQuiescent(ctx context.Context, points []time.Time) error {
	for _, at := range points {
		for _, sj := range c.streams {
			cov, err := storage.CoverageAt(ctx, c.st, sj.id, at)
			if err != nil {
				return fmt.Errorf("coverage: %w", err)
			}
			if !cov.Covered {
				c.report.add(KindCoverage, "%s: not covered at the quiescent point %s: %s", sj.id, stamp(at), cov.Reason)
			}
		}
		want := map[storage.ObjectID]Version{}
		for _, i := range c.lastVersionsAt(at) {
			v := c.versions[i]
			state, err := c.mat.ObjectAt(ctx, v.Object, at)
			if err != nil {
				return fmt.Errorf("object at: %w", err)
			}
			c.report.ObjectAtChecks++
			if state.Record != nil {
				c.visible(*state.Record, "ObjectAt at the quiescent point "+stamp(at))
			}
			if v.Op != OpDelete {
				want[v.Object] = v
			}
			if msg := compareState(v, state); msg != "" {
				c.report.add(KindObjectAt, "at the quiescent point %s: %s: %s", stamp(at), v.Object.Name, msg)
			}
		}
		snap, err := c.mat.Snapshot(ctx, materialize.Scope{ClusterID: c.cfg.ClusterID, Namespaces: c.cfg.Namespaces, Resources: c.cfg.Resources}, at)
		if err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		c.report.SnapshotsCovered++
		if !snap.Complete {
			c.report.add(KindSnapshot, "snapshot at the quiescent point %s is not complete: %v", stamp(at), snap.Missing)
		}
		for _, so := range snap.Objects {
			c.visible(event.Record{EventID: so.EventID, WatchType: event.Added, Resource: so.Ref}, "the snapshot at the quiescent point "+stamp(at))
			obj := storage.ObjectID{ClusterID: c.cfg.ClusterID, Group: so.Ref.Group, Resource: so.Ref.Resource, Namespace: so.Ref.Namespace, Name: so.Ref.Name}
			v, ok := want[obj]
			delete(want, obj)
			switch {
			case !ok:
				c.report.add(KindSnapshot, "snapshot at %s holds %s uid=%s rv=%s, which the server did not have", stamp(at), so.Ref, short(so.Ref.UID), so.Ref.ResourceVersion)
			case so.Ref.UID != v.UID || so.Ref.ResourceVersion != v.ResourceVersion || !sameBody(v, so.Object):
				c.report.add(KindSnapshot, "snapshot at %s holds %s uid=%s rv=%s, want %s", stamp(at), so.Ref, short(so.Ref.UID), so.Ref.ResourceVersion, v)
			}
		}
		for _, v := range want {
			c.report.add(KindSnapshot, "snapshot at %s lacks %s", stamp(at), v)
		}
	}
	return nil
}

// lastVersionsAt returns the index of every object's last version that
// responded at or before at.
func (c *checker) lastVersionsAt(at time.Time) []int {
	var out []int
	for _, idx := range c.perObject {
		last := -1
		for _, i := range idx {
			if !c.versions[i].RespondedAt.After(at) {
				last = i
			}
		}
		if last >= 0 {
			out = append(out, last)
		}
	}
	sort.Ints(out)
	return out
}

func compareState(v Version, state *materialize.ObjectState) string {
	switch {
	case !state.Covered:
		return "not covered"
	case v.Op == OpDelete && state.Exists:
		return fmt.Sprintf("exists (uid=%s rv=%s), but %s", short(state.Record.Resource.UID), state.Record.Resource.ResourceVersion, v)
	case v.Op == OpDelete:
		return ""
	case !state.Exists:
		return fmt.Sprintf("absent, want %s", v)
	case state.Record.Resource.UID != v.UID || state.Record.Resource.ResourceVersion != v.ResourceVersion:
		return fmt.Sprintf("uid=%s rv=%s, want %s", short(state.Record.Resource.UID), state.Record.Resource.ResourceVersion, v)
	case !sameBody(v, state.Object):
		return fmt.Sprintf("body differs from %s", v)
	}
	return ""
}

// checkRandomTimes checks ObjectAt at random times against the last version
// (in write order) that the journal had observed by then, for every
// object of every stream covered at that time.
func (c *checker) checkRandomTimes(ctx context.Context, points []time.Time) error {
	if c.cfg.RandomTimes <= 0 || len(points) == 0 {
		return nil
	}
	var first time.Time
	for _, sj := range c.streams {
		if len(sj.segments) > 0 && (first.IsZero() || sj.segments[0].end.ObservedAt.After(first)) {
			first = sj.segments[0].end.ObservedAt
		}
	}
	last := points[len(points)-1]
	if first.IsZero() || !last.After(first) {
		return nil
	}
	// seen[uid+rv] → version, for the journal records that carry a version.
	deletes := map[string]int{}
	for i, v := range c.versions {
		if v.Op == OpDelete {
			deletes[v.UID] = i
		}
	}
	rnd := rand.New(rand.NewSource(c.cfg.Seed))
	for n := 0; n < c.cfg.RandomTimes; n++ {
		at := first.Add(time.Duration(rnd.Int63n(int64(last.Sub(first)))))
		for _, sj := range c.streams {
			cov, err := storage.CoverageAt(ctx, c.st, sj.id, at)
			if err != nil {
				return fmt.Errorf("coverage: %w", err)
			}
			if !cov.Covered {
				continue
			}
			objects := map[storage.ObjectID]bool{}
			for _, i := range c.perStream[sj] {
				if !c.versions[i].IssuedAt.After(at) {
					objects[c.versions[i].Object] = true
				}
			}
			for obj := range objects {
				want, ok := c.observedBy(sj, obj, at, deletes)
				state, err := c.mat.ObjectAt(ctx, obj, at)
				if err != nil {
					return fmt.Errorf("object at: %w", err)
				}
				c.report.ObjectAtChecks++
				if !ok {
					if state.Exists {
						c.report.add(KindObjectAt, "at %s: %s exists, but the journal had observed no version of it", stamp(at), obj.Name)
					}
					continue
				}
				if want.IssuedAt.After(at) {
					c.report.add(KindObjectAt, "at %s: the journal had observed %s, written later", stamp(at), want)
				}
				if msg := compareState(want, state); msg != "" {
					c.report.add(KindObjectAt, "at %s: %s: %s", stamp(at), obj.Name, msg)
				}
			}
		}
	}
	return nil
}

// observedBy returns the last version of obj, in write order, carried by a
// record of the stream observed at or before at: a watch event, a
// baseline item or an inferred deletion (which stands for the deletion).
func (c *checker) observedBy(sj *streamJournal, obj storage.ObjectID, at time.Time, deletes map[string]int) (Version, bool) {
	best := -1
	idx := c.perObject[obj]
	for _, rec := range sj.byObject[obj] {
		if rec.ObservedAt.After(at) {
			continue
		}
		i := -1
		if rec.WatchType == event.Deleted {
			if d, ok := deletes[rec.Resource.UID]; ok {
				i = d
			}
		} else {
			j := slices.IndexFunc(idx, func(i int) bool {
				v := c.versions[i]
				return v.Op != OpDelete && v.UID == rec.Resource.UID && v.ResourceVersion == rec.Resource.ResourceVersion
			})
			if j >= 0 {
				i = idx[j]
			}
		}
		best = max(best, i)
	}
	if best < 0 {
		return Version{}, false
	}
	return c.versions[best], true
}

// checkGapSnapshots takes snapshots at times inside gaps: each must not be
// Complete and must name the stream.
func (c *checker) checkGapSnapshots(ctx context.Context) error {
	type inside struct {
		sj *streamJournal
		at time.Time
	}
	var times []inside
	for _, sj := range c.streams {
		for k, seg := range sj.segments {
			if seg.loss == nil {
				continue
			}
			from := seg.lossStart()
			times = append(times, inside{sj, from})
			if k+1 < len(sj.segments) {
				if end := sj.segments[k+1].end.ObservedAt; end.After(from) {
					times = append(times, inside{sj, from.Add(end.Sub(from) / 2)})
				}
			}
		}
	}
	rnd := rand.New(rand.NewSource(c.cfg.Seed + 1))
	rnd.Shuffle(len(times), func(i, j int) { times[i], times[j] = times[j], times[i] })
	for _, in := range times[:min(len(times), c.cfg.GapSnapshots)] {
		gr := schema.GroupResource{Group: in.sj.stream.Group, Resource: in.sj.stream.Resource}
		scope := materialize.Scope{ClusterID: c.cfg.ClusterID, Resources: []schema.GroupResource{gr}}
		if in.sj.stream.Namespace != "" {
			scope.Namespaces = []string{in.sj.stream.Namespace}
		}
		snap, err := c.mat.Snapshot(ctx, scope, in.at)
		if err != nil {
			return fmt.Errorf("snapshot: %w", err)
		}
		c.report.SnapshotsInGaps++
		named := slices.ContainsFunc(snap.Missing, func(m materialize.MissingStream) bool { return m.StreamID == in.sj.id })
		if snap.Complete || !named {
			c.report.add(KindSnapshot, "snapshot of %s at %s, inside a gap: Complete=%v, Missing=%v", in.sj.id, stamp(in.at), snap.Complete, snap.Missing)
		}
	}
	return nil
}

// sameBody reports whether a recorded body is the version's. A deletion
// is compared without resourceVersion: the watch carries the deletion's,
// the oracle may know only the deleted state's.
func sameBody(v Version, raw json.RawMessage) bool {
	if bytes.Equal(v.Body, raw) {
		return true
	}
	var want, got map[string]any
	if json.Unmarshal(v.Body, &want) != nil || json.Unmarshal(raw, &got) != nil {
		return false
	}
	if v.Op == OpDelete {
		for _, m := range []map[string]any{want, got} {
			if md, ok := m["metadata"].(map[string]any); ok {
				delete(md, "resourceVersion")
			}
		}
	}
	return reflect.DeepEqual(want, got)
}

func stamp(t time.Time) string { return t.UTC().Format("15:04:05.000000") }
