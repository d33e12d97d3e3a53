// Package sqlite is the default, durable krply journal: a storage.Store in
// one SQLite file, written with modernc.org/sqlite (pure Go, no cgo).
//
//	s, err := sqlite.Open(ctx, "journal.db")
//	if err != nil { ... }
//	defer s.Close()
//
// It passes the conformance suite in storage/storagetest, and decides
// compaction with the same rule as storage/memory
// (storage/compaction).
//
// # Guarantees
//
//   - Append is one transaction: a batch, and the checkpoint of every stream
//     it advances, is stored entirely or not at all. A crash (tested with
//     SIGKILL at random points) never leaves part of a batch, a checkpoint
//     ahead of its events, or a damaged file.
//   - Append is idempotent by EventID. A new record gets an IngestSeq larger
//     than any stored before, also after Compact, across reopening and
//     across processes.
//   - Object bodies are kept byte for byte. Each distinct body of an
//     object is stored once (by event.ObjectHash) and compressed: the first version of an
//     object is deflated with a preset dictionary of typical Kubernetes
//     JSON, and later versions are stored as a small delta against it (or a
//     new object as a delta against an alike object of the same resource),
//     so many versions of one object cost little more than their
//     differences (docs/performance.md has the current figures).
//   - An object's history lies together: records are keyed by (object,
//     observedAt, seq) and bodies by (object, body id), so the versions of
//     one object share a few pages, and its record at a time (object-at-T,
//     a snapshot) is one seek. This matters most under a recording writer:
//     each commit empties every reader connection's page cache and map,
//     and a read then fetches each page it visits again. Append pays for
//     it: an object's new record and body go to its pages, anywhere in the
//     file, rather than at the end. A bulk (BeginBulk, which
//     storage/transfer's Import uses) appends many batches in one
//     transaction, with the writer's page cache raised to 256 MiB while
//     it lasts, so that such a page is written once per bulk rather than
//     once per batch. Until a bulk ends, every other write waits for it.
//   - Every query is answered from an index or the tables' keys: records
//     by seq, by (stream, seq), by (stream, observedAt, seq) to seek a
//     stream's last record at or before a time, by (type, stream, seq) and
//     by (type, seq) for the few non-event records, by a 64-bit key of the
//     event ID and by audit-correlation target; bodies by id alone, for a
//     delta's keyframe. Object metadata lives in columns and small side
//     tables, never only inside the compressed body. TestQueryPlans pins
//     the plan of every hot statement and fails when an index is used by
//     none, so that none goes missing or unused unnoticed.
//   - The Store keeps every stream's storage.Timeline (its baseline, gap
//     and coverage-change records) in memory for its readers, and checks
//     with one query of five index seeks that no stream was added, no
//     timeline record appended and no compaction run since — by this
//     Store or by another process — before answering from it. It runs
//     that check only when the journal changed since the last: SQLite's
//     PRAGMA data_version, read on a connection of its own before every
//     answer, changes whenever any other connection, of any process,
//     commits. Stream statuses (StreamStatus) are kept the same way.
//     Coverage questions therefore cost, while nobody writes, one seek
//     for the watermark (storage.WatermarkReader).
//   - A Store that writes keeps a version index (WithVersionIndex), as
//     etcd keeps its treeIndex: per object, the key (observed time, seq)
//     of each of its records and what deciding their visibility needs,
//     in memory, about 40 bytes a record. LatestAt finds its record
//     there and reads only that record, by its table key. The index is
//     built by one scan of the journal that the first LatestAt starts (on
//     a goroutine of its own over a large journal, SQLite answering
//     meanwhile, so that no question waits for it), and before
//     every answer it is brought up to the newest seq the timeline check
//     read, with the records appended since by this Store or any other
//     process (seqs follow commit order); a compaction builds it again.
//     Over its budget it keeps the recent part of each object's history,
//     and SQLite answers about earlier times, with the same answers
//     (TestVersionIndexSameAnswers compares them while other Stores
//     write).
//   - A stream's records object by object (storage.ObjectOrderReader,
//     which materialize's Find reads) come in the order of the records
//     table's key, so its pages are read in order; in journal order each
//     record is a seek to its object's page. ScanByObject
//     (storage.ObjectOrderScanner) reads a chunk of objects per read
//     transaction: their bodies, then their records, each in the order
//     of its table, matched in memory rather than one seek in the bodies
//     table per record, and hands each record to its caller in memory
//     reused for the next.
//   - Object queries leave out the items of open baselines (a begin and
//     no end, known from the kept timelines): for the streams that have
//     any, the statement skips their synthetic rows whose baseline column
//     names an open baseline, and costs nothing extra otherwise.
//     ObjectHistory, AliveAt and EventByResourceVersion read the journal
//     as of the newest seq the timeline check saw, so a list begun
//     meanwhile cannot show its items. LatestAt needs no check: its one
//     statement also reads the newest baseline record and the compaction
//     floor, and runs again when they moved since the timelines were
//     loaded.
//   - A file that is not a krply journal, is corrupt, has a schema newer
//     than SchemaVersion, or has tables and indexes other than those of the
//     schema version in its header (a journal of a development build from
//     before the format was pinned says version 1 too) is refused with an
//     *IncompatibleError (wrapping storage.ErrIncompatible) that names the
//     file, the versions and the difference, and it is not modified: its
//     header is checked before SQLite opens it, and the version and the
//     layout through a read-only (immutable, when there is no write-ahead
//     log) connection. An older schema is migrated forward in one
//     transaction. A new journal is built under a temporary name and
//     renamed into place, so a crash while creating leaves no half-made
//     file.
//
// # Durability
//
// The journal runs in WAL mode with synchronous=NORMAL by default
// (SyncNormal). A committed Append survives a crash of the process at once;
// after a power loss or an OS crash the last batches committed since the
// last WAL checkpoint may be lost, but the file is never corrupt and no
// batch is ever half there.
//
// That loss is safe for krply because of how the collector resumes: it
// watches again from the stream's durable checkpoint (StreamStatus.CheckpointRV),
// and a checkpoint is written in the same transaction as the events it
// covers. WAL loses only a suffix of commits, never one from the middle. A lost batch takes its checkpoint with it, so the
// collector resumes from an earlier resourceVersion and the API server sends
// the lost events again (at-least-once); EventID de-duplication stores each
// once. When that resourceVersion has been compacted away by the API server
// (410 Gone), the collector records a gap and relists — an honest gap, never
// a silent one. The one thing SyncNormal cannot give back is a record with
// no source to re-fetch it from (an audit correlation, a saved snapshot or
// plan written just before the power loss); callers who cannot re-create
// those, or who need each commit on disk before they proceed, choose
// WithSynchronous(SyncFull), at the cost of one fsync per Append.
//
// WAL checkpoints, which copy the log into the file (and sync both), run
// on a connection of their own beside the writer once it has written
// 1,000 pages since the last, not within an Append. Only when the log has
// grown to 3,000 pages without starting over (a writer that never pauses,
// or readers that keep it in use) does an Append wait, for the pages
// committed during a checkpoint to be copied too, so that the log starts
// over and stays about 16 MiB.
//
// # Read-only
//
// A process that only queries opens the journal WithReadOnly: it never
// creates, migrates or writes the file, answers every query, sees what
// writers commit as they commit it, and refuses Append and Compact with
// storage.ErrReadOnly. SQLite shares the write-ahead log with writers
// through the journal's -shm file: for a file a writer may write, it
// creates one (with an empty -wal file) when there is none, and leaves
// it there. A read-only or immutable file, or one in a folder this
// process may not write, with no -shm file, is read as immutable and
// nothing is created beside it; a write by another process after all
// makes every call fail rather than answer from a changing file (see
// WithReadOnly).
//
// A writable Open of a journal this process may not write — a read-only
// file, -wal or -shm file, or a read-only folder, where SQLite could not
// create them — fails at once with an error that wraps storage.ErrReadOnly
// and the operating system's, names what cannot be written and says to
// open it WithReadOnly or fix the permissions; SQLite never touches the
// file, so no -wal or -shm file is left behind.
//
// # Several processes
//
// Any number of processes may open one journal and read and write it at
// the same time: a recorder, a second recorder of the same cluster, the
// tools that save snapshots, plans or audit correlations, a compaction.
//
//   - Writes are serialized by SQLite's lock, never interleaved: each Append
//     and Compact is one transaction that takes the write lock when it
//     begins (BEGIN IMMEDIATE) and waits up to a minute for a write of
//     another process to end (its busy timeout) before it fails with
//     SQLITE_BUSY. Compact holds the lock for its whole run, deciding
//     what to remove on the view the lock freezes.
//   - Nothing a Store remembers is trusted across another process's
//     write. Each write transaction first reads, under the lock, the
//     newest sequence number and body and object IDs (one query of three
//     index seeks, small beside the Append). Appends by others change
//     nothing else the writer keeps: a stored body, object or stream membership never changes.
//     A compaction, by any process, raises the journal's seq floor; a
//     writer that finds it raised forgets the keyframes and stream
//     memberships it kept. Body IDs are never reused (Compact keeps the
//     body with the highest ID), so what readers keep about a body ID stays
//     true, and readers check their timelines on every call (above).
//   - A record appended by two processes (the same EventID) is stored once;
//     the second gets the first's IngestSeq. IngestSeq follows commit
//     order across processes.
//   - Processes creating a new journal at once agree on one file: it is
//     built under a name of each process's own and hard-linked into
//     place, so the first wins and the others open it. (Where the file
//     system has no hard links, creation falls back to a rename, which a
//     simultaneous creator can overwrite.)
//
// The journal must live on a local file system: SQLite's WAL mode shares
// memory (the -shm file) between the processes, which network file
// systems do not provide.
//
// # What it does not do
//
// Compact frees pages inside the file for reuse; it does not shrink the
// file. Nothing here interprets object bodies beyond their hash.
//
// # Concurrency
//
// A Store is safe for concurrent use. Writes (Append, Compact) go through
// one dedicated connection, one at a time; reads use a pool of read-only
// connections (WithReadConnections) and, thanks to WAL, never wait for a
// write and always see whole batches, from this process or another.
// AliveAt, which reads a row for each of many objects all over a large
// journal, uses a second pool of as many connections, opened on first
// use, that maps up to 1 GiB of the file into memory (no system call per
// page read). The point reads keep the unmapped pool: SQLite drops a
// reader's map on every commit it sees, and a point read would fault its
// few pages in again after each (see WithMmapSize).
//
// # File format
//
// A journal file is read by every later krply, so its format is fixed: the
// SQL schema of schema.go, versioned by PRAGMA user_version (SchemaVersion)
// and marked by application_id "krpl", the integer codes of record and
// watch types, the time and ID encodings, the name tables, the meta column
// and the body codec (format_dictionary.json), each described in
// docs/reference/journal-format.md. Every change to it is a new schema
// version with a migration, proven against the journals of every earlier
// version under testdata/format (TestFormatFixtures).
//
// Open migrates an older journal in one transaction, so that a migration
// cut short leaves the journal as it was. Before it starts, Open checks
// that the journal's file system has room for it (twice the journal's
// size: the rebuilt tables in the write-ahead log, then in the file) and
// otherwise returns a *MigrationSpaceError naming the free space and the
// space needed. While it runs, Open logs its progress with a percent and
// reports it to WithMigrationProgress.
//
// # Close
//
// Whoever calls Open must call Close. Close waits for calls in flight,
// checkpoints the write-ahead log and releases the file; calls after Close
// return storage.ErrClosed.
package sqlite
