package materialize

import (
	"context"
	"errors"
	"time"

	"github.com/google/uuid"
)

func newUUID() string { return uuid.NewString() }

var errNotImplemented = errors.New("materialize: not implemented yet")

// Snapshot computes the state of scope at at and saves it in the journal as
// a TypeSnapshot record named name.
func (m *Materializer) Snapshot(ctx context.Context, scope Scope, at time.Time, name string) (*Snapshot, error) {
	return nil, errNotImplemented
}

// GetSnapshot returns a saved snapshot by ID.
func (m *Materializer) GetSnapshot(ctx context.Context, id string) (*Snapshot, error) {
	return nil, errNotImplemented
}

// ListSnapshots returns the saved snapshots of a cluster ("" for all),
// without their Objects.
func (m *Materializer) ListSnapshots(ctx context.Context, clusterID string) ([]Snapshot, error) {
	return nil, errNotImplemented
}
