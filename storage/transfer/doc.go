// Package transfer moves a krply journal between stores, and between
// backends, as a versioned, streaming NDJSON export: Export writes what a
// storage.Reader holds, Import appends a stream to a storage.ReadWriter,
// Verify checks a stream without storing anything.
//
//	res, err := transfer.Export(ctx, sqliteStore, f, transfer.WithProgress(report))
//	res, err = transfer.Import(ctx, f, otherStore)
//
// # Format (version 1)
//
// UTF-8, one JSON value per line, each line ending in "\n". In order:
//
//  1. The header, one line:
//     {"krplyExport":{"format":"krply-journal","version":1,"clusters":[...]}}
//     with "since" and "until" (RFC 3339) when the export was restricted to
//     a time window. clusters are those of the exported streams, or those
//     Clusters asked for.
//  2. One line per record, in the source's IngestSeq order (per cluster,
//     clusters in order, when Clusters was given): the record's JSON as
//     in the wire schema (docs/reference/wire-schema.md) — type, eventID, clusterID,
//     streamID, observedAt, the payload of its type — without ingestSeq,
//     which the importing journal assigns. Every record type is there:
//     events real and synthetic, baseline begins and ends, inferred
//     deletions, checkpoints, gaps, coverage changes, audit correlations,
//     saved snapshots, plans and reports. The body (Record.Object) is
//     written byte for byte as the value of "object" when that keeps it
//     exact (valid JSON and UTF-8, on one line, without whitespace around
//     it: what the API server sends), and as base64 in "objectBase64"
//     otherwise. objectHash is the body's SHA-256 and is checked on import.
//  3. One line per stream of the exported clusters: {"stream":{...}}, its
//     storage.StreamStatus in the source when the export ended, times in
//     UTC, lastSeq 0 (a sequence number of the source is no use
//     elsewhere). A stream with no record left is there too.
//  4. The trailer, one line: {"end":{"records":N,"streams":M}}.
//
// Exporting the same journal twice, or exporting what an export was
// imported into (an empty journal of any backend), writes the same bytes.
// A reader rejects keys it does not know, a newer version and lines out of
// this order, so that nothing is dropped silently; later versions add keys
// under a new version number.
//
// # What round-trips
//
// Everything a query answers from: every record with its EventID,
// ObservedAt (to the nanosecond; times are written in UTC), payload and body,
// in the same order, so object-at-T, histories, snapshots with their
// coverage, diffs, gaps, open baselines and audit links answer the same
// in the importing journal. Stream status follows from the records
// (checkpoint, baselines, gaps, availability, bounds, counts). The
// IngestSeqs are the importing journal's own: the same order, other
// numbers where the source had holes (after a Compact) or other records,
// so page cursors of one journal mean nothing in another. The
// storage/transfer/transfertest package checks a round trip query by
// query for any pair of backends.
//
// A Compact in the source keeps a stream's checkpoint and availability as
// they were, even when it removed the records they came from. Import
// restores them from the stream lines (storage.StreamRestorer, which both
// stores of this module and storage/postgres implement) for every stream whose records in the
// importing journal are exactly the exported ones; a journal that also
// holds records of its own for a stream derives its status from all of
// them, and an export restricted in time restores nothing.
//
// # Import, batches and failures
//
// Import appends WithBatchSize records (DefaultBatchSize) per Append, each
// one transaction, after checking every line of the batch; the last batch
// goes in only after the trailer checked out. Into a journal that is a
// storage.BulkAppender (the SQLite store), the batches go into bulk
// transactions of about a quarter of a million records each, committed
// when one is full and when the stream ends or fails: a journal clustered
// by object then writes each of its pages once per bulk rather than once
// per batch, about two times faster on a large import. A bulk holds the
// journal's write lock until it commits (seconds), so another process
// writing the same journal, a recorder, waits that long. Append de-duplicates by
// EventID, so an import is idempotent: a second import of the same stream
// stores nothing (Result.Duplicates counts the records), and records the
// journal recorded itself are not stored twice.
//
// A stream that is corrupt (a line that is not JSON, a record the journal
// refuses, a body that does not match its hash, counts that differ from
// the trailer) or cut short (no trailer, a last line without its newline)
// fails with a *LineError naming the line, wrapping ErrInvalidStream. "No
// half-imported batch" means: no record of the batch holding that line is
// stored, so the journal holds the batches before it — whole transactions,
// a prefix of the stream in its order, LineError.Records records. (When
// the journal refuses a batch, in a bulk transaction the bulk it belongs
// to is rolled back: the journal then holds the bulks committed before
// it.) Such a
// prefix is a journal the recorder could have written up to a moment (its
// records keep their order), so it never claims more coverage than its
// records give: a baseline without its end is not trusted, a gap without
// the baseline that closes it stays a gap. Importing the whole stream
// again completes it, and nothing is stored twice. To import all or
// nothing, call Verify on the stream first (for a file: open it twice).
//
// # Into a journal that has records already
//
// An import appends after what the journal holds. Records of clusters and
// streams the journal does not record simply join it (several clusters'
// exports into one journal). A stream the journal records already can
// only be continued: a record observed before that stream's last record in
// the journal is refused with ErrOutOfOrder (within a stream, records are
// appended in the order of their ObservedAt, and the stream's baselines
// and gaps must not interleave two histories), unless the journal holds
// that record already or every record the journal holds of the stream
// came earlier in this import: an import cut short and imported again
// goes on in the export's order, which is its source's (after a Compact
// the compaction's baseline comes before older records of its stream).
// Export Since the stream's last time to continue it. Do not import into a stream a recorder is writing meanwhile.
//
// # Concurrency
//
// Export only reads: it runs beside recorders and queries, and exports
// the records stored when it began; a Compact meanwhile may make it miss
// or repeat records. Each call uses one goroutine besides the caller's:
// Export reads the next page while it writes one, Import checks the next
// batch while it appends one. Import appends in batches like any writer,
// beside recorders of other streams of the same journal.
package transfer
