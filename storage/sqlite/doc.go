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
//     new object as a delta against an alike object of the same resource).
//     On a churn workload the file takes about a tenth of the raw JSON; a
//     relist of distinct objects a little over half (see the README's
//     performance section).
//   - An object's history lies together: records are keyed by (object,
//     observedAt, seq) and bodies by (object, body id) (schema version 6),
//     so the versions of one object share a few pages, and its record at
//     a time (object-at-T, a snapshot) is one seek. This matters most
//     under a recording writer: each commit empties every reader
//     connection's page cache and map, and a read then fetches each page
//     it visits again. The price is paid by Append: an object's new
//     record and body go to its pages, anywhere in the file (see the
//     README's performance section).
//   - Every query is answered from an index or the tables' keys: records by seq, by (stream, seq), by
//     (stream, observedAt, seq) to seek a stream's last record at or before
//     a time (queries bounded by Until within a stream; schema version 2,
//     added to version 1 files on Open), by (type, stream, seq) and by
//     (type, seq) for the few non-event records (the latter schema version
//     3), by a 64-bit key of the event ID and by
//     audit-correlation target; bodies by id alone, for a delta's
//     keyframe (schema version 6). Object metadata lives in columns and small
//     side tables, never only inside the compressed body. TestQueryPlans
//     pins the plan of every hot statement and fails when an index is
//     used by none, so that none goes missing or unused unnoticed.
//   - The Store keeps every stream's storage.Timeline (its baseline, gap
//     and coverage-change records) in memory for its readers, and checks
//     with one query of five index seeks, on every Timelines call, that no
//     stream was added, no timeline record appended and no compaction run
//     since — by this Store or by another process — before answering from
//     it. Coverage questions therefore cost that check and one seek for
//     the watermark (storage.WatermarkReader).
//   - Object queries leave out the items of open baselines (a begin and
//     no end, known from the kept timelines): for the streams that have
//     any, the statement skips their synthetic rows whose baseline column
//     names an open baseline, and costs nothing extra otherwise.
//     ObjectHistory, AliveAt and EventByResourceVersion read the journal
//     as of the newest seq the timeline check saw, so a list begun
//     meanwhile cannot show its items. LatestAt needs no check: its one
//     statement also reads the newest baseline record and the compaction
//     floor, and runs again when they moved since the timelines were
//     loaded (p50 on a 1M-event journal unchanged within noise; 22 → 25 µs
//     when the answer is a baseline item).
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
// through the journal's -shm file, which it creates (with an empty -wal
// file) where the folder allows and leaves there; in a folder this
// process may not write, and with no -shm file, the journal is read as
// immutable, and a write by another process after all makes every call
// fail rather than answer from a changing file (see WithReadOnly).
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
//     index seeks, 5–10 µs against the 4 ms of CPU an Append of 100
//     events takes). Appends by others change nothing else the writer
//     keeps: a stored body, object or stream membership never changes.
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
// A journal file is read by every later krply, so its format is fixed:
//
//   - the SQL schema of schema.go, versioned by PRAGMA user_version
//     (SchemaVersion) and marked by application_id "krpl";
//   - record types as integers (event 1, baseline 2, gap 3,
//     coverage_change 4, audit_correlation 5, snapshot 6, checkpoint 7,
//     replay_plan 8) and watch types too (none 0, ADDED 1, MODIFIED 2,
//     DELETED 3, BOOKMARK 4, ERROR 5);
//   - times as Unix nanoseconds, the zero time as the smallest int64;
//   - an EventID of 32 lowercase hex digits as its 16 bytes, any other as
//     text, indexed by a 64-bit key: the first 8 bytes (big-endian) of the
//     bytes, or of the SHA-256 of the text; the hash_key column of bodies
//     held such a key of the body's hash until schema version 5, which
//     drops its index and writes 0 there (a body is stored once per
//     object version, not per journal);
//   - records are keyed by (obj, observed_at, seq) and bodies by (obj, id), both
//     WITHOUT ROWID (schema version 6); a record of no object has obj 0,
//     and a body belongs to the object whose records point at it (a body
//     no record points at, such as a keyframe kept for its deltas, to
//     object 0); a delta's keyframe is found by its id alone (bodies_id);
//   - names rows would repeat live once in name tables (schema version
//     4): cluster IDs in clusters, an object's cluster, namespace, group
//     and resource in scopes (an objects row is a scope and a name),
//     baseline IDs in baselines (a record's baseline column points there);
//   - the meta column: for an object change whose only fields without a
//     column are its version, kind, UID and resourceVersion (nearly every
//     event), a binary form — the byte 0x01, a flags byte, the version and
//     kind (each a uvarint length and the bytes), the UID (16 bytes when
//     it is a canonical lowercase UUID, flag 1, else length and bytes) and
//     the resourceVersion (a uvarint when it is a canonical decimal, flag
//     2, else length and bytes); otherwise JSON with short keys for what
//     has no column, with the payloads (event.Gap, event.Baseline, ...) in
//     their own JSON, so their field names are part of the format. JSON
//     starts with '{', which tells the forms apart. Rows written before
//     version 4 keep their JSON meta (with the baseline ID under "b" too);
//   - bodies: a keyframe (base NULL) is raw deflate (RFC 1951) with the
//     preset dictionary format_dictionary.json; a delta is instructions
//     against a keyframe (never another delta), each a uvarint header h:
//     h&1 == 1 copies h>>1 bytes of the keyframe from the uvarint offset
//     that follows, h&1 == 0 inserts the h>>1 bytes that follow.
//
// testdata/format holds a journal written by each schema version's own
// writer (vN.db: every record type, a compaction, an interrupted baseline,
// inferred deletions, both kinds of delta) and its answers to every query
// of the store (vN.answers.json); golden bytes pin the body codec and the
// dictionary's SHA-256. The rule: every change to the format is a new
// schema version with a migration, proven against these fixtures. The
// journals of older versions stay; a new version adds its own
// (-regenerate-fixtures). Opening each with the current code must migrate
// a copy to exactly the schema of a new journal and answer as its golden
// file says (TestFormatFixtures).
//
// # Close
//
// Whoever calls Open must call Close. Close waits for calls in flight,
// checkpoints the write-ahead log and releases the file; calls after Close
// return storage.ErrClosed.
package sqlite
