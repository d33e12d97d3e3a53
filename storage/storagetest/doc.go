// Package storagetest is the conformance suite of krply journal backends:
// the executable specification of storage.Store. A backend passes it by
// calling Run from one of its tests:
//
//	func TestConformance(t *testing.T) {
//		storagetest.Run(t, func(t *testing.T) storage.Store {
//			s, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "journal.db"))
//			if err != nil {
//				t.Fatal(err)
//			}
//			return s
//		})
//	}
//
// # What it checks
//
// Append order and IngestSeq monotonicity; de-duplication by EventID within
// and across batches; rejection of invalid records with
// storage.ErrInvalidRecord, storing nothing of the batch; checkpoint
// advance (storage.ProgressRV: baseline items and inferred deletions never
// move it, bookmarks and baseline ends do, the last one in a batch wins);
// StreamStatus and Streams; Records filters, order, sequence and time
// bounds and cursor pagination; ObjectHistory across a delete and a
// re-create with a new UID; LatestAt at its boundaries (exactly at T,
// before the first record, after a delete and an inferred delete, ties
// broken by IngestSeq); AliveAt per stream and per cluster scope;
// EventByResourceVersion (the real event with the version, else the first
// synthetic record, never a later relist's copy); open baselines (the
// items of a baseline without an end invisible to every object query,
// visible in Records, told apart by the Timeline, superseded by a
// restart's baseline, visible at once when the end comes; IncludeBaseline);
// Correlations; snapshots and plans as records;
// Stats (bodies counted once); isolation of records handed in and out;
// Compact invariants on a simulated journal (every answer about a time at
// or after the compaction time unchanged, the journal smaller, interrupted
// baselines that a later one superseded removed), and the queries bounded
// by time right around the compaction point, which the compaction's
// baseline records (observed later than records that follow them) must
// not mislead; the optional readers (storage.TimelineReader,
// storage.WatermarkReader) and the seek of Records by time against
// unbounded Records queries at every time a record was observed, as a
// simulated journal grows and is compacted; one writer
// with concurrent readers, and many goroutines appending at once, the same
// records from several of them (each record stored once, the sequence
// numbers of one Append never interleaved with another's and following
// the order the Appends returned in, each stream's records in append
// order, each checkpoint its last progress record's); run them with
// -race; storage.ErrClosed from every method after Close.
//
// SameAnswers is for a backend that keeps a view of the journal in memory
// (an index, a cache): it writes a simulated journal through several
// writers and compares, after every batch and across compactions, the
// view's answers with the backend's own without it.
//
// The helpers that build records (Event, Baseline, Gap, InferredDelete,
// Checkpoint, CoverageChange, Document, Correlation) and realistic bodies
// (ConfigMap, Deployment, with managedFields) follow the journal
// conventions of the collector; tests and benchmarks of other packages may
// use them too.
//
// # Concurrency
//
// Run, CompactRandom and SameAnswers are called from a test goroutine. Subtests do not
// run in parallel with each other; each gets a fresh store.
package storagetest
