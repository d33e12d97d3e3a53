// Package event is the record model of the krply journal: what a journal
// entry is, how streams and objects are named, and the deterministic keys
// that make ingestion idempotent. It does no I/O.
//
// # Records
//
// A Record is one journal entry. Its Type says what it means: an object
// change (TypeEvent with a WatchType of ADDED, MODIFIED or DELETED), the
// begin or end of a baseline (a list result), a gap (continuity lost), a
// coverage change (a stream became unavailable or available), a checkpoint
// (a bookmark or other durable progress), an audit correlation, a saved
// snapshot or a saved replay plan. Object bodies are kept exactly as
// received, so fields of unknown CRDs survive.
//
// # Guarantees
//
//   - Stream.ID and ParseStreamID round-trip every stream, including the core
//     group, cluster scope and selectors containing '/', ',', '=' and '!'.
//   - EventID is deterministic: the same watch event delivered twice has the
//     same ID, so at-least-once delivery stores it once.
//   - resourceVersion is treated as an opaque string; nothing here parses or
//     orders it.
//
// ObservedAt is when the collector saw an event, not when the object changed
// on the server.
//
// # Concurrency
//
// Values of this package are plain data; they are safe to share once no
// goroutine writes them.
package event
