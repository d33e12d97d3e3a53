package why

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
)

// Errors. Check them with errors.Is.
var (
	// ErrNotFound is returned when the journal has no record of the object
	// asked about; the error names what the journal does record.
	ErrNotFound = storage.ErrNotFound
	// ErrOutOfRange is returned when T lies before the journal began or
	// after its evidence; the error names the range it covers.
	ErrOutOfRange = errors.New("why: time outside the journal")
	// ErrInvalidArgument is returned for a query that cannot be used (a
	// negative window, an object without a name); it is krply's one
	// sentinel for this (storage.ErrInvalidArgument).
	ErrInvalidArgument = storage.ErrInvalidArgument
)

// The defaults of a Query.
const (
	DefaultBefore     = time.Hour
	DefaultAfter      = 5 * time.Minute
	DefaultMaxObjects = 300
)

// endOfTime is after every time a journal holds (and one a store can
// encode: nanoseconds since 1970 in an int64).
var endOfTime = time.Unix(0, math.MaxInt64)

// maxCandidates bounds Answer.Candidates.
const maxCandidates = 50

// Explainer answers "what changed before this broke" from a journal.
type Explainer struct {
	store storage.ReadWriter
	m     *materialize.Materializer
}

// New returns an Explainer reading store. It only reads: a journal opened
// read-only serves it.
func New(store storage.ReadWriter) (*Explainer, error) {
	if store == nil {
		return nil, fmt.Errorf("why: %w: store is nil", ErrInvalidArgument)
	}
	m, err := materialize.New(store)
	if err != nil {
		return nil, err
	}
	return &Explainer{store: store, m: m}, nil
}

// Explain returns the causal timeline of q.Object around T: see Answer
// and the package documentation.
func (e *Explainer) Explain(ctx context.Context, q Query) (*Answer, error) {
	q, err := withDefaults(q)
	if err != nil {
		return nil, err
	}
	id := q.Object
	// Evidence first (Streams), then the timelines, then the objects'
	// records: what is appended meanwhile cannot make a covered answer
	// lack a change (storage.CoverageFrom).
	streams, err := e.store.Streams(ctx, id.ClusterID)
	if err != nil {
		return nil, fmt.Errorf("why: streams: %w", err)
	}
	timelines, err := storage.Timelines(ctx, e.store, id.ClusterID)
	if err != nil {
		return nil, fmt.Errorf("why: timelines: %w", err)
	}
	own := streamsOf(streams, id)
	if len(own) == 0 {
		return nil, fmt.Errorf("why: %w: no stream records %s; the journal records %s", ErrNotFound, resourceIn(id), recordedList(streams))
	}
	latest, err := e.store.LatestAt(ctx, id, endOfTime)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("why: %w: the journal has no record of %s; it records %s", ErrNotFound, describe(id), recordedList(streams))
	}
	if err != nil {
		return nil, fmt.Errorf("why: %s: %w", describe(id), err)
	}
	a := &Answer{Object: id, Kind: latest.Resource.Kind}
	bad, all, err := e.firstBad(ctx, id)
	if err != nil {
		return nil, err
	}
	a.Bad = bad
	switch {
	case !q.At.IsZero():
		a.At, a.AtSource = q.At, AtGiven
		if err := inRange(q.At, own); err != nil {
			return nil, err
		}
	case bad != nil:
		a.At, a.AtSource = bad.ObservedAt, AtFirstBad
	default:
		a.At, a.AtSource = all, AtLatestChange
		a.Warnings = append(a.Warnings, fmt.Sprintf("found no bad transition of %s in the journal and no time was given: showing the changes before its latest change", describe(id)))
	}
	a.From, a.To = a.At.Add(-q.Before), a.At.Add(q.After)
	if !q.From.IsZero() {
		if q.From.After(a.At) {
			return nil, fmt.Errorf("why: %w: Query.From %s is after T %s: give a start before T", ErrInvalidArgument, q.From.UTC().Format(time.RFC3339), a.At.UTC().Format(time.RFC3339))
		}
		a.From = q.From
	}

	root := &gnode{Node: Node{ID: id, Kind: a.Kind}}
	w := newWalker(ctx, e.store, streams, id.ClusterID, a.At, q.MaxObjects)
	if err := w.load(root); err != nil {
		return nil, fmt.Errorf("why: %s at T: %w", describe(id), err)
	}
	if !root.Exists {
		a.Warnings = append(a.Warnings, fmt.Sprintf("%s did not exist at %s: its dependencies at T are unknown", describe(id), a.At.UTC().Format(time.RFC3339)))
	}
	if err := w.walk(root); err != nil {
		return nil, fmt.Errorf("why: dependency graph of %s: %w", describe(id), err)
	}
	a.Nodes, a.Edges = w.graph()
	a.Cut = w.cut
	if w.cutMore > 0 {
		a.Cut = append(a.Cut, fmt.Sprintf("and %d more", w.cutMore))
	}
	if len(a.Cut) > 0 {
		a.Warnings = append(a.Warnings, fmt.Sprintf("the dependency graph reached MaxObjects (%d): what it left out is in cut", q.MaxObjects))
	}

	for _, nid := range w.order {
		cs, err := e.changesOf(ctx, w.nodes[nid], a.From, a.To, q.SecretValues)
		if err != nil {
			return nil, fmt.Errorf("why: changes of %s: %w", describe(nid), err)
		}
		a.Changes = append(a.Changes, cs...)
	}
	sort.SliceStable(a.Changes, func(i, j int) bool { return a.Changes[i].ObservedAt.Before(a.Changes[j].ObservedAt) })

	if err := e.addCoverage(ctx, a, w, streams, timelines); err != nil {
		return nil, err
	}
	a.Candidates = rank(a, w)
	return a, nil
}

// withDefaults validates q and fills in its defaults.
func withDefaults(q Query) (Query, error) {
	if q.Object.ClusterID == "" || q.Object.Resource == "" || q.Object.Name == "" {
		return q, fmt.Errorf("why: %w: Query.Object needs a clusterID, a resource and a name (got %+v)", ErrInvalidArgument, q.Object)
	}
	switch {
	case q.Before < 0:
		return q, fmt.Errorf("why: %w: Query.Before is %s: give a positive duration, or 0 for %s", ErrInvalidArgument, q.Before, DefaultBefore)
	case q.After < 0:
		return q, fmt.Errorf("why: %w: Query.After is %s: give a positive duration, or 0 for %s", ErrInvalidArgument, q.After, DefaultAfter)
	case q.Before != 0 && !q.From.IsZero():
		return q, fmt.Errorf("why: %w: Query.Before and Query.From both set: give one of them", ErrInvalidArgument)
	case q.MaxObjects < 0:
		return q, fmt.Errorf("why: %w: Query.MaxObjects is %d: give a positive number, or 0 for %d", ErrInvalidArgument, q.MaxObjects, DefaultMaxObjects)
	}
	if q.Before == 0 {
		q.Before = DefaultBefore
	}
	if q.After == 0 {
		q.After = DefaultAfter
	}
	if q.MaxObjects == 0 {
		q.MaxObjects = DefaultMaxObjects
	}
	return q, nil
}

// inRange checks that at lies within what the object's streams recorded.
func inRange(at time.Time, streams []storage.StreamStatus) error {
	var first, last time.Time
	for _, st := range streams {
		if first.IsZero() || (!st.FirstObservedAt.IsZero() && st.FirstObservedAt.Before(first)) {
			first = st.FirstObservedAt
		}
		if st.CheckpointAt.After(last) {
			last = st.CheckpointAt
		}
	}
	span := fmt.Sprintf("its evidence covers %s to %s", first.UTC().Format(time.RFC3339), last.UTC().Format(time.RFC3339))
	switch {
	case at.Before(first):
		return fmt.Errorf("%w: %s is before the journal began recording the object's resource: %s", ErrOutOfRange, at.UTC().Format(time.RFC3339), span)
	case at.After(last):
		return fmt.Errorf("%w: %s is after the journal's last evidence of the object's resource: %s", ErrOutOfRange, at.UTC().Format(time.RFC3339), span)
	}
	return nil
}

// firstBad returns the object's first bad transition in the journal and
// the time of its latest version.
func (e *Explainer) firstBad(ctx context.Context, id storage.ObjectID) (*Transition, time.Time, error) {
	h, err := e.m.History(ctx, id)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("why: history of %s: %w", describe(id), err)
	}
	var prev map[string]any
	var latest time.Time
	var bad *Transition
	for _, entry := range h.Entries {
		v := entry.Version
		if v == nil {
			continue
		}
		latest = v.ObservedAt
		var cur map[string]any
		if v.WatchType != event.Deleted {
			cur, _ = decode(v.Object)
		}
		if bad == nil && v.Origin == materialize.OriginWatch {
			for _, t := range transitions(id, v.ObservedAt, prev, cur) {
				if t.Bad {
					bad = &t
					break
				}
			}
		}
		prev = cur
	}
	return bad, latest, nil
}

// addCoverage fills in the coverage of every stream the answer read, the
// Events and the answer's completeness.
func (e *Explainer) addCoverage(ctx context.Context, a *Answer, w *walker, streams []storage.StreamStatus, timelines []storage.Timeline) error {
	byID := make(map[string]storage.Timeline, len(timelines))
	for _, tl := range timelines {
		byID[tl.StreamID] = tl
	}
	read := map[string]storage.StreamStatus{}
	namespaces := map[string]bool{}
	for _, nid := range w.order {
		for _, st := range streamsOf(streams, nid) {
			read[st.StreamID] = st
		}
		if nid.Namespace != "" {
			namespaces[nid.Namespace] = true
		} else {
			namespaces["default"] = true // Events about cluster-scoped objects
		}
	}
	evStreams := eventStreams(streams, namespaces)
	for _, st := range evStreams {
		read[st.StreamID] = st
	}
	a.EventsRecorded = len(eventStreams(streams, map[string]bool{a.Object.Namespace: true})) > 0
	ids := make([]string, 0, len(read))
	for sid := range read {
		ids = append(ids, sid)
	}
	sort.Strings(ids)
	a.Complete = true
	for _, sid := range ids {
		sc, err := coverageOf(ctx, e.store, read[sid], byID[sid], a.From, a.At, a.To)
		if err != nil {
			return fmt.Errorf("why: coverage of %s: %w", sid, err)
		}
		if !sc.Covered {
			a.Complete = false
		}
		a.Coverage = append(a.Coverage, sc)
	}
	for r := range w.notRecorded {
		a.NotRecorded = append(a.NotRecorded, r)
	}
	sort.Strings(a.NotRecorded)
	if len(a.NotRecorded) > 0 {
		a.Complete = false
		a.Warnings = append(a.Warnings, fmt.Sprintf("the journal does not record %s: dependencies of those kinds cannot be seen", strings.Join(a.NotRecorded, ", ")))
	}
	if !a.EventsRecorded {
		a.Complete = false
		a.Warnings = append(a.Warnings, fmt.Sprintf("Events were not recorded in namespace %q", a.Object.Namespace))
		return nil
	}
	evs, err := e.events(ctx, evStreams, namespaces, w.nodes, a.Object.ClusterID, a.From, a.To)
	if err != nil {
		return fmt.Errorf("why: events: %w", err)
	}
	a.Events = evs
	return nil
}

// resourceIn says which resource in which namespace.
func resourceIn(id storage.ObjectID) string {
	r := resourceName(id.Group, id.Resource)
	if id.Namespace == "" {
		return r
	}
	return r + " in namespace " + id.Namespace
}

// recordedList names the resources the journal records, and where.
func recordedList(streams []storage.StreamStatus) string {
	where := map[string][]string{}
	for _, st := range streams {
		r := resourceName(st.Stream.Group, st.Stream.Resource)
		ns := st.Stream.Namespace
		if ns == "" {
			ns = "all namespaces"
		}
		where[r] = append(where[r], ns)
	}
	if len(where) == 0 {
		return "nothing for this cluster"
	}
	names := make([]string, 0, len(where))
	for r := range where {
		names = append(names, r)
	}
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, r := range names {
		parts = append(parts, fmt.Sprintf("%s (%s)", r, strings.Join(where[r], ", ")))
	}
	return strings.Join(parts, "; ")
}
