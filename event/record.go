package event

import (
	"encoding/json"
	"strings"
	"time"
)

// RedactedValue is what a Collector records in place of a Secret's
// values unless it is told to keep them (watch.AllowSecrets,
// watch.KeepSecretValues): the values of stringData and the kubectl
// last-applied-configuration annotation are replaced by it, those of data
// by its base64 encoding, so the body stays a valid Secret.
const RedactedValue = "krply-redacted"

// RecordType says what a journal record means.
type RecordType string

// The record types of the journal.
const (
	// TypeEvent is an object change: ADDED, MODIFIED or DELETED, real or
	// synthetic (a baseline item or an inferred deletion).
	TypeEvent RecordType = "event"
	// TypeBaseline marks the begin or the end of a baseline (a list result).
	// The items of a baseline are TypeEvent records with Synthetic set.
	TypeBaseline RecordType = "baseline"
	// TypeGap says that continuity of a stream was lost between two moments.
	TypeGap RecordType = "gap"
	// TypeCoverageChange says that a stream became unavailable or available.
	TypeCoverageChange RecordType = "coverage_change"
	// TypeAuditCorrelation links an audit event to the journal event it caused.
	TypeAuditCorrelation RecordType = "audit_correlation"
	// TypeSnapshot is a saved snapshot of a scope at a time.
	TypeSnapshot RecordType = "snapshot"
	// TypeCheckpoint is durable progress of a stream: a bookmark or another
	// resourceVersion the stream is known to be continuous up to.
	TypeCheckpoint RecordType = "checkpoint"
	// TypePlan is a saved replay plan.
	TypePlan RecordType = "replay_plan"
)

// Valid reports whether t is one of the known record types.
func (t RecordType) Valid() bool {
	switch t {
	case TypeEvent, TypeBaseline, TypeGap, TypeCoverageChange, TypeAuditCorrelation,
		TypeSnapshot, TypeCheckpoint, TypePlan:
		return true
	}
	return false
}

// WatchType is the type of a Kubernetes watch event.
type WatchType string

// The watch event types, as the API server sends them.
const (
	Added    WatchType = "ADDED"
	Modified WatchType = "MODIFIED"
	Deleted  WatchType = "DELETED"
	Bookmark WatchType = "BOOKMARK"
	Error    WatchType = "ERROR"
)

// Record is one entry of the journal.
//
// Every record belongs to a cluster; all but snapshots, plans and audit
// correlations belong to a stream. The payload fields (Gap, Coverage,
// Baseline, Checkpoint, Saved, Audit, Inferred) are set according to Type.
//
// Its JSON form is part of the wire schema (docs/reference/wire-schema.md). The
// payloads' JSON is also part of the journal's file format: the SQLite
// store keeps them as that JSON, so their field names never change.
type Record struct {
	// Type says what the record means.
	Type RecordType `json:"type"`
	// EventID is the deterministic de-duplication key: the same watch event
	// delivered twice has the same EventID and is stored once.
	EventID string `json:"eventID"`
	// IngestSeq is assigned by the store on append; it increases strictly
	// in append order. Zero on records that were not stored yet.
	IngestSeq int64 `json:"ingestSeq,omitempty"`
	// ClusterID names the cluster the record was observed in.
	ClusterID string `json:"clusterID"`
	// StreamID is Stream.ID() of the stream that produced the record.
	StreamID string `json:"streamID,omitempty"`
	// ObservedAt is when the collector saw the event, not when the object
	// changed on the server.
	ObservedAt time.Time `json:"observedAt"`
	// WatchType is set on TypeEvent records.
	WatchType WatchType `json:"watchType,omitempty"`
	// Synthetic is true when krply made the record rather than receiving it
	// as a watch event: baseline items (ADDED) and inferred deletions.
	Synthetic bool `json:"synthetic,omitempty"`
	// Resource identifies the object of a TypeEvent record (and of other
	// records where one object is concerned).
	Resource ResourceRef `json:"resource,omitempty"`
	// ObjectHash is ObjectHash(Object) when Object is set.
	ObjectHash string `json:"objectHash,omitempty"`
	// Object is the object's JSON as received. For TypeSnapshot and TypePlan
	// records it holds the saved document.
	Object json.RawMessage `json:"object,omitempty"`

	// BaselineID is set on the items of a baseline and on its markers.
	BaselineID string `json:"baselineID,omitempty"`

	Gap        *Gap            `json:"gap,omitempty"`
	Coverage   *CoverageChange `json:"coverage,omitempty"`
	Baseline   *Baseline       `json:"baseline,omitempty"`
	Checkpoint *Checkpoint     `json:"checkpoint,omitempty"`
	// Saved describes the saved document of a TypeSnapshot or TypePlan
	// record. Its JSON name is "snapshot", as journals and the wire schema
	// have always had it.
	Saved    *SavedRef         `json:"snapshot,omitempty"`
	Audit    *AuditCorrelation `json:"audit,omitempty"`
	Inferred *InferredDeletion `json:"inferred,omitempty"`
}

// Gap says that a stream's continuity was lost: changes made between From
// and the end of the next complete baseline may be missing from the journal.
//
// A gap record is written as soon as the loss is detected, before the
// relist, so that it is durable even when the relist never finishes. Its end
// is the next complete baseline of the stream, whose end record names the
// gap in Baseline.ClosesGap and carries the resourceVersion the stream
// resumed from.
type Gap struct {
	// From is the last moment the stream was known to be continuous: the
	// observation time of its last durable record, not the moment the loss
	// was detected.
	From time.Time `json:"from"`
	// To is when the loss was detected. Coverage returns only with the next
	// complete baseline, which ends at or after To.
	To time.Time `json:"to"`
	// Reason says why, e.g. "410 Gone: too old resource version".
	Reason string `json:"reason"`
	// LastResourceVersion is the last durable resourceVersion before the gap.
	LastResourceVersion string `json:"lastResourceVersion,omitempty"`
}

// CoverageChange says that a stream became available or unavailable.
type CoverageChange struct {
	Available bool `json:"available"`
	// Reason explains the change, e.g. "403 Forbidden: ..." or "discovered".
	Reason string `json:"reason"`
	// Code is the HTTP status code behind the change, when there was one.
	Code int `json:"code,omitempty"`
}

// BaselinePhase is the begin or the end of a baseline.
type BaselinePhase string

// The phases of a baseline.
const (
	BaselineBegin BaselinePhase = "begin"
	BaselineEnd   BaselinePhase = "end"
)

// Baseline is the payload of a TypeBaseline record. A baseline is complete
// only when its end record exists; a begin without an end (a crash in the
// middle of a list) is never trusted for coverage.
type Baseline struct {
	ID    string        `json:"id"`
	Phase BaselinePhase `json:"phase"`
	// ResourceVersion is the list's resourceVersion (set on the end record).
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// ItemCount is the number of items recorded (set on the end record):
	// with a recording rule (Stream.Rule), those it matched.
	ItemCount int `json:"itemCount,omitempty"`
	// Reason says why the baseline was taken: "initial", "initial baseline
	// interrupted" (the initial list was killed before its end: taken
	// again), "relist after gap", "coverage restored", "compaction".
	Reason string `json:"reason,omitempty"`
	// ClosesGap is the EventID of the gap this baseline ends, if any (set
	// on the end record); its ResourceVersion is the gap's end.
	ClosesGap string `json:"closesGap,omitempty"`
}

// Checkpoint is the payload of a TypeCheckpoint record.
type Checkpoint struct {
	ResourceVersion string `json:"resourceVersion"`
	// Bookmark is true when the checkpoint came from a BOOKMARK event.
	Bookmark bool `json:"bookmark,omitempty"`
	// InitialEventsEnd is true for the bookmark that ends a WatchList's
	// initial events.
	InitialEventsEnd bool `json:"initialEventsEnd,omitempty"`
}

// SavedRef describes a document saved in the journal — a snapshot, a replay
// plan, a dry-run or an apply report — for listing it without decoding the
// document itself, which is in Record.Object.
type SavedRef struct {
	// ID is the document's ID (a snapshot's, a plan's, a report's).
	ID string `json:"id"`
	// Name is a snapshot's name, or says what a plan or report is.
	Name string `json:"name,omitempty"`
	// At is the time the document describes: a snapshot's or plan's
	// source time, a report's end.
	At time.Time `json:"at"`
	// Complete is true when every contributing stream of a snapshot or plan
	// was covered at At, and when a dry run or apply ran clean.
	Complete bool `json:"complete"`
}

// AuditCorrelation links a Kubernetes audit event to the journal event it
// caused.
type AuditCorrelation struct {
	// TargetEventID is the EventID of the journal event the request caused.
	TargetEventID string   `json:"targetEventID"`
	AuditID       string   `json:"auditID"`
	User          string   `json:"user"`
	Groups        []string `json:"groups,omitempty"`
	UserAgent     string   `json:"userAgent,omitempty"`
	SourceIPs     []string `json:"sourceIPs,omitempty"`
	Verb          string   `json:"verb"`
	RequestURI    string   `json:"requestURI,omitempty"`
	// RequestReceivedAt is the audit event's requestReceivedTimestamp.
	RequestReceivedAt time.Time `json:"requestReceivedAt"`
	// Confidence is 1 for an exact match by resourceVersion and lower for a
	// best-effort match.
	Confidence float64 `json:"confidence"`
	// Rule names the rule that matched, e.g. "exact-resource-version".
	Rule string `json:"rule"`
}

// InferredDeletion is the payload of a synthetic DELETED event written when
// a relist no longer contains an object the journal believed alive. The
// deletion happened somewhere between From and To.
//
// A stream with a recording rule (Stream.Rule) also writes one when an
// object it recorded stops matching the rule, with a Reason starting
// with ExcludedByRule: the object was not deleted, the journal stops
// knowing about it there (IsExclusion). Its Object is empty: the version
// that left the rule is not recorded.
type InferredDeletion struct {
	From       time.Time `json:"from"`
	To         time.Time `json:"to"`
	BaselineID string    `json:"baselineID"`
	Reason     string    `json:"reason"`
}

// ExcludedByRule starts the Reason of the InferredDeletion that marks an
// object leaving a stream's recording rule.
const ExcludedByRule = "excluded by rule"

// IsExclusion reports whether r marks an object that stopped matching its
// stream's recording rule: from r on, the stream does not record it, and
// what became of it is unknown there.
func (r *Record) IsExclusion() bool {
	return r.Inferred != nil && strings.HasPrefix(r.Inferred.Reason, ExcludedByRule)
}

// IsObjectChange reports whether r changes an object's state: an event
// record of type ADDED, MODIFIED or DELETED.
func (r *Record) IsObjectChange() bool {
	if r.Type != TypeEvent {
		return false
	}
	switch r.WatchType {
	case Added, Modified, Deleted:
		return true
	}
	return false
}
