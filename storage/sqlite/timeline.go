package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

var (
	_ storage.TimelineReader = (*Store)(nil)
	_ storage.MultiGetter    = (*Store)(nil)
)

// timelineKey tells whether the timelines a reader keeps are current: it
// changes whenever a stream is added, a timeline record is appended (the
// newest seq of each timeline type), or the journal is compacted (the seq
// floor). Each part is one index seek.
type timelineKey struct {
	floor, streams, baseline, gap, coverage int64
}

// timelineKeyQuery reads the timelineKey and, last, the journal's newest
// seq (which is not part of the key).
const timelineKeyQuery = `SELECT seq_floor, (SELECT coalesce(max(id), 0) FROM streams),` +
	` (SELECT coalesce(max(seq), 0) FROM records INDEXED BY records_type_seq WHERE type = 2 AND type <> 1),` +
	` (SELECT coalesce(max(seq), 0) FROM records INDEXED BY records_type_seq WHERE type = 3 AND type <> 1),` +
	` (SELECT coalesce(max(seq), 0) FROM records INDEXED BY records_type_seq WHERE type = 4 AND type <> 1),` +
	` (SELECT coalesce(max(seq), 0) FROM records)` +
	` FROM totals WHERE id = 1`

// timelineRecords selects the timeline records after a seq, oldest first.
var timelineRecords = fmt.Sprintf(recordSelect, "NULL") + ` FROM records r INDEXED BY records_type_seq` +
	` LEFT JOIN objects o ON o.id = r.obj` + recordJoins +
	` WHERE r.type IN (2, 3, 4) AND r.type <> 1 AND r.seq > ? ORDER BY r.seq`

// timelines is the copy of every stream's timeline a Store keeps for its
// readers. A refresh never changes what it handed out: it builds new
// slices, and a stream's records only grow by appending to a full slice,
// which copies them.
type timelines struct {
	mu     sync.Mutex
	loaded bool
	key    timelineKey
	// bound is the journal's newest seq as the check of generation gen
	// (see changeGate) read it along with key.
	bound int64
	gen   uint64
	// maxSeq is the newest timeline record loaded, maxStream the newest
	// stream row.
	maxSeq, maxStream int64
	byStream          map[string]storage.Timeline
	// byCluster holds each cluster's timelines ordered by stream ID, and
	// all of them under "".
	byCluster map[string][]storage.Timeline
	// open lists the open baselines of the loaded timelines, which depend
	// on the baseline records only: maxBaseline is the newest loaded.
	open        []openStream
	maxBaseline int64
}

// timelineView is the kept timelines as one call sees them: a refresh
// replaces the maps, it never changes them.
type timelineView struct {
	// bound is the journal's newest seq, read before the timelines were
	// brought up to date: every timeline record with a seq up to bound is
	// in them (and maybe newer ones, up to maxSeq).
	bound, maxSeq int64
	byStream      map[string]storage.Timeline
	byCluster     map[string][]storage.Timeline
	// open are the open baselines as of the loaded baseline records, the
	// newest of which is maxBaseline, since the compaction floor.
	open               []openStream
	maxBaseline, floor int64
}

// keptTimelines returns the kept timelines as they are, without checking
// that they are current (bound is not set); false before the first load.
func (s *Store) keptTimelines() (timelineView, bool) {
	t := &s.timelines
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.view(0), t.loaded
}

func (t *timelines) view(bound int64) timelineView {
	return timelineView{bound: bound, maxSeq: t.maxSeq, byStream: t.byStream, byCluster: t.byCluster,
		open: t.open, maxBaseline: t.maxBaseline, floor: t.key.floor}
}

// Timelines implements storage.TimelineReader. It costs one query when no
// timeline changed since the last call (the Store keeps them), and reads
// only what is new otherwise; a compaction reloads them.
func (s *Store) Timelines(ctx context.Context, clusterID string) ([]storage.Timeline, error) {
	done, err := s.enter()
	if err != nil {
		return nil, err
	}
	defer done()
	v, err := s.loadTimelines(ctx)
	if err != nil {
		return nil, s.readErr("timelines", err)
	}
	return v.byCluster[clusterID], nil
}

// loadTimelines brings the kept timelines up to date (one query when
// nothing changed) and returns them.
func (s *Store) loadTimelines(ctx context.Context) (timelineView, error) {
	gen, err := s.gate.generation(ctx)
	if err != nil {
		return timelineView{}, err
	}
	t := &s.timelines
	t.mu.Lock()
	if t.loaded && gen != 0 && t.gen == gen {
		// No connection committed since the check of this generation.
		v := t.view(t.bound)
		t.mu.Unlock()
		return v, nil
	}
	t.mu.Unlock()
	var key timelineKey
	var bound int64
	rows, err := s.cachedQuery(ctx, timelineKeyQuery)
	if err != nil {
		return timelineView{}, err
	}
	for rows.Next() {
		err = rows.Scan(&key.floor, &key.streams, &key.baseline, &key.gap, &key.coverage, &bound)
	}
	if cerr := rows.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return timelineView{}, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.loaded || key != t.key {
		if err := s.refreshTimelines(ctx, key); err != nil {
			return timelineView{}, err
		}
	}
	if gen >= t.gen {
		t.bound, t.gen = bound, gen
	}
	return t.view(bound), nil
}

// refreshTimelines brings the kept timelines up to key, which was read
// before: what it loads may be newer than key, never older, so the next
// key comparison errs towards another refresh.
func (s *Store) refreshTimelines(ctx context.Context, key timelineKey) error {
	t := &s.timelines
	if !t.loaded || key.floor != t.key.floor {
		// First use, or a compaction removed records: start over.
		t.maxSeq, t.maxStream, t.maxBaseline, t.byStream = 0, 0, 0, map[string]storage.Timeline{}
	}
	byStream := make(map[string]storage.Timeline, len(t.byStream))
	for id, tl := range t.byStream {
		byStream[id] = tl
	}
	maxStream, newStreams, err := s.readNewStreams(ctx, t.maxStream, byStream)
	if err != nil {
		return err
	}
	rows, err := s.r.QueryContext(ctx, timelineRecords, t.maxSeq)
	if err != nil {
		return err
	}
	recs, err := s.decodeRows(ctx, rows)
	if err != nil {
		return err
	}
	maxSeq, maxBaseline := t.maxSeq, t.maxBaseline
	for _, rec := range recs {
		maxSeq = max(maxSeq, rec.IngestSeq)
		if rec.Type == event.TypeBaseline {
			maxBaseline = max(maxBaseline, rec.IngestSeq)
		}
		tl, ok := byStream[rec.StreamID]
		if !ok {
			// A stream row newer than the stream list just read.
			tl = emptyTimeline(rec.StreamID)
		}
		// Appending to a full slice copies it: what readers hold stays.
		tl.Records = append(tl.Records[:len(tl.Records):len(tl.Records)], rec)
		byStream[rec.StreamID] = tl
	}
	if newStreams || len(recs) > 0 || t.byCluster == nil {
		t.byCluster = timelinesByCluster(byStream)
		t.open = openBaselinesOf(byStream, math.MaxInt64)
	}
	t.byStream, t.maxSeq, t.maxStream, t.maxBaseline, t.key, t.loaded = byStream, maxSeq, maxStream, maxBaseline, key, true
	return nil
}

func emptyTimeline(streamID string) storage.Timeline {
	tl := storage.Timeline{StreamID: streamID}
	tl.Stream, _ = event.ParseStreamID(streamID)
	return tl
}

// readNewStreams adds an empty timeline to byStream for every stream row
// after the row id after that byStream lacks. It returns the largest row id
// read (after when there is none), and whether it added a timeline.
func (s *Store) readNewStreams(ctx context.Context, after int64, byStream map[string]storage.Timeline) (int64, bool, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, stream_id FROM streams WHERE id > ?`, after)
	if err != nil {
		return 0, false, err
	}
	defer rows.Close()
	maxStream, added := after, false
	for rows.Next() {
		var id int64
		var streamID string
		if err := rows.Scan(&id, &streamID); err != nil {
			return 0, false, err
		}
		maxStream = max(maxStream, id)
		if _, ok := byStream[streamID]; ok {
			continue // found through its records by an earlier refresh
		}
		byStream[streamID] = emptyTimeline(streamID)
		added = true
	}
	return maxStream, added, rows.Close()
}

// timelinesByCluster returns each cluster's timelines ordered by stream
// ID, and all of them under "".
func timelinesByCluster(byStream map[string]storage.Timeline) map[string][]storage.Timeline {
	byCluster := map[string][]storage.Timeline{}
	all := make([]storage.Timeline, 0, len(byStream))
	for _, tl := range byStream {
		all = append(all, tl)
	}
	slices.SortFunc(all, func(a, b storage.Timeline) int { return strings.Compare(a.StreamID, b.StreamID) })
	for _, tl := range all {
		byCluster[tl.Stream.ClusterID] = append(byCluster[tl.Stream.ClusterID], tl)
	}
	byCluster[""] = all
	return byCluster
}

var _ storage.WatermarkReader = (*Store)(nil)

// watermarkQuery walks a stream's records from the last one observed at or
// before a time back, in the order of its index, reading only what
// storage.ProgressRV looks at.
const watermarkQuery = `SELECT seq, type, synthetic, watch_type, observed_at, meta FROM records INDEXED BY records_stream_time` +
	` WHERE stream = ? AND (observed_at, seq) < (?, ?) ORDER BY observed_at DESC, seq DESC LIMIT ?`

// Watermark implements storage.WatermarkReader: one seek in the stream's
// time index, then the records before it until one carries progress.
// Within a stream ObservedAt does not decrease in seq order (Append's
// contract), so this is the order of a descending Records query; where a
// compaction's markers break that order, the first record carrying
// progress is still the same (see storage/compaction).
func (s *Store) Watermark(ctx context.Context, streamID string, at time.Time) (string, time.Time, error) {
	done, err := s.enter()
	if err != nil {
		return "", time.Time{}, err
	}
	defer done()
	var rowID int64
	err = s.streamRow(ctx, streamID, &rowID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", time.Time{}, nil
	}
	if err != nil {
		return "", time.Time{}, s.readErr("watermark of "+streamID, err)
	}
	// The first page usually holds the answer: a stream's last record is
	// mostly an event or a bookmark's checkpoint.
	bound, boundSeq := encodeTime(at), int64(math.MaxInt64)
	for limit := 4; ; limit = min(limit*4, 256) {
		rows, err := s.cachedQuery(ctx, watermarkQuery, rowID, bound, boundSeq, limit)
		if err != nil {
			return "", time.Time{}, s.readErr("watermark of "+streamID, err)
		}
		n := 0
		var rv string
		var found time.Time
		for rows.Next() {
			n++
			var rec event.Record
			var typ, synthetic, watch int
			var observed int64
			var meta []byte
			if err = rows.Scan(&rec.IngestSeq, &typ, &synthetic, &watch, &observed, &meta); err != nil {
				break
			}
			bound, boundSeq = observed, rec.IngestSeq
			rec.Type, rec.Synthetic, rec.WatchType = typeNames[typ], synthetic != 0, watchNames[watch]
			var m recordMeta
			if err = decodeMeta(meta, &m); err != nil {
				err = fmt.Errorf("%w: record %d: meta: %v", errCorruptBody, rec.IngestSeq, err)
				break
			}
			m.applyTo(&rec)
			if p, ok := storage.ProgressRV(rec); ok {
				rv, found = p, decodeTime(observed)
				break
			}
		}
		if cerr := rows.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", time.Time{}, s.readErr("watermark of "+streamID, err)
		}
		if rv != "" || n < limit {
			return rv, found, nil
		}
	}
}
