package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/krply/krply/storage"
)

// SchemaVersion is the version of the tables this package writes, kept in
// krply_meta. Open creates the tables of an empty schema and refuses a
// schema written by a newer krply with storage.ErrIncompatible.
const SchemaVersion = 1

// migrateLock is the key of the advisory lock that serializes schema
// set-up between processes opening the same database at once.
const migrateLock = 0x6B72706C // "krpl"

// schemaDDL creates the tables. Every table and every unique key carries
// the cluster, so each table can be distributed by cluster_id (Citus) and
// a cluster's rows live together; see doc.go.
const schemaDDL = `
CREATE SEQUENCE IF NOT EXISTS krply_seq;
CREATE TABLE IF NOT EXISTS krply_meta (
	key   text PRIMARY KEY,
	value text NOT NULL
);
-- One row per cluster: the lock every writer of the cluster takes (so a
-- cluster's sequence numbers follow commit order) and its totals.
CREATE TABLE IF NOT EXISTS krply_clusters (
	cluster_id text PRIMARY KEY,
	records    bigint NOT NULL DEFAULT 0,
	events     bigint NOT NULL DEFAULT 0,
	bodies     bigint NOT NULL DEFAULT 0,
	body_bytes bigint NOT NULL DEFAULT 0,
	raw_bytes  bigint NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS krply_streams (
	cluster_id text NOT NULL,
	stream_id  text NOT NULL,
	status     jsonb NOT NULL,
	PRIMARY KEY (cluster_id, stream_id)
);
-- Which baselines of a stream have begun and ended: the items of a
-- baseline begun and not ended are invisible to object queries.
CREATE TABLE IF NOT EXISTS krply_baselines (
	cluster_id  text NOT NULL,
	stream_id   text NOT NULL,
	baseline_id text NOT NULL,
	begun       boolean NOT NULL,
	ended       boolean NOT NULL,
	PRIMARY KEY (cluster_id, stream_id, baseline_id)
);
-- Every object each stream has a change of: what AliveAt walks, seeking
-- each one's last change in the object index.
CREATE TABLE IF NOT EXISTS krply_objects (
	cluster_id text NOT NULL,
	stream_id  text NOT NULL,
	resource   text NOT NULL,
	grp        text NOT NULL,
	namespace  text NOT NULL,
	name       text NOT NULL,
	PRIMARY KEY (cluster_id, stream_id, resource, grp, namespace, name)
);
CREATE TABLE IF NOT EXISTS krply_bodies (
	cluster_id text NOT NULL,
	hash       bytea NOT NULL,
	raw_len    integer NOT NULL,
	data       bytea NOT NULL,
	PRIMARY KEY (cluster_id, hash)
);
-- Partitioned by time (part: the partition of observed_at, see
-- partitions.go), so that retention drops whole partitions. The base
-- partition holds what compactions kept of dropped ones.
CREATE TABLE IF NOT EXISTS krply_records (
	cluster_id    text NOT NULL,
	seq           bigint NOT NULL,
	part          bigint NOT NULL,
	event_id      text NOT NULL,
	type          text NOT NULL,
	stream_id     text NOT NULL,
	observed_at   bigint NOT NULL,
	grp           text,
	resource      text,
	namespace     text,
	name          text,
	uid           text,
	rv            text,
	synthetic     boolean NOT NULL,
	deleted       boolean NOT NULL,
	item_baseline text,
	visible       boolean NOT NULL,
	progress      boolean NOT NULL,
	body_hash     bytea,
	target        text,
	meta          bytea NOT NULL,
	PRIMARY KEY (cluster_id, seq, part),
	UNIQUE (event_id, cluster_id, part)
) PARTITION BY RANGE (part);
CREATE TABLE IF NOT EXISTS krply_records_base PARTITION OF krply_records FOR VALUES FROM (MINVALUE) TO (-9223372036854775807);
CREATE INDEX IF NOT EXISTS krply_records_seq ON krply_records (seq);
CREATE INDEX IF NOT EXISTS krply_records_stream ON krply_records (cluster_id, stream_id, seq);
CREATE INDEX IF NOT EXISTS krply_records_stream_time ON krply_records (cluster_id, stream_id, observed_at, seq);
CREATE INDEX IF NOT EXISTS krply_records_object ON krply_records (cluster_id, resource, grp, namespace, name, observed_at, seq) WHERE name IS NOT NULL;
CREATE INDEX IF NOT EXISTS krply_records_timeline ON krply_records (cluster_id, stream_id, seq) WHERE type IN ('baseline', 'gap', 'coverage_change');
CREATE INDEX IF NOT EXISTS krply_records_progress ON krply_records (cluster_id, stream_id, seq) WHERE progress;
CREATE INDEX IF NOT EXISTS krply_records_hidden ON krply_records (cluster_id, stream_id, item_baseline) WHERE NOT visible;
CREATE INDEX IF NOT EXISTS krply_records_target ON krply_records (target) WHERE target IS NOT NULL;
`

// migrate creates the tables of an empty schema, or checks the version of
// existing ones, under an advisory lock.
func migrate(ctx context.Context, conn *pgx.Conn, schema string, width *time.Duration) error {
	tx, err := conn.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(migrateLock)); err != nil {
		return err
	}
	if schema != "" {
		if _, err := tx.Exec(ctx, "CREATE SCHEMA IF NOT EXISTS "+pgx.Identifier{schema}.Sanitize()); err != nil {
			return err
		}
	}
	var exists bool
	if err := tx.QueryRow(ctx, "SELECT to_regclass('krply_meta') IS NOT NULL").Scan(&exists); err != nil {
		return err
	}
	if exists {
		var v string
		if err := tx.QueryRow(ctx, "SELECT value FROM krply_meta WHERE key = 'schema_version'").Scan(&v); err != nil {
			return fmt.Errorf("%w: krply_meta has no schema_version: %v", storage.ErrIncompatible, err)
		}
		n, err := strconv.Atoi(v)
		if err != nil || n > SchemaVersion {
			return fmt.Errorf("%w: the tables have schema version %s, this krply reads up to %d: upgrade krply", storage.ErrIncompatible, v, SchemaVersion)
		}
		var w string
		if err := tx.QueryRow(ctx, "SELECT value FROM krply_meta WHERE key = 'partition_width'").Scan(&w); err != nil {
			return fmt.Errorf("%w: krply_meta has no partition_width: %v", storage.ErrIncompatible, err)
		}
		stored, err := time.ParseDuration(w)
		if err != nil || stored <= 0 {
			return fmt.Errorf("%w: krply_meta: partition_width %q", storage.ErrIncompatible, w)
		}
		if *width != 0 && *width != stored {
			return fmt.Errorf("%w: WithPartitionWidth(%s): the journal was created with partitions of %s, which it keeps; drop the option", storage.ErrInvalidArgument, *width, stored)
		}
		*width = stored
		return tx.Commit(ctx)
	}
	if *width == 0 {
		*width = DefaultPartitionWidth
	}
	if _, err := tx.Exec(ctx, schemaDDL); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, "INSERT INTO krply_meta (key, value) VALUES ('schema_version', $1), ('partition_width', $2)", strconv.Itoa(SchemaVersion), width.String()); err != nil {
		return err
	}
	return tx.Commit(ctx)
}
