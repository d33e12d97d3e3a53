// Package postgres is a krply journal in PostgreSQL, for fleets of clusters
// and for recorders that run as several replicas: the same storage.Store
// contract as storage/sqlite (it passes the conformance suite of
// storage/storagetest and its compaction property suite unchanged), with
// the optional storage.TimelineReader, storage.WatermarkReader,
// storage.MultiGetter and storage.StreamRestorer (so storage/transfer
// imports into it losslessly),
// shared by any number of processes on any number of machines.
//
//	store, err := postgres.Open(ctx, "postgres://krply@db:5432/krply")
//	if err != nil { … }
//	defer store.Close()
//	j, err := krply.NewJournal(store, krply.WithClusterID("prod-eu-1"))
//
// It lives in a module of its own (github.com/krply/krply/storage/postgres)
// so that its driver (pgx v5) stays out of the core module.
//
// # Many writers
//
// Recorders of different clusters, and replicas recording the same
// cluster, append at once:
//
//   - De-duplication by EventID, per cluster: a record whose EventID the
//     cluster's journal holds already is not stored again (its sequence
//     number is returned, as storage.Writer says). Two replicas of one
//     recorder make the same EventIDs for the same watch events, so what
//     both saw is stored once. The IDs are read under the cluster's lock
//     (below); bodies and objects already stored are looked up under that
//     lock as well, and the rows are inserted without ON CONFLICT (a
//     conflict would fail the Append, not be skipped silently).
//   - Order within a stream is commit order. A PostgreSQL sequence alone
//     does not give it (a transaction that took a smaller number may commit
//     after one that took a larger one, and a reader tailing by IngestSeq
//     would skip it). Every Append first locks its clusters' rows of
//     krply_clusters (in cluster order, so writers never wait in a cycle),
//     takes its sequence numbers under that lock and holds it until it
//     commits: the Appends of one cluster are serialized, and a cluster's
//     IngestSeqs follow commit order. Appends of different clusters do not
//     wait for each other, so one may commit a smaller IngestSeq after
//     another committed a larger one. Reads of every cluster at once
//     (Records without a cluster or stream: a change feed, an export) stop
//     below the smallest IngestSeq an Append in flight may hold: each
//     Append announces itself with a shared advisory lock whose key bounds
//     the numbers it takes, and such a read first reads the sequence and
//     those locks (pg_locks). A reader that resumes after the last number
//     it saw misses nothing committed later. See commitorder.go. A read
//     replica sees neither the primary's locks nor its exact sequence:
//     tail every cluster at once on the primary.
//   - A batch, the stream statuses (checkpoints) it advances, the bodies it
//     adds and the visibility of baseline items are one transaction.
//   - Open baselines: the items of a baseline that has begun and not ended
//     are hidden from object queries (storage.Reader); the end makes them
//     visible in the same transaction that stores it.
//   - Caches: every query reads the database, so a write of another
//     process is seen by the next statement. The store keeps two things
//     between calls: the set of partitions it created, which an insert
//     into a partition another process dropped invalidates (the append is
//     retried after creating it again); and a copy of the streams'
//     timeline records (baselines, gaps, coverage changes), which each
//     coverage answer checks against the journal in the statement that
//     reads what is new: below the committed bound of commitorder.go no
//     record can be appended later, and a checksum of the records there
//     (their count and a hash of each one's bytes) finds what a compaction
//     removed or rewrote, starting the copy over.
//   - Compact locks krply_clusters in EXCLUSIVE mode: writers wait for it,
//     readers do not (they see the journal before or after it).
//
// # Retention
//
// krply_records is partitioned by ObservedAt (WithPartitionWidth, a day by
// default; partitions are created as records arrive, the next one ahead).
// Compact(before) decides what goes with the same rule as every backend
// (storage.Writer.Compact: every answer about a time at or after before is
// unchanged) and then drops the partitions that lie entirely before
// `before` instead of deleting their rows: the records of theirs the rule
// keeps (the last version of each object alive at the cut, the markers of
// the compaction baseline, snapshots and plans) move to a base partition
// first. Rows are deleted only from the base partition and from a partition
// the cut falls inside.
//
// # Sharding and replicas
//
// Every table and every primary or unique key carries cluster_id, and
// every query of one stream or object names its cluster, so the tables can
// be distributed by cluster_id (Citus: create_distributed_table on each
// table, colocated) and a cluster's writes and reads stay on one shard.
// Queries across clusters (Streams(""), AliveAt without a cluster) fan out.
// Read replicas answer with the same watermark rules as the primary: a
// replica's lag only makes its coverage end earlier (storage.CoverageAt
// covers a time only with evidence after it), never claims what the
// primary has not committed.
//
// # Layout
//
// Tables (in the connection's schema, or the one of WithSchema):
// krply_meta (schema version, partition width), krply_clusters (one row per
// cluster: its lock and its totals), krply_streams (each stream's status as
// JSON), krply_baselines (which baselines began and ended), krply_objects
// (the objects each stream has changes of, which AliveAt walks, seeking
// each one's last change at the time in the object index), krply_bodies
// (object bodies, once per cluster and content hash) and krply_records (one
// row per record: the indexed columns, and the record itself as JSON; times
// are Unix nanoseconds, as received). Open creates them when missing and
// refuses tables of a newer SchemaVersion with storage.ErrIncompatible.
//
// # Tests
//
// The tests run against a real PostgreSQL that internal/pgtest starts from
// the installed server programs (initdb, postgres) on a temporary folder
// and a free loopback port; hack/postgres.sh installs Debian's postgresql
// when they are missing. When the tests run as root, the server runs as the
// unprivileged user postgres (or nobody), since PostgreSQL refuses root.
// internal/pgtruth runs the truth test of krplytest/truth on it, as on
// SQLite (recorders killed with SIGKILL, processes querying while others
// record, no mismatch allowed), and two replicas of one cluster recording
// into one database while one of them relists.
package postgres
