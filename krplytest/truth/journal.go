package truth

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// streamJournal is one stream's records, cut into segments of continuity.
type streamJournal struct {
	id       string
	stream   event.Stream
	recs     []event.Record
	segments []*segment
	// outside holds the watch events recorded while the stream was not
	// continuous (after a loss, before the next complete baseline).
	outside []event.Record
	// unfinished holds the inferred deletions of baselines that never
	// ended.
	unfinished []event.Record
	// items holds the items of every baseline by baseline ID, complete or
	// not.
	items map[string][]event.Record
	// byObject holds each object's change records, oldest first, as the
	// journal's answers see them: without the items of baselines that
	// never ended, which stay invisible (storage.Reader: Open baselines).
	byObject map[storage.ObjectID][]event.Record
}

// segment is a stretch of continuity: a complete baseline, the watch events
// that followed it, and the loss of continuity (a gap or a stream becoming
// unavailable) that ended it, if any.
type segment struct {
	index int
	begin *event.Record // nil when compacted away
	end   event.Record
	// listStart is the ObservedAt of the stream's last record before the
	// baseline began: the list was requested after it. Zero for the first.
	listStart time.Time
	items     []event.Record
	inferred  []event.Record
	events    []event.Record
	// loss is the first record that ended continuity after the baseline,
	// and lastProgressAt the latest ObservedAt of the stream's durable
	// progress (storage.ProgressRV) recorded before it.
	loss           *event.Record
	lastProgressAt time.Time
}

func (s *segment) lossStart() time.Time {
	if s.loss == nil {
		return time.Time{}
	}
	t, _ := storage.LossStart(*s.loss)
	return t
}

// readStream reads every record of one stream, oldest first.
func readStream(ctx context.Context, r storage.Reader, st storage.StreamStatus) (*streamJournal, error) {
	recs, err := allRecords(ctx, r, storage.Query{StreamID: st.StreamID})
	if err != nil {
		return nil, err
	}
	sj := &streamJournal{id: st.StreamID, stream: st.Stream, recs: recs, items: map[string][]event.Record{}, byObject: map[storage.ObjectID][]event.Record{}}
	sj.segment()
	return sj, nil
}

// allRecords returns every record q selects, page by page.
func allRecords(ctx context.Context, r storage.Reader, q storage.Query) ([]event.Record, error) {
	var out []event.Record
	q.Limit = 1000
	for {
		page, err := r.Records(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("records of %q: %w", q.StreamID+q.ClusterID, err)
		}
		out = append(out, page.Records...)
		if page.Next == "" {
			return out, nil
		}
		q.Cursor = page.Next
	}
}

// segment cuts the records into segments.
func (sj *streamJournal) segment() {
	begins := map[string]*event.Record{}
	listStarts := map[string]time.Time{}
	var prevObserved, lastProgressAt time.Time
	var cur *segment
	inferred := map[string][]event.Record{}
	ended := map[string]bool{}
	for _, rec := range sj.recs {
		if rec.Type == event.TypeBaseline && rec.Baseline != nil && rec.Baseline.Phase == event.BaselineEnd {
			ended[rec.BaselineID] = true
		}
	}
	for i := range sj.recs {
		rec := sj.recs[i]
		openItem := rec.Synthetic && rec.Inferred == nil && rec.BaselineID != "" && !ended[rec.BaselineID]
		if rec.IsObjectChange() && !openItem {
			obj := storage.ObjectIDOf(rec)
			sj.byObject[obj] = append(sj.byObject[obj], rec)
		}
		switch {
		case rec.Type == event.TypeBaseline && rec.Baseline != nil && rec.Baseline.Phase == event.BaselineBegin:
			begins[rec.BaselineID] = &sj.recs[i]
			listStarts[rec.BaselineID] = prevObserved
		case rec.Type == event.TypeBaseline && rec.Baseline != nil && rec.Baseline.Phase == event.BaselineEnd:
			cur = &segment{
				index:     len(sj.segments),
				begin:     begins[rec.BaselineID],
				end:       rec,
				listStart: listStarts[rec.BaselineID],
				items:     sj.items[rec.BaselineID],
			}
			sj.segments = append(sj.segments, cur)
		case rec.Type == event.TypeEvent && rec.Inferred != nil:
			// Written after the baseline's end, or among its items (the
			// deletion of a UID that a new item of the same name replaced).
			inferred[rec.Inferred.BaselineID] = append(inferred[rec.Inferred.BaselineID], rec)
		case rec.Type == event.TypeEvent && rec.Synthetic:
			sj.items[rec.BaselineID] = append(sj.items[rec.BaselineID], rec)
		case rec.IsObjectChange():
			if cur == nil || cur.loss != nil {
				sj.outside = append(sj.outside, rec)
			} else {
				cur.events = append(cur.events, rec)
			}
		default:
			if _, ok := storage.LossStart(rec); ok && cur != nil && cur.loss == nil {
				cur.loss = &sj.recs[i]
				cur.lastProgressAt = lastProgressAt
			}
		}
		if _, ok := storage.ProgressRV(rec); ok && rec.ObservedAt.After(lastProgressAt) {
			lastProgressAt = rec.ObservedAt
		}
		// The Collector says a stream is available again when the list
		// that restores its access answers: after that list was
		// requested, so not a bound on when it was.
		if rec.Type != event.TypeCoverageChange || rec.Coverage == nil || !rec.Coverage.Available {
			prevObserved = rec.ObservedAt
		}
	}
	for _, seg := range sj.segments {
		seg.inferred = inferred[seg.end.BaselineID]
		delete(inferred, seg.end.BaselineID)
	}
	for _, recs := range inferred {
		sj.unfinished = append(sj.unfinished, recs...)
	}
}

// segmentOf returns the index of the last segment whose baseline ended
// before t, or -1.
func (sj *streamJournal) segmentOf(t time.Time) int {
	i := sort.Search(len(sj.segments), func(i int) bool { return !sj.segments[i].end.ObservedAt.Before(t) })
	return i - 1
}
