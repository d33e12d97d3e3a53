package memory

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/journal"
)

// Store is an in-memory journal. The zero value is not usable; call New.
type Store struct {
	log logr.Logger

	mu     sync.RWMutex
	closed bool
	st     state
}

var (
	_ storage.Store          = (*Store)(nil)
	_ storage.TimelineReader = (*Store)(nil)
)

// Option configures a Store.
type Option interface {
	apply(*config)
}

type config struct {
	log logr.Logger
}

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

// WithLogger sets the logger the store reports compactions to (at V(1)).
// The default discards everything.
func WithLogger(log logr.Logger) Option {
	return optionFunc(func(c *config) { c.log = log })
}

// New returns an empty in-memory store.
func New(opts ...Option) *Store {
	cfg := config{log: logr.Discard()}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	s := &Store{log: cfg.log}
	s.st.init()
	return s
}

// Close releases the store's memory. Calls after Close return
// storage.ErrClosed; closing twice returns it too.
func (s *Store) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("memory: close: %w", storage.ErrClosed)
	}
	s.closed = true
	s.st = state{}
	return nil
}

// read runs f under the read lock, unless the store is closed.
func (s *Store) read(ctx context.Context, what string, f func() error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("memory: %s: %w", what, err)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return fmt.Errorf("memory: %s: %w", what, storage.ErrClosed)
	}
	return f()
}

// Append stores a batch atomically; see storage.Writer.
func (s *Store) Append(ctx context.Context, records []event.Record) (storage.AppendResult, error) {
	if err := ctx.Err(); err != nil {
		return storage.AppendResult{}, fmt.Errorf("memory: append: %w", err)
	}
	// Validate and copy before taking the lock: nothing of the batch is
	// stored unless all of it is valid.
	batch := make([]*event.Record, len(records))
	for i := range records {
		rec := copyRecord(&records[i], true)
		if err := journal.Validate(rec); err != nil {
			return storage.AppendResult{}, fmt.Errorf("memory: append: record %d of %d: %w", i, len(records), err)
		}
		if len(rec.Object) > 0 && rec.ObjectHash == "" {
			rec.ObjectHash = event.ObjectHash(rec.Object)
		}
		batch[i] = rec
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return storage.AppendResult{}, fmt.Errorf("memory: append: %w", storage.ErrClosed)
	}
	res := storage.AppendResult{Seqs: make([]int64, len(batch))}
	for i, rec := range batch {
		if e, ok := s.st.byID[rec.EventID]; ok {
			res.Seqs[i] = e.IngestSeq
			res.Duplicates++
			continue
		}
		s.st.seq++
		rec.IngestSeq = s.st.seq
		s.st.add(rec, true)
		res.Seqs[i] = rec.IngestSeq
		res.Inserted++
	}
	return res, nil
}

// Get returns the record with the given EventID.
func (s *Store) Get(ctx context.Context, eventID string) (out event.Record, err error) {
	err = s.read(ctx, "get", func() error { out, err = s.view().Get(ctx, eventID); return err })
	return out, err
}

// Records returns one page of the records matching q; see storage.Reader.
func (s *Store) Records(ctx context.Context, q storage.Query) (out storage.Page, err error) {
	err = s.read(ctx, "records", func() error { out, err = s.view().Records(ctx, q); return err })
	return out, err
}

// StreamStatus returns the durable state of one stream.
func (s *Store) StreamStatus(ctx context.Context, streamID string) (out storage.StreamStatus, err error) {
	err = s.read(ctx, "stream status", func() error { out, err = s.view().StreamStatus(ctx, streamID); return err })
	return out, err
}

// Streams returns the status of every stream of a cluster ("" for all),
// ordered by stream ID.
func (s *Store) Streams(ctx context.Context, clusterID string) (out []storage.StreamStatus, err error) {
	err = s.read(ctx, "streams", func() error { out, err = s.view().Streams(ctx, clusterID); return err })
	return out, err
}

// Timelines returns the timeline of every stream of a cluster ("" for
// all), ordered by stream ID; see storage.TimelineReader. The records are
// shared between callers and must not be modified.
func (s *Store) Timelines(ctx context.Context, clusterID string) (out []storage.Timeline, err error) {
	err = s.read(ctx, "timelines", func() error { out, err = s.view().Timelines(ctx, clusterID); return err })
	return out, err
}

// ObjectHistory returns the object-change records of one object in
// IngestSeq order; see storage.Reader.
func (s *Store) ObjectHistory(ctx context.Context, obj storage.ObjectID, q storage.HistoryQuery) (out []event.Record, err error) {
	err = s.read(ctx, "object history", func() error { out, err = s.view().ObjectHistory(ctx, obj, q); return err })
	return out, err
}

// LatestAt returns the last object-change record of obj observed at or
// before at; see storage.Reader.
func (s *Store) LatestAt(ctx context.Context, obj storage.ObjectID, at time.Time) (out event.Record, err error) {
	err = s.read(ctx, "latest at", func() error { out, err = s.view().LatestAt(ctx, obj, at); return err })
	return out, err
}

// AliveAt returns the last record of every object alive at q.At; see
// storage.Reader.
func (s *Store) AliveAt(ctx context.Context, q storage.AliveQuery) (out []event.Record, err error) {
	err = s.read(ctx, "alive at", func() error { out, err = s.view().AliveAt(ctx, q); return err })
	return out, err
}

// EventByResourceVersion returns the object-change record of obj with the
// given resourceVersion (and UID, when not empty).
func (s *Store) EventByResourceVersion(ctx context.Context, obj storage.ObjectID, uid, rv string) (out event.Record, err error) {
	err = s.read(ctx, "event by resourceVersion", func() error {
		out, err = s.view().EventByResourceVersion(ctx, obj, uid, rv)
		return err
	})
	return out, err
}

// Correlations returns the audit correlations pointing at each EventID.
func (s *Store) Correlations(ctx context.Context, eventIDs []string) (out map[string][]event.Record, err error) {
	err = s.read(ctx, "correlations", func() error { out, err = s.view().Correlations(ctx, eventIDs); return err })
	return out, err
}

// Stats returns the size of the journal. BodyBytes equals RawBodyBytes:
// bodies are shared by hash but not compressed; FileBytes is 0.
func (s *Store) Stats(ctx context.Context) (out storage.Stats, err error) {
	err = s.read(ctx, "stats", func() error { out, err = s.view().Stats(ctx); return err })
	return out, err
}

func objectKey(obj storage.ObjectID) string {
	if obj.Namespace == "" {
		return obj.Name
	}
	return obj.Namespace + "/" + obj.Name
}

// copyRecord returns a deep copy of rec, so that neither the caller nor the
// store can change the other's data.
func copyRecord(rec *event.Record, withBody bool) *event.Record {
	c := *rec
	if withBody && rec.Object != nil {
		c.Object = append([]byte(nil), rec.Object...)
	} else if !withBody {
		c.Object = nil
	}
	if rec.Gap != nil {
		g := *rec.Gap
		c.Gap = &g
	}
	if rec.Coverage != nil {
		v := *rec.Coverage
		c.Coverage = &v
	}
	if rec.Baseline != nil {
		v := *rec.Baseline
		c.Baseline = &v
	}
	if rec.Checkpoint != nil {
		v := *rec.Checkpoint
		c.Checkpoint = &v
	}
	if rec.Saved != nil {
		v := *rec.Saved
		c.Saved = &v
	}
	if rec.Audit != nil {
		v := *rec.Audit
		v.Groups = append([]string(nil), rec.Audit.Groups...)
		v.SourceIPs = append([]string(nil), rec.Audit.SourceIPs...)
		if rec.Audit.Groups == nil {
			v.Groups = nil
		}
		if rec.Audit.SourceIPs == nil {
			v.SourceIPs = nil
		}
		c.Audit = &v
	}
	if rec.Inferred != nil {
		v := *rec.Inferred
		c.Inferred = &v
	}
	return &c
}

// sortByObject orders AliveAt's answer by cluster, group, resource,
// namespace and name.
func sortByObject(recs []*event.Record) {
	slices.SortFunc(recs, func(x, y *event.Record) int {
		a, b := storage.ObjectIDOf(*x), storage.ObjectIDOf(*y)
		return cmp.Or(cmp.Compare(a.ClusterID, b.ClusterID), cmp.Compare(a.Group, b.Group),
			cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
}
