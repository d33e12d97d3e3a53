package storage

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/krply/krply/event"
)

// Coverage says whether a stream's journal is complete at a point in time.
//
// A time T is covered for a stream when a complete baseline ended at or
// before T, no gap (or loss of availability) recorded after that baseline
// began starts at or before T, and the stream has durable evidence of
// continuity after T: a progress record (an event, a checkpoint — a
// bookmark or a progress checkpoint the Collector writes while its watch is
// healthy and at a clean stop — or a baseline end) observed after T.
// Everything else is not covered; time after the last evidence is "not yet
// observed".
//
// Evidence must lie strictly after T: a record observed at T itself does
// not rule out another record of the same instant appended after it. With
// it, a time once covered stays covered whatever is appended later, because
// the Collector starts every gap at the stream's last durable evidence
// (Gap.From), which is after T, and stamps later records no earlier.
type Coverage struct {
	StreamID string    `json:"streamID"`
	At       time.Time `json:"at"`
	Covered  bool      `json:"covered"`
	// Reason says why At is not covered; empty when it is.
	Reason string `json:"reason,omitempty"`
	// BaselineID and BaselineEndAt name the complete baseline coverage
	// rests on (the last one that ended at or before At), if any.
	BaselineID    string    `json:"baselineID,omitempty"`
	BaselineEndAt time.Time `json:"baselineEndAt,omitzero"`
	// Watermark is the last resourceVersion of the stream's progress at or
	// before At (from an event, a checkpoint or a baseline end), and
	// WatermarkAt its ObservedAt. Empty when the stream had none yet.
	Watermark   string    `json:"watermark,omitempty"`
	WatermarkAt time.Time `json:"watermarkAt,omitzero"`
	// Gaps holds the gap and coverage-change (unavailable) records that
	// break coverage at At.
	Gaps []event.Record `json:"gaps,omitempty"`
	// EvidenceUntil is how far the stream's durable evidence of continuity
	// reached when the coverage was computed: the ObservedAt of its last
	// progress record (StreamStatus.CheckpointAt), zero when it has none.
	// At is covered only when EvidenceUntil is after it.
	EvidenceUntil time.Time `json:"evidenceUntil,omitzero"`
}

// Continuous reports whether the stream has a complete baseline at or
// before At and no loss of continuity since, whether or not its evidence
// reaches past At yet: the only reason such a time is not covered is that
// it is not yet observed.
func (c Coverage) Continuous() bool { return c.BaselineID != "" && len(c.Gaps) == 0 }

// coveragePage is the page size of the queries below. The watermark query
// usually finds its record first: it starts with firstPage records and
// grows to coveragePage, so a typical answer decodes a few records, not a
// page of them.
const (
	coveragePage = 256
	firstPage    = 4
)

// growPage returns the limit of the page after one of limit records.
func growPage(limit int) int { return min(limit*4, coveragePage) }

// CoverageAt computes the coverage of one stream at a time from the
// stream's evidence (StreamEvidence), its Timeline (its baseline, gap and
// coverage-change records) and its watermark, read in that order through
// index-backed queries.
func CoverageAt(ctx context.Context, r Reader, streamID string, at time.Time) (Coverage, error) {
	evidence, err := StreamEvidence(ctx, r, streamID)
	if err != nil {
		return Coverage{StreamID: streamID, At: at}, err
	}
	tl, err := StreamTimeline(ctx, r, streamID)
	if err != nil {
		return Coverage{StreamID: streamID, At: at}, fmt.Errorf("coverage of %s: %w", streamID, err)
	}
	return CoverageFrom(ctx, r, tl, evidence, at)
}

// StreamEvidence returns how far a stream's durable evidence of continuity
// reaches: StreamStatus.CheckpointAt, the ObservedAt of its last progress
// record (ProgressRV). It is the zero time for a stream the journal has no
// record of.
func StreamEvidence(ctx context.Context, r Reader, streamID string) (time.Time, error) {
	st, err := r.StreamStatus(ctx, streamID)
	if errors.Is(err, ErrNotFound) {
		return time.Time{}, nil
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("coverage of %s: evidence: %w", streamID, err)
	}
	return st.CheckpointAt, nil
}

// CoverageFrom computes the coverage of tl's stream at a time from tl and
// evidence, which the caller read from r, and the stream's watermark, which
// it reads from r. evidence is how far the stream's evidence reaches
// (StreamEvidence, or the CheckpointAt of a StreamStatus from Streams or
// StreamStatus).
//
// The evidence must have been read before tl: a gap appended between the
// two reads then starts after the evidence (the Collector starts a gap at
// the last evidence), so it cannot matter for a time the evidence covers.
// Read the other way round, a gap and new evidence appended in between
// would make a time look covered that the gap breaks.
func CoverageFrom(ctx context.Context, r Reader, tl Timeline, evidence, at time.Time) (Coverage, error) {
	c := tl.continuity(at, evidence)
	var err error
	c.Watermark, c.WatermarkAt, err = watermarkAt(ctx, r, tl.StreamID, at)
	return c, err
}

// continuity is the coverage at a time without the watermark: whether a
// complete baseline ended at or before at, which losses of continuity
// recorded after it began start at or before at, and whether the evidence
// reaches past at.
func (t Timeline) continuity(at, evidence time.Time) Coverage {
	c := Coverage{StreamID: t.StreamID, At: at, EvidenceUntil: evidence}
	end, begin := t.lastCompleteBaseline(at)
	if end == nil {
		c.Reason = "no complete baseline at or before this time"
		if begins, ok := t.compactedUntil(); ok && at.Before(begins) {
			c.Reason += ": the history kept begins at " + begins.UTC().Format(time.RFC3339Nano) + " (older records were compacted away)"
		}
		return c
	}
	c.BaselineID = end.BaselineID
	c.BaselineEndAt = end.ObservedAt
	for _, rec := range t.Records {
		if rec.IngestSeq <= begin.IngestSeq {
			continue
		}
		if lossStart, ok := LossStart(rec); ok && !lossStart.After(at) {
			c.Gaps = append(c.Gaps, rec)
		}
	}
	switch {
	case len(c.Gaps) > 0:
		c.Reason = describeBreak(c.Gaps[0])
	case !evidence.After(at):
		c.Reason = notYetObserved(evidence)
	default:
		c.Covered = true
	}
	return c
}

// compactionReason is the Baseline.Reason of the synthetic baseline that
// Compact writes where it folded a stream's older history
// (storage/compaction.CompactionReason).
const compactionReason = "compaction"

// compactedUntil returns where a compacted stream's history begins: the
// end of the first complete baseline of its timeline, when Compact wrote
// it (Reason "compaction"). Times before it were covered, maybe, but their
// records are gone.
func (t Timeline) compactedUntil() (time.Time, bool) {
	for _, rec := range t.Records {
		if rec.Type == event.TypeBaseline && rec.Baseline != nil && rec.Baseline.Phase == event.BaselineEnd {
			return rec.ObservedAt, rec.Baseline.Reason == compactionReason
		}
	}
	return time.Time{}, false
}

// notYetObserved is the Reason of a time after a stream's last evidence of
// continuity.
func notYetObserved(evidence time.Time) string {
	if evidence.IsZero() {
		return "not yet observed: the stream has no evidence of continuity"
	}
	return "not yet observed: evidence reaches to " + evidence.UTC().Format(time.RFC3339Nano)
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

// WatermarkReader is implemented by a Reader that finds a stream's
// watermark with one index seek. CoverageAt and CoverageFrom use it when
// the Reader has it and a Records query when it does not.
type WatermarkReader interface {
	// Watermark returns the resourceVersion of the stream's last progress
	// record (ProgressRV) observed at or before at, and that record's
	// ObservedAt; "" and the zero time when there is none.
	Watermark(ctx context.Context, streamID string, at time.Time) (resourceVersion string, observedAt time.Time, err error)
}

// ObjectOrderReader is implemented by a Reader that reads a stream's
// object changes one object after another faster than in journal order:
// the SQLite store keeps each object's records side by side, so a walk in
// journal order seeks once per record and a walk by object reads pages in
// order. materialize's Find uses it when the Reader has it, and Records
// when it does not.
type ObjectOrderReader interface {
	// RecordsByObject returns a page of the records of q.StreamID that
	// are of an object (object changes, inferred deletions, exclusions),
	// of the types q.Types (all when empty), grouped by object in an order
	// of the store's choosing, each object's records ordered by ObservedAt
	// then IngestSeq. q.StreamID is required; ClusterID, Since, Until,
	// AfterSeq, BeforeSeq and Descending must be zero (an error wrapping
	// ErrInvalidArgument otherwise). Limit, Cursor and WithoutBodies are
	// as for Records.
	RecordsByObject(ctx context.Context, q Query) (Page, error)
	// SplitByObject cuts the objects of a stream into at most n parts
	// (fewer when it has fewer objects, none when it has none) and
	// returns a cursor of RecordsByObject for each: reading from a part's
	// cursor until a page has no Next reads that part's records, and the
	// parts together are the records RecordsByObject reads without a
	// cursor, each once, so that parts can be read side by side. An error
	// wrapping ErrInvalidArgument for no stream ID or n below 1.
	SplitByObject(ctx context.Context, streamID string, n int) ([]string, error)
}

// ObjectOrderScanner is implemented by an ObjectOrderReader that can also
// hand a stream's records to a function one at a time, in RecordsByObject's
// order, reusing the memory of each record for the next: cheaper than
// pages for a caller that keeps little of each record. materialize's Find
// scans the parts of SplitByObject so when the Reader can, each part on
// its own goroutine.
type ObjectOrderScanner interface {
	ObjectOrderReader
	// ScanByObject calls fn with each record that reading q with
	// RecordsByObject page after page returns, in the same order: from
	// q.Cursor (a cursor of SplitByObject or of a page of
	// RecordsByObject; empty for the whole stream) to the end of its part
	// or of the stream. q is as for RecordsByObject (an error wrapping
	// ErrInvalidArgument for what it does not take), but for Limit, which
	// does not matter. The record passed to fn, and the bytes of its
	// Object, are the scan's and valid only until fn returns: fn copies
	// the body if it keeps it, and may keep a copy of the record without
	// it. An error of fn ends the scan and ScanByObject returns it.
	ScanByObject(ctx context.Context, q Query, fn func(*event.Record) error) error
}

func watermarkAt(ctx context.Context, r Reader, streamID string, at time.Time) (string, time.Time, error) {
	if wr, ok := r.(WatermarkReader); ok {
		rv, observed, err := wr.Watermark(ctx, streamID, at)
		if err != nil {
			return "", time.Time{}, fmt.Errorf("coverage of %s: watermark: %w", streamID, err)
		}
		return rv, observed, nil
	}
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
