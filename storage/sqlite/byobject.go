package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// byObjectCursorPrefix starts a cursor of RecordsByObject: the key of the
// first record of the next page, its object's row id, ObservedAt and seq,
// then, in a cursor of a part (SplitByObject), the row id of the first
// object after the part.
const byObjectCursorPrefix = "o"

// byObjectKey is a record's key in the records table, and the end of the
// part of the stream's objects it is read in (0: none).
type byObjectKey struct{ obj, observed, seq, end int64 }

func (k byObjectKey) cursor() string {
	c := byObjectCursorPrefix + strconv.FormatInt(k.obj, 10) + "." + strconv.FormatInt(k.observed, 10) + "." + strconv.FormatInt(k.seq, 10)
	if k.end != 0 {
		c += "." + strconv.FormatInt(k.end, 10)
	}
	return c
}

func parseByObjectCursor(cursor string) (byObjectKey, error) {
	rest, ok := strings.CutPrefix(cursor, byObjectCursorPrefix)
	parts := strings.Split(rest, ".")
	if !ok || len(parts) != 3 && len(parts) != 4 {
		return byObjectKey{}, fmt.Errorf("sqlite: records by object: %w: cursor %q is not one of RecordsByObject's", storage.ErrInvalidArgument, cursor)
	}
	var n [4]int64
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || i == 3 && v <= n[0] {
			return byObjectKey{}, fmt.Errorf("sqlite: records by object: %w: cursor %q is not one of RecordsByObject's", storage.ErrInvalidArgument, cursor)
		}
		n[i] = v
	}
	return byObjectKey{n[0], n[1], n[2], n[3]}, nil
}

// byObjectRest selects the records of a stream of one object from a key
// on (the rest of the object a page's cursor is in); the stream is no
// index's constraint, so that the table's key is walked from the cursor.
func byObjectRest(body string, typeCond string) string {
	return fmt.Sprintf(recordSelect, body) + `, r.obj FROM records r LEFT JOIN objects o ON o.id = r.obj` + recordJoins +
		` WHERE r.obj = ? AND +r.stream = ? AND (r.observed_at, r.seq) >= (?, ?)` + typeCond + ` ORDER BY r.observed_at, r.seq LIMIT ?`
}

// byObjectNext selects the records of a stream of the objects after one,
// object by object, each object's in the order of its key; bounded, only
// those of the objects before another (the end of a part).
func byObjectNext(body string, typeCond string, bounded bool) string {
	end := ""
	if bounded {
		end = ` AND so.obj < ?`
	}
	return fmt.Sprintf(recordSelect, body) + `, r.obj FROM stream_objects so JOIN records r ON r.obj = so.obj LEFT JOIN objects o ON o.id = r.obj` + recordJoins +
		` WHERE so.stream = ? AND so.obj > ?` + end + ` AND r.stream = so.stream` + typeCond + ` ORDER BY so.obj, r.observed_at, r.seq LIMIT ?`
}

// SplitByObject implements storage.ObjectOrderReader: the stream's
// objects, in the order of their row ids, cut into n parts of as many
// objects each.
func (s *Store) SplitByObject(ctx context.Context, streamID string, n int) ([]string, error) {
	if streamID == "" || n < 1 {
		return nil, fmt.Errorf("sqlite: split by object: %w: a stream ID and at least one part, got %q and %d", storage.ErrInvalidArgument, streamID, n)
	}
	done, err := s.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	var rowID int64
	if err := s.streamRow(ctx, streamID, &rowID); errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	} else if err != nil {
		return nil, s.readErr("split by object of "+streamID, err)
	}
	objs, err := s.streamObjectRows(ctx, rowID, 0, 0)
	if err != nil {
		return nil, s.readErr("split by object of "+streamID, err)
	}
	n = min(n, len(objs))
	cursors := make([]string, 0, n)
	for i := range n {
		// Part i reads its first object whole (rest from the smallest key),
		// then the objects after it up to the next part's first.
		k := byObjectKey{obj: objs[i*len(objs)/n], observed: math.MinInt64, seq: math.MinInt64}
		if i < n-1 {
			k.end = objs[(i+1)*len(objs)/n]
		}
		cursors = append(cursors, k.cursor())
	}
	return cursors, nil
}

// RecordsByObject implements storage.ObjectOrderReader: a stream's records
// of objects, object after object, each object's records in the order of
// the table's key (ObservedAt, seq), which is the order of the pages they
// are on. A page is at most two statements: the rest of the object the
// cursor is in, then the objects after it.
func (s *Store) RecordsByObject(ctx context.Context, q storage.Query) (storage.Page, error) {
	done, err := s.enter()
	if err != nil {
		return storage.Page{}, err
	}
	defer done()
	bq, ok, err := s.byObjectQuery(ctx, q)
	if err != nil || !ok {
		return storage.Page{}, err
	}
	from, rowID, typeCond, limit := bq.from, bq.stream, bq.typeCond, pageLimit(q.Limit)
	body := bodyColumn(q.WithoutBodies)
	// The rows of both statements go into one page, scanned in place.
	recs, refs := make([]event.Record, 0, limit+1), make([]rowRefs, 0, limit+1)
	var lastObj any
	if q.Cursor != "" {
		rows, err := s.cachedQuery(ctx, byObjectRest(body, typeCond), from.obj, rowID, from.observed, from.seq, limit+1)
		if err != nil {
			return storage.Page{}, s.readErr("records by object", err)
		}
		if recs, refs, err = scanRowsInto(rows, s.decodeInPlace, recs, refs, &lastObj); err != nil {
			return storage.Page{}, s.readErr("records by object", err)
		}
	}
	if len(recs) <= limit {
		args := []any{rowID, from.obj}
		if from.end != 0 {
			args = append(args, from.end)
		}
		rows, err := s.cachedQuery(ctx, byObjectNext(body, typeCond, from.end != 0), append(args, limit+1-len(recs))...)
		if err != nil {
			return storage.Page{}, s.readErr("records by object", err)
		}
		if recs, refs, err = scanRowsInto(rows, s.decodeInPlace, recs, refs, &lastObj); err != nil {
			return storage.Page{}, s.readErr("records by object", err)
		}
	}
	recs, err = s.finishRows(ctx, recs, refs)
	if err != nil {
		return storage.Page{}, s.readErr("records by object", err)
	}
	page := storage.Page{Records: recs}
	if len(recs) > limit {
		// The row after the page is the last one read: its object is the
		// extra column's last value.
		next := recs[limit]
		page.Records = recs[:limit]
		page.Next = byObjectKey{obj: asInt(lastObj), observed: encodeTime(next.ObservedAt), seq: next.IngestSeq, end: from.end}.cursor()
	}
	return page, nil
}

// byObjectQuery is what RecordsByObject and ScanByObject make of a query.
type byObjectQuery struct {
	from     byObjectKey
	stream   int64
	typeCond string
}

// byObjectQuery checks q and returns what its statements take; false
// when no record can match.
func (s *Store) byObjectQuery(ctx context.Context, q storage.Query) (byObjectQuery, bool, error) {
	var bq byObjectQuery
	if q.StreamID == "" || q.ClusterID != "" || !q.Since.IsZero() || !q.Until.IsZero() || q.AfterSeq != 0 || q.BeforeSeq != 0 || q.Descending {
		return bq, false, fmt.Errorf("sqlite: records by object: %w: a stream ID and no cluster, time, seq bounds or descending order", storage.ErrInvalidArgument)
	}
	if q.Cursor != "" {
		var err error
		if bq.from, err = parseByObjectCursor(q.Cursor); err != nil {
			return bq, false, err
		}
	}
	if err := s.streamRow(ctx, q.StreamID, &bq.stream); errors.Is(err, sql.ErrNoRows) {
		return bq, false, nil
	} else if err != nil {
		return bq, false, s.readErr("records by object of "+q.StreamID, err)
	}
	var rq recordsQuery
	if len(q.Types) > 0 && !rq.types(q.Types) {
		return bq, false, nil
	}
	for _, w := range rq.where {
		bq.typeCond += " AND " + w
	}
	return bq, true, nil
}

// streamObjectRows returns the row ids of a stream's objects from the row
// id from on, before end unless it is 0, in order.
func (s *Store) streamObjectRows(ctx context.Context, stream, from, end int64) ([]int64, error) {
	if end == 0 {
		end = math.MaxInt64
	}
	rows, err := s.r.QueryContext(ctx, `SELECT obj FROM stream_objects WHERE stream = ? AND obj >= ? AND obj < ? ORDER BY obj`, stream, from, end)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var objs []int64
	for rows.Next() {
		var obj int64
		if err := rows.Scan(&obj); err != nil {
			return nil, err
		}
		objs = append(objs, obj)
	}
	return objs, rows.Err()
}
