package materialize

import (
	"context"
	"time"

	"github.com/krply/krply/storage"
)

// Querier answers the questions of a journal, with the same signatures,
// options, answers and sentinel errors wherever it is asked: a
// *Materializer and a *krply.Journal answer from the journal itself, a
// *client.Client (package server/client) asks krply's query API. Code
// written over a Querier runs against a local journal and a remote
// recorder alike, as the kubectl plugin's --journal and --server do.
//
// Errors are checked with errors.Is against the sentinels ErrNotFound,
// ErrInvalidArgument and ErrReadOnly, over HTTP too. A client refuses,
// with ErrInvalidArgument naming it, an option the query API does not
// carry (FromStream, WithIgnoreRules, WithoutDefaultIgnores,
// WithMergeKeys).
type Querier interface {
	// ObjectAt returns an object as it was at a time, with its coverage.
	ObjectAt(ctx context.Context, obj storage.ObjectID, at time.Time) (*ObjectState, error)
	// History returns an object's versions with their field changes; with
	// Limit, one page of them, whose Next given to After continues it.
	History(ctx context.Context, obj storage.ObjectID, opts ...HistoryOption) (*History, error)
	// Snapshot computes the state of a scope at a time; it saves nothing.
	Snapshot(ctx context.Context, scope Scope, at time.Time) (*Snapshot, error)
	// Diff returns what changed in a scope between two times.
	Diff(ctx context.Context, scope Scope, from, to time.Time, opts ...CompareOption) (*Diff, error)
	// GetSnapshot returns a saved snapshot by ID.
	GetSnapshot(ctx context.Context, id string) (*Snapshot, error)
	// ListSnapshots returns the saved snapshots of a cluster ("": the
	// journal's only one) without their objects.
	ListSnapshots(ctx context.Context, clusterID string) ([]Snapshot, error)
}

var _ Querier = (*Materializer)(nil)
