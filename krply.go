package krply

import (
	"context"
	"errors"
	"fmt"
	"github.com/krply/krply/internal/buildinfo"
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

// Version returns the version of this module as the running program was
// built with it: the module version go build recorded (v1.2.3 when the
// program was built as a module dependency or installed with go install
// module@version), or "(devel)" when built from a working tree, where no
// version applies. It is read from the build information, so no constant
// can disagree with the tag a release was built from.
func Version() string { return buildinfo.Version() }

// Sentinel errors, the same values as storage's: errors.Is(err,
// ErrInvalidArgument), errors.Is(err, ErrNotFound) and errors.Is(err,
// ErrReadOnly) hold for the errors of every krply package, whichever of
// them returned it.
var (
	// ErrInvalidArgument: an argument or an option cannot be used, or an
	// option was given to a call that does not take it.
	ErrInvalidArgument = storage.ErrInvalidArgument
	// ErrNotFound: no saved plan, snapshot, record or object by that name.
	ErrNotFound = storage.ErrNotFound
	// ErrReadOnly: the journal was opened read-only (WithReadOnly), so
	// what writes — a Collector, SaveSnapshot, SavePlan, DryRun, Apply,
	// audit correlations, Compact — fails.
	ErrReadOnly = storage.ErrReadOnly
)

// Aliases of every krply type the exported API of this package names, so
// that recording, querying, planning, dry-running and applying need no
// other import; each package documents its own. TestRootSignaturesUseAliases
// keeps the set complete.
type (
	// Store is a journal backend (storage.Store).
	Store = storage.Store
	// ObjectID names an object across API versions and UIDs.
	ObjectID = storage.ObjectID
	// ObjectState is an object at a time, with its coverage.
	ObjectState = materialize.ObjectState
	// Scope selects the objects of a snapshot or a diff.
	Scope = materialize.Scope
	// Snapshot is the state of a scope at a time, with its completeness.
	Snapshot = materialize.Snapshot
	// Page selects one page of a snapshot's or a diff's objects.
	Page = materialize.Page
	// History is one object's versions with field changes and gaps.
	History = materialize.History
	// Diff is what changed in a scope between two times.
	Diff = materialize.Diff
	// HistoryOption adjusts a History call (materialize.HistoryOption).
	HistoryOption = materialize.HistoryOption
	// CompareOption says how History and Diff compare versions; every
	// CompareOption is a HistoryOption (materialize.CompareOption).
	CompareOption = materialize.CompareOption
	// FindQuery says which objects Find looks at (materialize.FindQuery).
	FindQuery = materialize.FindQuery
	// Found is Find's answer: the intervals during which a condition held
	// (materialize.Found).
	Found = materialize.Found
	// Predicate is Find's condition (materialize.Predicate); CEL's comes
	// from module github.com/krply/krply/cel.
	Predicate = materialize.Predicate
	// Materializer answers the queries (materialize.Materializer).
	Materializer = materialize.Materializer
	// Querier is what a Journal and the query API's Go client
	// (server/client) both answer, alike (materialize.Querier).
	Querier = materialize.Querier
	// Plan is a reviewed-before-applied replay.
	Plan = replay.Plan
	// Policy decides what a replay plan may contain.
	Policy = replay.Policy
	// Source and Target say what a plan rebuilds and where.
	Source = replay.Source
	Target = replay.Target
	// Cluster is the target cluster DryRun and Apply write through; make
	// one with NewCluster or NewClusterForConfig.
	Cluster = replay.Cluster
	// ClusterOption configures a Cluster (replay.ClusterOption).
	ClusterOption = replay.ClusterOption
	// Confirmation names the saved plan and hash Apply may write.
	Confirmation = replay.Confirmation
	// DryRunReport is what a server-side dry run of a plan found.
	DryRunReport = replay.DryRunReport
	// ApplyReport is what Apply wrote, per object.
	ApplyReport = replay.ApplyReport
	// Planner makes, saves, dry-runs and applies plans (replay.Planner).
	Planner = replay.Planner
	// Collector records a cluster into the journal (watch.Collector).
	Collector = watch.Collector
	// CollectorOption configures a Collector (watch.Option).
	CollectorOption = watch.Option
	// SQLiteOption configures the SQLite journal Open opens (sqlite.Option).
	SQLiteOption = sqlite.Option
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
	openOnly  []string // the options given that only Open takes
}

// WithResources sets what the Journal's Collectors record (see watch.WithResources):
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

// WithCollectorOptions passes any other watch options to the Journal's
// Collectors.
func WithCollectorOptions(opts ...CollectorOption) Option {
	opts = append([]CollectorOption(nil), opts...)
	return optionFunc(func(c *config) { c.collector = append(c.collector, opts...) })
}

// WithPolicy sets the replay policy of Plan (default: the zero Policy,
// the safe one).
func WithPolicy(p Policy) Option {
	return optionFunc(func(c *config) { c.policy = p })
}

// WithLogger sets the logger of the journal, its queries, its planner and
// the Collectors it makes. The default discards everything; Collectors
// then log to logr.FromContextOrDiscard of Start's context.
func WithLogger(l logr.Logger) Option {
	return optionFunc(func(c *config) { c.log = &l })
}

// WithSQLiteOptions passes options to sqlite.Open. Only Open takes it:
// NewJournal, whose store the caller opened, returns ErrInvalidArgument.
func WithSQLiteOptions(opts ...SQLiteOption) Option {
	opts = append([]SQLiteOption(nil), opts...)
	return optionFunc(func(c *config) {
		c.sqlite, c.openOnly = append(c.sqlite, opts...), append(c.openOnly, "WithSQLiteOptions")
	})
}

// WithReadOnly opens the journal read-only (see sqlite.WithReadOnly), for
// a process that only queries it: Open never creates, migrates or writes
// the file, and every query answers, seeing what recorders commit
// meanwhile. What writes — a Collector (NewCollector refuses), saving a
// snapshot, a plan or audit correlations, Compact — fails with an error
// wrapping ErrReadOnly (storage.ErrReadOnly). Without it, Open of a
// journal this process may not write fails at once, wrapping ErrReadOnly
// and saying to use it. Only Open takes it: NewJournal returns
// ErrInvalidArgument.
func WithReadOnly() Option {
	return optionFunc(func(c *config) { c.readOnly, c.openOnly = true, append(c.openOnly, "WithReadOnly") })
}

// Journal is a krply journal with everything that reads and writes it: the
// queries (ObjectAt, History, Snapshot, Diff, GetSnapshot, ListSnapshots),
// replay planning (Plan, LoadPlan), the explicit writes (SaveSnapshot,
// SavePlan, DryRun, Apply), and NewCollector, which makes a Collector
// appending to it. Queries only read. It is safe for concurrent use.
//
// Its methods forward to a materialize.Materializer and a replay.Planner on
// the journal's store, which Materializer and Planner return for APIs that
// take them.
type Journal struct {
	mat     *materialize.Materializer
	planner *replay.Planner
	store   Store
	owned   bool
	cfg     config
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
		if strings.Contains(err.Error(), path) {
			return nil, err // sqlite.Open's errors name the file
		}
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
// The caller keeps ownership: Journal.Close does not close it. The options
// of the store's own opening (WithSQLiteOptions, WithReadOnly) are Open's;
// given here they are an ErrInvalidArgument.
func NewJournal(store Store, opts ...Option) (*Journal, error) {
	if store == nil {
		return nil, fmt.Errorf("krply: %w: nil store", ErrInvalidArgument)
	}
	cfg := newConfig(opts)
	if len(cfg.openOnly) > 0 {
		return nil, fmt.Errorf("krply: %w: NewJournal takes a store already open, so %s (options of Open) cannot apply; give them to the store's own constructor, such as sqlite.Open",
			ErrInvalidArgument, strings.Join(cfg.openOnly, ", "))
	}
	return newJournal(store, cfg)
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
	return &Journal{mat: mat, planner: planner, store: store, cfg: cfg}, nil
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

// NewCollector returns a Collector that records into the journal through
// clients the caller made, such as client-go fakes in a test (see
// watch.NewCollector), configured by the Journal's options and then by
// extra. Run it with Start (it blocks until its context ends) and
// WaitForSync.
func (j *Journal) NewCollector(dyn dynamic.Interface, disc discovery.DiscoveryInterface, extra ...CollectorOption) (*Collector, error) {
	if err := j.writable(); err != nil {
		return nil, err
	}
	return watch.NewCollector(dyn, disc, j.store, j.collectorOptions(extra)...)
}

// NewCollectorForConfig returns a Collector that records the cluster cfg
// points at into the journal (see watch.NewCollectorForConfig), configured
// by the Journal's options and then by extra.
func (j *Journal) NewCollectorForConfig(cfg *rest.Config, extra ...CollectorOption) (*Collector, error) {
	if err := j.writable(); err != nil {
		return nil, err
	}
	return watch.NewCollectorForConfig(cfg, j.store, j.collectorOptions(extra)...)
}

// writable refuses to make a Collector for a journal opened read-only,
// which would fail at its first write.
func (j *Journal) writable() error {
	if j.owned && j.cfg.readOnly {
		return fmt.Errorf("krply: new collector: the journal was opened with WithReadOnly: %w", storage.ErrReadOnly)
	}
	return nil
}

func (j *Journal) collectorOptions(extra []CollectorOption) []CollectorOption {
	var opts []CollectorOption
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

// NewCluster returns the target cluster reached through dyn that DryRun and
// Apply write to (see replay.NewCluster).
func NewCluster(dyn dynamic.Interface, opts ...ClusterOption) (*Cluster, error) {
	return replay.NewCluster(dyn, opts...)
}

// NewClusterForConfig returns the target cluster cfg points at (see
// replay.NewClusterForConfig).
func NewClusterForConfig(cfg *rest.Config, opts ...ClusterOption) (*Cluster, error) {
	return replay.NewClusterForConfig(cfg, opts...)
}
