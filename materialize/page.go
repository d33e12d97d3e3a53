package materialize

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/krply/krply/storage"
)

// Page selects one page of the objects of a snapshot (SnapshotPage) or a
// diff (DiffPage), in their order — group, resource, namespace, name,
// then cluster: at most Limit of them, from the first that sorts after
// After (nil: from the first of all). The answer's Next, when set, is the
// After of the page that follows.
type Page struct {
	After *storage.ObjectID
	Limit int
}

func (p Page) validate() error {
	if p.Limit < 1 {
		return fmt.Errorf("materialize: %w: a page of %d objects: want 1 or more", ErrInvalidArgument, p.Limit)
	}
	return nil
}

// start returns the index of the first of objs that sorts after p.After.
func (p Page) start(objs []stateObject) int {
	if p.After == nil {
		return 0
	}
	return sort.Search(len(objs), func(i int) bool { return lessObjectID(*p.After, objs[i].id) })
}

// SnapshotPage computes one page of the snapshot of scope at at: what
// Snapshot answers, with only the page's objects, and Next set when more
// may follow. It reads the other objects' states without their bodies and
// only the page's bodies, so a large scope is read a page at a time in
// memory bounded by the page (and by the objects' identities, without
// bodies).
//
// Each page is computed on its own, from the journal as it is then. Where
// the snapshot is Complete, the pages of one time agree with each other
// and with Snapshot: the covered past does not change. Where it is not —
// at a time after a stream's watermark — a later page may know more than
// an earlier one; every page tells its own Complete, Watermarks and
// Missing. A page that lacks some of the snapshot's objects cannot be
// saved (SaveSnapshot).
func (m *Materializer) SnapshotPage(ctx context.Context, scope Scope, at time.Time, page Page) (*Snapshot, error) {
	if err := page.validate(); err != nil {
		return nil, err
	}
	st, err := m.snapshotState(ctx, scope, at, false)
	if err != nil {
		return nil, err
	}
	snap := m.newSnapshot(scope, st)
	objs := st.objects[page.start(st.objects):]
	if len(objs) > page.Limit {
		objs = objs[:page.Limit]
		last := objs[len(objs)-1].id
		snap.Next = &last
	}
	snap.partial = page.After != nil || snap.Next != nil
	snap.Objects = make([]SnapshotObject, len(objs))
	for i, o := range objs {
		so := snapshotObject(o.rec)
		if err := m.readBodies(ctx, &so); err != nil {
			return nil, fmt.Errorf("snapshot of cluster %q at %s: %w", scope.ClusterID, at.UTC().Format(time.RFC3339Nano), err)
		}
		snap.Objects[i] = so
	}
	return snap, nil
}

// readBodies reads the bodies of versions read without them (nil ones
// skipped).
func (m *Materializer) readBodies(ctx context.Context, objs ...*SnapshotObject) error {
	for _, o := range objs {
		if o == nil || o.Object != nil {
			continue
		}
		rec, err := m.store.Get(ctx, o.EventID)
		if err != nil {
			return fmt.Errorf("body of %s %s: %w", o.Ref.Resource, o.Ref.ObjectKey(), err)
		}
		o.Object = rec.Object
	}
	return nil
}
