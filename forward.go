package krply

import (
	"context"
	"time"
)

var _ Querier = (*Journal)(nil)

// The Journal's queries and writes forward to its Materializer and Planner;
// TestJournalForwardsEveryMethod fails when either gains an exported method
// the Journal neither forwards nor deliberately leaves out.

// Materializer returns the Materializer the Journal's queries run on, for
// APIs that take one.
func (j *Journal) Materializer() *Materializer { return j.mat }

// Planner returns the Planner the Journal's plans run on, for APIs that take
// one.
func (j *Journal) Planner() *Planner { return j.planner }

// ObjectAt returns an object as it was at a time, with its coverage (see
// materialize.Materializer.ObjectAt).
func (j *Journal) ObjectAt(ctx context.Context, obj ObjectID, at time.Time) (*ObjectState, error) {
	return j.mat.ObjectAt(ctx, obj, at)
}

// History returns an object's versions with their field changes, gaps and
// provenance (see materialize.Materializer.History).
func (j *Journal) History(ctx context.Context, obj ObjectID, opts ...HistoryOption) (*History, error) {
	return j.mat.History(ctx, obj, opts...)
}

// Snapshot computes the state of a scope at a time, with its completeness;
// it saves nothing (see materialize.Materializer.Snapshot).
func (j *Journal) Snapshot(ctx context.Context, scope Scope, at time.Time) (*Snapshot, error) {
	return j.mat.Snapshot(ctx, scope, at)
}

// SnapshotPage computes one page of a snapshot's objects, reading only
// the page's bodies (see materialize.Materializer.SnapshotPage).
func (j *Journal) SnapshotPage(ctx context.Context, scope Scope, at time.Time, page Page) (*Snapshot, error) {
	return j.mat.SnapshotPage(ctx, scope, at, page)
}

// SaveSnapshot saves a snapshot in the journal under a name (see
// materialize.Materializer.SaveSnapshot).
func (j *Journal) SaveSnapshot(ctx context.Context, snap *Snapshot, name string) error {
	return j.mat.SaveSnapshot(ctx, snap, name)
}

// GetSnapshot returns a saved snapshot by ID (see
// materialize.Materializer.GetSnapshot).
func (j *Journal) GetSnapshot(ctx context.Context, id string) (*Snapshot, error) {
	return j.mat.GetSnapshot(ctx, id)
}

// ListSnapshots returns the saved snapshots of a cluster (see
// materialize.Materializer.ListSnapshots).
func (j *Journal) ListSnapshots(ctx context.Context, clusterID string) ([]Snapshot, error) {
	return j.mat.ListSnapshots(ctx, clusterID)
}

// Diff returns what changed in a scope between two times (see
// materialize.Materializer.Diff).
func (j *Journal) Diff(ctx context.Context, scope Scope, from, to time.Time, opts ...CompareOption) (*Diff, error) {
	return j.mat.Diff(ctx, scope, from, to, opts...)
}

// DiffPage computes one page of a diff's objects, reading only the bodies
// it compares or returns (see materialize.Materializer.DiffPage).
func (j *Journal) DiffPage(ctx context.Context, scope Scope, from, to time.Time, page Page, opts ...CompareOption) (*Diff, error) {
	return j.mat.DiffPage(ctx, scope, from, to, page, opts...)
}

// Find returns, for the objects of a scope, the intervals during which
// cond held, with unknown ends where the journal cannot tell (see
// materialize.Materializer.Find).
func (j *Journal) Find(ctx context.Context, q FindQuery, cond Predicate) (*Found, error) {
	return j.mat.Find(ctx, q, cond)
}

// Plan makes a replay plan of a source into a target under the Journal's
// Policy; it saves nothing (see replay.Planner.Plan).
func (j *Journal) Plan(ctx context.Context, src Source, tgt Target) (*Plan, error) {
	return j.planner.Plan(ctx, src, tgt)
}

// SavePlan saves a plan in the journal, so that it can be dry-run and
// applied (see replay.Planner.SavePlan).
func (j *Journal) SavePlan(ctx context.Context, plan *Plan) error {
	return j.planner.SavePlan(ctx, plan)
}

// LoadPlan returns a saved plan with its status (see replay.Planner.LoadPlan).
func (j *Journal) LoadPlan(ctx context.Context, id string) (*Plan, error) {
	return j.planner.LoadPlan(ctx, id)
}

// DryRun dry-runs a saved plan server-side against a cluster and saves the
// report (see replay.Planner.DryRun).
func (j *Journal) DryRun(ctx context.Context, plan *Plan, c *Cluster) (*DryRunReport, error) {
	return j.planner.DryRun(ctx, plan, c)
}

// Apply applies a saved, confirmed, cleanly dry-run plan to a cluster and
// saves the report (see replay.Planner.Apply).
func (j *Journal) Apply(ctx context.Context, plan *Plan, c *Cluster, confirm Confirmation) (*ApplyReport, error) {
	return j.planner.Apply(ctx, plan, c, confirm)
}
