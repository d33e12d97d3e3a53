package storage

import (
	"context"
	"fmt"
	"time"

	"github.com/krply/krply/event"
)

// Coverage says whether a stream's journal is complete at a point in time.
//
// A time T is covered for a stream when a complete baseline ended at or
// before T and no gap (or loss of availability) recorded after that
// baseline began starts at or before T. Everything else is not covered.
type Coverage struct {
	StreamID string
	At       time.Time
	Covered  bool
	// Reason says why At is not covered; empty when it is.
	Reason string
	// BaselineID and BaselineEndAt name the complete baseline coverage
	// rests on (the last one that ended at or before At), if any.
	BaselineID    string
	BaselineEndAt time.Time
	// Watermark is the last resourceVersion of the stream's progress at or
	// before At (from an event, a checkpoint or a baseline end), and
	// WatermarkAt its ObservedAt. Empty when the stream had none yet.
	Watermark   string
	WatermarkAt time.Time
	// Gaps holds the gap and coverage-change (unavailable) records that
	// break coverage at At.
	Gaps []event.Record
}

// coveragePage is the page size of the small queries below. The queries
// that look for the last record of a kind at or before a time usually find
// it first: they start with firstPage records and grow to coveragePage, so
// a typical answer decodes a few records, not a page of them.
const (
	coveragePage = 256
	firstPage    = 4
)

// growPage returns the limit of the page after one of limit records.
func growPage(limit int) int { return min(limit*4, coveragePage) }

// CoverageAt computes the coverage of one stream at a time from the
// journal's baseline, gap, coverage-change and progress records. It reads
// only those records, through index-backed queries.
func CoverageAt(ctx context.Context, r Reader, streamID string, at time.Time) (Coverage, error) {
	c := Coverage{StreamID: streamID, At: at}

	end, begin, err := lastCompleteBaseline(ctx, r, streamID, at)
	if err != nil {
		return c, err
	}
	if end == nil {
		c.Reason = "no complete baseline at or before this time"
	} else {
		c.BaselineID = end.BaselineID
		c.BaselineEndAt = end.ObservedAt
		breaks, err := coverageBreaks(ctx, r, streamID, begin.IngestSeq, at)
		if err != nil {
			return c, err
		}
		c.Gaps = breaks
		if len(breaks) == 0 {
			c.Covered = true
		} else {
			c.Reason = describeBreak(breaks[0])
		}
	}

	c.Watermark, c.WatermarkAt, err = watermarkAt(ctx, r, streamID, at)
	return c, err
}

// lastCompleteBaseline returns the end and begin records of the last
// baseline that ended at or before at, or nil when there is none.
func lastCompleteBaseline(ctx context.Context, r Reader, streamID string, at time.Time) (end, begin *event.Record, err error) {
	q := Query{StreamID: streamID, Types: []event.RecordType{event.TypeBaseline}, Until: at, Descending: true, Limit: firstPage, WithoutBodies: true}
	for {
		page, err := r.Records(ctx, q)
		if err != nil {
			return nil, nil, fmt.Errorf("coverage of %s: baselines: %w", streamID, err)
		}
		for i := range page.Records {
			rec := page.Records[i]
			if rec.Baseline == nil {
				continue
			}
			switch {
			case end == nil && rec.Baseline.Phase == event.BaselineEnd:
				end = &rec
			case end != nil && rec.Baseline.Phase == event.BaselineBegin && rec.BaselineID == end.BaselineID:
				begin = &rec
				return end, begin, nil
			}
		}
		if page.Next == "" {
			break
		}
		q.Cursor, q.Limit = page.Next, growPage(q.Limit)
	}
	if end != nil {
		// An end without its begin (compacted away): the end itself bounds
		// what came after it.
		return end, end, nil
	}
	return nil, nil, nil
}

// coverageBreaks returns the gap and unavailable coverage-change records
// recorded after afterSeq whose loss of continuity starts at or before at.
func coverageBreaks(ctx context.Context, r Reader, streamID string, afterSeq int64, at time.Time) ([]event.Record, error) {
	var breaks []event.Record
	q := Query{StreamID: streamID, Types: []event.RecordType{event.TypeGap, event.TypeCoverageChange}, AfterSeq: afterSeq, Limit: coveragePage, WithoutBodies: true}
	for {
		page, err := r.Records(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("coverage of %s: gaps: %w", streamID, err)
		}
		for _, rec := range page.Records {
			if lossStart, ok := LossStart(rec); ok && !lossStart.After(at) {
				breaks = append(breaks, rec)
			}
		}
		if page.Next == "" {
			return breaks, nil
		}
		q.Cursor = page.Next
	}
}

// LossStart returns the moment from which a record says the stream lost
// continuity: a gap's From, or the time a stream became unavailable.
func LossStart(rec event.Record) (time.Time, bool) {
	switch {
	case rec.Type == event.TypeGap && rec.Gap != nil:
		return rec.Gap.From, true
	case rec.Type == event.TypeCoverageChange && rec.Coverage != nil && !rec.Coverage.Available:
		return rec.ObservedAt, true
	}
	return time.Time{}, false
}

func describeBreak(rec event.Record) string {
	if rec.Gap != nil {
		return fmt.Sprintf("gap from %s: %s", rec.Gap.From.UTC().Format(time.RFC3339Nano), rec.Gap.Reason)
	}
	return fmt.Sprintf("stream unavailable since %s: %s", rec.ObservedAt.UTC().Format(time.RFC3339Nano), rec.Coverage.Reason)
}

// ProgressRV returns the resourceVersion a record moves its stream's
// checkpoint to, if it does: a non-synthetic object change, a checkpoint,
// or a baseline end. Append uses the same rule.
func ProgressRV(rec event.Record) (string, bool) {
	switch rec.Type {
	case event.TypeEvent:
		if !rec.Synthetic && rec.IsObjectChange() && rec.Resource.ResourceVersion != "" {
			return rec.Resource.ResourceVersion, true
		}
	case event.TypeCheckpoint:
		if rec.Checkpoint != nil && rec.Checkpoint.ResourceVersion != "" {
			return rec.Checkpoint.ResourceVersion, true
		}
	case event.TypeBaseline:
		if rec.Baseline != nil && rec.Baseline.Phase == event.BaselineEnd && rec.Baseline.ResourceVersion != "" {
			return rec.Baseline.ResourceVersion, true
		}
	}
	return "", false
}

func watermarkAt(ctx context.Context, r Reader, streamID string, at time.Time) (string, time.Time, error) {
	q := Query{StreamID: streamID, Until: at, Descending: true, Limit: firstPage, WithoutBodies: true,
		Types: []event.RecordType{event.TypeEvent, event.TypeCheckpoint, event.TypeBaseline}}
	for {
		page, err := r.Records(ctx, q)
		if err != nil {
			return "", time.Time{}, fmt.Errorf("coverage of %s: watermark: %w", streamID, err)
		}
		for _, rec := range page.Records {
			if rv, ok := ProgressRV(rec); ok {
				return rv, rec.ObservedAt, nil
			}
		}
		if page.Next == "" {
			return "", time.Time{}, nil
		}
		q.Cursor, q.Limit = page.Next, growPage(q.Limit)
	}
}
