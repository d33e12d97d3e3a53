// Package status holds the types of the Collector's per-stream status:
// StreamStatus, what watch.Collector.Status returns and the query API
// serves for each stream, with its StreamState and Resource. Package
// watch declares the same names as aliases of these.
//
// # Guarantees
//
// The package holds data types only and imports the event package, the
// standard library and apimachinery's schema: a program that reads a
// status (the query API's Go client, package server/client) does not link
// the Collector, client-go or a store. The JSON form of each type is part
// of krply's wire schema (docs/wire-schema.md).
//
// # Does not
//
// It does not compute a status: watch.Collector does.
//
// # Concurrency
//
// The types are plain values; a StreamStatus is a copy the Collector no
// longer changes.
//
// # Close
//
// Nothing in the package needs closing.
package status
