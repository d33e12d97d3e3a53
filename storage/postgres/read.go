package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/journal"
)

// querier is what the reader queries: the pool, or the transaction of a
// compaction (which decides on the journal it holds locked).
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
	Exec(ctx context.Context, sql string, arguments ...any) (pgconn.CommandTag, error)
	batcher
}

// reader answers the queries of storage.Reader with SQL. Every answer
// reads the database, so another process's write is seen by the next
// statement; the one thing a Store's reader keeps between calls, the
// timeline records (timelineCache), is checked against the database by
// each answer that uses it.
type reader struct {
	q      querier
	closed *atomic.Bool
	// parts maps times to partitions, so that a query of the past skips
	// the partitions after it.
	parts *partitions
	// commitOrdered: reads of every cluster stop at committedBound (see
	// commitorder.go). Off in a compaction, which holds writers off.
	commitOrdered bool
	// timelines is the Store's copy of the timeline records; nil in a
	// compaction's transaction, which reads them afresh.
	timelines *timelineCache
}

func (r reader) check(ctx context.Context, op string) error {
	if r.closed != nil && r.closed.Load() {
		return fmt.Errorf("postgres: %s: %w", op, storage.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("postgres: %s: %w", op, err)
	}
	return nil
}

// nanos is the column form of a time: Unix nanoseconds (PostgreSQL's
// timestamps keep microseconds; records keep what they were given).
func nanos(t time.Time) int64 { return t.UnixNano() }

// selectRecord is the select list of a record, its body included or not.
func selectRecord(withBody bool) string {
	if withBody {
		return "r.seq, r.meta, (SELECT b.data FROM krply_bodies b WHERE b.cluster_id = r.cluster_id AND b.hash = r.body_hash)"
	}
	return "r.seq, r.meta, NULL::bytea"
}

func scanRecords(rows pgx.Rows) ([]event.Record, error) {
	defer rows.Close()
	// Empty, not nil, when nothing matches: answers marshal to JSON as
	// SQLite's do ([], not null), which a round trip compares.
	out := []event.Record{}
	for rows.Next() {
		var seq int64
		var meta, body []byte
		if err := rows.Scan(&seq, &meta, &body); err != nil {
			return nil, err
		}
		rec, err := decodeRecord(seq, meta, body)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	return out, rows.Err()
}

// query runs a statement that selects records (selectRecord) and
// decodes them; errors name the operation.
func (r reader) query(ctx context.Context, op, sql string, args ...any) ([]event.Record, error) {
	rows, err := r.q.Query(ctx, sql, args...)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", op, err)
	}
	recs, err := scanRecords(rows)
	if err != nil {
		return nil, fmt.Errorf("postgres: %s: %w", op, err)
	}
	return recs, nil
}

// first returns the first record a query selects, or an error wrapping
// storage.ErrNotFound that names what (the object, the ID) was not found.
func (r reader) first(ctx context.Context, op, what, sql string, args ...any) (event.Record, error) {
	recs, err := r.query(ctx, op, sql, args...)
	if err != nil {
		return event.Record{}, err
	}
	if len(recs) == 0 {
		return event.Record{}, fmt.Errorf("postgres: %s %s: %w", op, what, storage.ErrNotFound)
	}
	return recs[0], nil
}

func decodeRecord(seq int64, meta, body []byte) (event.Record, error) {
	var rec event.Record
	if err := json.Unmarshal(meta, &rec); err != nil {
		return rec, fmt.Errorf("%w: record %d: %v", storage.ErrIncompatible, seq, err)
	}
	rec.IngestSeq = seq
	if body != nil {
		rec.Object = json.RawMessage(body)
	}
	return rec, nil
}

// args builds the positional arguments of a statement.
type args []any

func (a *args) add(v any) string {
	*a = append(*a, v)
	return "$" + strconv.Itoa(len(*a))
}

// streamCluster returns the cluster of a stream ID, which every stream
// query names so that it stays on one cluster's rows (one shard).
func streamCluster(streamID string) string {
	if s, err := event.ParseStreamID(streamID); err == nil {
		return s.ClusterID
	}
	cluster, _, _ := strings.Cut(streamID, "/")
	return cluster
}

// Get returns the record with the given EventID.
func (r reader) Get(ctx context.Context, eventID string) (event.Record, error) {
	if err := r.check(ctx, "get"); err != nil {
		return event.Record{}, err
	}
	return r.first(ctx, "get", strconv.Quote(eventID), "SELECT "+selectRecord(true)+" FROM krply_records r WHERE r.event_id = $1 ORDER BY r.seq LIMIT 1", eventID)
}

// GetMany implements storage.MultiGetter: the records of all the IDs in
// one statement.
func (r reader) GetMany(ctx context.Context, eventIDs []string) ([]event.Record, error) {
	if err := r.check(ctx, "get"); err != nil {
		return nil, err
	}
	recs, err := r.query(ctx, "get", "SELECT "+selectRecord(true)+" FROM krply_records r WHERE r.event_id = ANY($1) ORDER BY r.seq", eventIDs)
	if err != nil {
		return nil, err
	}
	// The first record of an ID by seq, as Get returns it.
	byID := make(map[string]event.Record, len(recs))
	for _, rec := range recs {
		if _, ok := byID[rec.EventID]; !ok {
			byID[rec.EventID] = rec
		}
	}
	out := make([]event.Record, len(eventIDs))
	for i, id := range eventIDs {
		rec, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("postgres: get %s: %w", strconv.Quote(id), storage.ErrNotFound)
		}
		out[i] = rec
	}
	return out, nil
}

// Records returns a page of the records that match q, in IngestSeq order.
func (r reader) Records(ctx context.Context, q storage.Query) (storage.Page, error) {
	if err := r.check(ctx, "records"); err != nil {
		return storage.Page{}, err
	}
	limit := q.Limit
	if limit <= 0 {
		limit = journal.DefaultLimit
	}
	after, before := q.AfterSeq, q.BeforeSeq
	if q.Cursor != "" {
		c, err := journal.DecodeCursor(q.Cursor)
		if err != nil {
			return storage.Page{}, fmt.Errorf("postgres: records: %w", err)
		}
		if q.Descending {
			if before == 0 || c < before {
				before = c
			}
		} else if c > after {
			after = c
		}
	}
	var a args
	var where []string
	cluster := q.ClusterID
	if q.StreamID != "" {
		sc := streamCluster(q.StreamID)
		if cluster != "" && cluster != sc {
			return storage.Page{}, nil
		}
		cluster = sc
		where = append(where, "r.stream_id = "+a.add(q.StreamID))
	}
	if cluster != "" || q.StreamID != "" {
		where = append(where, "r.cluster_id = "+a.add(cluster))
	} else if r.commitOrdered {
		bound, err := committedBound(ctx, r.q)
		if err != nil {
			return storage.Page{}, fmt.Errorf("postgres: records: %w", err)
		}
		if before == 0 || bound+1 < before {
			before = bound + 1
		}
		if after >= before-1 {
			return storage.Page{Records: []event.Record{}}, nil
		}
	}
	if len(q.Types) > 0 {
		types := make([]string, len(q.Types))
		for i, t := range q.Types {
			types[i] = string(t)
		}
		where = append(where, "r.type = ANY("+a.add(types)+")")
	}
	if !q.Since.IsZero() {
		where = append(where, "r.observed_at >= "+a.add(nanos(q.Since)))
	}
	if !q.Until.IsZero() {
		u := a.add(nanos(q.Until))
		where = append(where, "r.observed_at <= "+u)
		if q.StreamID != "" {
			// Seek: no record of the stream observed at or before Until
			// has a larger seq than the last one in time order (see
			// storage/compaction, "Order in time").
			where = append(where, "r.seq <= (SELECT s.seq FROM krply_records s WHERE s.cluster_id = r.cluster_id AND s.stream_id = r.stream_id AND s.observed_at <= "+u+" ORDER BY s.observed_at DESC, s.seq DESC LIMIT 1)")
		}
	}
	if after > 0 {
		where = append(where, "r.seq > "+a.add(after))
	}
	if before > 0 {
		where = append(where, "r.seq < "+a.add(before))
	}
	sql := "SELECT " + selectRecord(!q.WithoutBodies) + " FROM krply_records r"
	if len(where) > 0 {
		sql += " WHERE " + strings.Join(where, " AND ")
	}
	if q.Descending {
		sql += " ORDER BY r.seq DESC"
	} else {
		sql += " ORDER BY r.seq"
	}
	sql += " LIMIT " + a.add(limit+1)
	recs, err := r.query(ctx, "records", sql, a...)
	if err != nil {
		return storage.Page{}, err
	}
	var page storage.Page
	if len(recs) > limit {
		recs = recs[:limit]
		page.Next = journal.EncodeCursor(recs[limit-1].IngestSeq)
	}
	page.Records = recs
	return page, nil
}

// StreamStatus returns the durable state of one stream.
func (r reader) StreamStatus(ctx context.Context, streamID string) (storage.StreamStatus, error) {
	if err := r.check(ctx, "stream status"); err != nil {
		return storage.StreamStatus{}, err
	}
	var raw []byte
	err := r.q.QueryRow(ctx, "SELECT status FROM krply_streams WHERE cluster_id = $1 AND stream_id = $2", streamCluster(streamID), streamID).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return storage.StreamStatus{}, fmt.Errorf("postgres: stream %q: %w", streamID, storage.ErrNotFound)
	}
	if err != nil {
		return storage.StreamStatus{}, fmt.Errorf("postgres: stream %q: %w", streamID, err)
	}
	var st storage.StreamStatus
	if err := json.Unmarshal(raw, &st); err != nil {
		return st, fmt.Errorf("postgres: stream %q: %w: %v", streamID, storage.ErrIncompatible, err)
	}
	return st, nil
}

// Streams returns the status of every stream of a cluster ("" for all),
// ordered by stream ID.
func (r reader) Streams(ctx context.Context, clusterID string) ([]storage.StreamStatus, error) {
	if err := r.check(ctx, "streams"); err != nil {
		return nil, err
	}
	sql := `SELECT status FROM krply_streams WHERE ($1 = '' OR cluster_id = $1) ORDER BY stream_id COLLATE "C"`
	rows, err := r.q.Query(ctx, sql, clusterID)
	if err != nil {
		return nil, fmt.Errorf("postgres: streams: %w", err)
	}
	defer rows.Close()
	var out []storage.StreamStatus
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&raw); err != nil {
			return nil, fmt.Errorf("postgres: streams: %w", err)
		}
		var st storage.StreamStatus
		if err := json.Unmarshal(raw, &st); err != nil {
			return nil, fmt.Errorf("postgres: streams: %w: %v", storage.ErrIncompatible, err)
		}
		out = append(out, st)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("postgres: streams: %w", err)
	}
	return out, nil
}

// objectWhere restricts r to the visible object changes of obj.
func objectWhere(a *args, obj storage.ObjectID) string {
	return "r.cluster_id = " + a.add(obj.ClusterID) + " AND r.resource = " + a.add(obj.Resource) +
		" AND r.grp = " + a.add(obj.Group) + " AND r.namespace = " + a.add(obj.Namespace) +
		" AND r.name = " + a.add(obj.Name) + " AND r.visible"
}

// ObjectHistory returns the object changes of obj in IngestSeq order.
func (r reader) ObjectHistory(ctx context.Context, obj storage.ObjectID, q storage.HistoryQuery) ([]event.Record, error) {
	if err := r.check(ctx, "object history"); err != nil {
		return nil, err
	}
	if q.Limit < 0 {
		return nil, fmt.Errorf("postgres: object history: %w: negative Limit %d (0 means no cap)", storage.ErrInvalidArgument, q.Limit)
	}
	var a args
	sql := "SELECT " + selectRecord(!q.WithoutBodies) + " FROM krply_records r WHERE " + objectWhere(&a, obj)
	if q.StreamID != "" {
		sql += " AND r.stream_id = " + a.add(q.StreamID)
	}
	if q.AfterSeq > 0 {
		sql += " AND r.seq > " + a.add(q.AfterSeq)
	}
	if !q.Since.IsZero() {
		sql += " AND r.observed_at >= " + a.add(nanos(q.Since))
	}
	if !q.Until.IsZero() {
		sql += " AND r.observed_at <= " + a.add(nanos(q.Until))
	}
	sql += " ORDER BY r.seq"
	if q.Limit > 0 {
		sql += " LIMIT " + a.add(q.Limit)
	}
	recs, err := r.query(ctx, "object history", sql, a...)
	if err != nil {
		return nil, err
	}
	return recs, nil
}

// LatestAt returns the last object change of obj observed at or before at.
func (r reader) LatestAt(ctx context.Context, obj storage.ObjectID, at time.Time) (event.Record, error) {
	if err := r.check(ctx, "latest at"); err != nil {
		return event.Record{}, err
	}
	var a args
	sql := "SELECT " + selectRecord(true) + " FROM krply_records r WHERE " + objectWhere(&a, obj) +
		" AND r.observed_at <= " + a.add(nanos(at)) + " AND r.part <= " + a.add(r.parts.of(at)) + " ORDER BY r.observed_at DESC, r.seq DESC LIMIT 1"
	return r.first(ctx, "latest at", fmt.Sprintf("%s/%s/%s/%s at %s", obj.ClusterID, obj.Resource, obj.Namespace, obj.Name, at), sql, a...)
}

// AliveAt returns the last object change at or before q.At of every object
// in scope whose last change is not a deletion, ordered by object.
func (r reader) AliveAt(ctx context.Context, q storage.AliveQuery) ([]event.Record, error) {
	if err := r.check(ctx, "alive at"); err != nil {
		return nil, err
	}
	// For each object in scope (krply_objects), its last visible change
	// at or before At (one seek in the object index), unless a deletion.
	var a args
	last := []string{"r.cluster_id = o.cluster_id", "r.resource = o.resource", "r.grp = o.grp", "r.namespace = o.namespace", "r.name = o.name",
		"r.observed_at <= " + a.add(nanos(q.At)), "r.part <= " + a.add(r.parts.of(q.At))}
	if q.IncludeBaseline != "" {
		last = append(last, "(r.visible OR r.item_baseline = "+a.add(q.IncludeBaseline)+")")
	} else {
		last = append(last, "r.visible")
	}
	var objects string
	if q.StreamID != "" {
		last = append(last, "r.stream_id = o.stream_id")
		objects = "SELECT cluster_id, stream_id, resource, grp, namespace, name FROM krply_objects WHERE cluster_id = " +
			a.add(streamCluster(q.StreamID)) + " AND stream_id = " + a.add(q.StreamID)
	} else {
		where := []string{"true"}
		if q.ClusterID != "" {
			where = append(where, "cluster_id = "+a.add(q.ClusterID))
		}
		if q.Namespace != "" {
			where = append(where, "namespace = "+a.add(q.Namespace))
		}
		if q.Group != "" {
			where = append(where, "grp = "+a.add(q.Group))
		}
		if q.Resource != "" {
			where = append(where, "resource = "+a.add(q.Resource))
		}
		objects = "SELECT DISTINCT cluster_id, resource, grp, namespace, name FROM krply_objects WHERE " + strings.Join(where, " AND ")
	}
	// Ordered as storage.ObjectID compares, byte-wise.
	sql := `SELECT l.seq, l.meta, ` + bodyOf("l", !q.WithoutBodies) + ` FROM (` + objects + `) o
CROSS JOIN LATERAL (SELECT r.cluster_id, r.seq, r.meta, r.deleted, r.body_hash FROM krply_records r
	WHERE ` + strings.Join(last, " AND ") + `
	ORDER BY r.observed_at DESC, r.seq DESC LIMIT 1) l
WHERE NOT l.deleted
ORDER BY o.cluster_id COLLATE "C", o.grp COLLATE "C", o.resource COLLATE "C", o.namespace COLLATE "C", o.name COLLATE "C"`
	// Planned for its values every time (the unnamed statement): the
	// generic plan PostgreSQL would otherwise keep for it walks a large
	// journal more slowly, and planning costs little beside a walk of
	// every object.
	recs, err := r.query(ctx, "alive at", sql, append([]any{pgx.QueryExecModeCacheDescribe}, a...)...)
	if err != nil {
		return nil, err
	}
	return recs, nil
}

func bodyOf(alias string, with bool) string {
	if !with {
		return "NULL::bytea"
	}
	return "(SELECT b.data FROM krply_bodies b WHERE b.cluster_id = " + alias + ".cluster_id AND b.hash = " + alias + ".body_hash)"
}

// EventByResourceVersion returns the first real object change of obj with
// resourceVersion rv, else the first synthetic one.
func (r reader) EventByResourceVersion(ctx context.Context, obj storage.ObjectID, uid, rv string) (event.Record, error) {
	if err := r.check(ctx, "event by resource version"); err != nil {
		return event.Record{}, err
	}
	var a args
	sql := "SELECT " + selectRecord(true) + " FROM krply_records r WHERE " + objectWhere(&a, obj) + " AND r.rv = " + a.add(rv)
	if uid != "" {
		sql += " AND r.uid = " + a.add(uid)
	}
	sql += " ORDER BY r.synthetic, r.seq LIMIT 1"
	return r.first(ctx, "event by resource version", fmt.Sprintf("%s/%s/%s/%s at resourceVersion %s", obj.ClusterID, obj.Resource, obj.Namespace, obj.Name, rv), sql, a...)
}

// Correlations returns the audit correlations pointing at each EventID.
func (r reader) Correlations(ctx context.Context, eventIDs []string) (map[string][]event.Record, error) {
	if err := r.check(ctx, "correlations"); err != nil {
		return nil, err
	}
	out := map[string][]event.Record{}
	if len(eventIDs) == 0 {
		return out, nil
	}
	recs, err := r.query(ctx, "correlations", "SELECT "+selectRecord(true)+" FROM krply_records r WHERE r.target = ANY($1) ORDER BY r.seq", eventIDs)
	if err != nil {
		return nil, err
	}
	for _, rec := range recs {
		out[rec.Audit.TargetEventID] = append(out[rec.Audit.TargetEventID], rec)
	}
	return out, nil
}

// Stats returns the size of the journal: the totals of every cluster, and
// the size of its tables on disk.
func (r reader) Stats(ctx context.Context) (storage.Stats, error) {
	if err := r.check(ctx, "stats"); err != nil {
		return storage.Stats{}, err
	}
	var st storage.Stats
	// The sizes lock each partition in turn, in no order a compaction
	// dropping partitions could keep to: PostgreSQL may abort this read
	// as a deadlock's victim, and it is read again.
	err := retryRead(ctx, func() error {
		return r.q.QueryRow(ctx, `SELECT coalesce(sum(records), 0)::bigint, coalesce(sum(events), 0)::bigint, coalesce(sum(bodies), 0)::bigint,
	coalesce(sum(body_bytes), 0)::bigint, coalesce(sum(raw_bytes), 0)::bigint,
	(SELECT coalesce(sum(pg_total_relation_size(c)), 0)::bigint FROM unnest(ARRAY['krply_bodies', 'krply_streams', 'krply_baselines', 'krply_clusters', 'krply_objects']::regclass[]) c)
	+ (SELECT coalesce(sum(pg_total_relation_size(relid)), 0)::bigint FROM pg_partition_tree('krply_records'))
	FROM krply_clusters`).Scan(&st.Records, &st.Events, &st.Bodies, &st.BodyBytes, &st.RawBodyBytes, &st.FileBytes)
	})
	if err != nil {
		return st, fmt.Errorf("postgres: stats: %w", err)
	}
	return st, nil
}

// Timelines returns the timeline of every stream of a cluster ("" for
// all), ordered by stream ID: the streams read with one query, and their
// records from the Store's copy, brought up to date (timelineCache).
func (r reader) Timelines(ctx context.Context, clusterID string) ([]storage.Timeline, error) {
	streams, err := r.Streams(ctx, clusterID)
	if err != nil {
		return nil, err
	}
	byStream, err := r.timelineRecords(ctx, clusterID)
	if err != nil {
		return nil, err
	}
	out := make([]storage.Timeline, len(streams))
	for i, st := range streams {
		out[i] = storage.Timeline{StreamID: st.StreamID, Stream: st.Stream, Records: byStream[st.StreamID]}
	}
	return out, nil
}

// Watermark returns the resourceVersion and time of the stream's last
// record carrying progress observed at or before at.
func (r reader) Watermark(ctx context.Context, streamID string, at time.Time) (string, time.Time, error) {
	if err := r.check(ctx, "watermark"); err != nil {
		return "", time.Time{}, err
	}
	recs, err := r.query(ctx, "watermark", "SELECT "+selectRecord(false)+` FROM krply_records r
WHERE r.cluster_id = $1 AND r.stream_id = $2 AND r.progress AND r.observed_at <= $3
  AND r.seq <= (SELECT s.seq FROM krply_records s WHERE s.cluster_id = $1 AND s.stream_id = $2 AND s.observed_at <= $3 ORDER BY s.observed_at DESC, s.seq DESC LIMIT 1)
ORDER BY r.seq DESC LIMIT 1`, streamCluster(streamID), streamID, nanos(at))
	if err != nil || len(recs) == 0 {
		return "", time.Time{}, err
	}
	rv, _ := storage.ProgressRV(recs[0])
	return rv, recs[0].ObservedAt, nil
}

// retryRead runs a read again, up to ten times, while PostgreSQL aborts it
// as the victim of a deadlock.
func retryRead(ctx context.Context, read func() error) error {
	for attempt := 0; ; attempt++ {
		err := read()
		var pe *pgconn.PgError
		if err == nil || !errors.As(err, &pe) || pe.Code != "40P01" || attempt == 9 || ctx.Err() != nil {
			return err
		}
	}
}
