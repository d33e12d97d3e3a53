// Package storage defines the krply journal: the Store interface every
// backend implements, its queries, sentinel errors, and coverage — the rule
// that decides whether the journal is complete for a stream at a time.
//
// Backends live in subpackages: storage/sqlite (the default, durable, one
// file) and storage/memory (for tests and short-lived use). Both pass the
// conformance suite in storage/storagetest, which is the executable
// specification of this package.
//
// # Guarantees
//
//   - Append is atomic: a batch is stored entirely or not at all, together
//     with the checkpoint of every stream it advances.
//   - Append is idempotent by EventID: a record already stored is not stored
//     again, and that is not an error. At-least-once delivery from the last
//     durable checkpoint therefore never duplicates history.
//   - Records keep the order they were appended in (IngestSeq). Ordering is
//     meaningful within one stream only; resourceVersions are never compared.
//   - Object bodies are kept exactly as received.
//   - Compact(T) never changes an answer about a time at or after T.
//
// Snapshots and replay plans are ordinary records (TypeSnapshot, TypePlan):
// save one with Append, list them with Records and a type filter, fetch one
// with Get by its EventID.
//
// # Coverage
//
// CoverageAt decides whether a stream's journal is complete at a time. It
// reads how far the stream's evidence of continuity reaches
// (StreamStatus.CheckpointAt, one row), then the stream's Timeline — its
// baseline, gap and coverage-change records, few next to its events — and
// its watermark. A time is covered only with evidence after it, so a
// covered time stays covered whatever is appended later (see Coverage). Stores that keep
// timelines at hand implement TimelineReader, and stores that find a
// watermark in one seek implement WatermarkReader; for any other Reader
// the same answers come from Streams and Records queries, and the
// conformance suite checks that both ways agree. Likewise GetMany reads
// many records by EventID with a store's own GetMany (MultiGetter: the
// SQLite store's looks up a few hundred per statement) and with one Get
// each otherwise. A store that keeps each object's records together
// implements ObjectOrderReader, and materialize's Find reads a stream
// object by object from it (with the same answer as in journal order);
// one that can hand a stream's records to a function one at a time,
// without pages, implements ObjectOrderScanner too, and Find sweeps its
// parts side by side.
//
// # Copies
//
// storage/transfer exports a journal as NDJSON and imports it into any
// store. A Compact keeps each stream's checkpoint and availability although
// it may remove the records they came from, so a copy of the records alone
// can differ there; stores implement StreamRestorer so that an import can
// set them back. A store whose commits cost more than its rows (the SQLite
// store, clustered by object) implements BulkAppender, and an import
// appends many batches per transaction there.
//
// # What it does not do
//
// A store does not interpret object bodies beyond the metadata the caller
// put in Record.Resource, and it does not decide what a deletion or a gap
// means for a question; CoverageAt and the materialize package do.
//
// # Consumers
//
// Every consumer takes a storage.ReadWriter: watch.NewCollector,
// materialize.New, replay.NewPlanner and audit.NewCorrelator. Any Store is
// one; the caller keeps the Store and closes it when its consumers are
// done. Queries only read; what writes (recording, SaveSnapshot, SavePlan,
// dry runs and applies, audit ingestion) goes through Append. A store
// opened read-only answers every query and refuses every write with an
// error wrapping ErrReadOnly, which the consumers pass on; no consumer
// checks at run time whether its store can write.
//
// # Concurrency and Close
//
// A Store is safe for concurrent use by any number of goroutines, readers
// and writers alike: Append and Compact are serialized, each atomic, and a
// reader sees whole batches. Backends say whether several processes may
// share one journal: storage/sqlite lets any number of them read and write
// one file, serializing their writes with the file's lock and trusting
// nothing it remembers across another process's write; storage/memory
// lives in its process. The caller that opened a store must Close it;
// calls after Close return ErrClosed.
package storage
