package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"

	"github.com/krply/krply/storage"
)

// applicationID marks a SQLite file as a krply journal ("krpl" in the
// header's application_id field, offset 68).
const applicationID = 0x6B72706C

// SchemaVersion is the journal schema this package writes (PRAGMA
// user_version). Files with an older version are migrated forward on Open;
// files with a newer one are refused.
const SchemaVersion = 6

// Record type and watch type codes kept in integer columns.
const (
	codeEvent = 1
)

// migrations[i] upgrades a journal from schema version i to i+1, inside
// the writer's transaction. Version 0 is an empty file.
var migrations = []string{
	0: `
CREATE TABLE streams (
	id                   INTEGER PRIMARY KEY,
	stream_id            TEXT NOT NULL UNIQUE,
	cluster              TEXT NOT NULL,
	checkpoint_rv        TEXT NOT NULL DEFAULT '',
	checkpoint_at        INTEGER NOT NULL DEFAULT 0,
	available            INTEGER NOT NULL DEFAULT 1,
	availability_reason  TEXT NOT NULL DEFAULT '',
	last_baseline_id     TEXT NOT NULL DEFAULT '',
	last_baseline_end_at INTEGER NOT NULL DEFAULT 0,
	open_baseline_id     TEXT NOT NULL DEFAULT '',
	gaps                 INTEGER NOT NULL DEFAULT 0,
	last_gap_at          INTEGER NOT NULL DEFAULT 0,
	first_observed_at    INTEGER NOT NULL DEFAULT 0,
	last_observed_at     INTEGER NOT NULL DEFAULT 0,
	records              INTEGER NOT NULL DEFAULT 0,
	last_seq             INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE objects (
	id        INTEGER PRIMARY KEY,
	cluster   TEXT NOT NULL,
	grp       TEXT NOT NULL,
	resource  TEXT NOT NULL,
	namespace TEXT NOT NULL,
	name      TEXT NOT NULL,
	UNIQUE (cluster, namespace, grp, resource, name)
);
CREATE TABLE stream_objects (
	stream INTEGER NOT NULL,
	obj    INTEGER NOT NULL,
	PRIMARY KEY (stream, obj)
) WITHOUT ROWID;
CREATE TABLE bodies (
	id      INTEGER PRIMARY KEY,
	hash_key INTEGER NOT NULL,
	hash    BLOB NOT NULL,
	raw_len INTEGER NOT NULL,
	base    INTEGER,
	data    BLOB NOT NULL
);
CREATE TABLE records (
	seq         INTEGER PRIMARY KEY,
	id_key      INTEGER NOT NULL,
	event_id    BLOB NOT NULL,
	type        INTEGER NOT NULL,
	cluster     TEXT NOT NULL,
	stream      INTEGER,
	observed_at INTEGER NOT NULL,
	watch_type  INTEGER NOT NULL,
	synthetic   INTEGER NOT NULL,
	obj         INTEGER,
	body        INTEGER,
	target      BLOB,
	meta        BLOB NOT NULL
);
CREATE INDEX records_id ON records (id_key);
CREATE INDEX bodies_hash ON bodies (hash_key);
CREATE INDEX records_stream ON records (stream, seq, observed_at) WHERE stream IS NOT NULL;
CREATE INDEX records_marker ON records (type, stream, seq) WHERE type <> 1;
CREATE INDEX records_object ON records (obj, observed_at, seq) WHERE obj IS NOT NULL;
CREATE INDEX records_target ON records (target) WHERE target IS NOT NULL;
CREATE TABLE totals (
	id           INTEGER PRIMARY KEY CHECK (id = 1),
	records      INTEGER NOT NULL,
	events       INTEGER NOT NULL,
	bodies       INTEGER NOT NULL,
	body_bytes   INTEGER NOT NULL,
	raw_bytes    INTEGER NOT NULL,
	seq_floor    INTEGER NOT NULL
);
INSERT INTO totals VALUES (1, 0, 0, 0, 0, 0, 0);
`,
	// Version 2 lets a query bounded by time seek within a stream: Records
	// with a stream and an Until finds the stream's last record observed at
	// or before Until here instead of walking every later record.
	1: `
CREATE INDEX records_stream_time ON records (stream, observed_at, seq) WHERE stream IS NOT NULL;
`,
	// Version 3 finds the newest record of a type in one seek: readers
	// keep streams' timelines (baselines, gaps, coverage changes) in
	// memory and check that they are current with it.
	2: `
CREATE INDEX records_type_seq ON records (type, seq) WHERE type <> 1;
`,
	// Version 4 is the lean layout: what every row repeated is named once.
	// Cluster IDs live in clusters, and records point at them by number;
	// an object's cluster, namespace, group and resource are its scope
	// (scopes), so an objects row is a scope number and a name; baseline
	// IDs live in baselines, and records point at them from the baseline
	// column instead of carrying them in their meta. The meta of an
	// event is a compact binary encoding (see metaOf); older rows keep
	// their JSON meta, which stays readable, with the baseline ID also
	// in the new column.
	3: `
CREATE TABLE clusters (
	id   INTEGER PRIMARY KEY,
	name TEXT NOT NULL UNIQUE
);
INSERT INTO clusters (name) SELECT cluster FROM records UNION SELECT cluster FROM objects UNION SELECT cluster FROM streams ORDER BY 1;
CREATE TABLE scopes (
	id        INTEGER PRIMARY KEY,
	cluster   INTEGER NOT NULL,
	namespace TEXT NOT NULL,
	grp       TEXT NOT NULL,
	resource  TEXT NOT NULL
);
CREATE UNIQUE INDEX scopes_name ON scopes (cluster, namespace, grp, resource);
INSERT INTO scopes (cluster, namespace, grp, resource)
	SELECT DISTINCT c.id, o.namespace, o.grp, o.resource FROM objects o JOIN clusters c ON c.name = o.cluster ORDER BY 1, 2, 3, 4;
CREATE TABLE objects_v4 (
	id    INTEGER PRIMARY KEY,
	scope INTEGER NOT NULL,
	name  TEXT NOT NULL
);
INSERT INTO objects_v4 (id, scope, name)
	SELECT o.id, p.id, o.name FROM objects o JOIN clusters c ON c.name = o.cluster
	JOIN scopes p ON p.cluster = c.id AND p.namespace = o.namespace AND p.grp = o.grp AND p.resource = o.resource ORDER BY o.id;
DROP TABLE objects;
ALTER TABLE objects_v4 RENAME TO objects;
CREATE UNIQUE INDEX objects_name ON objects (scope, name);
CREATE TABLE baselines (
	id          INTEGER PRIMARY KEY,
	baseline_id TEXT NOT NULL UNIQUE
);
INSERT INTO baselines (baseline_id)
	SELECT b FROM (SELECT json_extract(CAST(meta AS TEXT), '$.b') AS b, min(seq) AS first FROM records GROUP BY 1)
	WHERE b IS NOT NULL ORDER BY first;
CREATE TABLE records_v4 (
	seq         INTEGER PRIMARY KEY,
	id_key      INTEGER NOT NULL,
	event_id    BLOB NOT NULL,
	type        INTEGER NOT NULL,
	cluster     INTEGER NOT NULL,
	stream      INTEGER,
	observed_at INTEGER NOT NULL,
	watch_type  INTEGER NOT NULL,
	synthetic   INTEGER NOT NULL,
	obj         INTEGER,
	body        INTEGER,
	target      BLOB,
	baseline    INTEGER,
	meta        BLOB NOT NULL
);
INSERT INTO records_v4 (seq, id_key, event_id, type, cluster, stream, observed_at, watch_type, synthetic, obj, body, target, baseline, meta)
	SELECT r.seq, r.id_key, r.event_id, r.type, c.id, r.stream, r.observed_at, r.watch_type, r.synthetic, r.obj, r.body, r.target,
	(SELECT b.id FROM baselines b WHERE b.baseline_id = json_extract(CAST(r.meta AS TEXT), '$.b')), r.meta
	FROM records r JOIN clusters c ON c.name = r.cluster ORDER BY r.seq;
DROP TABLE records;
ALTER TABLE records_v4 RENAME TO records;
CREATE INDEX records_id ON records (id_key);
CREATE INDEX records_stream ON records (stream, seq, observed_at) WHERE stream IS NOT NULL;
CREATE INDEX records_stream_time ON records (stream, observed_at, seq) WHERE stream IS NOT NULL;
CREATE INDEX records_marker ON records (type, stream, seq) WHERE type <> 1;
CREATE INDEX records_type_seq ON records (type, seq) WHERE type <> 1;
CREATE INDEX records_object ON records (obj, observed_at, seq) WHERE obj IS NOT NULL;
CREATE INDEX records_target ON records (target) WHERE target IS NOT NULL;
`,
	// Version 5 drops the index of bodies by hash. A body is stored once
	// per object version, not once per journal: Append compares a new
	// body with its object's latest (the common repeat: a relist of an
	// unchanged object) and with the bodies of its own batch, and no
	// longer looks every hash up. The index's keys were random, so every
	// new body dirtied a page of it anywhere in the file; dropping it
	// takes about a tenth off Append's CPU and 18 bytes per body off the
	// file. The hash_key column stays (dropping it would rewrite the whole
	// bodies table on Open); nothing reads it any more, and new rows hold
	// 0 there, which takes no bytes.
	4: `
DROP INDEX bodies_hash;
`,
	// Version 6 clusters an object's history. Records are keyed by
	// (object, observed_at, seq) and bodies by (object, id), both WITHOUT
	// ROWID, so the versions of one object lie side by side on a few
	// pages instead of one records page and one bodies page each: a
	// history of 100 versions reads about a tenth of the pages. Every
	// commit of a writer empties the page cache (and the map) of every
	// reader connection, so under a recording writer each page a read
	// visits is a page read again. The key is also what the index of
	// records by (object, observed_at, seq) was, which goes: an object's
	// record at a time is one seek in the table. Records of no object have
	// obj 0 (it was NULL) and sort first. seq stays unique (records_seq)
	// and is still the order of the journal. A body is now its object's: a
	// body the older writers shared between objects (they stored a body
	// once per journal) is copied to each object that points at it, under
	// the same id; a body no record points at (a keyframe kept for its
	// deltas, the body of the highest id kept by Compact) is filed under
	// object 0. bodies_id finds a body by id alone: a delta's keyframe may
	// be another object's. The totals keep counting each body id once.
	// The unused hash_key column of version 5 goes with the rebuild.
	5: `
CREATE TABLE records_v6 (
	obj         INTEGER NOT NULL,
	observed_at INTEGER NOT NULL,
	seq         INTEGER NOT NULL,
	id_key      INTEGER NOT NULL,
	event_id    BLOB NOT NULL,
	type        INTEGER NOT NULL,
	cluster     INTEGER NOT NULL,
	stream      INTEGER,
	watch_type  INTEGER NOT NULL,
	synthetic   INTEGER NOT NULL,
	body        INTEGER,
	target      BLOB,
	baseline    INTEGER,
	meta        BLOB NOT NULL,
	PRIMARY KEY (obj, observed_at, seq)
) WITHOUT ROWID;
INSERT INTO records_v6 (obj, observed_at, seq, id_key, event_id, type, cluster, stream, watch_type, synthetic, body, target, baseline, meta)
	SELECT coalesce(obj, 0), observed_at, seq, id_key, event_id, type, cluster, stream, watch_type, synthetic, body, target, baseline, meta
	FROM records ORDER BY coalesce(obj, 0), observed_at, seq;
CREATE TABLE bodies_v6 (
	obj     INTEGER NOT NULL,
	id      INTEGER NOT NULL,
	hash    BLOB NOT NULL,
	raw_len INTEGER NOT NULL,
	base    INTEGER,
	data    BLOB NOT NULL,
	PRIMARY KEY (obj, id)
) WITHOUT ROWID;
INSERT INTO bodies_v6 (obj, id, hash, raw_len, base, data)
	SELECT u.obj, b.id, b.hash, b.raw_len, b.base, b.data FROM (
		SELECT DISTINCT obj, body AS id FROM records_v6 WHERE body IS NOT NULL
		UNION ALL
		SELECT 0, id FROM bodies WHERE id NOT IN (SELECT body FROM records_v6 WHERE body IS NOT NULL)
	) u JOIN bodies b ON b.id = u.id ORDER BY 1, 2;
DROP TABLE records;
ALTER TABLE records_v6 RENAME TO records;
DROP TABLE bodies;
ALTER TABLE bodies_v6 RENAME TO bodies;
CREATE UNIQUE INDEX records_seq ON records (seq);
CREATE INDEX records_id ON records (id_key);
CREATE INDEX records_stream ON records (stream, seq, observed_at) WHERE stream IS NOT NULL;
CREATE INDEX records_stream_time ON records (stream, observed_at, seq) WHERE stream IS NOT NULL;
CREATE INDEX records_marker ON records (type, stream, seq) WHERE type <> 1;
CREATE INDEX records_type_seq ON records (type, seq) WHERE type <> 1;
CREATE INDEX records_target ON records (target) WHERE target IS NOT NULL;
CREATE INDEX bodies_id ON bodies (id);
`,
}

// IncompatibleError says why a file cannot be opened as a journal. It
// wraps storage.ErrIncompatible.
type IncompatibleError struct {
	// Path is the file.
	Path string
	// FileVersion is the file's schema version when it is a krply
	// journal, and SupportedVersion the newest this package reads.
	FileVersion, SupportedVersion int
	// Reason says what is wrong.
	Reason string
	// Err is the underlying error, if any.
	Err error
}

func (e *IncompatibleError) Error() string {
	msg := fmt.Sprintf("%v: %s: %s", storage.ErrIncompatible, e.Path, e.Reason)
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns storage.ErrIncompatible and the underlying error.
func (e *IncompatibleError) Unwrap() []error {
	if e.Err != nil {
		return []error{storage.ErrIncompatible, e.Err}
	}
	return []error{storage.ErrIncompatible}
}

// sqliteMagic starts every SQLite database file.
var sqliteMagic = []byte("SQLite format 3\x00")

// inspectFile reads the header of an existing file without opening it as a
// database. It reports whether the file is new (missing or empty) and
// refuses files that are not SQLite or not krply journals, before SQLite
// gets a chance to touch them.
func inspectFile(path string) (isNew bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("sqlite: open %s: %w", path, err)
	}
	defer f.Close()
	header := make([]byte, 100)
	n, err := io.ReadFull(f, header)
	switch {
	case n == 0 && (err == io.EOF || err == nil):
		return true, nil
	case errors.Is(err, io.ErrUnexpectedEOF):
		return false, &IncompatibleError{Path: path, SupportedVersion: SchemaVersion, Reason: fmt.Sprintf("not a SQLite database (only %d bytes)", n)}
	case err != nil:
		return false, fmt.Errorf("sqlite: read header of %s: %w", path, err)
	}
	if !bytes.Equal(header[:16], sqliteMagic) {
		return false, &IncompatibleError{Path: path, SupportedVersion: SchemaVersion, Reason: "not a SQLite database, or a corrupt one (bad header)"}
	}
	if id := binary.BigEndian.Uint32(header[68:72]); id != applicationID {
		return false, &IncompatibleError{Path: path, SupportedVersion: SchemaVersion, Reason: fmt.Sprintf("a SQLite database but not a krply journal (application_id %#x)", id)}
	}
	return false, nil
}

// checkVersion reads the schema version of an existing journal through a
// read-only connection, so that a file it refuses is never written (not
// even checkpointed).
func checkVersion(ctx context.Context, path string) (int, error) {
	dsn := fileURL(path) + "?mode=ro&_pragma=busy_timeout(5000)"
	if !nonEmpty(path+"-wal") && !nonEmpty(path+"-journal") && !exists(path+"-shm") {
		// Without a write-ahead log or a hot rollback journal, and with
		// no writer live (no -shm file), the main file is the whole
		// truth: read it as immutable, so SQLite creates no -wal or -shm
		// file next to a file it may refuse. A live writer's empty log
		// fills and is copied into the file at any moment, which an
		// immutable read (no locks) could see half done.
		dsn += "&immutable=1"
	}
	db, err := sql.Open(driverName, dsn)
	if err != nil {
		return 0, fmt.Errorf("sqlite: open %s read-only: %w", path, err)
	}
	defer db.Close()
	var version, appID int
	err = db.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&version)
	if err == nil {
		err = db.QueryRowContext(ctx, `PRAGMA application_id`).Scan(&appID)
	}
	if err != nil && cannotShare(err) && !exists(path+"-shm") {
		return 0, walNeedsShm(path, err)
	}
	if err != nil {
		return 0, &IncompatibleError{Path: path, SupportedVersion: SchemaVersion, Reason: "cannot read the schema version (corrupt file?)", Err: err}
	}
	if appID != applicationID {
		return 0, &IncompatibleError{Path: path, FileVersion: version, SupportedVersion: SchemaVersion, Reason: fmt.Sprintf("a SQLite database but not a krply journal (application_id %#x)", appID)}
	}
	if version > SchemaVersion {
		return 0, &IncompatibleError{Path: path, FileVersion: version, SupportedVersion: SchemaVersion,
			Reason: fmt.Sprintf("written by a newer krply (schema version %d, this build reads up to %d)", version, SchemaVersion)}
	}
	if version < 1 {
		return 0, &IncompatibleError{Path: path, FileVersion: version, SupportedVersion: SchemaVersion, Reason: "krply journal without a schema version"}
	}
	// Reading the schema touches the first pages; a file whose header
	// survived but whose schema did not is refused here. (A full
	// integrity_check would read the whole file at every Open.)
	var tables int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('records', 'bodies', 'streams', 'objects', 'totals')`).Scan(&tables); err != nil || tables != 5 {
		if err == nil {
			err = fmt.Errorf("%d of 5 journal tables found", tables)
		}
		return 0, &IncompatibleError{Path: path, FileVersion: version, SupportedVersion: SchemaVersion, Reason: "corrupt journal (schema unreadable or incomplete)", Err: err}
	}
	if err := checkLayout(ctx, db, path, version); err != nil {
		return 0, err
	}
	return version, nil
}

func nonEmpty(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Size() > 0
}

// fileURL returns the SQLite URI of a file name.
func fileURL(path string) string {
	return "file:" + (&url.URL{Path: path}).EscapedPath()
}

// migrate brings the writer's database from version from to SchemaVersion
// in one transaction. Another process may have migrated it since from was
// read: the version is read again under the write lock.
func migrate(ctx context.Context, db *sql.DB, from int) error {
	if from == SchemaVersion {
		return nil
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("sqlite: migrate: %w", err)
	}
	defer tx.Rollback()
	if err := tx.QueryRowContext(ctx, `PRAGMA user_version`).Scan(&from); err != nil {
		return fmt.Errorf("sqlite: migrate: read version: %w", err)
	}
	switch {
	case from == SchemaVersion:
		return nil
	case from > SchemaVersion:
		return fmt.Errorf("%w: migrated meanwhile by a newer krply to schema version %d (this build reads up to %d)", storage.ErrIncompatible, from, SchemaVersion)
	}
	for v := from; v < SchemaVersion; v++ {
		if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
			return fmt.Errorf("sqlite: migrate schema %d to %d: %w", v, v+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, fmt.Sprintf(`PRAGMA application_id = %d; PRAGMA user_version = %d`, applicationID, SchemaVersion)); err != nil {
		return fmt.Errorf("sqlite: migrate: set version: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("sqlite: migrate: commit: %w", err)
	}
	return nil
}
