package materialize

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// streamState is one contributing stream and its coverage at a time.
type streamState struct {
	status storage.StreamStatus
	cov    storage.Coverage
}

// scopeState is the state of a scope at a time.
type scopeState struct {
	at       time.Time
	streams  []streamState
	missing  []MissingStream
	warnings []string
	// objects are sorted by group, resource, namespace, name.
	objects []stateObject
}

type stateObject struct {
	id  storage.ObjectID
	rec event.Record
}

func (s *scopeState) complete() bool {
	if len(s.streams) == 0 || len(s.missing) > 0 {
		return false
	}
	for _, st := range s.streams {
		if !st.cov.Covered {
			return false
		}
	}
	return true
}

func (s *scopeState) watermarks() []Watermark {
	out := make([]Watermark, len(s.streams))
	for i, st := range s.streams {
		out[i] = Watermark{StreamID: st.status.StreamID, ResourceVersion: st.cov.Watermark, ObservedAt: st.cov.WatermarkAt, Covered: st.cov.Covered}
	}
	return out
}

func validateScope(scope Scope) error {
	if scope.ClusterID == "" {
		return fmt.Errorf("materialize: %w: scope without cluster ID", ErrInvalidArgument)
	}
	return nil
}

// contributingStreams returns the streams of the scope's cluster whose
// resource is in scope and whose namespace is "" or in scope, ordered by
// ID, and the requested parts of the scope no stream records.
func (m *Materializer) contributingStreams(ctx context.Context, scope Scope) ([]storage.StreamStatus, []MissingStream, error) {
	all, err := m.store.Streams(ctx, scope.ClusterID)
	if err != nil {
		return nil, nil, fmt.Errorf("streams of cluster %q: %w", scope.ClusterID, err)
	}
	var out []storage.StreamStatus
	for _, st := range all {
		gr := schema.GroupResource{Group: st.Stream.Group, Resource: st.Stream.Resource}
		if len(scope.Resources) > 0 && !slices.Contains(scope.Resources, gr) {
			continue
		}
		if st.Stream.Namespace != "" && len(scope.Namespaces) > 0 && !slices.Contains(scope.Namespaces, st.Stream.Namespace) {
			continue
		}
		out = append(out, st)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StreamID < out[j].StreamID })

	var missing []MissingStream
	recorded := func(gr *schema.GroupResource, ns string) bool {
		for _, st := range out {
			if gr != nil && (st.Stream.Group != gr.Group || st.Stream.Resource != gr.Resource) {
				continue
			}
			if ns == "" || st.Stream.Namespace == "" || st.Stream.Namespace == ns {
				return true
			}
		}
		return false
	}
	for _, gr := range scope.Resources {
		if !recorded(&gr, "") {
			missing = append(missing, MissingStream{Resource: gr, Reason: fmt.Sprintf("no stream records %s in cluster %q", gr, scope.ClusterID)})
			continue
		}
		for _, ns := range scope.Namespaces {
			if !recorded(&gr, ns) {
				missing = append(missing, MissingStream{Resource: gr, Namespace: ns, Reason: fmt.Sprintf("no stream records %s in namespace %q", gr, ns)})
			}
		}
	}
	if len(scope.Resources) == 0 {
		for _, ns := range scope.Namespaces {
			if !recorded(nil, ns) {
				missing = append(missing, MissingStream{Namespace: ns, Reason: fmt.Sprintf("no stream records namespace %q", ns)})
			}
		}
		if len(out) == 0 {
			missing = append(missing, MissingStream{Reason: fmt.Sprintf("no stream records cluster %q", scope.ClusterID)})
		}
	}
	return out, append(missing, ruleMissing(out)...), nil
}

// claims reports whether a stream would record obj if it were covered: its
// resource matches, it has no selector, and its namespace is "" or obj's.
func claims(st event.Stream, obj storage.ObjectID) bool {
	return st.Selector == "" && holdsResource(st, obj)
}

// inScope reports whether an object's namespace is in scope.
func inScope(scope Scope, namespace string) bool {
	return len(scope.Namespaces) == 0 || slices.Contains(scope.Namespaces, namespace)
}

// stateAt computes the objects of scope alive at at.
//
// Each contributing stream answers for itself (storage.AliveAt by stream).
// An object reported alive only by streams that are not covered at at is
// dropped when a covered stream that claims it does not report it: that
// stream saw it deleted, or its complete baseline did not list it. When
// several streams report an object alive, a covered stream's version wins,
// then the newest.
func (m *Materializer) stateAt(ctx context.Context, scope Scope, at time.Time, withBodies bool) (*scopeState, error) {
	if err := validateScope(scope); err != nil {
		return nil, err
	}
	streams, missing, err := m.contributingStreams(ctx, scope)
	if err != nil {
		return nil, err
	}
	s := &scopeState{at: at, missing: missing}

	type candidate struct {
		rec     event.Record
		covered bool
	}
	cands := make(map[storage.ObjectID]candidate)
	var single []stateObject // the objects when one stream contributes
	var coveredStreams []event.Stream
	for _, st := range streams {
		tl, err := storage.StreamTimeline(ctx, m.store, st.StreamID)
		if err != nil {
			return nil, fmt.Errorf("coverage of %s: %w", st.StreamID, err)
		}
		// st was read (Streams) before tl: its CheckpointAt is evidence
		// that a gap appended since cannot undercut (CoverageFrom).
		cov, err := storage.CoverageFrom(ctx, m.store, tl, st.CheckpointAt, at)
		if err != nil {
			return nil, err
		}
		s.streams = append(s.streams, streamState{status: st, cov: cov})
		if !cov.Covered {
			s.missing = append(s.missing, MissingStream{StreamID: st.StreamID, Reason: cov.Reason,
				Resource: schema.GroupResource{Group: st.Stream.Group, Resource: st.Stream.Resource}, Namespace: st.Stream.Namespace})
		} else {
			coveredStreams = append(coveredStreams, st.Stream)
		}
		recs, err := m.aliveInStream(ctx, scope, st, at, withBodies)
		if err != nil {
			return nil, err
		}
		var pending map[storage.ObjectID]bool
		if cov.Covered {
			pending, err = m.pendingInferredDeletions(ctx, tl, cov, at)
			if err != nil {
				return nil, err
			}
		}
		if len(streams) == 1 {
			single = make([]stateObject, 0, len(recs))
			for _, rec := range recs {
				if id := storage.ObjectIDOf(rec); inScope(scope, id.Namespace) && !pending[id] {
					single = append(single, stateObject{id: id, rec: rec})
				}
			}
			continue
		}
		for _, rec := range recs {
			id := storage.ObjectIDOf(rec)
			if !inScope(scope, id.Namespace) || pending[id] {
				continue
			}
			c := candidate{rec: rec, covered: cov.Covered}
			old, seen := cands[id]
			if !seen || better(c.covered, c.rec, old.covered, old.rec) {
				cands[id] = c
			}
		}
	}

	s.objects = make([]stateObject, 0, len(cands))
	if single != nil {
		// One stream answered: its records are the objects, no version
		// competes and no other stream can say one is gone.
		s.objects = single
		if !slices.IsSortedFunc(s.objects, compareStateObjects) {
			slices.SortFunc(s.objects, compareStateObjects)
		}
		cands = nil
	}
	for id, c := range cands {
		if !c.covered && slices.ContainsFunc(coveredStreams, func(st event.Stream) bool { return claims(st, id) }) {
			// A covered stream that would have recorded it says it is gone.
			continue
		}
		s.objects = append(s.objects, stateObject{id: id, rec: c.rec})
	}
	if single == nil {
		slices.SortFunc(s.objects, compareStateObjects)
	}
	if now := m.clock.Now(); at.After(now) {
		s.warnings = append(s.warnings, fmt.Sprintf("time %s is after now (%s): later changes are not known yet", at.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339)))
	}
	return s, nil
}

// better reports whether version a should be preferred over version b.
func better(aCovered bool, a event.Record, bCovered bool, b event.Record) bool {
	if aCovered != bCovered {
		return aCovered
	}
	if !a.ObservedAt.Equal(b.ObservedAt) {
		return a.ObservedAt.After(b.ObservedAt)
	}
	return a.IngestSeq > b.IngestSeq
}

func compareStateObjects(a, b stateObject) int {
	switch {
	case lessObjectID(a.id, b.id):
		return -1
	case lessObjectID(b.id, a.id):
		return 1
	}
	return 0
}

func lessObjectID(a, b storage.ObjectID) bool {
	if a.Group != b.Group {
		return a.Group < b.Group
	}
	if a.Resource != b.Resource {
		return a.Resource < b.Resource
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.ClusterID < b.ClusterID
}

// aliveInStream returns the objects one stream reports alive at at,
// restricted to the scope's namespaces where the stream spans them all.
func (m *Materializer) aliveInStream(ctx context.Context, scope Scope, st storage.StreamStatus, at time.Time, withBodies bool) ([]event.Record, error) {
	q := storage.AliveQuery{At: at, StreamID: st.StreamID, ClusterID: st.Stream.ClusterID,
		Group: st.Stream.Group, Resource: st.Stream.Resource, WithoutBodies: !withBodies}
	if st.Stream.Namespace != "" || len(scope.Namespaces) == 0 {
		q.Namespace = st.Stream.Namespace
		recs, err := m.store.AliveAt(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("objects alive in %s at %s: %w", st.StreamID, at.UTC().Format(time.RFC3339Nano), err)
		}
		return recs, nil
	}
	// One query per namespace, so a namespace of a cluster-wide stream is
	// read without the others.
	var out []event.Record
	for _, ns := range scope.Namespaces {
		q.Namespace = ns
		recs, err := m.store.AliveAt(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("objects alive in %s namespace %q at %s: %w", st.StreamID, ns, at.UTC().Format(time.RFC3339Nano), err)
		}
		for _, rec := range recs {
			if rec.Resource.Namespace == ns {
				out = append(out, rec)
			}
		}
	}
	return out, nil
}

// pendingInferredDeletions returns the objects the baseline coverage rests on
// found absent, whose inferred deletion was written after at: the baseline
// ended at or before at, so the deletion is already known at at. tl is the
// timeline cov was computed from.
func (m *Materializer) pendingInferredDeletions(ctx context.Context, tl storage.Timeline, cov storage.Coverage, at time.Time) (map[storage.ObjectID]bool, error) {
	if cov.BaselineID == "" {
		return nil, nil
	}
	end := tl.BaselineEnd(cov.BaselineID)
	if end == nil {
		return nil, nil
	}
	endSeq := end.IngestSeq
	var out map[storage.ObjectID]bool
	// By sequence, not time: the records right after the end are found
	// through the index without reading the stream's older records. The
	// first page is small: most often the record after the end is a
	// change, which ends the walk, and each record read is a seek.
	q := storage.Query{StreamID: cov.StreamID, Types: []event.RecordType{event.TypeEvent, event.TypeBaseline}, AfterSeq: endSeq, Limit: 2, WithoutBodies: true}
	for {
		page, err := m.store.Records(ctx, q)
		q.Limit = min(q.Limit*8, 256)
		if err != nil {
			return nil, fmt.Errorf("inferred deletions of baseline %s in %s: %w", cov.BaselineID, cov.StreamID, err)
		}
		for _, rec := range page.Records {
			switch {
			case rec.Type == event.TypeBaseline && rec.BaselineID == cov.BaselineID:
				// The baseline's own markers.
			case rec.Type == event.TypeEvent && rec.Synthetic && rec.BaselineID == cov.BaselineID && rec.Inferred == nil:
				// Items of the baseline observed at its end.
			case rec.Inferred != nil && rec.Inferred.BaselineID == cov.BaselineID && rec.WatchType == event.Deleted:
				if rec.ObservedAt.After(at) {
					if out == nil {
						out = make(map[storage.ObjectID]bool)
					}
					out[storage.ObjectIDOf(rec)] = true
				}
			default:
				return out, nil
			}
		}
		if page.Next == "" {
			return out, nil
		}
		q.Cursor = page.Next
	}
}

// claimingTimeline is the timeline of a stream that records an object, with
// how far the stream's evidence reached before the timeline was read.
type claimingTimeline struct {
	storage.Timeline
	evidence time.Time
}

// timelinesClaiming returns the timelines of the streams of obj's cluster
// that record its resource in its namespace (or all namespaces), ordered by
// stream ID, each with its evidence (read first: see storage.CoverageFrom).
func (m *Materializer) timelinesClaiming(ctx context.Context, obj storage.ObjectID) ([]claimingTimeline, error) {
	streams, err := m.store.Streams(ctx, obj.ClusterID)
	if err != nil {
		return nil, fmt.Errorf("streams of cluster %q: %w", obj.ClusterID, err)
	}
	evidence := make(map[string]time.Time, len(streams))
	for _, st := range streams {
		evidence[st.StreamID] = st.CheckpointAt
	}
	all, err := storage.Timelines(ctx, m.store, obj.ClusterID)
	if err != nil {
		return nil, fmt.Errorf("streams of cluster %q: %w", obj.ClusterID, err)
	}
	var out []claimingTimeline
	for _, tl := range all {
		if holdsResource(tl.Stream, obj) {
			out = append(out, claimingTimeline{Timeline: tl, evidence: evidence[tl.StreamID]})
		}
	}
	return out, nil
}

// holdsResource reports whether stream s records obj's resource in obj's
// namespace or in all of them (whatever its selector).
func holdsResource(s event.Stream, obj storage.ObjectID) bool {
	return s.Group == obj.Group && s.Resource == obj.Resource && (s.Namespace == "" || s.Namespace == obj.Namespace)
}

func describeObject(id storage.ObjectID) string {
	gr := id.Resource
	if id.Group != "" {
		gr += "." + id.Group
	}
	if id.Namespace == "" {
		return gr + " " + id.Name
	}
	return strings.Join([]string{gr, " ", id.Namespace, "/", id.Name}, "")
}
