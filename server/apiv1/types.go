package apiv1

import (
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/replay/replayapi"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/watch/status"
)

// Cluster is one cluster the journal records.
type Cluster struct {
	ClusterID string `json:"clusterID"`
	// Streams counts the cluster's streams, Records their records.
	Streams int   `json:"streams"`
	Records int64 `json:"records"`
	// FirstObservedAt and LastObservedAt bound the cluster's records.
	FirstObservedAt time.Time `json:"firstObservedAt,omitzero"`
	LastObservedAt  time.Time `json:"lastObservedAt,omitzero"`
}

// ClusterList is the answer of GET /api/v1/clusters.
type ClusterList struct {
	Items []Cluster `json:"items"`
	Next  string    `json:"next,omitempty"`
}

// StreamInfo is one stream: its durable status, its coverage at the time
// asked about, its gaps, and the recorder's live view of it.
type StreamInfo struct {
	Status   storage.StreamStatus `json:"status"`
	Coverage storage.Coverage     `json:"coverage"`
	// Gaps are the stream's gap records and coverage changes to
	// unavailable, oldest first.
	Gaps []event.Record `json:"gaps,omitempty"`
	// Collector is the attached recorder's status of the stream (see
	// server.WithRecorder); absent without one.
	Collector *status.StreamStatus `json:"collector,omitempty"`
}

// StreamList is the answer of GET /api/v1/streams.
type StreamList struct {
	Items []StreamInfo `json:"items"`
	Next  string       `json:"next,omitempty"`
}

// RecordList is the answer of GET /api/v1/records.
type RecordList struct {
	Items []event.Record `json:"items"`
	Next  string         `json:"next,omitempty"`
	// Gaps are the gap records and coverage changes to unavailable of the
	// scope's streams whose loss of continuity intersects the query's time
	// range: changes in them are missing from Items. On every page.
	Gaps []event.Record `json:"gaps,omitempty"`
}

// SnapshotList is the answer of GET /api/v1/snapshots: saved snapshots
// without their objects.
type SnapshotList struct {
	Items []materialize.Snapshot `json:"items"`
	Next  string                 `json:"next,omitempty"`
}

// SnapshotPage is the answer of GET /api/v1/snapshot and GET
// /api/v1/snapshots/{id}: the snapshot with one page of its objects, and
// the cursor of the next page. Every page carries the snapshot's
// Complete, Watermarks, Missing and Warnings.
type SnapshotPage struct {
	materialize.Snapshot
	Next string `json:"next,omitempty"`
}

// Found is a find's answer: for each object of the scope, the intervals
// during which the condition held, with each stream's unknown spans.
type Found = materialize.Found

// FoundPage is the answer of GET /api/v1/find: the answer whole when the
// request gives neither limit nor cursor; otherwise one page of its
// objects and the cursor of the next page. Every page carries the
// answer's Query, Streams, Missing, Versions, Evaluated and Warnings.
type FoundPage struct {
	materialize.Found
	Next string `json:"next,omitempty"`
}

// DiffPage is the answer of GET /api/v1/diff: the diff with one page of
// its objects, and the cursor of the next page. Every page carries the
// diff's HasGaps, Gaps, Missing and Warnings.
type DiffPage struct {
	materialize.Diff
	Next string `json:"next,omitempty"`
}

// SnapshotRequest is the body of POST /api/v1/snapshots.
type SnapshotRequest struct {
	// Name names the saved snapshot (optional).
	Name string `json:"name,omitempty"`
	// At is the time, in ParseTime's syntax; empty means now.
	At string `json:"at,omitempty"`
	// Scope is what to snapshot; an empty ClusterID means the journal's
	// only cluster.
	Scope materialize.Scope `json:"scope"`
}

// PlanSummary is a saved replay plan without its objects and exclusions,
// an item of GET /api/v1/plans; GET /api/v1/plans/{id} answers the plan.
type PlanSummary struct {
	ID        string             `json:"id"`
	CreatedAt time.Time          `json:"createdAt"`
	Source    replayapi.Source   `json:"source"`
	Target    replayapi.Target   `json:"target"`
	Coverage  replayapi.Coverage `json:"coverage"`
	// Objects and Exclusions count the plan's objects and exclusions.
	Objects    int              `json:"objects"`
	Exclusions int              `json:"exclusions"`
	Hash       string           `json:"hash"`
	Status     replayapi.Status `json:"status"`
}

// PlanList is the answer of GET /api/v1/plans: the saved plans, in the
// order they were saved.
type PlanList struct {
	Items []PlanSummary `json:"items"`
	Next  string        `json:"next,omitempty"`
}

// PlanRequest is the body of POST /api/v1/plans.
type PlanRequest struct {
	Source replayapi.Source `json:"source"`
	Target replayapi.Target `json:"target"`
	// Policy is the replay policy; absent means the default one.
	Policy *replayapi.Policy `json:"policy,omitempty"`
	// At, in ParseTime's syntax, sets Source.At when given.
	At string `json:"at,omitempty"`
}

// Health is the answer of /healthz and /readyz when all is well.
type Health struct {
	Status string `json:"status"`
}

// FeedEvent is one event of the change feed (GET /api/v1/watch) as the
// client reads it: the SSE event's id (the cursor to resume after it), its
// type ("record" or "error"), and its data: the record, or the error.
type FeedEvent struct {
	ID     string        `json:"id"`
	Type   string        `json:"type"`
	Record *event.Record `json:"record,omitempty"`
	Error  *Error        `json:"error,omitempty"`
}

// Prefix is the path prefix of the routes of this version.
const Prefix = "/api/v1/"
