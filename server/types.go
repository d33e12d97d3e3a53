package server

import "github.com/krply/krply/server/apiv1"

// The query API's request and answer types are declared in package
// server/apiv1, which the Go client imports without linking the server;
// these aliases keep their names in this package.
type (
	// Cluster is one cluster the journal records (apiv1.Cluster).
	Cluster = apiv1.Cluster
	// ClusterList is the answer of GET /api/v1/clusters (apiv1.ClusterList).
	ClusterList = apiv1.ClusterList
	// StreamInfo is one stream (apiv1.StreamInfo).
	StreamInfo = apiv1.StreamInfo
	// StreamList is the answer of GET /api/v1/streams (apiv1.StreamList).
	StreamList = apiv1.StreamList
	// RecordList is the answer of GET /api/v1/records (apiv1.RecordList).
	RecordList = apiv1.RecordList
	// SnapshotList is the answer of GET /api/v1/snapshots (apiv1.SnapshotList).
	SnapshotList = apiv1.SnapshotList
	// SnapshotPage is one page of a snapshot (apiv1.SnapshotPage).
	SnapshotPage = apiv1.SnapshotPage
	// DiffPage is one page of a diff (apiv1.DiffPage).
	DiffPage = apiv1.DiffPage
	// SnapshotRequest is the body of POST /api/v1/snapshots (apiv1.SnapshotRequest).
	SnapshotRequest = apiv1.SnapshotRequest
	// PlanSummary is a saved plan without its objects (apiv1.PlanSummary).
	PlanSummary = apiv1.PlanSummary
	// PlanList is the answer of GET /api/v1/plans (apiv1.PlanList).
	PlanList = apiv1.PlanList
	// PlanRequest is the body of POST /api/v1/plans (apiv1.PlanRequest).
	PlanRequest = apiv1.PlanRequest
	// Health is the answer of /healthz and /readyz when all is well (apiv1.Health).
	Health = apiv1.Health
	// Found is a find's answer (apiv1.Found).
	Found = apiv1.Found
	// FoundPage is the answer of GET /api/v1/find (apiv1.FoundPage).
	FoundPage = apiv1.FoundPage
	// FeedEvent is one event of the change feed (apiv1.FeedEvent).
	FeedEvent = apiv1.FeedEvent
)
