package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// byObjectCursorPrefix starts a cursor of RecordsByObject: the key of the
// first record of the next page, its object's row id, ObservedAt and seq.
const byObjectCursorPrefix = "o"

// byObjectKey is a record's key in the records table.
type byObjectKey struct{ obj, observed, seq int64 }

func (k byObjectKey) cursor() string {
	return byObjectCursorPrefix + strconv.FormatInt(k.obj, 10) + "." + strconv.FormatInt(k.observed, 10) + "." + strconv.FormatInt(k.seq, 10)
}

func parseByObjectCursor(cursor string) (byObjectKey, error) {
	rest, ok := strings.CutPrefix(cursor, byObjectCursorPrefix)
	parts := strings.Split(rest, ".")
	if !ok || len(parts) != 3 {
		return byObjectKey{}, fmt.Errorf("sqlite: records by object: %w: cursor %q is not one of RecordsByObject's", storage.ErrInvalidArgument, cursor)
	}
	var n [3]int64
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil {
			return byObjectKey{}, fmt.Errorf("sqlite: records by object: %w: cursor %q is not one of RecordsByObject's", storage.ErrInvalidArgument, cursor)
		}
		n[i] = v
	}
	return byObjectKey{n[0], n[1], n[2]}, nil
}

// byObjectRest selects the records of a stream of one object from a key
// on (the rest of the object a page's cursor is in); the stream is no
// index's constraint, so that the table's key is walked from the cursor.
func byObjectRest(body string, typeCond string) string {
	return fmt.Sprintf(recordSelect, body) + `, r.obj FROM records r LEFT JOIN objects o ON o.id = r.obj` + recordJoins +
		` WHERE r.obj = ? AND +r.stream = ? AND (r.observed_at, r.seq) >= (?, ?)` + typeCond + ` ORDER BY r.observed_at, r.seq LIMIT ?`
}

// byObjectNext selects the records of a stream of the objects after one,
// object by object, each object's in the order of its key.
func byObjectNext(body string, typeCond string) string {
	return fmt.Sprintf(recordSelect, body) + `, r.obj FROM stream_objects so JOIN records r ON r.obj = so.obj LEFT JOIN objects o ON o.id = r.obj` + recordJoins +
		` WHERE so.stream = ? AND so.obj > ? AND r.stream = so.stream` + typeCond + ` ORDER BY so.obj, r.observed_at, r.seq LIMIT ?`
}

// RecordsByObject implements storage.ObjectOrderReader: a stream's records
// of objects, object after object, each object's records in the order of
// the table's key (ObservedAt, seq), which is the order of the pages they
// are on. A page is at most two statements: the rest of the object the
// cursor is in, then the objects after it.
func (s *Store) RecordsByObject(ctx context.Context, q storage.Query) (storage.Page, error) {
	if q.StreamID == "" || q.ClusterID != "" || !q.Since.IsZero() || !q.Until.IsZero() || q.AfterSeq != 0 || q.BeforeSeq != 0 || q.Descending {
		return storage.Page{}, fmt.Errorf("sqlite: records by object: %w: a stream ID and no cluster, time, seq bounds or descending order", storage.ErrInvalidArgument)
	}
	done, err := s.enter()
	if err != nil {
		return storage.Page{}, err
	}
	defer done()
	limit := pageLimit(q.Limit)
	from := byObjectKey{}
	if q.Cursor != "" {
		if from, err = parseByObjectCursor(q.Cursor); err != nil {
			return storage.Page{}, err
		}
	}
	var rowID int64
	if err := s.streamRow(ctx, q.StreamID, &rowID); errors.Is(err, sql.ErrNoRows) {
		return storage.Page{}, nil
	} else if err != nil {
		return storage.Page{}, s.readErr("records by object of "+q.StreamID, err)
	}
	var rq recordsQuery
	if len(q.Types) > 0 && !rq.types(q.Types) {
		return storage.Page{}, nil
	}
	typeCond := ""
	for _, w := range rq.where {
		typeCond += " AND " + w
	}
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
		rows, err := s.cachedQuery(ctx, byObjectNext(body, typeCond), rowID, from.obj, limit+1-len(recs))
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
		page.Next = byObjectKey{obj: asInt(lastObj), observed: encodeTime(next.ObservedAt), seq: next.IngestSeq}.cursor()
	}
	return page, nil
}
