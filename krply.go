package krply

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-logr/logr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/krply/krply/materialize"
	"github.com/krply/krply/replay"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/watch"
)

// Version is the version of this module.
const Version = "0.1.0"

// ErrInvalidArgument: an argument of a root-package function is unusable.
var ErrInvalidArgument = errors.New("krply: invalid argument")

// Aliases of the types a newcomer meets first; each package documents them.
type (
	// Store is a journal backend (storage.Store).
	Store = storage.Store
	// ObjectID names an object across API versions and UIDs.
	ObjectID = storage.ObjectID
	// Scope selects the objects of a snapshot or a diff.
	Scope = materialize.Scope
	// Snapshot is the state of a scope at a time, with its completeness.
	Snapshot = materialize.Snapshot
	// History is one object's versions with field changes and gaps.
	History = materialize.History
	// Diff is what changed in a scope between two times.
	Diff = materialize.Diff
	// Plan is a reviewed-before-applied replay.
	Plan = replay.Plan
	// Policy decides what a replay plan may contain.
	Policy = replay.Policy
	// Source and Target say what a plan rebuilds and where.
	Source = replay.Source
	Target = replay.Target
)

// Option configures a Journal and the Collectors it makes: one set of
// options for recording, querying and planning.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	log       *logr.Logger
	policy    replay.Policy
	collector []watch.Option
	sqlite    []sqlite.Option
	readOnly  bool
}

// WithResources sets what Record records (see watch.WithResources):
// aliases such as "deploy" and "cm", plurals, "resource.group".
func WithResources(specs ...string) Option {
	o := watch.WithResources(specs...)
	return optionFunc(func(c *config) { c.collector = append(c.collector, o) })
}

// WithNamespaces restricts recording to these namespaces (see
// watch.WithNamespaces).
func WithNamespaces(namespaces ...string) Option {
	o := watch.WithNamespaces(namespaces...)
	return optionFunc(func(c *config) { c.collector = append(c.collector, o) })
}

// WithClusterID names the recorded cluster (see watch.WithClusterID). The
// default is the UID of its kube-system namespace.
func WithClusterID(id string) Option {
	o := watch.WithClusterID(id)
	return optionFunc(func(c *config) { c.collector = append(c.collector, o) })
}

// WithCollectorOptions passes any other watch options to Record.
func WithCollectorOptions(opts ...watch.Option) Option {
	opts = append([]watch.Option(nil), opts...)
	return optionFunc(func(c *config) { c.collector = append(c.collector, opts...) })
}

// WithPolicy sets the replay policy of Plan (default: the zero Policy,
// the safe one).
func WithPolicy(p Policy) Option {
	return optionFunc(func(c *config) { c.policy = p })
}

// WithLogger sets the logger of the journal, its queries, its planner and
// the Collectors Record makes. The default discards everything; Collectors
// then log to logr.FromContextOrDiscard of Start's context.
func WithLogger(l logr.Logger) Option {
	return optionFunc(func(c *config) { c.log = &l })
}

// WithSQLiteOptions passes options to sqlite.Open (Open only).
func WithSQLiteOptions(opts ...sqlite.Option) Option {
	opts = append([]sqlite.Option(nil), opts...)
	return optionFunc(func(c *config) { c.sqlite = append(c.sqlite, opts...) })
}

// WithReadOnly opens the journal read-only (Open only; see
// sqlite.WithReadOnly), for a process that only queries it: Open never
// creates, migrates or writes the file, and every query answers, seeing
// what recorders commit meanwhile. What writes — Record, saving a
// snapshot, a plan or audit correlations, Compact — fails with an error
// wrapping storage.ErrReadOnly. Without it, Open of a journal this process
// may not write fails at once, wrapping storage.ErrReadOnly and saying to
// use it.
func WithReadOnly() Option {
	return optionFunc(func(c *config) { c.readOnly = true })
}

// Journal is a krply journal with everything that reads and writes it:
// the queries of materialize.Materializer (ObjectAt, History, Snapshot,
// Diff, …), the replay.Planner (Plan, LoadPlan, SavePlan, DryRun, Apply),
// and Record, which makes a Collector appending to it. Queries only read;
// SaveSnapshot, SavePlan, DryRun, Apply and Record's Collector write. It is
// safe for concurrent use.
type Journal struct {
	*materialize.Materializer
	*replay.Planner

	store Store
	owned bool
	cfg   config
}

// Open opens the durable SQLite journal at path, creating it if needed
// (unless WithReadOnly). Any number of processes may open one journal and
// record into it or query it at once (see storage/sqlite). Close the
// Journal when done.
func Open(ctx context.Context, path string, opts ...Option) (*Journal, error) {
	cfg := newConfig(opts)
	sopts := cfg.sqlite
	if cfg.log != nil {
		sopts = append([]sqlite.Option{sqlite.WithLogger(*cfg.log)}, sopts...)
	}
	if cfg.readOnly {
		sopts = append(sopts, sqlite.WithReadOnly())
	}
	store, err := sqlite.Open(ctx, path, sopts...)
	if err != nil {
		return nil, fmt.Errorf("krply: open journal %s: %w", path, err)
	}
	j, err := newJournal(store, cfg)
	if err != nil {
		return nil, errors.Join(err, store.Close())
	}
	j.owned = true
	return j, nil
}

// NewJournal wraps a store the caller opened (for example memory.New()).
// The caller keeps ownership: Journal.Close does not close it.
func NewJournal(store Store, opts ...Option) (*Journal, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: nil store", ErrInvalidArgument)
	}
	return newJournal(store, newConfig(opts))
}

func newConfig(opts []Option) config {
	var cfg config
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	return cfg
}

func newJournal(store Store, cfg config) (*Journal, error) {
	log := logr.Discard()
	if cfg.log != nil {
		log = *cfg.log
	}
	mat, err := materialize.New(store, materialize.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("krply: %w", err)
	}
	planner, err := replay.NewPlanner(store, replay.WithPolicy(cfg.policy), replay.WithLogger(log))
	if err != nil {
		return nil, fmt.Errorf("krply: %w", err)
	}
	return &Journal{Materializer: mat, Planner: planner, store: store, cfg: cfg}, nil
}

// Store returns the journal's store, for the lower-level queries of
// storage.Reader (Streams, Records, …) and for storage.CoverageAt.
func (j *Journal) Store() Store { return j.store }

// Close closes the store if Open opened it; it does nothing for a store
// given to NewJournal. Stop the Collectors first.
func (j *Journal) Close() error {
	if !j.owned {
		return nil
	}
	return j.store.Close()
}

// Record returns a Collector that records the cluster cfg points at into
// the journal, configured by the Journal's options and then by extra. Run
// it with Start (it blocks until its context ends) and WaitForSync.
func (j *Journal) Record(cfg *rest.Config, extra ...watch.Option) (*watch.Collector, error) {
	if err := j.writable(); err != nil {
		return nil, err
	}
	return watch.NewCollectorForConfig(cfg, j.store, j.collectorOptions(extra)...)
}

// RecordClients is Record for clients the caller made, such as client-go
// fakes in a test.
func (j *Journal) RecordClients(dyn dynamic.Interface, disc discovery.DiscoveryInterface, extra ...watch.Option) (*watch.Collector, error) {
	if err := j.writable(); err != nil {
		return nil, err
	}
	return watch.NewCollector(dyn, disc, j.store, j.collectorOptions(extra)...)
}

// writable refuses to make a Collector for a journal opened read-only,
// which would fail at its first write.
func (j *Journal) writable() error {
	if j.owned && j.cfg.readOnly {
		return fmt.Errorf("krply: record: the journal was opened with WithReadOnly: %w", storage.ErrReadOnly)
	}
	return nil
}

func (j *Journal) collectorOptions(extra []watch.Option) []watch.Option {
	var opts []watch.Option
	if j.cfg.log != nil {
		opts = append(opts, watch.WithLogger(*j.cfg.log))
	}
	opts = append(opts, j.cfg.collector...)
	return append(opts, extra...)
}

// Object names an object for History and ObjectAt. resource is the plural
// resource name, with its group after a dot for every group but the core
// one: "configmaps", "deployments.apps", "widgets.example.com". namespace
// is "" for a cluster-scoped object.
func Object(clusterID, resource, namespace, name string) ObjectID {
	res, group, _ := strings.Cut(resource, ".")
	return ObjectID{ClusterID: clusterID, Group: group, Resource: res, Namespace: namespace, Name: name}
}

// Namespaces returns the scope of some namespaces of a cluster, or of the
// whole cluster when none is given.
func Namespaces(clusterID string, namespaces ...string) Scope {
	return Scope{ClusterID: clusterID, Namespaces: append([]string(nil), namespaces...)}
}
