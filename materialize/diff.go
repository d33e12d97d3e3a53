package materialize

import (
	"context"
	"encoding/json"
	"fmt"
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
)

// ObjectDiff is how one object differs between two times.
type ObjectDiff struct {
	ID   storage.ObjectID
	Type ObjectChangeType
	// Kind is the object's kind, for display.
	Kind string
	// Before and After are the object's versions at the two times; Before
	// is nil for an added object and After for a removed one.
	Before, After *SnapshotObject
	// Changes are the field changes of a changed object, sorted by path.
	Changes []FieldChange
	// Recreated is true when the object was deleted and created again in
	// between (its UID changed); Changes are still computed.
	Recreated bool
}

// Diff is what changed in a scope between two times: the state at From
// against the state at To. Objects created and deleted in between do not
// appear; History shows them.
type Diff struct {
	Scope    Scope
	From, To time.Time
	// Objects are the objects that differ, sorted by group, resource,
	// namespace and name.
	Objects []ObjectDiff
	// HasGaps is true when the journal may miss changes of the scope
	// between From and To: a contributing stream is not covered at either
	// end, a gap or loss of availability intersects [From, To], or a
	// requested part of the scope is not recorded at all.
	HasGaps bool
	// Gaps are the gap and coverage-change records intersecting [From, To].
	Gaps []event.Record
	// Missing lists what is not covered at From or To.
	Missing []MissingStream
	// Warnings are human-readable notes about the answer.
	Warnings []string

	// compare is how the diff compared bodies; the renderers use it.
	compare compareConfig
}

// Diff compares the state of scope at from with its state at to. Server-
// owned metadata and status are ignored unless options say otherwise (see
// DefaultIgnorePointers, IncludeStatus, WithIgnoreRules,
// WithoutDefaultIgnores); list items with a merge key are matched by it.
func (m *Materializer) Diff(ctx context.Context, scope Scope, from, to time.Time, opts ...QueryOption) (*Diff, error) {
	if to.Before(from) {
		return nil, fmt.Errorf("%w: diff from %s to the earlier %s", ErrInvalidArgument, from, to)
	}
	_, cc, err := newQueryConfig(false, opts)
	if err != nil {
		return nil, err
	}
	wrap := func(err error) error {
		return fmt.Errorf("diff of cluster %q from %s to %s: %w", scope.ClusterID,
			from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano), err)
	}
	before, err := m.stateAt(ctx, scope, from, true)
	if err != nil {
		return nil, wrap(err)
	}
	after, err := m.stateAt(ctx, scope, to, true)
	if err != nil {
		return nil, wrap(err)
	}
	d := &Diff{Scope: scope, From: from, To: to, compare: cc}
	d.Missing = mergeMissing(before.missing, after.missing)
	d.Warnings = append(d.Warnings, after.warnings...)
	d.HasGaps = len(d.Missing) > 0 || len(after.streams) == 0

	// Losses of continuity recorded from From on that start before To.
	for _, st := range after.streams {
		tl, err := storage.StreamTimeline(ctx, m.reader, st.status.StreamID)
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

	i, j := 0, 0
	for i < len(before.objects) || j < len(after.objects) {
		var od ObjectDiff
		switch {
		case j == len(after.objects) || i < len(before.objects) && lessObjectID(before.objects[i].id, after.objects[j].id):
			b := snapshotObject(before.objects[i].rec)
			od = ObjectDiff{ID: before.objects[i].id, Type: ObjectRemoved, Before: &b}
			i++
		case i == len(before.objects) || lessObjectID(after.objects[j].id, before.objects[i].id):
			a := snapshotObject(after.objects[j].rec)
			od = ObjectDiff{ID: after.objects[j].id, Type: ObjectAdded, After: &a}
			j++
		default:
			id := after.objects[j].id
			b, a := snapshotObject(before.objects[i].rec), snapshotObject(after.objects[j].rec)
			i++
			j++
			if b.EventID == a.EventID {
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
			od = ObjectDiff{ID: id, Type: ObjectChanged, Before: &b, After: &a, Changes: changes, Recreated: recreated}
		}
		od.Kind = kindOf(od)
		d.Objects = append(d.Objects, od)
	}
	return d, nil
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
