// Package soak runs the recorder as operators run it, for a while, and
// measures what running for months needs: memory that stays flat, a disk
// that retention keeps bounded, and no gap that the workload did not cause.
//
// TestSoak builds kubectl-krply and runs `kubectl-krply record` as a
// child process against its own local control plane (krplytest/testenv)
// with --all-resources,
// retention at a small size (--max-size 4Mi, --min-age 1m, every 10s) and
// /metrics, while a steady, bounded workload changes ConfigMaps (each
// change 1 KiB of data no other body shares, so the journal grows) and
// creates and deletes Deployments. Every 10s it samples the recorder's
// RSS, the journal's used and file bytes and the gaps and compactions its
// /metrics report, and at the end it requires:
//
//   - memory flat: the peak RSS of the second half at most 1.25× that of
//     the first half plus 16 MiB;
//   - disk bounded: the journal's data (krply_journal_used_bytes) at most
//     1.5× --max-size at every sample once retention compacted, and its
//     files at most 2× --max-size plus 20 MiB (the write-ahead log, which
//     the journal checkpoints from 1,000 pages and starts over by
//     3,000, about 16 MiB at most, comes on top);
//   - no gap on any stream (the workload causes none), the recorder ready
//     throughout, and every change of the last minute in the journal.
//
// TestDiskFull runs the recorder with its files limited to 3 MiB
// (RLIMIT_FSIZE: a write past it fails as on a full disk) under a workload
// of 64 KiB ConfigMaps: it must stop with exit code 1 and the store's
// error, leaving a journal that passes SQLite's integrity check and claims
// no coverage after its last durable record.
//
// The short form (30s) runs with the other tests; `make soak` runs the long
// form (KRPLY_SOAK_DURATION=10m) and prints the samples.
package soak
