package postgres

import (
	"context"
	"fmt"
	"sync"

	"github.com/jackc/pgx/v5"

	"github.com/krply/krply/event"
)

// timelineWhere selects the timeline records of every stream.
const timelineWhere = ` FROM krply_records r WHERE r.type IN ('baseline', 'gap', 'coverage_change') AND r.stream_id <> ''`

// timelineCache is the copy of the timeline records (baselines, gaps,
// coverage changes) a Store keeps for its readers, so that a coverage
// answer does not read and decode every stream's timeline again.
//
// It holds exactly the timeline records with a seq up to bound, a number
// below which every record that will ever be appended was committed when
// the cache read it (committedBound): no Append can add a record there
// later, so what is new is what has a larger seq. A compaction (of this
// process or another) can remove records there and insert its markers at
// seqs it removed: the cache keeps a checksum of what it holds (the count,
// and the sum of a hash of each record's seq and bytes, which PostgreSQL
// computes), each answer reads the journal's checksum of the records up to
// bound in the statement that reads the records after it, and the cache
// starts over when the two differ. So an answer sees what it would see
// without the cache: the journal as that one statement read it.
//
// A refresh never changes what it handed out: a stream's records only
// grow by appending to a full slice, which copies them.
type timelineCache struct {
	mu sync.Mutex
	st timelineState
}

// timelineState is what the cache holds: the records up to bound, n of
// them, their hashes summing to h.
type timelineState struct {
	bound, n, h int64
	byStream    map[string][]event.Record
}

func (c *timelineCache) state() timelineState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.st
}

// timelineRecords returns every stream's timeline records, oldest first:
// from the cache and what is new since, when the reader keeps one.
func (r reader) timelineRecords(ctx context.Context, clusterID string) (map[string][]event.Record, error) {
	if r.timelines == nil {
		recs, err := r.query(ctx, "timelines", "SELECT "+selectRecord(false)+timelineWhere+` AND ($1 = '' OR r.cluster_id = $1) ORDER BY r.seq`, clusterID)
		if err != nil {
			return nil, err
		}
		byStream := map[string][]event.Record{}
		for _, rec := range recs {
			byStream[rec.StreamID] = append(byStream[rec.StreamID], rec)
		}
		return byStream, nil
	}
	c := r.timelines
	old := c.state()
	for range 3 {
		bound, n, h, recs, hashes, err := r.timelinesAfter(ctx, old.bound)
		if err != nil {
			return nil, err
		}
		if n != old.n || h != old.h {
			// A compaction changed the timeline records the cache holds.
			old = timelineState{}
			continue
		}
		bound = max(bound, old.bound)
		byStream := make(map[string][]event.Record, len(old.byStream)+1)
		for id, tl := range old.byStream {
			byStream[id] = tl
		}
		next := timelineState{bound: bound, n: old.n, h: old.h}
		for i, rec := range recs {
			if rec.IngestSeq <= bound {
				next.n++
				next.h += hashes[i]
			}
			// Appending to a full slice copies it: what readers hold stays.
			tl := byStream[rec.StreamID]
			byStream[rec.StreamID] = append(tl[:len(tl):len(tl)], rec)
		}
		// The cache keeps the records up to the bound: those after it are
		// this answer's only (a record with a smaller seq may yet commit).
		next.byStream = byStream
		if next.n-old.n != int64(len(recs)) {
			next.byStream = make(map[string][]event.Record, len(byStream))
			for id, tl := range byStream {
				i := len(tl)
				for i > 0 && tl[i-1].IngestSeq > bound {
					i--
				}
				if i > 0 {
					next.byStream[id] = tl[:i:i]
				}
			}
		}
		c.mu.Lock()
		c.st = next
		c.mu.Unlock()
		return byStream, nil
	}
	return nil, fmt.Errorf("postgres: timelines: compactions kept changing the timeline records while they were read; try again")
}

// timelineHash is a record's hash in the cache's checksum.
const timelineHash = `hashtext(md5(r.meta) || r.seq::text)::bigint`

// timelinesAfter reads, in one pipeline and in this order, the bound of
// committed records (committedBound), then in one statement the count of
// the timeline records up to after and the sum of their hashes, and the
// timeline records after it, oldest first, with their hashes.
func (r reader) timelinesAfter(ctx context.Context, after int64) (bound, n, h int64, recs []event.Record, hashes []int64, err error) {
	b := &pgx.Batch{}
	b.Queue(readLastTaken)
	b.Queue(readInFlight)
	b.Queue(`SELECT 0 AS kind, count(*)::bigint AS seq, NULL::bytea AS meta, coalesce(sum(`+timelineHash+`), 0)::bigint AS h`+timelineWhere+` AND r.seq <= $1
UNION ALL
SELECT 1, r.seq, r.meta, `+timelineHash+timelineWhere+` AND r.seq > $1
ORDER BY kind, seq`, after)
	br := r.q.SendBatch(ctx, b)
	defer br.Close()
	fail := func(err error) (int64, int64, int64, []event.Record, []int64, error) {
		return 0, 0, 0, nil, nil, fmt.Errorf("postgres: timelines: %w", err)
	}
	var inFlight *int64
	if err := br.QueryRow().Scan(&bound); err != nil {
		return fail(fmt.Errorf("reading the sequence: %w", err))
	}
	if err := br.QueryRow().Scan(&inFlight); err != nil {
		return fail(fmt.Errorf("reading the appends in flight: %w", err))
	}
	if inFlight != nil && *inFlight < bound {
		bound = *inFlight
	}
	rows, err := br.Query()
	if err != nil {
		return fail(err)
	}
	defer rows.Close()
	for rows.Next() {
		var kind int
		var seq, hash int64
		var meta []byte
		if err := rows.Scan(&kind, &seq, &meta, &hash); err != nil {
			return fail(err)
		}
		if kind == 0 {
			n, h = seq, hash
			continue
		}
		rec, err := decodeRecord(seq, meta, nil)
		if err != nil {
			return fail(err)
		}
		recs, hashes = append(recs, rec), append(hashes, hash)
	}
	if err := rows.Err(); err != nil {
		return fail(err)
	}
	rows.Close()
	if err := br.Close(); err != nil {
		return fail(err)
	}
	return bound, n, h, recs, hashes, nil
}
