package materialize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// ObjectChangeType says how an object differs between two times.
type ObjectChangeType string

// The kinds of object difference.
const (
	ObjectAdded   ObjectChangeType = "added"
	ObjectRemoved ObjectChangeType = "removed"
	ObjectChanged ObjectChangeType = "changed"
	// ObjectUnknown: the journal does not know the object's state at one
	// end of the window (UnknownAt, Reason), so it cannot say whether the
	// object was added, removed or changed.
	ObjectUnknown ObjectChangeType = "unknown"
)

// DiffEnd names an end of a diff's window.
type DiffEnd string

// The ends of a diff's window.
const (
	DiffFrom DiffEnd = "from"
	DiffTo   DiffEnd = "to"
	DiffBoth DiffEnd = "both"
)

// ObjectDiff is how one object differs between two times.
type ObjectDiff struct {
	ID   storage.ObjectID `json:"id"`
	Type ObjectChangeType `json:"type"`
	// Kind is the object's kind, for display.
	Kind string `json:"kind,omitempty"`
	// Before and After are the object's versions at the two times; Before
	// is nil for an added object and After for a removed one. For an
	// unknown object, the version at an end whose state is unknown is the
	// last one the journal recorded before it lost track (it may be
	// stale), or nil.
	Before *SnapshotObject `json:"before,omitempty"`
	After  *SnapshotObject `json:"after,omitempty"`
	// Changes are the field changes of a changed object, sorted by path.
	Changes []FieldChange `json:"changes,omitempty"`
	// Recreated is true when the object was deleted and created again in
	// between (its UID changed); Changes are still computed.
	Recreated bool `json:"recreated,omitempty"`
	// UnknownAt says, for an unknown object, at which end of the window
	// its state is unknown, and Reason why: no stream that records it was
	// covered there (before the stream's first complete baseline, inside
	// a gap, while it was unavailable).
	UnknownAt DiffEnd `json:"unknownAt,omitempty"`
	Reason    string  `json:"reason,omitempty"`
}

// Diff is what changed in a scope between two times: the state at From
// against the state at To. Objects created and deleted in between do not
// appear; History shows them. An object whose state the journal does not
// know at one end (its streams were not covered there) is ObjectUnknown,
// never added, removed or changed.
type Diff struct {
	Scope Scope     `json:"scope"`
	From  time.Time `json:"from"`
	To    time.Time `json:"to"`
	// Objects are the objects that differ or whose state is unknown at an
	// end, sorted by group, resource, namespace and name.
	Objects []ObjectDiff `json:"objects,omitempty"`
	// HasGaps is true when the journal may miss changes of the scope
	// between From and To: a contributing stream is not covered at either
	// end, a gap or loss of availability intersects [From, To], or a
	// requested part of the scope is not recorded at all.
	HasGaps bool `json:"hasGaps"`
	// Gaps are the gap and coverage-change records intersecting [From, To].
	Gaps []event.Record `json:"gaps,omitempty"`
	// Missing lists what is not covered at From or To.
	Missing []MissingStream `json:"missing,omitempty"`
	// Warnings are human-readable notes about the answer.
	Warnings []string `json:"warnings,omitempty"`
	// Next is set on a page of a diff (DiffPage) when more objects may
	// follow: the last object of the page, to give as the next Page's
	// After. It is no part of the JSON: the query API carries it in its
	// cursor.
	Next *storage.ObjectID `json:"-"`

	// compare is how the diff compared bodies; the renderers use it.
	compare compareConfig
}

// Diff compares the state of scope at from with its state at to. Server-
// owned metadata and status are ignored unless options say otherwise (see
// DefaultIgnorePointers, IncludeStatus, WithIgnoreRules,
// WithoutDefaultIgnores); list items with a merge key are matched by it.
func (m *Materializer) Diff(ctx context.Context, scope Scope, from, to time.Time, opts ...CompareOption) (*Diff, error) {
	return m.diff(ctx, scope, from, to, Page{}, opts, false)
}

// DiffPage computes one page of the diff of scope from from to to: what
// Diff answers, with at most page.Limit of its objects, and Next set when
// more may follow. It reads the states at both ends without bodies, and
// the bodies only of the objects it compares or returns, so a large scope
// is compared a page at a time in memory bounded by the page (and by the
// objects' identities). As SnapshotPage's, the pages after the first read
// the states the first read (remembered without bodies), so they agree
// with it; a page whose states were forgotten reads them again.
func (m *Materializer) DiffPage(ctx context.Context, scope Scope, from, to time.Time, page Page, opts ...CompareOption) (*Diff, error) {
	if err := page.validate(); err != nil {
		return nil, err
	}
	return m.diff(ctx, scope, from, to, page, opts, true)
}

// diff is Diff, or DiffPage when page.Limit is set, from remembered
// states when remembered allows it.
func (m *Materializer) diff(ctx context.Context, scope Scope, from, to time.Time, page Page, opts []CompareOption, remembered bool) (*Diff, error) {
	if to.Before(from) {
		return nil, fmt.Errorf("materialize: %w: diff from %s to the earlier %s", ErrInvalidArgument, from, to)
	}
	cc, err := newCompareConfig(opts)
	if err != nil {
		return nil, err
	}
	wrap := func(err error) error {
		return fmt.Errorf("diff of cluster %q from %s to %s: %w", scope.ClusterID,
			from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano), err)
	}
	// The two ends are read at once: each is a statement per stream on
	// a connection of its own.
	withBodies := page.Limit == 0
	state := m.stateAt
	var fromMemory atomic.Bool // a state was remembered
	if !withBodies {
		state = func(ctx context.Context, scope Scope, at time.Time, _ bool) (*scopeState, error) {
			st, mem, err := m.pageState(ctx, scope, at, page, remembered, m.stateAt)
			if mem {
				fromMemory.Store(true)
			}
			return st, err
		}
	}
	// readBodies sets the bodies of b and a, the versions of the merge's
	// pair at i, j (see mergeStep): when it lacks them, it reads those of
	// the next pairs whose versions differ too (prefetch), in one
	// storage.GetMany. When compaction removed one that a remembered
	// state holds, the diff reads its states again (retry).
	var before, after *scopeState
	retry := false
	var bodies map[string][]byte // by EventID, of the pairs prefetched
	readBodies := func(i, j int, b, a *SnapshotObject) error {
		var err error
		for _, o := range []*SnapshotObject{b, a} {
			if o == nil || o.Object != nil {
				continue
			}
			body, ok := bodies[o.EventID]
			if !ok {
				if bodies, err = m.prefetchBodies(ctx, before.objects, after.objects, i, j, page.Limit); err != nil {
					break
				}
				if body, ok = bodies[o.EventID]; !ok {
					err = fmt.Errorf("body of %s %s: %w", o.Ref.Resource, o.Ref.ObjectKey(), storage.ErrNotFound)
					break
				}
			}
			o.Object = body
		}
		if err != nil && fromMemory.Load() && errors.Is(err, storage.ErrNotFound) {
			m.pages.forget(scope, from)
			m.pages.forget(scope, to)
			retry = true
		}
		return err
	}
	var beforeErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		before, beforeErr = state(ctx, scope, from, withBodies)
	}()
	after, err = state(ctx, scope, to, withBodies)
	<-done
	if beforeErr != nil {
		return nil, wrap(beforeErr)
	}
	if err != nil {
		return nil, wrap(err)
	}
	d := &Diff{Scope: scope, From: from, To: to, compare: cc}
	d.Missing = mergeMissing(before.missing, after.missing)
	d.Warnings = append(d.Warnings, after.warnings...)
	d.HasGaps = len(d.Missing) > 0 || len(after.streams) == 0

	// Losses of continuity recorded from From on that start before To.
	for _, st := range after.streams {
		tl, err := storage.StreamTimeline(ctx, m.store, st.status.StreamID)
		if err != nil {
			return nil, wrap(fmt.Errorf("gaps of %s: %w", st.status.StreamID, err))
		}
		for _, rec := range tl.Records {
			if start, ok := storage.LossStart(rec); ok && !rec.ObservedAt.Before(from) && !start.After(to) {
				d.Gaps = append(d.Gaps, rec)
			}
		}
	}
	if len(d.Gaps) > 0 {
		d.HasGaps = true
		d.Warnings = append(d.Warnings, fmt.Sprintf("%d gap(s) or loss(es) of availability intersect the window: changes may be missing", len(d.Gaps)))
	}
	if len(d.Missing) > 0 {
		d.Warnings = append(d.Warnings, fmt.Sprintf("%d part(s) of the scope are not covered at one end of the window", len(d.Missing)))
	}

	fromKnown, toKnown := newKnowledge(before), newKnowledge(after)
	i, j := page.start(before.objects), page.start(after.objects)
	for i < len(before.objects) || j < len(after.objects) {
		if page.Limit > 0 && len(d.Objects) == page.Limit {
			last := d.Objects[len(d.Objects)-1].ID
			d.Next = &last
			now := m.clock.Now()
			m.pages.put(scope, before, now)
			m.pages.put(scope, after, now)
			break
		}
		var b, a *SnapshotObject
		i0, j0 := i, j
		id, bi, aj, ni, nj := mergeStep(before.objects, after.objects, i, j)
		if bi >= 0 {
			b = ptr(snapshotObject(before.objects[bi].rec))
		}
		if aj >= 0 {
			a = ptr(snapshotObject(after.objects[aj].rec))
		}
		i, j = ni, nj
		od := ObjectDiff{ID: id, Before: b, After: a}
		fromReason, fromUnknown := fromKnown.unknown(id, b, a)
		toReason, toUnknown := toKnown.unknown(id, b, a)
		unchanged := b != nil && a != nil && b.EventID == a.EventID && !fromUnknown && !toUnknown
		if !withBodies && !unchanged {
			// Read without bodies: those of the versions it compares or
			// returns.
			if err := readBodies(i0, j0, b, a); retry {
				return m.diff(ctx, scope, from, to, page, opts, false)
			} else if err != nil {
				return nil, wrap(err)
			}
		}
		switch {
		case fromUnknown || toUnknown:
			od.Type = ObjectUnknown
			od.UnknownAt, od.Reason = unknownEnd(fromUnknown, toUnknown, fromReason, toReason)
		case a == nil:
			od.Type = ObjectRemoved
		case b == nil:
			od.Type = ObjectAdded
		default:
			if unchanged {
				continue
			}
			changes, err := cc.compareBodies(a.Ref, b.Object, a.Object)
			if err != nil {
				d.Warnings = append(d.Warnings, err.Error())
				continue
			}
			recreated := b.Ref.UID != "" && a.Ref.UID != "" && b.Ref.UID != a.Ref.UID
			if len(changes) == 0 && !recreated {
				continue
			}
			od.Type, od.Changes, od.Recreated = ObjectChanged, changes, recreated
		}
		od.Kind = kindOf(od)
		d.Objects = append(d.Objects, od)
	}
	return d, nil
}

func ptr[T any](v T) *T { return &v }

// mergeStep is a step of the merge of the objects of a diff's two ends,
// before and after (sorted by ID), from before[i] and after[j]: the next
// object's ID, its index in before and in after (-1 where it is absent),
// and where the merge goes on.
func mergeStep(before, after []stateObject, i, j int) (id storage.ObjectID, bi, aj, ni, nj int) {
	switch {
	case j == len(after) || i < len(before) && lessObjectID(before[i].id, after[j].id):
		return before[i].id, i, -1, i + 1, j
	case i == len(before) || lessObjectID(after[j].id, before[i].id):
		return after[j].id, -1, j, i, j + 1
	default:
		return after[j].id, i, j, i + 1, j + 1
	}
}

// diffBodyBatch is how many pairs of versions a diff page reads the
// bodies of at once.
const diffBodyBatch = 256

// prefetchBodies reads, in one storage.GetMany, the bodies of the pairs
// of the merge from before[i] and after[j] whose versions differ (or
// exist at one end only), for up to diffBodyBatch of them, and no more
// than limit (when set): each adds at most an object to the page. Pairs
// of the same version need no body unless an end is not covered; those
// are read by the next call.
func (m *Materializer) prefetchBodies(ctx context.Context, before, after []stateObject, i, j, limit int) (map[string][]byte, error) {
	n := diffBodyBatch
	if limit > 0 {
		n = min(n, limit)
	}
	var ids []string
	for pairs := 0; pairs < n && (i < len(before) || j < len(after)); {
		_, bi, aj, ni, nj := mergeStep(before, after, i, j)
		i, j = ni, nj
		if pairs > 0 && bi >= 0 && aj >= 0 && before[bi].rec.EventID == after[aj].rec.EventID {
			continue
		}
		pairs++
		if bi >= 0 {
			ids = append(ids, before[bi].rec.EventID)
		}
		if aj >= 0 {
			ids = append(ids, after[aj].rec.EventID)
		}
	}
	recs, err := storage.GetMany(ctx, m.store, ids)
	if err != nil {
		return nil, fmt.Errorf("bodies of %d versions: %w", len(ids), err)
	}
	bodies := make(map[string][]byte, len(recs))
	for _, rec := range recs {
		bodies[rec.EventID] = rec.Object
	}
	return bodies, nil
}

// knowledge says whether the state of an object at one end of a diff's
// window is known: whether a stream that records it was covered then. It
// reads only the coverage stateAt computed, once per stream and namespace.
type knowledge struct {
	state *scopeState
	// allCovered: every contributing stream is covered, so every object
	// is known.
	allCovered bool
	memo       map[knowledgeKey]string
}

type knowledgeKey struct {
	group, resource, namespace string
	streams                    [2]string
}

func newKnowledge(s *scopeState) *knowledge {
	k := &knowledge{state: s, allCovered: true}
	for _, st := range s.streams {
		if !st.cov.Covered {
			k.allCovered = false
			break
		}
	}
	return k
}

// unknown reports whether the state of object id at this end is unknown,
// and why. b and a are its versions at the two ends (nil when absent):
// the streams that reported them count as recording it, besides every
// stream that claims it. The state is known when one of those streams is
// covered: a covered stream that does not report the object says it is
// absent.
func (k *knowledge) unknown(id storage.ObjectID, b, a *SnapshotObject) (string, bool) {
	if k.allCovered {
		return "", false
	}
	key := knowledgeKey{group: id.Group, resource: id.Resource, namespace: id.Namespace}
	if b != nil {
		key.streams[0] = b.StreamID
	}
	if a != nil {
		key.streams[1] = a.StreamID
	}
	if reason, ok := k.memo[key]; ok {
		return reason, reason != ""
	}
	reason := ""
	for _, st := range k.state.streams {
		if st.status.StreamID != key.streams[0] && st.status.StreamID != key.streams[1] && !claims(st.status.Stream, id) {
			continue
		}
		if st.cov.Covered {
			reason = ""
			break
		}
		if reason == "" {
			reason = st.cov.Reason
			if reason == "" {
				reason = "stream " + st.status.StreamID + " is not covered"
			}
		}
	}
	if k.memo == nil {
		k.memo = make(map[knowledgeKey]string)
	}
	k.memo[key] = reason
	return reason, reason != ""
}

// unknownEnd names the end(s) of the window whose state is unknown, and
// the reason.
func unknownEnd(fromUnknown, toUnknown bool, fromReason, toReason string) (DiffEnd, string) {
	switch {
	case !toUnknown:
		return DiffFrom, fromReason
	case !fromUnknown:
		return DiffTo, toReason
	case fromReason == toReason:
		return DiffBoth, fromReason
	}
	return DiffBoth, "at the start: " + fromReason + "; at the end: " + toReason
}

func kindOf(od ObjectDiff) string {
	for _, o := range []*SnapshotObject{od.After, od.Before} {
		if o == nil {
			continue
		}
		if o.Ref.Kind != "" {
			return o.Ref.Kind
		}
		var tm struct {
			Kind string `json:"kind"`
		}
		if json.Unmarshal(o.Object, &tm) == nil && tm.Kind != "" {
			return tm.Kind
		}
	}
	return od.ID.Resource
}

func mergeMissing(a, b []MissingStream) []MissingStream {
	out := append([]MissingStream(nil), a...)
	for _, m := range b {
		dup := false
		for _, o := range out {
			if o.StreamID == m.StreamID && o.Resource == m.Resource && o.Namespace == m.Namespace {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, m)
		}
	}
	return out
}
