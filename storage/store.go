package storage

import (
	"context"
	"errors"
	"time"

	"github.com/krply/krply/event"
)

// Sentinel errors. Check them with errors.Is; backends wrap them with
// context (the file, the stream, the ID).
var (
	// ErrNotFound: no record, stream or object matches.
	ErrNotFound = errors.New("storage: not found")
	// ErrClosed: the store was closed.
	ErrClosed = errors.New("storage: closed")
	// ErrInvalidRecord: a record cannot be stored as given (missing
	// EventID, unknown type, a payload that does not match the type).
	ErrInvalidRecord = errors.New("storage: invalid record")
	// ErrInvalidQuery: a query cannot be answered as given, e.g. a page
	// cursor that no page of this store returned.
	ErrInvalidQuery = errors.New("storage: invalid query")
	// ErrIncompatible: the file was written by a newer krply, is not a krply
	// journal, or is corrupt. The store leaves such a file untouched.
	ErrIncompatible = errors.New("storage: incompatible journal file")
	// ErrReadOnly: the store was opened read-only, so Append and Compact
	// are refused, and so is every consumer call that saves something (a
	// snapshot, a plan, a report, audit correlations); or a writable open
	// found a journal it cannot write. materialize and replay export it as
	// their ErrReadOnly (the same value).
	ErrReadOnly = errors.New("storage: read-only journal")
	// ErrInvalidArgument: an argument or an option of a call or a
	// constructor cannot be used: a nil store, a negative limit, an option
	// value out of range, an option the call does not take. It is the one
	// sentinel for this across krply: krply, watch, materialize, replay,
	// audit and storage/sqlite export it as their ErrInvalidArgument (the
	// same value), and their errors name the package, the argument and
	// what would work.
	ErrInvalidArgument = errors.New("invalid argument")
)

// Store is a journal backend. Implementations are safe for concurrent use
// by any number of goroutines: writes (Append, Compact) are serialized and
// readers see whole batches. A durable backend may also let several
// processes share one journal, each process's writes serialized with the
// others' and never colliding (storage/sqlite does); each backend
// documents its contract.
type Store interface {
	ReadWriter
	// Close releases the store. Calls after Close return ErrClosed.
	Close() error
}

// ReadWriter is what every consumer of a journal takes: the Collector
// (watch.NewCollector), the Materializer (materialize.New), the Planner
// (replay.NewPlanner) and the audit Correlator (audit.NewCorrelator). It is
// a Store without Close: the caller that opened the store keeps it and
// closes it. A store opened read-only (storage/sqlite WithReadOnly) is a
// ReadWriter too; its Append and Compact return an error wrapping
// ErrReadOnly, and so does every consumer call that would save something
// in it.
type ReadWriter interface {
	Reader
	Writer
}

// Writer appends to the journal.
type Writer interface {
	// Append stores the records of a batch in one transaction, in order:
	// either all of them are durable or none is. A record whose EventID is
	// already stored is not stored again; its existing sequence number is
	// returned, and that is not an error. A record with a body and no
	// ObjectHash is stored with its ObjectHash filled in; a given one is
	// checked.
	//
	// Each stream's checkpoint advances in the same transaction to the
	// resourceVersion of the last record of the batch (in batch order) that
	// carries stream progress: a non-synthetic event, a checkpoint record,
	// or a baseline end. Synthetic baseline items and inferred deletions
	// never move the checkpoint. resourceVersions are never compared.
	//
	// Within a stream, ObservedAt must not decrease in append order;
	// queries bounded by time rely on it (Records with a StreamID and an
	// Until seeks to the last record observed at or before Until instead
	// of walking every later record). Append neither checks nor alters it.
	// (Compact's own baseline records are placed so that these queries
	// stay exact although they break the order.)
	Append(ctx context.Context, records []event.Record) (AppendResult, error)

	// Compact removes what is no longer needed to answer questions about
	// times at or after before. Every answer of this interface for a time
	// at or after before stays the same: for each stream the state at
	// before is folded into a synthetic baseline (the last version of each
	// object alive at before is kept as is), together with the gap and
	// coverage records that still decide coverage after before. Snapshots,
	// plans and audit correlations of kept events are kept. An object
	// deleted before before is gone afterwards: LatestAt answers ErrNotFound
	// for it instead of its DELETED record, which means the same ("absent").
	Compact(ctx context.Context, before time.Time) (CompactResult, error)
}

// ResourceCompactor is implemented by a Writer that can compact the
// streams of some resources alone, so that a resource with a great volume
// and little lasting value (Kubernetes Events) can have a retention of its
// own. The stores of this module and storage/postgres implement it.
type ResourceCompactor interface {
	// CompactResources is Compact(ctx, before) for the streams of the given
	// resources ("events" for the core group, "resource.group" otherwise,
	// e.g. "events.events.k8s.io") and for them only: every answer about
	// those streams for a time at or after before stays the same, and no
	// record of any other stream is removed or changed. For a time before
	// before, a compacted stream's coverage says that its history kept
	// begins later, never that it is covered without its records. Audit
	// correlations go with the events they point at. No resource named,
	// nothing is done.
	CompactResources(ctx context.Context, before time.Time, resources []string) (CompactResult, error)
}

// BulkAppender is implemented by a Writer that appends many batches
// faster in one transaction than in one transaction each. A journal
// clustered by object, as the SQLite store's is, rewrites a page of every
// object a batch touches at each commit; a bulk writes it once.
// storage/transfer's Import uses it. The SQLite store implements it.
type BulkAppender interface {
	// BeginBulk begins a transaction that the Bulk's Append calls add
	// batches to. Until the Bulk commits or rolls back, no reader sees
	// any of it and every other write of the journal waits, so the
	// goroutine holding a Bulk must not Append to the same Writer.
	BeginBulk(ctx context.Context) (Bulk, error)
}

// Bulk is the transaction of BulkAppender.BeginBulk. Its methods must not
// be called concurrently.
type Bulk interface {
	// Append is Writer.Append within the transaction: the batch's records
	// are given their sequence numbers, and records already stored (by
	// the journal or by an earlier Append of the Bulk) are duplicates;
	// but nothing is durable before Commit. After an error the Bulk can
	// only be rolled back: every later Append and Commit returns an
	// error.
	Append(ctx context.Context, records []event.Record) (AppendResult, error)
	// Commit makes every batch appended durable at once.
	Commit() error
	// Rollback discards every batch appended. After Commit it does
	// nothing and returns nil, so that it can be deferred.
	Rollback() error
}

// StreamRestorer is implemented by a Writer that can set the durable
// state of a stream that its records may no longer give: a Compact keeps
// each stream's checkpoint and availability as they were although it may
// remove the records they came from (journal.RebuildStatus), so a copy of
// the records alone can differ there. storage/transfer's Import restores
// them with it, only for a stream whose records in the importing journal
// are exactly those the exported stream had. Both stores of this module
// and storage/postgres implement it.
type StreamRestorer interface {
	// RestoreStreams sets, for each given status, the stream's
	// CheckpointRV, CheckpointAt, Available and AvailabilityReason, all in
	// one transaction; a stream the journal has no record of is created
	// with no record. Every other field of the stream stays what its
	// records make it. The caller vouches for the state: a checkpoint
	// later than the stream's records claims evidence the journal does
	// not hold. A store opened read-only returns an error wrapping
	// ErrReadOnly; a status whose StreamID ParseStreamID refuses,
	// ErrInvalidRecord.
	RestoreStreams(ctx context.Context, streams []StreamStatus) error
}

// AppendResult reports what Append did.
type AppendResult struct {
	// Seqs holds, for each record of the batch in order, its IngestSeq:
	// the new one, or the existing one for a duplicate.
	Seqs []int64 `json:"seqs,omitempty"`
	// Inserted counts the records stored by this call.
	Inserted int `json:"inserted"`
	// Duplicates counts the records that were already stored.
	Duplicates int `json:"duplicates"`
}

// CompactResult reports what Compact did.
type CompactResult struct {
	RecordsRemoved int64 `json:"recordsRemoved"`
	BodiesRemoved  int64 `json:"bodiesRemoved"`
	// Streams counts the streams folded into a synthetic baseline.
	Streams int `json:"streams"`
}

// Reader answers the queries the collector, materializer, planner and audit
// correlator need. Every query uses an index; none scans the whole journal.
//
// # Open baselines
//
// A baseline is trusted only once its end record exists. The items of a
// baseline that has a begin record but no end record — a list that is
// still running, or one whose recorder was killed mid-list — are left out
// of every object query (ObjectHistory, LatestAt, AliveAt,
// EventByResourceVersion): those answer as if the items were not there.
// The items of a baseline are the synthetic object changes of its stream
// that carry its BaselineID (Timeline.InOpenBaseline tells them apart).
// When the end is appended, the items become visible together; a baseline
// that never ends (a restart lists again under a new ID: the new baseline
// supersedes it) stays invisible until compaction removes it. Get,
// Records and Correlations return records as stored, open items included;
// a caller of Records that must tell them apart reads the stream's
// Timeline.
type Reader interface {
	// Get returns the record with the given EventID, as stored.
	Get(ctx context.Context, eventID string) (event.Record, error)

	// Records returns the records that match q, ordered by IngestSeq
	// (descending when q.Descending), at most q.Limit of them, and a cursor
	// for the next page ("" when there is none). It returns the journal as
	// stored: the items of open baselines are included (see Open
	// baselines above).
	Records(ctx context.Context, q Query) (Page, error)

	// StreamStatus returns the durable state of one stream; ErrNotFound if
	// the journal has no record of it.
	StreamStatus(ctx context.Context, streamID string) (StreamStatus, error)
	// Streams returns the status of every stream of a cluster ("" for all
	// clusters), ordered by stream ID.
	Streams(ctx context.Context, clusterID string) ([]StreamStatus, error)

	// ObjectHistory returns the object-change records (TypeEvent) of one
	// object in IngestSeq order, across UIDs (a re-created object keeps
	// its history), restricted by q's time range and limit. Items of open
	// baselines are left out.
	ObjectHistory(ctx context.Context, obj ObjectID, q HistoryQuery) ([]event.Record, error)

	// LatestAt returns the last object-change record of obj observed at or
	// before at (ties broken by IngestSeq), items of open baselines left
	// out. It may be a DELETED record; the caller decides what a deletion
	// means. ErrNotFound when none exists.
	LatestAt(ctx context.Context, obj ObjectID, at time.Time) (event.Record, error)

	// AliveAt returns, for every object whose last object-change record at
	// or before q.At (items of open baselines left out, but see
	// q.IncludeBaseline) is not a deletion, that record, ordered by object.
	AliveAt(ctx context.Context, q AliveQuery) ([]event.Record, error)

	// EventByResourceVersion returns the record of the write that made
	// version rv of obj (of UID uid, when uid is not empty): the first
	// real (non-synthetic) object change with that resourceVersion, in
	// IngestSeq order. Only when no real event has it, it returns the
	// first synthetic one — a baseline item or an inferred deletion, which
	// shows the version but is no evidence of the write; the caller checks
	// Record.Synthetic. Items of open baselines are left out. The answer
	// does not change when later records (another relist) repeat the
	// version. ErrNotFound when no record has it.
	EventByResourceVersion(ctx context.Context, obj ObjectID, uid, rv string) (event.Record, error)

	// Correlations returns the audit_correlation records that point at
	// each of the given journal EventIDs, keyed by that EventID.
	Correlations(ctx context.Context, eventIDs []string) (map[string][]event.Record, error)

	// Stats returns the size of the journal.
	Stats(ctx context.Context) (Stats, error)
}

// ObjectID names an object independently of API version and UID: a
// re-created object with the same name has the same ObjectID.
type ObjectID struct {
	ClusterID string `json:"clusterID"`
	Group     string `json:"group,omitempty"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

// ObjectIDOf returns the ObjectID of the object a record is about.
func ObjectIDOf(r event.Record) ObjectID {
	return ObjectID{
		ClusterID: r.ClusterID,
		Group:     r.Resource.Group,
		Resource:  r.Resource.Resource,
		Namespace: r.Resource.Namespace,
		Name:      r.Resource.Name,
	}
}

// Query selects records. Zero fields do not restrict.
type Query struct {
	ClusterID string
	StreamID  string
	// Types restricts the record types; empty means all.
	Types []event.RecordType
	// Since and Until bound ObservedAt: Since <= ObservedAt <= Until.
	Since, Until time.Time
	// AfterSeq and BeforeSeq bound IngestSeq exclusively.
	AfterSeq, BeforeSeq int64
	// Descending orders by IngestSeq from newest to oldest.
	Descending bool
	// Limit caps the page size; 0 means the backend's default (1000).
	Limit int
	// Cursor continues a previous page; the other fields must not change.
	Cursor string
	// WithoutBodies leaves Record.Object empty, which is cheaper.
	WithoutBodies bool
}

// Page is one page of Records.
type Page struct {
	Records []event.Record `json:"records,omitempty"`
	// Next is the cursor of the next page, "" when this is the last.
	Next string `json:"next,omitempty"`
}

// HistoryQuery restricts ObjectHistory. Zero fields do not restrict.
type HistoryQuery struct {
	Since, Until time.Time
	// StreamID keeps only the records of one stream.
	StreamID string
	// AfterSeq keeps only the records whose IngestSeq is greater: the
	// next page of a history after its last record, whatever was
	// appended meanwhile.
	AfterSeq int64
	// Limit caps the number of records; 0 means no cap.
	Limit int
	// WithoutBodies leaves Record.Object empty.
	WithoutBodies bool
}

// AliveQuery selects the objects alive at a time. StreamID, or else
// ClusterID with optional Namespace, Group and Resource, chooses the objects.
type AliveQuery struct {
	At        time.Time
	StreamID  string
	ClusterID string
	Namespace string
	Group     string
	Resource  string
	// WithoutBodies leaves Record.Object empty; the collector uses it to
	// find inferred deletions without reading bodies.
	WithoutBodies bool
	// IncludeBaseline counts the items of the open baseline with this ID
	// as if it had ended. The Collector, which is writing that baseline,
	// uses it to find the objects the baseline lacks before it appends
	// the end (and the inferred deletions) in one batch.
	IncludeBaseline string
}

// StreamStatus is the durable state of one stream, kept up to date by Append.
type StreamStatus struct {
	StreamID string       `json:"streamID"`
	Stream   event.Stream `json:"stream"`
	// CheckpointRV is the resourceVersion the stream is durably continuous
	// up to, and CheckpointAt the ObservedAt of the record that set it.
	CheckpointRV string    `json:"checkpointRV,omitempty"`
	CheckpointAt time.Time `json:"checkpointAt,omitzero"`
	// Available is false after a coverage change to unavailable, until a
	// coverage change to available. A stream starts available.
	Available bool `json:"available"`
	// AvailabilityReason is the reason of the last coverage change.
	AvailabilityReason string `json:"availabilityReason,omitempty"`
	// LastBaselineID and LastBaselineEndAt describe the last complete
	// baseline; OpenBaselineID a baseline begun but not (yet) ended.
	LastBaselineID    string    `json:"lastBaselineID,omitempty"`
	LastBaselineEndAt time.Time `json:"lastBaselineEndAt,omitzero"`
	OpenBaselineID    string    `json:"openBaselineID,omitempty"`
	// Gaps counts the stream's gap records; LastGapAt is the ObservedAt of
	// the newest one.
	Gaps      int       `json:"gaps"`
	LastGapAt time.Time `json:"lastGapAt,omitzero"`
	// FirstObservedAt and LastObservedAt bound the stream's records.
	FirstObservedAt time.Time `json:"firstObservedAt,omitzero"`
	LastObservedAt  time.Time `json:"lastObservedAt,omitzero"`
	// Records counts the stream's records; LastSeq is the newest IngestSeq.
	Records int64 `json:"records"`
	LastSeq int64 `json:"lastSeq"`
}

// Stats is the size of a journal.
type Stats struct {
	Records int64 `json:"records"`
	Events  int64 `json:"events"`
	// Bodies counts the stored object bodies (a body that repeats its
	// object's previous version is not stored again; the memory store
	// keeps every distinct body once); BodyBytes is what they take stored
	// (compressed), RawBodyBytes their size as received.
	Bodies       int64 `json:"bodies"`
	BodyBytes    int64 `json:"bodyBytes"`
	RawBodyBytes int64 `json:"rawBodyBytes"`
	// FileBytes is the size of its files on disk, and UsedBytes what its
	// data takes of them: the pages in use, without the pages Compact freed
	// (which the journal reuses before it grows) and without the
	// write-ahead log (transient). UsedBytes is what history makes grow and
	// compaction shrinks; retention by size bounds it. Both are 0 for
	// in-memory stores.
	FileBytes int64 `json:"fileBytes"`
	UsedBytes int64 `json:"usedBytes"`
}
