// Package retention keeps a journal on a bounded disk: it compacts the
// journal (storage.Writer.Compact) on a schedule, by age and by size, and
// says when the disk under it runs short.
//
// A Keeper enforces a policy:
//
//   - By age (WithMaxAge): every run compacts before now minus the age.
//   - By size (WithMaxSize): when the journal's data takes more than the
//     size — Stats.UsedBytes, its pages in use: a SQLite file never shrinks
//     by itself, the pages Compact frees are reused before it grows, and
//     its write-ahead log comes on top — the run compacts at later and later cuts, never later
//     than now minus WithMinAge, until the journal takes at most 80% of
//     the size. A journal whose state of now alone exceeds the size cannot
//     be brought under it: the run says so (Status.Pressure) instead of
//     compacting away the history it must keep.
//   - A resource's own age (WithResourceMaxAge): every run compacts the
//     streams of the resources named (Kubernetes Events, say) before now
//     minus their age, and no other stream (storage.ResourceCompactor), so
//     that their volume cannot crowd out object history.
//   - Disk headroom (WithDiskReserve): when the file system of the
//     journal has less free space than the reserve, Status.Pressure says
//     so, before a full disk fails an append.
//
// Compaction keeps every answer about times at or after the cut (see
// storage.Writer.Compact); for earlier times a stream's coverage says
// that the history kept begins at the cut. A snapshot saved Complete stays
// Complete (saved snapshots are kept), but a time before the cut is no
// longer covered: retention is the one, deliberate, exception to "a
// Complete answer never turns incomplete later".
//
// Run enforces the policy every interval (WithInterval) until its context
// ends; Enforce runs once. Status and Ready report the outcome of the last
// run — what was removed, where history begins, the journal's size, the
// free disk, and why the journal is under pressure — for a recorder's
// status line, metrics and readiness check. Every run that compacts, fails
// or finds pressure is logged at level 0; a quiet run at level 1.
package retention
