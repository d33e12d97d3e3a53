package postgres

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/krply/krply/storage"
)

var (
	_ storage.Store           = (*Store)(nil)
	_ storage.TimelineReader  = (*Store)(nil)
	_ storage.WatermarkReader = (*Store)(nil)
	_ storage.StreamRestorer  = (*Store)(nil)
	_ storage.MultiGetter     = (*Store)(nil)
)

// Store is a krply journal in a PostgreSQL database. It is safe for
// concurrent use by any number of goroutines and processes; see the
// package documentation for what many writers may do.
type Store struct {
	reader
	pool   *pgxpool.Pool
	log    logr.Logger
	closed atomic.Bool
	parts  partitions
}

// Option configures Open.
type Option interface {
	apply(*config)
}

type config struct {
	log      logr.Logger
	schema   string
	maxConns int32
	width    time.Duration
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithLogger sets the logger the store reports compactions and retries to
// (at V(1)). The default discards everything.
func WithLogger(log logr.Logger) Option {
	return optionFunc(func(c *config) { c.log = log })
}

// WithSchema keeps the journal's tables in the named PostgreSQL schema,
// created when missing, instead of the connection's search_path (usually
// "public"). Journals in different schemas of one database are separate.
func WithSchema(name string) Option {
	return optionFunc(func(c *config) { c.schema = name })
}

// WithPartitionWidth sets the span of ObservedAt that each partition of
// the records table holds (default DefaultPartitionWidth, one day) when
// Open creates the journal's tables. Compact drops the partitions that
// lie entirely before its cut. A journal keeps the width it was created
// with; opening it with another is refused with ErrInvalidArgument.
func WithPartitionWidth(d time.Duration) Option {
	return optionFunc(func(c *config) { c.width = d })
}

// WithMaxConns caps the store's connection pool (default: pgxpool's,
// the larger of 4 and the number of CPUs; or pool_max_conns in the
// connection string).
func WithMaxConns(n int) Option {
	return optionFunc(func(c *config) { c.maxConns = int32(n) })
}

// Open connects to the PostgreSQL database named by dsn (a connection
// string or URL, as pgx reads it: "postgres://user@host:5432/db" or
// "host=… dbname=…") and returns the journal kept in it, creating its
// tables when the database (or the schema of WithSchema) has none. Tables
// written by a newer krply are refused with an error wrapping
// storage.ErrIncompatible; a dsn that cannot be parsed or an option out of
// range, with storage.ErrInvalidArgument.
func Open(ctx context.Context, dsn string, opts ...Option) (*Store, error) {
	cfg := config{log: logr.Discard()}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	if cfg.width < 0 || cfg.width > 0 && cfg.width < time.Millisecond {
		return nil, fmt.Errorf("postgres: WithPartitionWidth(%s): %w: use at least a millisecond (a day is usual)", cfg.width, storage.ErrInvalidArgument)
	}
	if cfg.maxConns < 0 {
		return nil, fmt.Errorf("postgres: WithMaxConns(%d): %w: the pool needs at least one connection", cfg.maxConns, storage.ErrInvalidArgument)
	}
	pc, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w: the connection string cannot be parsed: %v", storage.ErrInvalidArgument, err)
	}
	if cfg.schema != "" {
		pc.ConnConfig.RuntimeParams["search_path"] = cfg.schema
	}
	if cfg.maxConns > 0 {
		pc.MaxConns = cfg.maxConns
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres: open: %w", err)
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		pool.Close()
		return nil, fmt.Errorf("postgres: open: connecting to %s: %w", pc.ConnConfig.Host, err)
	}
	err = migrate(ctx, conn.Conn(), cfg.schema, &cfg.width)
	conn.Release()
	if err != nil {
		pool.Close()
		if errors.Is(err, storage.ErrInvalidArgument) {
			return nil, fmt.Errorf("postgres: open: %w", err)
		}
		return nil, fmt.Errorf("postgres: open: setting up the tables: %w", err)
	}
	s := &Store{pool: pool, log: cfg.log, parts: partitions{width: cfg.width, known: map[int64]bool{}}}
	s.reader = reader{q: pool, closed: &s.closed, parts: &s.parts, commitOrdered: true, timelines: &timelineCache{}}
	return s, nil
}

// Close closes the connection pool. Calls after Close return
// storage.ErrClosed.
func (s *Store) Close() error {
	if s.closed.Swap(true) {
		return fmt.Errorf("postgres: close: %w", storage.ErrClosed)
	}
	s.pool.Close()
	return nil
}

// inTx runs f in a transaction, again when PostgreSQL aborted it for a
// deadlock or a serialization failure (another writer's transaction won).
func (s *Store) inTx(ctx context.Context, what string, f func(pgx.Tx) error) error {
	for attempt := 0; ; attempt++ {
		err := pgx.BeginFunc(ctx, s.pool, f)
		var pe *pgconn.PgError
		if err != nil && errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001") && attempt < 10 {
			s.log.V(1).Info("retrying a transaction", "what", what, "code", pe.Code, "attempt", attempt+1)
			continue
		}
		return err
	}
}
