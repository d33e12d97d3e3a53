// Package materialize answers questions about the past from a krply
// journal: what an object looked like at a time (ObjectAt), every version
// of it with what changed and who changed it (History), the state of a
// whole scope at a time (Snapshot), and what changed in a scope between two
// times (Diff, with table and unified-YAML renderers). Every answer says how
// far it can be trusted.
//
//	m, err := materialize.New(store)
//	snap, err := m.Snapshot(ctx, materialize.Scope{ClusterID: "prod", Namespaces: []string{"shop"}}, t)
//	if !snap.Complete { /* snap.Missing says which streams and why */ }
//	err = m.SaveSnapshot(ctx, snap, "before deploy") // only when asked to keep it
//
// # Pages
//
// Snapshot and Diff hold every object's body of the scope at once. For a
// scope too large for that, SnapshotPage and DiffPage answer one page at a
// time (Page: at most Limit objects after the object After; the answer's
// Next is the next page's After). They read the scope's objects without
// bodies and then only the page's bodies, by EventID, so memory is bounded
// by the page and the objects' identities. The Materializer remembers the
// identities its first page read (the last 4, for a minute, 100,000
// objects in all: about 60 MB), so the
// later pages read only their bodies and agree with the first. Each page
// carries the whole answer's Complete, Watermarks, Missing and warnings;
// the pages put together are Snapshot's or Diff's answer at the time of
// the first. The query API serves snapshots and diffs this way.
//
// # Reads never write
//
// Every query — ObjectAt, History, Snapshot, SnapshotPage, Diff, DiffPage,
// GetSnapshot, ListSnapshots — only reads the journal, so a Materializer answers them
// all on a journal opened read-only. Saving a snapshot is an explicit act,
// SaveSnapshot, and the only write of this package; on a read-only journal
// it returns an error wrapping ErrReadOnly (storage.ErrReadOnly).
//
// # Guarantees
//
//   - Coverage is decided by storage.CoverageAt and nothing else: a time is
//     covered for a stream when a complete baseline ended at or before it,
//     no gap or loss of availability starts between that baseline and the
//     time (a gap counts from its From — the stream's last durable evidence
//     — inclusive), and the stream has durable evidence of continuity after
//     the time (an event, a checkpoint, a baseline end). A baseline without
//     its end is never trusted. A time after a stream's last evidence is
//     "not yet observed": the snapshot's Missing names the stream, with the
//     Reason "not yet observed: evidence reaches to <time>".
//   - A Snapshot is Complete only when every contributing stream is covered
//     at its time and every requested resource and namespace is recorded by
//     some stream. A snapshot reported Complete stays complete when taken
//     again later: nothing the Collector appends afterwards takes coverage
//     back (the stream's evidence is read before its timeline, so a gap
//     appended meanwhile cannot be missed, and both before the objects' records,
//     so a change observed within covered time and appended meanwhile is
//     in the answer; ObjectAt reads in the same order). Contributing streams are the cluster's streams whose
//     resource is in the scope and whose namespace is "" or in the scope.
//     Each has a Watermark: its last progress resourceVersion at or before
//     the time.
//   - An object deleted, really or by inference ("absent from relist"), is
//     not alive after its deletion. An inferred deletion counts from the
//     end of the baseline that revealed it.
//   - An object recorded by several streams (say a namespaced stream and an
//     all-namespaces stream) appears once in a snapshot or diff: a covered
//     stream's version wins over an uncovered one's, then the newest. When
//     only uncovered streams report it alive but a covered stream that
//     would record it does not, it is not alive. ObjectAt uses the newest
//     record across streams.
//   - Field changes are deterministic: sorted by path, numbers kept exact
//     (json.Number), null told from absent (FieldChange.Op). Items of lists
//     with a merge key (containers, env, ports, volumes, volumeMounts, …;
//     see DefaultMergeKeys) are matched by it, so a reordering is not a
//     change and paths read "spec.template.spec.containers[name=app].image".
//   - Diff and History ignore server-owned metadata by default
//     (DefaultIgnorePointers); Diff ignores status unless IncludeStatus(true),
//     History includes it unless IncludeStatus(false). WithIgnoreRules adds
//     JSON-pointer rules per group/kind/namespace/name, like Argo CD's
//     ignoreDifferences. These are CompareOptions, which History, Diff and
//     CompareObjects take; Since, Until, FromStream, Limit and After select
//     History's versions and are HistoryOptions only, so Diff does not
//     compile with them.
//   - A history cut by Limit has a Next; After(Next) reads the rest, after
//     the last record read in journal order, so that pages hold every
//     version and loss exactly once while versions keep being appended.
//   - Diff sets HasGaps, and says why in Warnings, when a contributing
//     stream is not covered at either end, a gap or loss of availability
//     intersects the window, or a requested part of the scope is not
//     recorded.
//   - Diff never calls an object added, removed or changed when its state
//     is unknown at an end of the window: when no stream that records it is
//     covered there (before the stream's first complete baseline, inside a
//     gap, while it was unavailable), the object is ObjectUnknown, with
//     UnknownAt (from, to or both) and the Reason. Objects of a window that
//     starts before recording began are unknown at its start, not added.
//   - Who changed a version comes from two sources, labelled apart. With
//     an audit log ingested (package audit), Version.Provenance names the
//     user of the request; on a real watch event any link, on a baseline
//     item or an inferred deletion only links below confidence 1 (the
//     journal shows the result of the write, not the write). Without one,
//     Version.FieldManagers and FieldChange.FieldManager say what the
//     object's own metadata.managedFields tell: the field manager (a client
//     name such as "kubectl" or a controller's, never a user), its
//     operation and subresource, and the entry's time (in seconds).
//   - The items of a baseline without an end record (a list killed or
//     still running) are not versions: storage.Reader leaves them out.
//   - Queries go through the storage.Reader's indexed methods (LatestAt,
//     AliveAt, ObjectHistory, Records by stream and type); none scans the
//     whole journal.
//   - History compares each version with the one before as written: it
//     checks, parses and decodes only the parts whose bytes differ, and
//     reuses the managedFields entries written as the previous version's.
//     The changes are those of comparing the decoded objects, which it
//     falls back to for a body that is not a JSON object.
//
// ObservedAt, everywhere, is when the collector saw a record, not when the
// object changed on the server. resourceVersions are opaque and never
// compared.
//
// # What it does not do
//
//   - It does not record anything; the watch package's Collector does.
//     It writes only the snapshots SaveSnapshot is asked to save.
//   - A Diff compares two states. Objects created and deleted inside the
//     window do not appear in it; History shows them.
//   - A time after the stream's last record is answered from what the
//     journal holds; if the collector stopped without recording a gap, the
//     journal cannot know. Snapshots of a future time carry a warning.
//   - The unified renderer shows whole objects as YAML (keys sorted by
//     sigs.k8s.io/yaml), with ignored fields left out; it is for reading,
//     not for `patch`.
//
// # Concurrency and Close
//
// A Materializer is safe for concurrent use; it holds no state besides its
// configuration. A call starts goroutines only for its own work (Find
// reads and sweeps a stream's parts side by side, calling a Predicate
// from them, one call at a time unless it is a ConcurrentPredicate), and
// they have ended when it returns. It does not own the store: the caller
// that opened the store closes it, after the last call.
package materialize
