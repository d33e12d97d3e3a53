package materialize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/krply/krply/storage"
)

// Page selects one page of the objects of a snapshot (SnapshotPage) or a
// diff (DiffPage), in their order — group, resource, namespace, name,
// then cluster: at most Limit of them, from the first that sorts after
// After (nil: from the first of all). The answer's Next, when set, is the
// After of the page that follows.
type Page struct {
	After *storage.ObjectID `json:"after,omitempty"`
	Limit int               `json:"limit"`
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
// The first page (After nil) reads the journal as it is then. When more
// pages follow, the Materializer remembers the scope's state without
// bodies (the last few, for a minute: pageStateTTL), and the pages after
// read only their own bodies, from that state: the pages of one snapshot
// agree with each other, as the pages of a Kubernetes list agree with
// its first. A page whose state was forgotten, or holds a version that
// compaction (retention) removed since, reads the journal again:
// where the snapshot is Complete it finds the same state (the covered
// past does not change); where it is not — at a time after a stream's
// watermark — it may know more than the first page, and says so in its
// own Complete, Watermarks and Missing. A page that lacks some of the
// snapshot's objects cannot be saved (SaveSnapshot).
func (m *Materializer) SnapshotPage(ctx context.Context, scope Scope, at time.Time, page Page) (*Snapshot, error) {
	if err := page.validate(); err != nil {
		return nil, err
	}
	return m.snapshotPage(ctx, scope, at, page, true)
}

// snapshotPage is SnapshotPage, from a remembered state when remembered
// allows it.
func (m *Materializer) snapshotPage(ctx context.Context, scope Scope, at time.Time, page Page, remembered bool) (*Snapshot, error) {
	st, fromMemory, err := m.pageState(ctx, scope, at, page, remembered, m.snapshotState)
	if err != nil {
		return nil, err
	}
	snap := m.newSnapshot(scope, st)
	objs := st.objects[page.start(st.objects):]
	if len(objs) > page.Limit {
		objs = objs[:page.Limit]
		last := objs[len(objs)-1].id
		snap.Next = &last
		m.pages.put(scope, st, m.clock.Now())
	}
	snap.partial = page.After != nil || snap.Next != nil
	snap.Objects = make([]SnapshotObject, len(objs))
	need := make([]*SnapshotObject, len(objs))
	for i, o := range objs {
		snap.Objects[i] = snapshotObject(o.rec)
		need[i] = &snap.Objects[i]
	}
	if err := m.readBodies(ctx, need...); err != nil {
		if fromMemory && errors.Is(err, storage.ErrNotFound) {
			// Compaction removed a version the remembered state holds:
			// read the state again.
			m.pages.forget(scope, at)
			return m.snapshotPage(ctx, scope, at, page, false)
		}
		return nil, fmt.Errorf("snapshot of cluster %q at %s: %w", scope.ClusterID, at.UTC().Format(time.RFC3339Nano), err)
	}
	return snap, nil
}

// readBodies reads the bodies of versions read without them (nil ones
// skipped), all in one storage.GetMany.
func (m *Materializer) readBodies(ctx context.Context, objs ...*SnapshotObject) error {
	var ids []string
	var need []*SnapshotObject
	for _, o := range objs {
		if o != nil && o.Object == nil {
			ids = append(ids, o.EventID)
			need = append(need, o)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	recs, err := storage.GetMany(ctx, m.store, ids)
	if err != nil {
		return fmt.Errorf("bodies of %d versions: %w", len(ids), err)
	}
	for i, o := range need {
		o.Object = recs[i].Object
	}
	return nil
}

// How long, and how many, states of scopes without bodies the Materializer
// remembers for the pages after a first one (SnapshotPage, DiffPage).
// Together they hold at most maxRememberedObjects objects (about 600
// bytes each without bodies, measured on SQLite); a state of more is not
// remembered, and each of its pages reads the scope's objects again.
const (
	pageStateTTL         = time.Minute
	maxPageStates        = 4
	maxRememberedObjects = 100_000
)

// pageStates remembers, by scope and time, the states read without bodies
// for the first page of a snapshot or a diff.
type pageStates struct {
	mu      sync.Mutex
	entries []pageStateEntry // the most recent last
}

type pageStateEntry struct {
	key     string
	state   *scopeState
	expires time.Time
}

// stateKey names the state of scope at at.
func stateKey(scope Scope, at time.Time) string {
	b, _ := json.Marshal(scope) // strings only
	return fmt.Sprintf("%d %s", at.UnixNano(), b)
}

// get returns the state of scope at at if it is remembered.
func (c *pageStates) get(scope Scope, at time.Time, now time.Time) *scopeState {
	key := stateKey(scope, at)
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, e := range c.entries {
		if e.key == key && now.Before(e.expires) {
			return e.state
		}
	}
	return nil
}

// forget forgets the state of scope at at.
func (c *pageStates) forget(scope Scope, at time.Time) {
	key := stateKey(scope, at)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.entries = slices.DeleteFunc(c.entries, func(e pageStateEntry) bool { return e.key == key })
}

// put remembers st, the state of scope at st.at, forgetting those
// expired and the oldest beyond maxPageStates or maxRememberedObjects.
func (c *pageStates) put(scope Scope, st *scopeState, now time.Time) {
	if len(st.objects) > maxRememberedObjects {
		return
	}
	key := stateKey(scope, st.at)
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := make([]pageStateEntry, 0, maxPageStates+1)
	for _, e := range c.entries {
		if e.key != key && now.Before(e.expires) {
			kept = append(kept, e)
		}
	}
	kept = append(kept, pageStateEntry{key: key, state: st, expires: now.Add(pageStateTTL)})
	objects := 0
	for _, e := range kept {
		objects += len(e.state.objects)
	}
	for len(kept) > maxPageStates || objects > maxRememberedObjects {
		objects -= len(kept[0].state.objects)
		kept = kept[1:]
	}
	c.entries = kept
}

// pageState returns the state of scope at at without bodies for page:
// remembered (fromMemory) for a page after the first when remembered
// allows it, else read.
func (m *Materializer) pageState(ctx context.Context, scope Scope, at time.Time, page Page, remembered bool,
	read func(context.Context, Scope, time.Time, bool) (*scopeState, error)) (st *scopeState, fromMemory bool, err error) {
	if page.After != nil && remembered {
		if st := m.pages.get(scope, at, m.clock.Now()); st != nil {
			return st, true, nil
		}
	}
	st, err = read(ctx, scope, at, false)
	return st, false, err
}
