package truth

// The rules of the seams: snapshots and plans saved by other processes,
// never-flips, time after the evidence, baselines that never ended, and
// audit attribution.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/audit"
	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/replay"
	"github.com/krply/krply/storage"
)

// seams is what Check reads of the journal for the rules of the seams.
type seams struct {
	// saved holds the snapshot and plan records, in journal order.
	saved []event.Record
	// correlations holds the audit correlation records.
	correlations []event.Record
	// changes holds every object change of the cluster's streams by
	// EventID, and unfinished the items (and inferred deletions) of
	// baselines that never ended.
	changes    map[string]event.Record
	unfinished map[string]event.Record
}

// readSeams reads the saved snapshots and plans, the audit correlations,
// and indexes the streams' object changes.
func (c *checker) readSeams(ctx context.Context) error {
	recs, err := allRecords(ctx, c.st, storage.Query{ClusterID: c.cfg.ClusterID,
		Types: []event.RecordType{event.TypeSnapshot, event.TypePlan, event.TypeAuditCorrelation}})
	if err != nil {
		return err
	}
	c.seams.changes, c.seams.unfinished = map[string]event.Record{}, map[string]event.Record{}
	for _, rec := range recs {
		if rec.Type == event.TypeAuditCorrelation {
			c.seams.correlations = append(c.seams.correlations, rec)
		} else {
			c.seams.saved = append(c.seams.saved, rec)
		}
	}
	for _, sj := range c.streams {
		ended := map[string]bool{}
		for _, seg := range sj.segments {
			ended[seg.end.BaselineID] = true
		}
		for _, rec := range sj.recs {
			if !rec.IsObjectChange() {
				continue
			}
			c.seams.changes[rec.EventID] = rec
			id := rec.BaselineID
			if rec.Inferred != nil {
				id = rec.Inferred.BaselineID
			}
			if rec.Synthetic && id != "" && !ended[id] {
				c.seams.unfinished[rec.EventID] = rec
			}
		}
	}
	c.report.UnfinishedItems = len(c.seams.unfinished)
	return nil
}

// visible reports an answer that shows an item of a baseline that never
// ended.
func (c *checker) visible(rec event.Record, where string) {
	if _, ok := c.seams.unfinished[rec.EventID]; ok {
		c.report.add(KindUnfinishedVisible, "%s shows %s %s uid=%s rv=%s, an item of baseline %s, which never ended", where,
			rec.WatchType, rec.Resource.ObjectKey(), short(rec.Resource.UID), rec.Resource.ResourceVersion, rec.BaselineID)
	}
}

// checkHistories reads the history of every object the journal records
// and checks that it shows no item of a baseline that never ended, and no
// baseline item twice in one stream without a loss of continuity between
// the two (a list repeated over one that was not trusted). It also asks
// for the unfinished items the way other queries do.
func (c *checker) checkHistories(ctx context.Context) error {
	objects := map[storage.ObjectID]bool{}
	for _, rec := range c.seams.changes {
		objects[storage.ObjectIDOf(rec)] = true
	}
	losses := map[string][]int64{} // stream → IngestSeqs of its losses of continuity
	for _, sj := range c.streams {
		for _, rec := range sj.recs {
			if _, ok := storage.LossStart(rec); ok {
				losses[sj.id] = append(losses[sj.id], rec.IngestSeq)
			}
		}
	}
	ids := make([]storage.ObjectID, 0, len(objects))
	for obj := range objects {
		ids = append(ids, obj)
	}
	sort.Slice(ids, func(i, j int) bool { return objectKey(ids[i]) < objectKey(ids[j]) })
	for _, obj := range ids {
		hist, err := c.st.ObjectHistory(ctx, obj, storage.HistoryQuery{WithoutBodies: true})
		if err != nil {
			return fmt.Errorf("history of %s: %w", obj.Name, err)
		}
		type key struct{ stream, uid, rv string }
		lastItem := map[key]int64{}
		for _, rec := range hist {
			c.visible(rec, "the history of "+obj.Name)
			if !rec.Synthetic || rec.Inferred != nil || rec.WatchType == event.Deleted {
				continue
			}
			k := key{rec.StreamID, rec.Resource.UID, rec.Resource.ResourceVersion}
			if prev, ok := lastItem[k]; ok && !slices.ContainsFunc(losses[rec.StreamID], func(seq int64) bool { return seq > prev && seq < rec.IngestSeq }) {
				c.report.add(KindHistoryDuplicate, "%s: the history of %s shows uid=%s rv=%s as a baseline item twice (baselines %s), with no loss of continuity in between",
					rec.StreamID, obj.Name, short(rec.Resource.UID), rec.Resource.ResourceVersion, rec.BaselineID)
			}
			lastItem[k] = rec.IngestSeq
		}
	}
	// The other object queries, asked about each unfinished item.
	items := make([]event.Record, 0, len(c.seams.unfinished))
	for _, rec := range c.seams.unfinished {
		items = append(items, rec)
	}
	sort.Slice(items, func(i, j int) bool { return items[i].IngestSeq < items[j].IngestSeq })
	type streamAt struct {
		stream string
		at     time.Time
	}
	alive := map[streamAt]map[string]event.Record{} // the objects alive in a stream at a time, by EventID
	for _, item := range items {
		obj := storage.ObjectIDOf(item)
		if rec, err := c.st.LatestAt(ctx, obj, item.ObservedAt); err == nil {
			c.visible(rec, fmt.Sprintf("LatestAt(%s, %s)", obj.Name, stamp(item.ObservedAt)))
		} else if !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("latest of %s: %w", obj.Name, err)
		}
		if rec, err := c.st.EventByResourceVersion(ctx, obj, item.Resource.UID, item.Resource.ResourceVersion); err == nil {
			c.visible(rec, fmt.Sprintf("EventByResourceVersion(%s, rv=%s)", obj.Name, item.Resource.ResourceVersion))
		} else if !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("event of %s rv=%s: %w", obj.Name, item.Resource.ResourceVersion, err)
		}
		k := streamAt{item.StreamID, item.ObservedAt}
		if alive[k] == nil {
			recs, err := c.st.AliveAt(ctx, storage.AliveQuery{At: item.ObservedAt, StreamID: item.StreamID, WithoutBodies: true})
			if err != nil {
				return fmt.Errorf("alive in %s: %w", item.StreamID, err)
			}
			alive[k] = map[string]event.Record{}
			for _, rec := range recs {
				alive[k][rec.EventID] = rec
			}
		}
		if rec, ok := alive[k][item.EventID]; ok {
			c.visible(rec, fmt.Sprintf("AliveAt(%s, %s)", item.StreamID, stamp(item.ObservedAt)))
		}
	}
	return nil
}

func objectKey(o storage.ObjectID) string {
	return strings.Join([]string{o.Group, o.Resource, o.Namespace, o.Name}, "/")
}

// snapshotKey names an object version of a snapshot.
func snapshotKey(ref event.ResourceRef) string {
	return strings.Join([]string{ref.Group, ref.Resource, ref.Namespace, ref.Name, ref.UID, ref.ResourceVersion}, "/")
}

// savedSnapshot is a snapshot or a plan found saved in the journal.
type savedSnapshot struct {
	rec   event.Record
	what  string
	scope materialize.Scope
	at    time.Time
	made  time.Time // when it was computed
	// complete is what it said; objects the versions it holds (all of
	// them for a snapshot, a plan's sources for a plan).
	complete bool
	objects  []string
	all      bool
}

// savedSnapshots decodes the saved snapshots and plans.
func (c *checker) savedSnapshots(ctx context.Context, planner *replay.Planner) ([]savedSnapshot, error) {
	var out []savedSnapshot
	for _, rec := range c.seams.saved {
		switch rec.Type {
		case event.TypeSnapshot:
			var snap materialize.Snapshot
			if err := json.Unmarshal(rec.Object, &snap); err != nil {
				return nil, fmt.Errorf("snapshot %s: %w", rec.EventID, err)
			}
			c.report.SavedSnapshots++
			s := savedSnapshot{rec: rec, what: fmt.Sprintf("snapshot %s (%q)", snap.ID, snap.Name), scope: snap.Scope, at: snap.At,
				made: snap.CreatedAt, complete: snap.Complete, all: true}
			for _, so := range snap.Objects {
				s.objects = append(s.objects, snapshotKey(so.Ref))
			}
			out = append(out, s)
		case event.TypePlan:
			plan, err := planner.LoadPlan(ctx, rec.EventID)
			if errors.Is(err, replay.ErrNotFound) {
				continue // a dry-run or apply record
			}
			if err != nil {
				return nil, err
			}
			c.report.SavedPlans++
			s := savedSnapshot{rec: rec, what: "replay plan " + plan.ID, at: plan.Source.At, made: plan.CreatedAt, complete: plan.Coverage.Complete,
				scope: materialize.Scope{ClusterID: plan.Source.ClusterID, Namespaces: plan.Source.Namespaces}}
			for _, o := range plan.Objects {
				if !o.Synthesized {
					s.objects = append(s.objects, snapshotKey(o.Source))
					c.visible(event.Record{EventID: o.SourceEventID, WatchType: event.Added, Resource: o.Source}, s.what)
				}
			}
			out = append(out, s)
		}
	}
	return out, nil
}

// checkSaved checks the journal against what the processes reported
// saving, and every saved Complete snapshot or plan against the rules of
// never-flips and of time after the evidence.
func (c *checker) checkSaved(ctx context.Context) error {
	planner, err := replay.NewPlanner(c.st)
	if err != nil {
		return err
	}
	saved, err := c.savedSnapshots(ctx, planner)
	if err != nil {
		return err
	}
	if c.cfg.Saved != nil {
		reported := map[string]bool{}
		for _, s := range c.cfg.Saved {
			c.report.SavedChecked++
			reported[s.ID] = true
			if err := c.checkReported(ctx, planner, s); err != nil {
				return err
			}
		}
		for _, s := range saved {
			if !reported[s.rec.EventID] {
				c.report.add(KindSaved, "the journal holds %s, which no process saved (a read that wrote?)", s.what)
			}
		}
	}
	for _, s := range saved {
		if !s.complete {
			continue
		}
		c.report.SavedComplete++
		c.checkEvidence(s)
		if err := c.checkFlip(ctx, s); err != nil {
			return err
		}
	}
	return nil
}

// checkReported checks one Saved report against the journal.
func (c *checker) checkReported(ctx context.Context, planner *replay.Planner, s Saved) error {
	rec, err := c.st.Get(ctx, s.ID)
	switch {
	case s.Preview && errors.Is(err, storage.ErrNotFound):
		return nil
	case s.Preview && err == nil:
		c.report.add(KindSaved, "%s previewed plan %s without saving it, but the journal holds it (a %s record)", s.By, s.ID, rec.Type)
		return nil
	case errors.Is(err, storage.ErrNotFound):
		c.report.add(KindSaved, "%s saved %s %s (at %s), which the journal lacks", s.By, s.Kind, s.ID, stamp(s.At))
		return nil
	case err != nil:
		return fmt.Errorf("saved %s %s: %w", s.Kind, s.ID, err)
	}
	switch s.Kind {
	case SavedSnapshot:
		var snap materialize.Snapshot
		if rec.Type != event.TypeSnapshot || json.Unmarshal(rec.Object, &snap) != nil {
			c.report.add(KindSaved, "%s saved snapshot %s, but the journal's record %s is a %s", s.By, s.ID, s.ID, rec.Type)
			return nil
		}
		if !snap.At.Equal(s.At) || snap.Complete != s.Complete || len(snap.Objects) != s.Objects {
			c.report.add(KindSaved, "%s saved snapshot %s at %s, Complete=%v, %d objects; the journal holds it at %s, Complete=%v, %d objects",
				s.By, s.ID, stamp(s.At), s.Complete, s.Objects, stamp(snap.At), snap.Complete, len(snap.Objects))
		}
	case SavedPlan:
		plan, err := planner.LoadPlan(ctx, s.ID)
		if err != nil {
			c.report.add(KindSaved, "%s saved plan %s, which does not load: %v", s.By, s.ID, err)
			return nil
		}
		if plan.Hash != s.Hash || !plan.Source.At.Equal(s.At) || plan.Coverage.Complete != s.Complete || len(plan.Objects) != s.Objects {
			c.report.add(KindSaved, "%s saved plan %s (hash %s, at %s, Complete=%v, %d objects); the journal holds hash %s, at %s, Complete=%v, %d objects",
				s.By, s.ID, s.Hash, stamp(s.At), s.Complete, s.Objects, plan.Hash, stamp(plan.Source.At), plan.Coverage.Complete, len(plan.Objects))
		}
	default:
		return fmt.Errorf("saved %s: unknown kind %q", s.ID, s.Kind)
	}
	return nil
}

// inScope reports whether a stream contributes to a scope.
func inScope(st event.Stream, scope materialize.Scope) bool {
	if st.ClusterID != scope.ClusterID || st.Selector != "" {
		return false
	}
	if len(scope.Namespaces) > 0 && !slices.Contains(scope.Namespaces, st.Namespace) {
		return false
	}
	return len(scope.Resources) == 0 || slices.Contains(scope.Resources, schema.GroupResource{Group: st.Group, Resource: st.Resource})
}

// checkEvidence: when a Complete snapshot (or plan) was made, every stream
// of its scope had durable evidence of continuity after its time. A
// record visible to the snapshot was observed before it was made, so
// evidence observed after that cannot have vouched for it.
func (c *checker) checkEvidence(s savedSnapshot) {
	for _, sj := range c.streams {
		if !inScope(sj.stream, s.scope) {
			continue
		}
		var last time.Time
		for _, rec := range sj.recs {
			if _, ok := storage.ProgressRV(rec); ok && !rec.ObservedAt.After(s.made) && rec.ObservedAt.After(last) {
				last = rec.ObservedAt
			}
		}
		if !last.After(s.at) {
			c.report.add(KindPastEvidence, "%s says Complete at %s (made %s), but the evidence of %s then reached only to %s: not yet observed",
				s.what, stamp(s.at), stamp(s.made), sj.id, stamp(last))
		}
	}
}

// checkFlip computes a Complete snapshot (or a plan's) again: it must still
// be Complete and hold the same versions.
func (c *checker) checkFlip(ctx context.Context, s savedSnapshot) error {
	now, err := c.mat.Snapshot(ctx, s.scope, s.at)
	if err != nil {
		return fmt.Errorf("%s again: %w", s.what, err)
	}
	if !now.Complete {
		c.report.add(KindFlip, "%s said Complete at %s (made %s); computed again it is not: %v", s.what, stamp(s.at), stamp(s.made), now.Missing)
		return nil
	}
	have := map[string]bool{}
	for _, so := range now.Objects {
		have[snapshotKey(so.Ref)] = true
		c.visible(event.Record{EventID: so.EventID, WatchType: event.Added, Resource: so.Ref}, "a snapshot at "+stamp(s.at))
	}
	for _, k := range s.objects {
		if !have[k] {
			c.report.add(KindFlip, "%s held %s at %s; computed again it does not", s.what, k, stamp(s.at))
		}
		delete(have, k)
	}
	if s.all {
		for k := range have {
			c.report.add(KindFlip, "%s did not hold %s at %s; computed again it does", s.what, k, stamp(s.at))
		}
	}
	return nil
}

// checkAnswers asks again every ObjectAt answer a process got covered
// while the journal was recorded: it must still be covered, with the
// same version (or the same absence). A time asked as "now" is where a
// change appended between an answer's reads would show.
func (c *checker) checkAnswers(ctx context.Context) error {
	for _, a := range c.cfg.Answers {
		if !a.Covered {
			continue
		}
		c.report.AnswersCovered++
		st, err := c.mat.ObjectAt(ctx, a.Object, a.At)
		if err != nil {
			return fmt.Errorf("%s at %s again: %w", objectKey(a.Object), stamp(a.At), err)
		}
		again := answerOf(a.By, a.Object, a.At, st)
		switch {
		case !again.Covered:
			c.report.add(KindAnswerFlip, "%s was answered %s at %s, covered; asked again it is not covered: %v",
				a.By, a.describe(), stamp(a.At), st.Coverage)
		case again.Exists != a.Exists || again.ResourceVersion != a.ResourceVersion:
			c.report.add(KindAnswerFlip, "%s was answered %s at %s, covered; asked again it is %s",
				a.By, a.describe(), stamp(a.At), again.describe())
		}
	}
	return nil
}

// describe names what an ObjectAt answer said of its object.
func (a Answer) describe() string {
	if !a.Exists {
		return objectKey(a.Object) + " absent"
	}
	return objectKey(a.Object) + " at resourceVersion " + a.ResourceVersion
}

// isExact reports whether a correlation claims to be exact.
func isExact(a *event.AuditCorrelation) bool {
	return a.Confidence >= audit.ConfidenceExact || a.Rule == audit.RuleExactResourceVersion || a.Rule == audit.RuleExactUIDDeletion
}

// checkAudit checks every audit correlation against the oracle, and, when
// the whole audit log was ingested, that every recorded version is linked
// exactly to its watch event.
func (c *checker) checkAudit() {
	byAuditID := map[string]int{}
	for i, v := range c.versions {
		if v.AuditID != "" {
			byAuditID[v.AuditID] = i
		}
	}
	perAudit := map[string][]event.Record{}
	exactTargets := map[string][]string{} // target EventID → audit IDs linked exactly
	for _, rec := range c.seams.correlations {
		a := rec.Audit
		if a == nil {
			continue
		}
		c.report.Correlations++
		target, known := c.seams.changes[a.TargetEventID]
		i, ours := byAuditID[a.AuditID]
		switch {
		case !known && !ours:
			continue // about something the workload did not write or the streams do not record
		case !known:
			c.report.add(KindAuditWrong, "audit event %s (%s) is linked to %s, which is no object change of the journal", a.AuditID, c.versions[i], a.TargetEventID)
			continue
		case !ours:
			c.report.add(KindAuditWrong, "audit event %s (%s by %s) is linked to %s %s rv=%s, but no write of the workload had that audit ID",
				a.AuditID, a.Verb, a.User, target.WatchType, target.Resource.ObjectKey(), target.Resource.ResourceVersion)
			continue
		}
		perAudit[a.AuditID] = append(perAudit[a.AuditID], rec)
		v := c.versions[i]
		c.visible(target, "the audit match of "+v.String())
		right := storage.ObjectIDOf(target) == v.Object && target.Resource.UID == v.UID &&
			(target.WatchType == event.Deleted) == (v.Op == OpDelete) &&
			(v.Op == OpDelete || target.Resource.ResourceVersion == v.ResourceVersion)
		if !right {
			c.report.add(KindAuditWrong, "%s (audit %s) is linked to %s %s uid=%s rv=%s, another version", v, a.AuditID,
				target.WatchType, target.Resource.ObjectKey(), short(target.Resource.UID), target.Resource.ResourceVersion)
		}
		if a.User != v.User {
			c.report.add(KindAuditWrong, "%s is attributed to %q, but %q wrote it (audit %s)", v, a.User, v.User, a.AuditID)
		}
		switch {
		case target.Synthetic && isExact(a):
			what := "baseline item"
			if target.Inferred != nil {
				what = "inferred deletion"
			}
			c.report.add(KindAuditSynthetic, "%s is linked exactly (rule %s, confidence %v) to a %s (%s), which is no evidence of the write",
				v, a.Rule, a.Confidence, what, target.EventID)
		case isExact(a):
			exactTargets[target.EventID] = append(exactTargets[target.EventID], a.AuditID)
		}
	}
	for id, recs := range perAudit {
		if len(recs) > 1 {
			var targets []string
			for _, r := range recs {
				targets = append(targets, fmt.Sprintf("%s (%s, %v)", r.Audit.TargetEventID, r.Audit.Rule, r.Audit.Confidence))
			}
			c.report.add(KindAuditDuplicate, "%s (audit %s) is linked %d times: %s", c.versions[byAuditID[id]], id, len(recs), strings.Join(targets, "; "))
		}
	}
	for target, ids := range exactTargets {
		if len(ids) > 1 {
			c.report.add(KindAuditDuplicate, "%s is linked exactly to %d audit events: %v", target, len(ids), ids)
		}
	}
	for i, v := range c.versions {
		if v.AuditID == "" {
			continue
		}
		recs := perAudit[v.AuditID]
		st := c.state[i]
		switch {
		case len(recs) == 0:
			c.report.Unattributed++
		case slices.ContainsFunc(recs, func(r event.Record) bool { return !c.seams.changes[r.Audit.TargetEventID].Synthetic }):
			c.report.Attributed++
		default:
			c.report.ThroughRelist++
		}
		if !c.cfg.AuditIngested || len(st.recorded) != 1 {
			continue
		}
		real := st.recorded[0].EventID
		if !slices.ContainsFunc(recs, func(r event.Record) bool { return r.Audit.TargetEventID == real && isExact(r.Audit) }) {
			c.report.add(KindAuditMissing, "%s, recorded as %s, is not linked exactly to its audit event %s (%d links)", v, real, v.AuditID, len(recs))
		}
	}
}
