// Package client is the Go client of krply's query API (package server):
// it asks a server over HTTP and returns the library's own types — a
// materialize.Snapshot, a materialize.History, a replayapi.Plan — as the
// library would return them, coverage, gaps and warnings included.
//
//	c, err := client.New("https://krply.example:8443", client.WithToken(token))
//	obj := storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: "settings"}
//	st, err := c.ObjectAt(ctx, obj, time.Now().Add(-time.Hour))
//
// In a pod, WithTokenFile("/var/run/secrets/kubernetes.io/serviceaccount/token")
// sends the pod's ServiceAccount token, read again as the kubelet rotates
// it (a server built with delegated authentication reviews it).
//
// A Client answers as a journal does: it implements materialize.Querier
// (krply.Querier), as *krply.Journal does, with the same signatures and
// options, so that code written over a Querier runs against a local
// journal and a remote recorder alike. Options the query API does not
// carry are refused with ErrInvalidArgument, naming them.
//
// An error answer of the server is returned as an *apiv1.Error (with its
// status, code and the parameter at fault); test it with errors.As, with
// errors.Is(err, &apiv1.Error{Code: apiv1.CodeNotFound}), or with the
// library's sentinels it unwraps to: errors.Is(err, krply.ErrNotFound)
// holds for not_found, as it does for the journal's own error.
// server.Error and the server.Code constants are the same type and values.
//
// The change feed (Watch) reconnects by itself after a dropped connection,
// after the last record it returned: every record once, none lost.
//
// # What it imports
//
// The request and answer types come from package server/apiv1, the query
// API's wire types; the client does not import package server, so a
// program that only asks a server links neither the handler, the
// Collector (package watch), the audit webhook nor the embedded web UI.
// It links the library's result types (packages event, storage,
// materialize, replay/replayapi), since it returns them, but not package
// replay: a plan and its reports are replayapi's data types (replay.Plan is
// the same type), so neither replay's dry-run and apply path nor
// client-go's dynamic and rest clients come along. A test of this package
// fails when its imports reach server, server/ui, watch, audit, replay,
// or client-go's dynamic or rest package.
//
// # Concurrency
//
// A Client is safe for concurrent use. A Feed is read by one goroutine.
//
// # Close
//
// A Client holds nothing to close (its http.Client's idle connections are
// the caller's). Close every Feed that Watch returns.
package client
