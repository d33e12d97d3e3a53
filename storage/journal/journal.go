// Package journal holds the backend-independent rules of the krply journal
// that every storage backend applies the same way: which records are valid,
// how a stream's status follows from its records, and the page cursor
// format. storage/memory and storage/sqlite both use it, so the rules exist
// once.
package journal

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// Validate reports whether rec can be stored. The error wraps
// storage.ErrInvalidRecord and names the record and the rule it breaks.
//
// The rules: a known Type, an EventID, an ObservedAt; a ClusterID on every
// record but snapshots and plans; a StreamID that ParseStreamID accepts and
// whose cluster is the record's on events, baselines, gaps, coverage
// changes and checkpoints (and none on snapshots and plans); the payload
// that matches the type; an ObjectHash, when given, equal to
// event.ObjectHash(Object).
func Validate(rec *event.Record) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s record %q: %s", storage.ErrInvalidRecord, rec.Type, rec.EventID, fmt.Sprintf(format, args...))
	}
	if !rec.Type.Valid() {
		return bad("unknown record type")
	}
	if rec.EventID == "" {
		return bad("empty EventID")
	}
	if rec.ObservedAt.IsZero() {
		return bad("zero ObservedAt")
	}
	if msg := ownerProblem(rec); msg != "" {
		return bad("%s", msg)
	}
	if msg := payloadProblem(rec); msg != "" {
		return bad("%s", msg)
	}
	if rec.ObjectHash != "" && len(rec.Object) > 0 && rec.ObjectHash != event.ObjectHash(rec.Object) {
		return bad("ObjectHash does not match Object")
	}
	return nil
}

// ownerProblem says what is wrong with the cluster and stream of a record,
// "" when nothing is.
func ownerProblem(rec *event.Record) string {
	switch rec.Type {
	case event.TypeSnapshot, event.TypePlan:
		if rec.StreamID != "" {
			return fmt.Sprintf("snapshots and plans belong to no stream, got StreamID %q", rec.StreamID)
		}
		return ""
	case event.TypeAuditCorrelation:
		if rec.ClusterID == "" {
			return "empty ClusterID"
		}
		return ""
	}
	if rec.ClusterID == "" {
		return "empty ClusterID"
	}
	s, err := event.ParseStreamID(rec.StreamID)
	if err != nil {
		return err.Error()
	}
	if s.ClusterID != rec.ClusterID {
		return fmt.Sprintf("stream %q belongs to cluster %q, record to %q", rec.StreamID, s.ClusterID, rec.ClusterID)
	}
	return ""
}

// payloadProblem says what is wrong with the payload of a record for its
// type, "" when nothing is.
func payloadProblem(rec *event.Record) string {
	switch rec.Type {
	case event.TypeEvent:
		return eventProblem(rec)
	case event.TypeBaseline:
		return baselineProblem(rec)
	case event.TypeSnapshot, event.TypePlan:
		if rec.Saved == nil || rec.Saved.ID == "" {
			return "missing Saved payload with an ID"
		}
	case event.TypeAuditCorrelation:
		if rec.Audit == nil || rec.Audit.TargetEventID == "" {
			return "missing Audit payload with a TargetEventID"
		}
	case event.TypeGap:
		if rec.Gap == nil {
			return "missing Gap payload"
		}
		if rec.Gap.To.Before(rec.Gap.From) {
			return fmt.Sprintf("gap ends (%s) before it begins (%s)", rec.Gap.To, rec.Gap.From)
		}
	case event.TypeCoverageChange:
		if rec.Coverage == nil {
			return "missing Coverage payload"
		}
	case event.TypeCheckpoint:
		if rec.Checkpoint == nil || rec.Checkpoint.ResourceVersion == "" {
			return "missing Checkpoint payload with a resourceVersion"
		}
	}
	return ""
}

func eventProblem(rec *event.Record) string {
	switch {
	case !rec.IsObjectChange():
		return fmt.Sprintf("watch type %q is not ADDED, MODIFIED or DELETED (bookmarks are checkpoints)", rec.WatchType)
	case rec.Resource.Resource == "" || rec.Resource.Name == "":
		return "Resource needs a resource and a name"
	case rec.Inferred != nil && (rec.WatchType != event.Deleted || !rec.Synthetic):
		return "an inferred deletion must be a synthetic DELETED event"
	}
	return ""
}

func baselineProblem(rec *event.Record) string {
	switch {
	case rec.Baseline == nil || rec.Baseline.ID == "":
		return "missing Baseline payload with an ID"
	case rec.Baseline.Phase != event.BaselineBegin && rec.Baseline.Phase != event.BaselineEnd:
		return fmt.Sprintf("baseline phase %q is not begin or end", rec.Baseline.Phase)
	case rec.BaselineID != rec.Baseline.ID:
		return fmt.Sprintf("BaselineID %q differs from Baseline.ID %q", rec.BaselineID, rec.Baseline.ID)
	}
	return ""
}

// NewStatus returns the status of a stream that has no record yet.
func NewStatus(streamID string) storage.StreamStatus {
	s, _ := event.ParseStreamID(streamID)
	return storage.StreamStatus{StreamID: streamID, Stream: s, Available: true}
}

// ApplyStatus updates a stream's status with one stored record of that
// stream, in IngestSeq order. Append applies the records of a batch one by
// one, which advances the checkpoint to the last record carrying progress
// (storage.ProgressRV), as the Store contract requires.
func ApplyStatus(st *storage.StreamStatus, rec *event.Record) {
	st.Records++
	st.LastSeq = rec.IngestSeq
	if st.FirstObservedAt.IsZero() || rec.ObservedAt.Before(st.FirstObservedAt) {
		st.FirstObservedAt = rec.ObservedAt
	}
	if rec.ObservedAt.After(st.LastObservedAt) {
		st.LastObservedAt = rec.ObservedAt
	}
	if rv, ok := storage.ProgressRV(*rec); ok {
		st.CheckpointRV = rv
		st.CheckpointAt = rec.ObservedAt
	}
	switch rec.Type {
	case event.TypeBaseline:
		switch rec.Baseline.Phase {
		case event.BaselineBegin:
			st.OpenBaselineID = rec.Baseline.ID
		case event.BaselineEnd:
			st.LastBaselineID = rec.Baseline.ID
			st.LastBaselineEndAt = rec.ObservedAt
			if st.OpenBaselineID == rec.Baseline.ID {
				st.OpenBaselineID = ""
			}
		}
	case event.TypeGap:
		st.Gaps++
		st.LastGapAt = rec.ObservedAt
	case event.TypeCoverageChange:
		st.Available = rec.Coverage.Available
		st.AvailabilityReason = rec.Coverage.Reason
	}
}

// RebuildStatus recomputes the parts of a stream's status that describe its
// stored records (counts, bounds, baselines, gaps) from the records left
// after a compaction, given in IngestSeq order. The checkpoint and the
// availability are durable state, not derived from the records, and are
// kept from old.
func RebuildStatus(old storage.StreamStatus, records []*event.Record) storage.StreamStatus {
	st := NewStatus(old.StreamID)
	for _, rec := range records {
		ApplyStatus(&st, rec)
	}
	RestoreDurable(&st, old)
	if st.LastSeq == 0 {
		st.LastSeq = old.LastSeq
	}
	return st
}

// RestoreDurable sets the durable state of st — what RebuildStatus keeps
// from before a compaction: the checkpoint and the availability — to
// want's (storage.StreamRestorer).
func RestoreDurable(st *storage.StreamStatus, want storage.StreamStatus) {
	st.CheckpointRV, st.CheckpointAt = want.CheckpointRV, want.CheckpointAt
	st.Available, st.AvailabilityReason = want.Available, want.AvailabilityReason
}

// InUTC sets the times of rec, its payloads' included, in UTC, copying the
// payloads it changes: the stores keep instants, not always their zones.
func InUTC(rec *event.Record) {
	rec.ObservedAt = rec.ObservedAt.UTC()
	if rec.Gap != nil {
		g := *rec.Gap
		g.From, g.To = g.From.UTC(), g.To.UTC()
		rec.Gap = &g
	}
	if rec.Inferred != nil {
		d := *rec.Inferred
		d.From, d.To = d.From.UTC(), d.To.UTC()
		rec.Inferred = &d
	}
	if rec.Saved != nil {
		s := *rec.Saved
		s.At = s.At.UTC()
		rec.Saved = &s
	}
	if rec.Audit != nil {
		a := *rec.Audit
		a.RequestReceivedAt = a.RequestReceivedAt.UTC()
		rec.Audit = &a
	}
}

// ParseStreams returns the clusters of the streams of a
// StreamRestorer.RestoreStreams call, or an error wrapping
// storage.ErrInvalidRecord for a stream ID ParseStreamID refuses.
func ParseStreams(streams []storage.StreamStatus) ([]string, error) {
	clusters := make([]string, len(streams))
	for i, st := range streams {
		s, err := event.ParseStreamID(st.StreamID)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", storage.ErrInvalidRecord, err)
		}
		clusters[i] = s.ClusterID
	}
	return clusters, nil
}

// ErrInvalidCursor is returned (wrapped) for a page cursor that no backend
// produced for this query.
var ErrInvalidCursor = fmt.Errorf("%w: invalid cursor", storage.ErrInvalidQuery)

const cursorPrefix = "seq:"

// EncodeCursor returns the cursor that continues a page after the record
// with IngestSeq seq.
func EncodeCursor(seq int64) string { return cursorPrefix + strconv.FormatInt(seq, 10) }

// DecodeCursor parses a cursor made by EncodeCursor.
func DecodeCursor(cursor string) (int64, error) {
	digits, ok := strings.CutPrefix(cursor, cursorPrefix)
	if !ok {
		return 0, fmt.Errorf("%w %q", ErrInvalidCursor, cursor)
	}
	seq, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || seq < 0 {
		return 0, fmt.Errorf("%w %q", ErrInvalidCursor, cursor)
	}
	return seq, nil
}

// DefaultLimit is the page size of a Query whose Limit is 0.
const DefaultLimit = 1000
