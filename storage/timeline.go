package storage

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/krply/krply/event"
)

// TimelineTypes are the record types of a Timeline: the records that decide
// whether a stream's journal is continuous.
var TimelineTypes = []event.RecordType{event.TypeBaseline, event.TypeGap, event.TypeCoverageChange}

// Timeline is one stream's continuity record: its baseline begin and end
// records, its gaps and its coverage changes, in IngestSeq order, without
// bodies. Coverage at any time follows from a Timeline and the stream's
// watermark (CoverageFrom).
//
// A Timeline returned by a store may be shared with other callers: its
// Records must not be modified.
type Timeline struct {
	StreamID string         `json:"streamID"`
	Stream   event.Stream   `json:"stream"`
	Records  []event.Record `json:"records,omitempty"`
}

// TimelineReader is implemented by a Reader that keeps the timelines of its
// streams at hand, so that coverage questions cost no query beyond the
// watermark. Both stores of this module implement it; Timelines,
// StreamTimeline and CoverageAt use it when the Reader has it and fall back
// to Streams and Records queries when it does not.
type TimelineReader interface {
	// Timelines returns the timeline of every stream of a cluster ("" for
	// all clusters), ordered by stream ID, as of the call: a record
	// appended before the call began is in it. The slice and the records
	// are read-only and may be shared.
	Timelines(ctx context.Context, clusterID string) ([]Timeline, error)
}

// Timelines returns the timeline of every stream of a cluster ("" for all
// clusters), ordered by stream ID. The result is read-only.
func Timelines(ctx context.Context, r Reader, clusterID string) ([]Timeline, error) {
	if tr, ok := r.(TimelineReader); ok {
		return tr.Timelines(ctx, clusterID)
	}
	streams, err := r.Streams(ctx, clusterID)
	if err != nil {
		return nil, fmt.Errorf("timelines of cluster %q: %w", clusterID, err)
	}
	out := make([]Timeline, 0, len(streams))
	for _, st := range streams {
		tl, err := ReadTimeline(ctx, r, st.StreamID)
		if err != nil {
			return nil, err
		}
		tl.Stream = st.Stream
		out = append(out, tl)
	}
	return out, nil
}

// StreamTimeline returns the timeline of one stream. A stream the journal
// has no record of has an empty timeline. The result is read-only.
func StreamTimeline(ctx context.Context, r Reader, streamID string) (Timeline, error) {
	tr, ok := r.(TimelineReader)
	stream, err := event.ParseStreamID(streamID)
	if !ok || err != nil {
		return ReadTimeline(ctx, r, streamID)
	}
	all, err := tr.Timelines(ctx, stream.ClusterID)
	if err != nil {
		return Timeline{}, err
	}
	i := sort.Search(len(all), func(i int) bool { return all[i].StreamID >= streamID })
	if i < len(all) && all[i].StreamID == streamID {
		return all[i], nil
	}
	return Timeline{StreamID: streamID, Stream: stream}, nil
}

// ReadTimeline reads one stream's timeline with Records queries, whatever
// the Reader. Stores use it to build the timelines they keep; callers use
// StreamTimeline.
func ReadTimeline(ctx context.Context, r Reader, streamID string) (Timeline, error) {
	tl := Timeline{StreamID: streamID}
	if s, err := event.ParseStreamID(streamID); err == nil {
		tl.Stream = s
	}
	q := Query{StreamID: streamID, Types: TimelineTypes, Limit: coveragePage, WithoutBodies: true}
	for {
		page, err := r.Records(ctx, q)
		if err != nil {
			return tl, fmt.Errorf("timeline of %s: %w", streamID, err)
		}
		tl.Records = append(tl.Records, page.Records...)
		if page.Next == "" {
			return tl, nil
		}
		q.Cursor = page.Next
	}
}

// IsTimelineRecord says whether a record belongs in its stream's Timeline.
func IsTimelineRecord(rec *event.Record) bool {
	if rec.StreamID == "" {
		return false
	}
	switch rec.Type {
	case event.TypeBaseline, event.TypeGap, event.TypeCoverageChange:
		return true
	}
	return false
}

// lastCompleteBaseline returns the end and begin records of the last
// baseline that ended at or before at (by IngestSeq among the records
// observed at or before at), or nil when there is none. An end whose begin
// is gone (compacted away) is its own begin: it bounds what came after it.
func (t Timeline) lastCompleteBaseline(at time.Time) (end, begin *event.Record) {
	for i := len(t.Records) - 1; i >= 0; i-- {
		rec := &t.Records[i]
		if rec.Type != event.TypeBaseline || rec.Baseline == nil || rec.ObservedAt.After(at) {
			continue
		}
		switch {
		case end == nil && rec.Baseline.Phase == event.BaselineEnd:
			end = rec
		case end != nil && rec.Baseline.Phase == event.BaselineBegin && rec.BaselineID == end.BaselineID:
			return end, rec
		}
	}
	return end, end
}

// LossesAround returns the stream's last loss of continuity (a gap or a
// loss of availability) recorded at or before at, and the first recorded
// after it; nil where there is none.
func (t Timeline) LossesAround(at time.Time) (before, after *event.Record) {
	for i := range t.Records {
		rec := &t.Records[i]
		if _, ok := LossStart(*rec); !ok {
			continue
		}
		switch {
		case !rec.ObservedAt.After(at):
			before = rec
		case after == nil:
			after = rec
		}
	}
	return before, after
}

// BaselineEnd returns the end record of the baseline with the given ID, or
// nil when the timeline has none.
func (t Timeline) BaselineEnd(baselineID string) *event.Record {
	for i := len(t.Records) - 1; i >= 0; i-- {
		rec := &t.Records[i]
		if rec.Type == event.TypeBaseline && rec.Baseline != nil && rec.Baseline.Phase == event.BaselineEnd && rec.BaselineID == baselineID {
			return rec
		}
	}
	return nil
}

// OpenBaselines returns the baselines of the timeline that have a begin
// record and no end record, by ID, with the IngestSeq of their begin: lists
// still running, or killed before they ended. Their items are invisible to
// object queries (see Reader). Nil when there is none.
func (t Timeline) OpenBaselines() map[string]int64 {
	const ended = -1
	var open map[string]int64
	for i := range t.Records {
		rec := &t.Records[i]
		if rec.Type != event.TypeBaseline || rec.Baseline == nil || rec.BaselineID == "" {
			continue
		}
		if open == nil {
			open = map[string]int64{}
		}
		switch rec.Baseline.Phase {
		case event.BaselineEnd:
			open[rec.BaselineID] = ended
		case event.BaselineBegin:
			if _, seen := open[rec.BaselineID]; !seen {
				open[rec.BaselineID] = rec.IngestSeq
			}
		}
	}
	for id, seq := range open {
		if seq == ended {
			delete(open, id)
		}
	}
	if len(open) == 0 {
		return nil
	}
	return open
}

// IsBaselineItem reports whether rec is an object change that a baseline
// wrote: a synthetic event record (a list item, or an inferred deletion)
// that names its baseline.
func IsBaselineItem(rec *event.Record) bool {
	return rec.Type == event.TypeEvent && rec.Synthetic && rec.BaselineID != ""
}

// InOpenBaseline reports whether rec, a record of t's stream, is an item of
// one of t's open baselines, which object queries leave out.
func (t Timeline) InOpenBaseline(rec *event.Record) bool {
	if !IsBaselineItem(rec) || rec.StreamID != t.StreamID {
		return false
	}
	_, open := t.OpenBaselines()[rec.BaselineID]
	return open
}

// ContinuousAt reports whether the stream's journal is continuous at t:
// a complete baseline ended at or before t and no loss of continuity
// recorded after that baseline began starts at or before t. It is
// coverage at t without the evidence after t (Coverage.Continuous), so
// it answers the same for a time before the stream's last evidence as
// CoverageAt does. reason says why t is not continuous, empty when it is.
func (t Timeline) ContinuousAt(at time.Time) (continuous bool, reason string) {
	c := t.continuity(at, time.Time{})
	if c.Continuous() {
		return true, ""
	}
	return false, c.Reason
}

// ContinuityChanges returns, in order and once each, the times at which
// ContinuousAt may change its answer: the ObservedAt of the timeline's
// records and the starts of its losses of continuity (a gap starts at its
// From, before it is recorded). Between two consecutive times, and before
// the first, ContinuousAt answers the same as at the earlier one
// (before the first: not continuous).
func (t Timeline) ContinuityChanges() []time.Time {
	out := make([]time.Time, 0, len(t.Records)+1)
	for i := range t.Records {
		out = append(out, t.Records[i].ObservedAt)
		if start, ok := LossStart(t.Records[i]); ok {
			out = append(out, start)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	uniq := out[:0]
	for _, at := range out {
		if len(uniq) == 0 || !at.Equal(uniq[len(uniq)-1]) {
			uniq = append(uniq, at)
		}
	}
	return uniq
}
