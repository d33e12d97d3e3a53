// Package memory is an in-memory krply journal: a storage.Store for tests,
// examples and short-lived use. It has the same semantics as the durable
// storage/sqlite backend and passes the same conformance suite
// (storage/storagetest).
//
// # Guarantees
//
//   - Append is atomic: every record of a batch is validated before any is
//     stored, and a batch is stored entirely or not at all, together with
//     the checkpoint of every stream it advances (storage.ProgressRV).
//   - Append is idempotent by EventID, within a batch and across batches.
//   - Queries use indexes kept up to date on Append: per stream and record
//     type, per object (in IngestSeq and in ObservedAt order), per cluster,
//     and audit correlations by target EventID. None scans the journal.
//     Records bounded by Until within a stream binary-searches the stream's
//     lists by ObservedAt (which storage.Writer.Append requires not to
//     decrease within a stream) instead of walking the records after Until.
//   - Records handed in and handed out are copies: neither side can change
//     the other's data.
//   - Identical object bodies are kept once (by ObjectHash). An empty
//     ObjectHash is filled in on Append.
//   - Compact keeps every answer about a time at or after its argument; the
//     rule is the one storage/sqlite uses (storage/compaction).
//   - The items of open baselines (storage.Reader) are left out of object
//     queries by a per-stream set of open baseline IDs; while no baseline
//     is open nothing is checked.
//
// # What it does not do
//
// Nothing survives the process: there is no file, no durability, and
// Stats.FileBytes is 0. Bodies are not compressed (Stats.BodyBytes equals
// Stats.RawBodyBytes). Memory grows with the journal until Compact.
//
// # Concurrency and Close
//
// A Store is safe for concurrent use: Append and Compact take a write lock,
// every query a read lock. The caller that made the store with New should
// Close it; after Close every method returns storage.ErrClosed and the
// memory is released.
package memory
