package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// latestBodyQuery finds the body of an object's latest record.
const latestBodyQuery = `SELECT body FROM records INDEXED BY ` + recordsKey + ` WHERE obj = ? AND body IS NOT NULL ORDER BY observed_at DESC, seq DESC LIMIT 1`

// keyframeQuery reads a body by its id alone: the keyframe of a delta,
// which may be another object's.
const keyframeQuery = `SELECT raw_len, data FROM bodies WHERE id = ? LIMIT 1`

type writerStmts struct {
	bodyRow, objectBodyRow                *sql.Stmt
	streamRow, insertStream, updateStream *sql.Stmt
	latestBody, updateTotals, counters    *sql.Stmt
}

func (ws *writerStmts) prepare(ctx context.Context, db *sql.DB) error {
	for _, p := range []struct {
		stmt **sql.Stmt
		sql  string
	}{
		{&ws.bodyRow, `SELECT raw_len, base, data, hash FROM bodies WHERE id = ? LIMIT 1`},
		{&ws.objectBodyRow, `SELECT raw_len, base, data, hash FROM bodies WHERE obj = ? AND id = ?`},
		{&ws.streamRow, `SELECT ` + streamColumns + ` FROM streams WHERE stream_id = ?`},
		{&ws.insertStream, `INSERT INTO streams (stream_id, cluster, checkpoint_at, last_baseline_end_at, last_gap_at, first_observed_at, last_observed_at) VALUES (?,?,?,?,?,?,?)`},
		{&ws.updateStream, `UPDATE streams SET checkpoint_rv=?, checkpoint_at=?, available=?, availability_reason=?, last_baseline_id=?, last_baseline_end_at=?, open_baseline_id=?, gaps=?, last_gap_at=?, first_observed_at=?, last_observed_at=?, records=?, last_seq=? WHERE id=?`},
		{&ws.latestBody, latestBodyQuery},
		{&ws.updateTotals, `UPDATE totals SET records=records+?, events=events+?, bodies=bodies+?, body_bytes=body_bytes+?, raw_bytes=raw_bytes+? WHERE id=1`},
		{&ws.counters, countersQuery},
	} {
		st, err := db.PrepareContext(ctx, p.sql)
		if err != nil {
			ws.close()
			return fmt.Errorf("prepare %q: %w", p.sql, err)
		}
		*p.stmt = st
	}
	return nil
}

func (ws *writerStmts) close() {
	for _, st := range []*sql.Stmt{ws.bodyRow, ws.objectBodyRow, ws.streamRow, ws.insertStream, ws.updateStream,
		ws.latestBody, ws.updateTotals, ws.counters} {
		if st != nil {
			st.Close()
		}
	}
}

// A keyLookup is a query that finds rows by a list of keys of columns
// values each: prefix is completed by "IN (...)" and its placeholders.
type keyLookup struct {
	prefix  string
	columns int
}

// The lookups of Append.
var (
	idLookup     = keyLookup{`SELECT event_id, seq FROM records WHERE id_key`, 1}
	objectLookup = keyLookup{`SELECT id, scope, name FROM objects WHERE (scope, name)`, 2}
)

// text returns the query for n keys.
func (l keyLookup) text(n int) string {
	if l.columns == 1 {
		return l.prefix + " IN " + placeholders(n)
	}
	row := placeholders(l.columns)
	return l.prefix + " IN (VALUES " + row + strings.Repeat(","+row, n-1) + ")"
}

// lookupSizes are the key counts of the prepared lookups, ascending. Keys
// are looked up in chunks of the largest size; a smaller rest goes to the
// smallest statement that holds it, padded with its last key repeated (a
// repeated key in IN (...) finds nothing twice). Preparing a statement
// per batch instead cost about as much as running it.
var lookupSizes = []int{1, 8, 64, 512}

// lookup runs l over keys (l.columns values per key, flattened) and calls
// scan for each row found.
func (at *appendTx) lookup(l keyLookup, keys []any, scan func(*sql.Rows) error) error {
	args := make([]any, 0, lookupSizes[len(lookupSizes)-1]*l.columns)
	for len(keys) > 0 {
		count := len(keys) / l.columns
		size := lookupSizes[len(lookupSizes)-1]
		for _, sz := range lookupSizes {
			if sz >= count {
				size = sz
				break
			}
		}
		n := min(size, count) * l.columns
		args = append(args[:0], keys[:n]...)
		for len(args) < size*l.columns {
			args = append(args, keys[n-l.columns:n]...)
		}
		keys = keys[n:]
		rows, err := at.tx.StmtContext(at.ctx, at.s.sized[sizedKey(l.prefix, size)]).QueryContext(at.ctx, args...)
		if err != nil {
			return err
		}
		for rows.Next() {
			if err := scan(rows); err != nil {
				rows.Close()
				return err
			}
		}
		if err := rows.Close(); err != nil {
			return err
		}
	}
	return nil
}

// A rowInsert is a multi-row INSERT: prefix is completed by rows of
// columns placeholders each.
//
// SQLite runs a statement that may abort in a statement journal (a copy
// of every page it touches, so the statement alone can be undone), about
// a tenth of Append's CPU. The INSERTs of the WITHOUT ROWID tables
// (records, bodies) say OR FAIL, which needs none: a failed row ends the
// statement with the rows before it in place, and Append then rolls the
// whole transaction back. An INSERT that sets an INTEGER PRIMARY KEY from
// a parameter (objects) may abort on a non-integer value whatever its
// conflict clause, so it keeps the statement journal.
//
// key lists the columns of the table's primary key (all INTEGER, given as
// int64), for a WITHOUT ROWID table clustered on it: insertRows inserts a
// batch's rows in that order, so that consecutive rows go to the same or
// neighbouring pages, already in the cache (records are clustered by
// object, and a batch arrives in time order, object after object).
type rowInsert struct {
	prefix  string
	columns int
	key     []int
}

// The INSERTs of Append.
var (
	insertRecords       = rowInsert{`INSERT OR FAIL INTO records (seq, id_key, event_id, type, cluster, stream, observed_at, watch_type, synthetic, obj, body, target, baseline, meta) VALUES `, 14, []int{9, 6, 0}}
	insertBodies        = rowInsert{`INSERT OR FAIL INTO bodies (obj, id, hash, raw_len, base, data) VALUES `, 6, []int{0, 1}}
	insertObjects       = rowInsert{`INSERT INTO objects (id, scope, name) VALUES `, 3, nil}
	insertStreamObjects = rowInsert{`INSERT OR IGNORE INTO stream_objects (stream, obj) VALUES `, 2, nil}
)

// sortRows orders rows by the columns key.
func sortRows(rows [][]any, key []int) {
	if len(key) == 0 {
		return
	}
	slices.SortFunc(rows, func(a, b []any) int {
		for _, k := range key {
			if c := cmp.Compare(a[k].(int64), b[k].(int64)); c != 0 {
				return c
			}
		}
		return 0
	})
}

// text returns the statement for n rows.
func (ins rowInsert) text(n int) string {
	row := placeholders(ins.columns)
	return ins.prefix + row + strings.Repeat(","+row, n-1)
}

// insertSizes are the row counts of the prepared multi-row INSERTs; a
// batch is cut greedily into pieces of these sizes.
var insertSizes = []int{64, 16, 4, 1}

func (at *appendTx) insertRows(ins rowInsert, rows [][]any) error {
	sortRows(rows, ins.key)
	args := make([]any, 0, min(len(rows), insertSizes[0])*ins.columns)
	for len(rows) > 0 {
		n := 1
		for _, size := range insertSizes {
			if size <= len(rows) {
				n = size
				break
			}
		}
		args = args[:0]
		for _, row := range rows[:n] {
			args = append(args, row...)
		}
		if _, err := at.tx.StmtContext(at.ctx, at.s.sized[sizedKey(ins.prefix, n)]).ExecContext(at.ctx, args...); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// sizedKey names a statement of Store.sized: its prefix and its row or
// key count.
func sizedKey(prefix string, n int) string { return fmt.Sprintf("%s/%d", prefix, n) }

// placeholders returns a list of n placeholders: "(?,?,?)".
func placeholders(n int) string { return "(?" + strings.Repeat(",?", n-1) + ")" }

// prepareSized prepares the multi-row INSERTs and the lookups on the
// writer.
func (s *Store) prepareSized(ctx context.Context) error {
	prepare := func(key, text string) error {
		st, err := s.w.PrepareContext(ctx, text)
		if err != nil {
			return fmt.Errorf("prepare %q: %w", text, err)
		}
		s.sized[key] = st
		return nil
	}
	for _, ins := range []rowInsert{insertRecords, insertBodies, insertObjects, insertStreamObjects} {
		for _, n := range insertSizes {
			if err := prepare(sizedKey(ins.prefix, n), ins.text(n)); err != nil {
				return err
			}
		}
	}
	for _, l := range []keyLookup{idLookup, objectLookup} {
		for _, n := range lookupSizes {
			if err := prepare(sizedKey(l.prefix, n), l.text(n)); err != nil {
				return err
			}
		}
	}
	return nil
}
