package materialize

import (
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/krply/krply/storage"
)

// Sentinel errors of this package. Check them with errors.Is.
var (
	// ErrInvalidArgument: a call or constructor argument is unusable.
	ErrInvalidArgument = errors.New("materialize: invalid argument")
	// ErrReadOnly: the store cannot save snapshots (it is not a
	// storage.Writer).
	ErrReadOnly = errors.New("materialize: store cannot save snapshots")
	// ErrNotFound: no snapshot with that ID.
	ErrNotFound = errors.New("materialize: not found")
)

// Materializer answers questions about the past from a journal: an object at
// a time, an object's history, the state of a scope at a time (a snapshot)
// and what changed between two times. It is safe for concurrent use.
type Materializer struct {
	reader storage.Reader
	writer storage.Writer // nil when the store is read-only
	log    logr.Logger
	clock  clock.PassiveClock
	newID  func() string
}

type config struct {
	log   logr.Logger
	clock clock.PassiveClock
	newID func() string
}

// Option configures a Materializer.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithLogger sets the logger. The default discards everything.
func WithLogger(log logr.Logger) Option {
	return optionFunc(func(c *config) { c.log = log })
}

// WithClock sets the clock that stamps snapshots' CreatedAt and the time
// they are saved at. The default is the real clock.
func WithClock(clk clock.PassiveClock) Option {
	return optionFunc(func(c *config) { c.clock = clk })
}

// WithIDGenerator sets the function that makes the IDs SaveSnapshot gives
// snapshots. The default makes random UUIDs. IDs must be unique in the
// journal.
func WithIDGenerator(newID func() string) Option {
	return optionFunc(func(c *config) { c.newID = newID })
}

// New returns a Materializer reading store. Every query (ObjectAt,
// History, Snapshot, Diff, GetSnapshot, ListSnapshots) only reads, so store
// may be a plain storage.Reader, e.g. a journal opened read-only. To save
// snapshots (SaveSnapshot) store must also be a storage.Writer (any
// storage.Store is); otherwise SaveSnapshot returns ErrReadOnly. New starts
// no goroutines and does no I/O.
func New(store storage.Reader, opts ...Option) (*Materializer, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: nil store", ErrInvalidArgument)
	}
	cfg := config{log: logr.Discard(), clock: clock.RealClock{}, newID: newUUID}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if cfg.clock == nil {
		return nil, fmt.Errorf("%w: nil clock", ErrInvalidArgument)
	}
	if cfg.newID == nil {
		return nil, fmt.Errorf("%w: nil ID generator", ErrInvalidArgument)
	}
	m := &Materializer{reader: store, log: cfg.log, clock: cfg.clock, newID: cfg.newID}
	if w, ok := store.(storage.Writer); ok {
		m.writer = w
	}
	return m, nil
}
