package materialize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

func newUUID() string { return uuid.NewString() }

// Snapshot computes the state of scope at at — every object alive then,
// with per-stream watermarks, Complete, Missing and warnings. It only
// reads: the snapshot is not saved, and its ID is empty, until SaveSnapshot
// stores it.
func (m *Materializer) Snapshot(ctx context.Context, scope Scope, at time.Time) (*Snapshot, error) {
	st, err := m.snapshotState(ctx, scope, at, true)
	if err != nil {
		return nil, err
	}
	snap := m.newSnapshot(scope, st)
	snap.Objects = make([]SnapshotObject, len(st.objects))
	for i, o := range st.objects {
		snap.Objects[i] = snapshotObject(o.rec)
	}
	return snap, nil
}

// snapshotState computes the state of scope at at for a snapshot.
func (m *Materializer) snapshotState(ctx context.Context, scope Scope, at time.Time, withBodies bool) (*scopeState, error) {
	if at.IsZero() {
		return nil, fmt.Errorf("materialize: %w: snapshot without a time", ErrInvalidArgument)
	}
	st, err := m.stateAt(ctx, scope, at, withBodies)
	if err != nil {
		return nil, fmt.Errorf("snapshot of cluster %q at %s: %w", scope.ClusterID, at.UTC().Format(time.RFC3339Nano), err)
	}
	return st, nil
}

// newSnapshot is the snapshot of st without its objects.
func (m *Materializer) newSnapshot(scope Scope, st *scopeState) *Snapshot {
	return &Snapshot{
		Scope:      scope,
		At:         st.at,
		CreatedAt:  m.clock.Now(),
		Complete:   st.complete(),
		Watermarks: st.watermarks(),
		// Copies: a state may be remembered for later pages (pageStates).
		Missing:  slices.Clone(st.missing),
		Warnings: slices.Clone(st.warnings),
	}
}

// SaveSnapshot stores snap, as Snapshot computed it, in the journal as a
// TypeSnapshot record named name, and sets its ID and Name: GetSnapshot
// fetches it by that ID, and a replay.Source can name it. Saving is an
// explicit act; no query saves anything.
//
// It returns an error wrapping ErrReadOnly when the store refuses writes
// (a journal opened read-only), and ErrInvalidArgument for a nil snapshot,
// one without a cluster or a time, one already saved (its ID is set), or
// a page of a snapshot that lacks some of its objects (SnapshotPage). On
// an error snap is left as it was.
func (m *Materializer) SaveSnapshot(ctx context.Context, snap *Snapshot, name string) error {
	switch {
	case snap == nil:
		return fmt.Errorf("materialize: %w: nil snapshot", ErrInvalidArgument)
	case snap.ID != "":
		return fmt.Errorf("materialize: %w: snapshot is already saved as %q", ErrInvalidArgument, snap.ID)
	case snap.partial:
		return fmt.Errorf("materialize: %w: snapshot is one page of a snapshot (SnapshotPage): save a whole Snapshot", ErrInvalidArgument)
	case snap.Scope.ClusterID == "" || snap.At.IsZero():
		return fmt.Errorf("materialize: %w: snapshot without a cluster or a time", ErrInvalidArgument)
	}
	saved := *snap
	saved.ID, saved.Name = m.newID(), name
	doc, err := json.Marshal(&saved)
	if err != nil {
		return fmt.Errorf("snapshot %s: encode: %w", saved.ID, err)
	}
	rec := event.Record{
		Type:       event.TypeSnapshot,
		EventID:    saved.ID,
		ClusterID:  saved.Scope.ClusterID,
		ObservedAt: m.clock.Now(),
		Saved:      &event.SavedRef{ID: saved.ID, Name: name, At: saved.At, Complete: saved.Complete},
		Object:     doc,
		ObjectHash: event.ObjectHash(doc),
	}
	if _, err := m.store.Append(ctx, []event.Record{rec}); err != nil {
		return fmt.Errorf("snapshot %s: save: %w", saved.ID, err)
	}
	snap.ID, snap.Name = saved.ID, name
	m.log.V(1).Info("snapshot saved", "id", saved.ID, "name", name, "cluster", saved.Scope.ClusterID, "at", saved.At, "objects", len(saved.Objects), "complete", saved.Complete)
	return nil
}

func snapshotObject(rec event.Record) SnapshotObject {
	return SnapshotObject{Ref: rec.Resource, StreamID: rec.StreamID, EventID: rec.EventID,
		ObservedAt: rec.ObservedAt, Synthetic: rec.Synthetic, Object: rec.Object}
}

// GetSnapshot returns a saved snapshot by ID; ErrNotFound when the journal
// has no snapshot with that ID.
func (m *Materializer) GetSnapshot(ctx context.Context, id string) (*Snapshot, error) {
	rec, err := m.store.Get(ctx, id)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, fmt.Errorf("materialize: snapshot %q: %w", id, err)
	}
	if err != nil {
		return nil, fmt.Errorf("snapshot %q: %w", id, err)
	}
	if rec.Type != event.TypeSnapshot {
		return nil, fmt.Errorf("materialize: snapshot %q: the record with this ID is a %s record: %w", id, rec.Type, ErrNotFound)
	}
	var snap Snapshot
	if err := json.Unmarshal(rec.Object, &snap); err != nil {
		return nil, fmt.Errorf("snapshot %q: decode: %w", id, err)
	}
	return &snap, nil
}

// skipJSON consumes a JSON value without keeping it.
type skipJSON struct{}

func (*skipJSON) UnmarshalJSON([]byte) error { return nil }

// snapshotHeader decodes a snapshot document without its objects.
type snapshotHeader struct {
	*Snapshot
	Objects skipJSON `json:"objects"`
}

// ListSnapshots returns the saved snapshots of a cluster ("" for every
// cluster) in the order they were saved, without their Objects.
func (m *Materializer) ListSnapshots(ctx context.Context, clusterID string) ([]Snapshot, error) {
	var out []Snapshot
	q := storage.Query{ClusterID: clusterID, Types: []event.RecordType{event.TypeSnapshot}}
	for {
		page, err := m.store.Records(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("list snapshots of cluster %q: %w", clusterID, err)
		}
		for _, rec := range page.Records {
			var snap Snapshot
			if err := json.Unmarshal(rec.Object, &snapshotHeader{Snapshot: &snap}); err != nil {
				return nil, fmt.Errorf("snapshot %q: decode: %w", rec.EventID, err)
			}
			out = append(out, snap)
		}
		if page.Next == "" {
			return out, nil
		}
		q.Cursor = page.Next
	}
}
