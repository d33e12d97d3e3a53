package materialize

import (
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/krply/krply/storage"
)

// Sentinel errors of this package. Check them with errors.Is.
var (
	// ErrInvalidArgument: a call or constructor argument or option is
	// unusable. It is storage.ErrInvalidArgument, the sentinel of every
	// krply package.
	ErrInvalidArgument = storage.ErrInvalidArgument
	// ErrReadOnly: the store refuses writes (it was opened read-only), so
	// SaveSnapshot cannot save. It is storage.ErrReadOnly.
	ErrReadOnly = storage.ErrReadOnly
	// ErrNotFound: no snapshot with that ID. It is storage.ErrNotFound.
	ErrNotFound = storage.ErrNotFound
)

// Materializer answers questions about the past from a journal: an object at
// a time, an object's history, the state of a scope at a time (a snapshot)
// and what changed between two times. It is safe for concurrent use.
type Materializer struct {
	store storage.ReadWriter
	log   logr.Logger
	clock clock.PassiveClock
	newID func() string
	// resourceStreams guesses, for ObjectAt, which streams record a
	// resource: see timelinesOf.
	resourceStreams sync.Map // resourceKey -> []event.Stream
	// pages remembers states for the pages after a first (page.go).
	pages pageStates
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

// New returns a Materializer on store. Every query (ObjectAt, History,
// Snapshot, Diff, GetSnapshot, ListSnapshots) only reads, so a journal
// opened read-only answers them all; SaveSnapshot is the only write, and on
// a read-only journal it returns an error wrapping ErrReadOnly. The caller
// keeps store and closes it. New starts no goroutines and does no I/O.
func New(store storage.ReadWriter, opts ...Option) (*Materializer, error) {
	if store == nil {
		return nil, fmt.Errorf("materialize: %w: nil store", ErrInvalidArgument)
	}
	cfg := config{log: logr.Discard(), clock: clock.RealClock{}, newID: newUUID}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if cfg.clock == nil {
		return nil, fmt.Errorf("materialize: %w: nil clock", ErrInvalidArgument)
	}
	if cfg.newID == nil {
		return nil, fmt.Errorf("materialize: %w: nil ID generator", ErrInvalidArgument)
	}
	return &Materializer{store: store, log: cfg.log, clock: cfg.clock, newID: cfg.newID}, nil
}
