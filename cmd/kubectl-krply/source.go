package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"github.com/krply/krply"
	"github.com/krply/krply/audit"
	"github.com/krply/krply/cel"
	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/recorder"
	"github.com/krply/krply/replay"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/why"
)

// source is what the commands ask of a journal: answered by a journal file
// (journalSource) or by a recorder's query API (the --server flag). Every
// command is written over it, so both give the same output.
type source interface {
	// The questions a journal file and the query API's client answer
	// alike (krply.Querier), except that ObjectAt and History return
	// errNeverRecorded for an object the journal holds no version of.
	krply.Querier
	// Clusters lists the IDs of the clusters the journal records.
	Clusters(ctx context.Context) ([]string, error)
	// Streams lists the streams of a cluster with their coverage at a
	// time: every stream, or with a namespace those of that namespace and
	// the cluster-scoped ones (which a reader of only that namespace may
	// ask the query API for).
	Streams(ctx context.Context, clusterID, namespace string, at time.Time) ([]streamInfo, error)
	// Losses lists the gap and coverage-change records of a cluster
	// observed in [since, until] (zero: unbounded): of every stream, or
	// with a namespace of its streams and the cluster-scoped ones.
	Losses(ctx context.Context, clusterID, namespace string, since, until time.Time) ([]event.Record, error)
	// SaveSnapshot computes the state of a scope at a time and saves it
	// under name.
	SaveSnapshot(ctx context.Context, scope materialize.Scope, at time.Time, name string) (*materialize.Snapshot, error)
	// Why answers what changed before an object broke (package why).
	Why(ctx context.Context, q why.Query) (*why.Answer, error)
	// Find answers when the CEL condition expr held for the objects of
	// q.Scope; Secrets are never searched.
	Find(ctx context.Context, q materialize.FindQuery, expr string) (*materialize.Found, error)
	// Plan makes a replay plan and saves it: only a saved plan is
	// dry-run and applied.
	Plan(ctx context.Context, src replay.Source, tgt replay.Target, policy replay.Policy) (*replay.Plan, error)
	LoadPlan(ctx context.Context, id string) (*replay.Plan, error)
	// DryRun and Apply run a saved plan against the target cluster: the
	// one target returns for a journal file, the query API's own for
	// --server.
	DryRun(ctx context.Context, plan *replay.Plan, target targetConfig) (*replay.DryRunReport, error)
	Apply(ctx context.Context, plan *replay.Plan, target targetConfig, confirm replay.Confirmation) (*replay.ApplyReport, error)
	// IngestAudit links the writes of audit log files to the journal's
	// events and saves the links.
	IngestAudit(ctx context.Context, clusterID string, paths []string) (audit.Summary, error)
	Close() error
}

// streamInfo is a stream's durable status and its coverage at the time
// asked about.
type streamInfo struct {
	Status   storage.StreamStatus
	Coverage storage.Coverage
}

// targetConfig returns the target cluster of a dry run or an apply.
type targetConfig func() (*rest.Config, error)

// journalSource answers from a journal file, opened read-only unless the
// command writes (saving a snapshot or a plan, a dry run, an apply, audit
// links).
type journalSource struct {
	j           *krply.Journal
	close       func() error
	mat         *materialize.Materializer
	planOptions []replay.Option
}

var _ source = (*journalSource)(nil)

// openJournal opens an existing journal file, or a PostgreSQL journal.
func openJournal(ctx context.Context, path string, writes bool) (*journalSource, error) {
	if !isPostgres(path) {
		if _, err := os.Stat(path); err != nil {
			return nil, fmt.Errorf("journal %s: %w (record one first with kubectl krply record --journal %s, or give --journal or KRPLY_JOURNAL)", path, errors.Unwrap(err), path)
		}
	}
	j, closeJournal, err := openStore(ctx, path, !writes)
	if older := olderJournal(path, err); older != nil && !writes {
		return nil, older
	}
	if err != nil {
		return nil, recorder.JournalError(path, err)
	}
	return &journalSource{j: j, close: closeJournal}, nil
}

func (s *journalSource) Close() error { return s.close() }

func (s *journalSource) Clusters(ctx context.Context) ([]string, error) {
	streams, err := s.j.Store().Streams(ctx, "")
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, st := range streams {
		if !slices.Contains(ids, st.Stream.ClusterID) {
			ids = append(ids, st.Stream.ClusterID)
		}
	}
	return ids, nil
}

func (s *journalSource) Streams(ctx context.Context, clusterID, namespace string, at time.Time) ([]streamInfo, error) {
	streams, err := s.j.Store().Streams(ctx, clusterID)
	if err != nil {
		return nil, err
	}
	out := make([]streamInfo, 0, len(streams))
	for _, st := range streams {
		if namespace != "" && st.Stream.Namespace != "" && st.Stream.Namespace != namespace {
			continue
		}
		cov, err := storage.CoverageAt(ctx, s.j.Store(), st.StreamID, at)
		if err != nil {
			return nil, err
		}
		out = append(out, streamInfo{Status: st, Coverage: cov})
	}
	return out, nil
}

func (s *journalSource) Losses(ctx context.Context, clusterID, namespace string, since, until time.Time) ([]event.Record, error) {
	q := storage.Query{ClusterID: clusterID, Types: []event.RecordType{event.TypeGap, event.TypeCoverageChange}, Since: since, Until: until, WithoutBodies: true}
	var out []event.Record
	for {
		page, err := s.j.Store().Records(ctx, q)
		if err != nil {
			return nil, err
		}
		for _, rec := range page.Records {
			if st, err := event.ParseStreamID(rec.StreamID); namespace == "" || err != nil || st.Namespace == "" || st.Namespace == namespace {
				out = append(out, rec)
			}
		}
		if page.Next == "" {
			return out, nil
		}
		q.Cursor = page.Next
	}
}

func (s *journalSource) ObjectAt(ctx context.Context, obj storage.ObjectID, at time.Time) (*materialize.ObjectState, error) {
	st, err := s.mat.ObjectAt(ctx, obj, at)
	if err == nil && st.Record == nil && st.ExcludedByRule == "" {
		h, herr := s.mat.History(ctx, obj, materialize.Limit(1))
		if herr != nil {
			return nil, herr
		}
		if len(h.Versions()) == 0 {
			return nil, errNeverRecorded
		}
	}
	return st, err
}

func (s *journalSource) History(ctx context.Context, obj storage.ObjectID, opts ...materialize.HistoryOption) (*materialize.History, error) {
	h, err := s.mat.History(ctx, obj, opts...)
	if err == nil && len(h.Versions()) == 0 {
		// Filtered out, or never recorded?
		if all, err := s.mat.History(ctx, obj, materialize.Limit(1)); err != nil || len(all.Versions()) == 0 {
			if st, err := s.mat.ObjectAt(ctx, obj, time.Now()); err == nil && st.ExcludedByRule != "" {
				return nil, fmt.Errorf("not recorded: %s", st.ExcludedByRule)
			}
			return nil, errNeverRecorded
		}
	}
	return h, err
}

func (s *journalSource) Why(ctx context.Context, q why.Query) (*why.Answer, error) {
	ex, err := why.New(s.j.Store())
	if err != nil {
		return nil, err
	}
	return ex.Explain(ctx, q)
}

func (s *journalSource) Snapshot(ctx context.Context, scope materialize.Scope, at time.Time) (*materialize.Snapshot, error) {
	return s.mat.Snapshot(ctx, scope, at)
}

func (s *journalSource) SaveSnapshot(ctx context.Context, scope materialize.Scope, at time.Time, name string) (*materialize.Snapshot, error) {
	snap, err := s.mat.Snapshot(ctx, scope, at)
	if err != nil {
		return nil, err
	}
	return snap, s.mat.SaveSnapshot(ctx, snap, name)
}

func (s *journalSource) Diff(ctx context.Context, scope materialize.Scope, from, to time.Time, opts ...materialize.CompareOption) (*materialize.Diff, error) {
	return s.mat.Diff(ctx, scope, from, to, opts...)
}

func (s *journalSource) GetSnapshot(ctx context.Context, id string) (*materialize.Snapshot, error) {
	return s.mat.GetSnapshot(ctx, id)
}

func (s *journalSource) ListSnapshots(ctx context.Context, clusterID string) ([]materialize.Snapshot, error) {
	return s.mat.ListSnapshots(ctx, clusterID)
}

func (s *journalSource) Find(ctx context.Context, q materialize.FindQuery, expr string) (*materialize.Found, error) {
	cond, err := cel.Conditions().Compile(expr)
	if err != nil {
		return nil, err
	}
	// As the query API: a condition over a Secret would reveal its data.
	q.ExcludeResources = append(q.ExcludeResources, secretsResource)
	return s.mat.Find(ctx, q, cond)
}

// secretsResource is what find never searches.
var secretsResource = schema.GroupResource{Resource: "secrets"}

func (s *journalSource) Plan(ctx context.Context, src replay.Source, tgt replay.Target, policy replay.Policy) (*replay.Plan, error) {
	planner, err := replay.NewPlanner(s.j.Store(), append([]replay.Option{replay.WithPolicy(policy)}, s.planOptions...)...)
	if err != nil {
		return nil, err
	}
	plan, err := planner.Plan(ctx, src, tgt)
	if err != nil {
		return nil, err
	}
	return plan, planner.SavePlan(ctx, plan)
}

func (s *journalSource) LoadPlan(ctx context.Context, id string) (*replay.Plan, error) {
	return s.j.LoadPlan(ctx, id)
}

func (s *journalSource) DryRun(ctx context.Context, plan *replay.Plan, target targetConfig) (*replay.DryRunReport, error) {
	c, err := cluster(target)
	if err != nil {
		return nil, err
	}
	return s.j.DryRun(ctx, plan, c)
}

func (s *journalSource) Apply(ctx context.Context, plan *replay.Plan, target targetConfig, confirm replay.Confirmation) (*replay.ApplyReport, error) {
	c, err := cluster(target)
	if err != nil {
		return nil, err
	}
	return s.j.Apply(ctx, plan, c, confirm)
}

func cluster(target targetConfig) (*replay.Cluster, error) {
	cfg, err := target()
	if err != nil {
		return nil, err
	}
	return replay.NewClusterForConfig(cfg)
}

func (s *journalSource) IngestAudit(ctx context.Context, clusterID string, paths []string) (audit.Summary, error) {
	c, err := audit.NewCorrelator(s.j.Store(), clusterID)
	if err != nil {
		return audit.Summary{}, err
	}
	files, err := audit.OpenFiles(paths)
	if err != nil {
		return audit.Summary{}, err
	}
	defer files.Close()
	return c.Ingest(ctx, files)
}
