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
// baselines that a later one superseded removed); one writer
// with concurrent readers (run it with -race); storage.ErrClosed from every
// method after Close.
//
// The helpers that build records (Event, Baseline, Gap, InferredDelete,
// Checkpoint, CoverageChange, Document, Correlation) and realistic bodies
// (ConfigMap, Deployment, with managedFields) follow the journal
// conventions of the collector; tests and benchmarks of other packages may
// use them too.
//
// # Concurrency
//
// Run and CompactRandom are called from a test goroutine. Subtests do not
// run in parallel with each other; each gets a fresh store.
package storagetest
