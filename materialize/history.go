package materialize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// EntryKind says what a history entry is.
type EntryKind string

// The kinds of history entry.
const (
	// EntryVersion is a version of the object (Entry.Version is set).
	EntryVersion EntryKind = "version"
	// EntryGap is a gap of a stream that records the object: changes
	// between Gap.From and the next baseline may be missing (Entry.Gap).
	EntryGap EntryKind = "gap"
	// EntryUnavailable and EntryAvailable are a stream becoming unavailable
	// (e.g. 403) and available again (Entry.Coverage).
	EntryUnavailable EntryKind = "unavailable"
	EntryAvailable   EntryKind = "available"
	// EntryConfirmed is an item of a relist (a baseline) that found the
	// object at the resourceVersion of its version before: no new version,
	// a confirmation that the object was still as that version left it
	// when the list was taken (Entry.Confirmation). The journal keeps the
	// item; a history shows it as what it is.
	EntryConfirmed EntryKind = "confirmed"
)

// Origin says where a version came from.
type Origin string

// The origins of a version.
const (
	// OriginWatch is a watch event the API server sent.
	OriginWatch Origin = "watch"
	// OriginBaseline is an item of a baseline (a list): the object's state
	// when the list was taken, not a change the server reported.
	OriginBaseline Origin = "baseline"
	// OriginInferred is a deletion krply inferred because a relist no
	// longer contained the object.
	OriginInferred Origin = "inferred"
	// OriginExcluded marks an object that stopped matching its stream's
	// recording rule (event.Record.IsExclusion): not a deletion, the end
	// of what the stream knows about it. It has no body.
	OriginExcluded Origin = "excluded"
)

// History is the history of one object: its versions in journal order,
// interleaved with the gaps and availability changes of the streams that
// record it.
type History struct {
	Object  storage.ObjectID `json:"object"`
	Entries []Entry          `json:"entries,omitempty"`
	// Warnings are human-readable notes about the answer.
	Warnings []string `json:"warnings,omitempty"`
	// Next is set when Limit cut the history short: give it to After to
	// read the rest. (The query API answers an opaque cursor here.)
	Next string `json:"next,omitempty"`
}

// Versions returns the versions of the history, in order.
func (h *History) Versions() []*Version {
	var out []*Version
	for i := range h.Entries {
		if v := h.Entries[i].Version; v != nil {
			out = append(out, v)
		}
	}
	return out
}

// Entry is one entry of a History.
type Entry struct {
	Kind     EntryKind `json:"kind"`
	StreamID string    `json:"streamID"`
	EventID  string    `json:"eventID"`
	// ObservedAt is when the collector saw the record, not when the object
	// changed on the server.
	ObservedAt time.Time `json:"observedAt"`
	// Version is set for EntryVersion.
	Version *Version `json:"version,omitempty"`
	// Gap is set for EntryGap.
	Gap *event.Gap `json:"gap,omitempty"`
	// Coverage is set for EntryUnavailable and EntryAvailable.
	Coverage *event.CoverageChange `json:"coverage,omitempty"`
	// Confirmation is set for EntryConfirmed.
	Confirmation *Confirmation `json:"confirmation,omitempty"`
}

// Confirmation is a relist item that found an object at the
// resourceVersion (and UID) of the version before it in the journal.
type Confirmation struct {
	// ResourceVersion is the version confirmed: the item's and the
	// version's.
	ResourceVersion string `json:"resourceVersion"`
	// VersionEventID is the journal record of the version it confirms
	// (the version's Entry.EventID).
	VersionEventID string `json:"versionEventID"`
	// BaselineID names the relist (baseline) the item belongs to.
	BaselineID string `json:"baselineID,omitempty"`
}

// Version is one version of an object.
type Version struct {
	Ref             event.ResourceRef `json:"ref"`
	WatchType       event.WatchType   `json:"watchType"`
	ResourceVersion string            `json:"resourceVersion"`
	ObservedAt      time.Time         `json:"observedAt"`
	Origin          Origin            `json:"origin"`
	// BaselineID names the baseline of a baseline item or the baseline
	// that revealed an inferred deletion.
	BaselineID string `json:"baselineID,omitempty"`
	// Inferred bounds an inferred deletion in time.
	Inferred *event.InferredDeletion `json:"inferred,omitempty"`
	// Recreated is true when the UID differs from the previous version's.
	Recreated bool `json:"recreated,omitempty"`
	// Object is the body as received (the last known body for deletions).
	Object json.RawMessage `json:"object,omitempty"`
	// Changes are the field changes from the previous version (ignoring
	// server-owned metadata, see DefaultIgnorePointers). Empty for the
	// first version and the first after a deletion. Each names the field
	// manager that changed it where managedFields tell.
	Changes []FieldChange `json:"changes,omitempty"`
	// FieldManagers are who wrote this version according to the object's
	// own metadata.managedFields, without an audit log: the entries that
	// are new since the previous version, whose time moved or whose fields
	// grew, or that own a field this version changed — all of them for the
	// first version. Entry times have seconds precision. They name clients
	// (field managers), not users; Provenance names users.
	FieldManagers []FieldManager `json:"fieldManagers,omitempty"`
	// Provenance lists the audited requests correlated with this version,
	// most confident first. On a baseline item or an inferred deletion
	// (Origin not OriginWatch) it holds only links below confidence 1
	// (audit's "seen-through-relist" and "inferred-deletion-uid"): the
	// journal shows the result of the write, not the write.
	Provenance []event.AuditCorrelation `json:"provenance,omitempty"`

	// compactObject is Object when History found it compact JSON, so that
	// MarshalJSON copies it as it is.
	compactObject json.RawMessage
	// eventID is the EventID of the version's record, where Find needs
	// it for the audit provenance.
	eventID string
}

// History returns obj's versions in journal order with the field changes
// between consecutive versions, interleaved with the gaps and availability
// changes of the streams that record it, and the audit provenance of each
// version. Status changes are included unless IncludeStatus(false) is
// given. Since, Until, FromStream and Limit restrict the versions.
//
// When two streams record the same version (the same UID, resourceVersion
// and watch type), it appears once. A relist item at the UID and
// resourceVersion of the version before it is no new version: it is an
// EntryConfirmed entry, not in Versions.
func (m *Materializer) History(ctx context.Context, obj storage.ObjectID, opts ...HistoryOption) (*History, error) {
	if obj.ClusterID == "" || obj.Resource == "" || obj.Name == "" {
		return nil, fmt.Errorf("materialize: %w: object %+v needs a cluster, a resource and a name", ErrInvalidArgument, obj)
	}
	qc, cc, err := newHistoryConfig(opts)
	if err != nil {
		return nil, err
	}
	what := describeObject(obj)
	after, err := m.recordAfter(ctx, obj, qc)
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", what, err)
	}
	hq := storage.HistoryQuery{Since: qc.since, Until: qc.until, StreamID: qc.streamID, Limit: qc.limit}
	if after != nil {
		hq.AfterSeq = after.IngestSeq
	}
	recs, err := m.store.ObjectHistory(ctx, obj, hq)
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", what, err)
	}
	prev := after
	if prev == nil || !qc.since.IsZero() && prev.ObservedAt.Before(qc.since) {
		if prev, err = m.versionBefore(ctx, obj, qc); err != nil {
			return nil, fmt.Errorf("history of %s: %w", what, err)
		}
	}
	prevVersion, err := m.versionEventOf(ctx, obj, prev)
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", what, err)
	}
	h := &History{Object: obj}
	entries := h.versions(recs, prev, prevVersion, after, &cc)
	if err := m.addProvenance(ctx, entries); err != nil {
		return nil, fmt.Errorf("history of %s: %w", what, err)
	}
	// The losses are those of every version read, filtered or not.
	read := entries
	if qc.changeFilter != nil {
		if entries, err = filterChanges(ctx, qc.changeFilter, prev, entries, h); err != nil {
			return nil, fmt.Errorf("history of %s: %w", what, err)
		}
	}
	var bounds seqBounds
	if after != nil {
		bounds.after = after.IngestSeq
	}
	if qc.limit > 0 && len(recs) == qc.limit {
		// Limit cut the history short: the next page starts after the
		// last record read.
		h.Next = recs[len(recs)-1].EventID
		bounds.upTo = recs[len(recs)-1].IngestSeq
	}
	losses, err := m.historyLosses(ctx, obj, qc, bounds, read)
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", what, err)
	}
	entries = append(entries, losses...)
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].seq < entries[j].seq })
	h.Entries = make([]Entry, len(entries))
	for i, e := range entries {
		h.Entries[i] = e.Entry
	}
	if len(recs) == 0 {
		h.Warnings = append(h.Warnings, fmt.Sprintf("the journal has no version of %s", what))
	}
	return h, nil
}

// versionBefore returns the version of obj before Since, so that the first
// version of a history restricted by Since has its changes; nil without
// Since, or when there is none (in the stream of FromStream).
func (m *Materializer) versionBefore(ctx context.Context, obj storage.ObjectID, qc queryConfig) (*event.Record, error) {
	if qc.since.IsZero() {
		return nil, nil
	}
	rec, err := m.store.LatestAt(ctx, obj, qc.since.Add(-time.Nanosecond))
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("version before %s: %w", qc.since, err)
	case qc.streamID != "" && rec.StreamID != qc.streamID:
		return nil, nil
	}
	return &rec, nil
}

// versionEventOf returns the EventID of the version rec shows (rec the
// record before a history's first, "" for none): rec's own, unless it is a
// relist item, which may repeat a version recorded before it.
func (m *Materializer) versionEventOf(ctx context.Context, obj storage.ObjectID, rec *event.Record) (string, error) {
	switch {
	case rec == nil:
		return "", nil
	case !rec.Synthetic || rec.Inferred != nil || rec.Resource.ResourceVersion == "":
		return rec.EventID, nil
	}
	first, err := m.store.EventByResourceVersion(ctx, obj, rec.Resource.UID, rec.Resource.ResourceVersion)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return rec.EventID, nil
	case err != nil:
		return "", fmt.Errorf("version %s: %w", rec.Resource.ResourceVersion, err)
	}
	return first.EventID, nil
}

// recordAfter returns the record of After (nil without it): a record of
// obj the journal still holds.
func (m *Materializer) recordAfter(ctx context.Context, obj storage.ObjectID, qc queryConfig) (*event.Record, error) {
	if qc.after == "" {
		return nil, nil
	}
	rec, err := m.store.Get(ctx, qc.after)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil, fmt.Errorf("%w: after %s: the journal no longer holds that record (retention or compaction removed it): read the history again from its start or from a time (Since)", ErrInvalidArgument, qc.after)
	case err != nil:
		return nil, fmt.Errorf("after %s: %w", qc.after, err)
	case rec.Resource.Name == "" || storage.ObjectIDOf(rec) != obj:
		return nil, fmt.Errorf("%w: after %s: the record is not a version of this object: give the Next of a history of it", ErrInvalidArgument, qc.after)
	}
	return &rec, nil
}

// versionKey identifies a version whichever stream recorded it.
type versionKey struct {
	uid, rv string
	wt      event.WatchType
	origin  Origin
}

// versions returns the version entries of recs, each compared with the
// version before it (prev for the first, the record of the version whose
// EventID is prevVersion), leaving out a version another stream already
// recorded (or recorded as after, the last record of the previous page). A
// relist item that confirms the version before it is an EntryConfirmed
// entry. Bodies that cannot be compared are warnings of h.
func (h *History) versions(recs []event.Record, prev *event.Record, prevVersion string, after *event.Record, cc *compareConfig) []entryAt {
	// A version is left out when another stream recorded it: with one
	// stream there is nothing to remember.
	oneStream := true
	for i := range recs {
		if recs[i].StreamID != recs[0].StreamID || after != nil && after.StreamID != recs[0].StreamID {
			oneStream = false
			break
		}
	}
	var seen map[versionKey]string // key -> stream that recorded it
	if !oneStream {
		seen = make(map[versionKey]string, len(recs)+1)
		if after != nil {
			seen[versionKey{after.Resource.UID, after.Resource.ResourceVersion, after.WatchType, originOf(*after)}] = after.StreamID
		}
	}
	entries := make([]entryAt, 0, len(recs))
	// The versions in one allocation: a history's live together anyway.
	slab := make([]Version, len(recs))
	var prevBody *body
	cache := newBodyCache(cc, len(recs))
	if prev != nil {
		prevBody = cache.newBody(prev.Object)
	}
	for i := range recs {
		rec := recs[i]
		if confirms(prev, rec) {
			entries = append(entries, entryAt{seq: rec.IngestSeq, Entry: Entry{Kind: EntryConfirmed, StreamID: rec.StreamID,
				EventID: rec.EventID, ObservedAt: rec.ObservedAt, Confirmation: &Confirmation{
					ResourceVersion: rec.Resource.ResourceVersion, VersionEventID: prevVersion, BaselineID: rec.BaselineID}}})
			continue
		}
		v := &slab[i]
		setVersion(v, rec)
		if !oneStream {
			key := versionKey{rec.Resource.UID, rec.Resource.ResourceVersion, rec.WatchType, v.Origin}
			if s, dup := seen[key]; dup && s != rec.StreamID && key.rv != "" {
				continue
			}
			seen[key] = rec.StreamID
		}
		cur := cache.newBody(rec.Object)
		if !cc.trees && prevBody != nil {
			// Check only what differs from the version before.
			prevBody.scan()
			cur.scanAfter(prevBody)
		}
		if warning := v.compare(prev, prevBody, rec, cur, cc); warning != "" {
			h.Warnings = append(h.Warnings, warning)
		}
		if cur.isCompact() {
			v.compactObject = v.Object
		}
		cache.release(prevBody)
		prev, prevBody, prevVersion = &recs[i], cur, rec.EventID
		entries = append(entries, entryAt{seq: rec.IngestSeq, Entry: Entry{Kind: EntryVersion, StreamID: rec.StreamID,
			EventID: rec.EventID, ObservedAt: rec.ObservedAt, Version: v}})
	}
	return entries
}

// confirms reports whether rec, a relist item, found the object as the
// version prev left it: the same UID and resourceVersion, and neither is a
// deletion.
func confirms(prev *event.Record, rec event.Record) bool {
	return prev != nil && rec.Synthetic && rec.Inferred == nil && rec.WatchType != event.Deleted &&
		prev.Inferred == nil && prev.WatchType != event.Deleted &&
		rec.Resource.ResourceVersion != "" && rec.Resource.ResourceVersion == prev.Resource.ResourceVersion &&
		rec.Resource.UID == prev.Resource.UID
}

// setVersion sets v to the version a record is, without its comparison
// to the previous one.
func setVersion(v *Version, rec event.Record) {
	*v = Version{Ref: rec.Resource, WatchType: rec.WatchType, ResourceVersion: rec.Resource.ResourceVersion,
		ObservedAt: rec.ObservedAt, Origin: originOf(rec), BaselineID: rec.BaselineID, Inferred: rec.Inferred, Object: rec.Object}
	if rec.Inferred != nil && v.BaselineID == "" {
		v.BaselineID = rec.Inferred.BaselineID
	}
}

// compare sets what v, the version rec, owes to the version before it,
// prev (nil for none): Recreated, Changes and FieldManagers. prevBody and
// cur are the bodies of prev and rec. It returns a warning when the bodies
// cannot be compared.
func (v *Version) compare(prev *event.Record, prevBody *body, rec event.Record, cur *body, cc *compareConfig) (warning string) {
	if prev == nil || prev.WatchType == event.Deleted {
		v.FieldManagers = fieldManagers(cur.entries())
		return ""
	}
	v.Recreated = prev.Resource.UID != "" && rec.Resource.UID != "" && prev.Resource.UID != rec.Resource.UID
	if v.Recreated {
		v.FieldManagers = fieldManagers(cur.entries())
		return ""
	}
	changes, paths, err := cc.compareDecoded(rec.Resource, prevBody, cur)
	v.Changes = changes
	if err != nil {
		warning = fmt.Sprintf("version %s: %v", rec.Resource.ResourceVersion, err)
	}
	v.FieldManagers = attributeFields(prevBody.entries(), cur.entries(), v.Changes, paths)
	return warning
}

// addProvenance sets the audit provenance of the version entries.
func (m *Materializer) addProvenance(ctx context.Context, entries []entryAt) error {
	if len(entries) == 0 {
		return nil
	}
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		if e.Version != nil {
			ids = append(ids, e.EventID)
		}
	}
	corr, err := m.store.Correlations(ctx, ids)
	if err != nil {
		return fmt.Errorf("audit correlations: %w", err)
	}
	for i := range entries {
		if v := entries[i].Version; v != nil {
			v.Provenance = provenanceOf(v, corr[entries[i].EventID])
		}
	}
	return nil
}

// provenanceOf returns the audit links of v among its correlation records,
// most confident first. A baseline item or an inferred deletion is no
// evidence of a write: only a link labelled as seen through it (confidence
// below 1) belongs there; an exact one is a mismatch recorded by an older
// krply.
func provenanceOf(v *Version, corrs []event.Record) []event.AuditCorrelation {
	var out []event.AuditCorrelation
	for _, c := range corrs {
		if c.Audit != nil && (v.Origin == OriginWatch || c.Audit.Confidence < 1) {
			out = append(out, *c.Audit)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Confidence > out[b].Confidence })
	return out
}

type entryAt struct {
	seq int64
	Entry
}

func originOf(rec event.Record) Origin {
	switch {
	case rec.IsExclusion():
		return OriginExcluded
	case rec.Inferred != nil:
		return OriginInferred
	case rec.Synthetic:
		return OriginBaseline
	}
	return OriginWatch
}

// seqBounds bound the losses of a page of a history by IngestSeq, so
// that consecutive pages show each loss once: after the record the page
// continues from (After), up to the last record it read when Limit cut it
// short. Zero does not bound.
type seqBounds struct {
	after, upTo int64
}

func (b seqBounds) holds(seq int64) bool {
	return seq > b.after && (b.upTo == 0 || seq <= b.upTo)
}

// historyLosses returns the gap and coverage-change records of the streams
// that record obj, from its first version on (or from Since, or after the
// record of After), up to Until or, when Limit cut the versions short, the
// last record read.
func (m *Materializer) historyLosses(ctx context.Context, obj storage.ObjectID, qc queryConfig, bounds seqBounds, versions []entryAt) ([]entryAt, error) {
	if len(versions) == 0 && bounds.after == 0 {
		return nil, nil
	}
	since, until := lossWindow(qc, bounds, versions)
	ids, err := m.historyStreams(ctx, obj, qc, versions)
	if err != nil {
		return nil, err
	}
	var out []entryAt
	for id := range ids {
		tl, err := storage.StreamTimeline(ctx, m.store, id)
		if err != nil {
			return nil, fmt.Errorf("gaps of %s: %w", id, err)
		}
		for _, rec := range tl.Records {
			if !since.IsZero() && rec.ObservedAt.Before(since) || !until.IsZero() && rec.ObservedAt.After(until) || !bounds.holds(rec.IngestSeq) {
				continue
			}
			if e, ok := lossEntry(rec); ok {
				out = append(out, entryAt{seq: rec.IngestSeq, Entry: e})
			}
		}
	}
	return out, nil
}

// lossWindow returns the times whose losses a history shows: from its
// first version (or Since, when earlier; from any time after the record
// of After, which bounds.after stands for) to Until. When Limit cut the
// versions short, bounds.upTo ends them.
func lossWindow(qc queryConfig, bounds seqBounds, versions []entryAt) (since, until time.Time) {
	if bounds.after == 0 {
		since = versions[0].ObservedAt
		if !qc.since.IsZero() && qc.since.Before(since) {
			since = qc.since
		}
	} else {
		since = qc.since
	}
	return since, qc.until
}

// historyStreams returns the IDs of the streams whose losses a history of
// obj shows: those that claim obj and those that recorded a version of it,
// only FromStream's when it is given.
func (m *Materializer) historyStreams(ctx context.Context, obj storage.ObjectID, qc queryConfig, versions []entryAt) (map[string]bool, error) {
	// The streams' timelines, not their status: which stream claims obj
	// is all a history needs of them.
	timelines, err := storage.Timelines(ctx, m.store, obj.ClusterID)
	if err != nil {
		return nil, fmt.Errorf("streams of cluster %q: %w", obj.ClusterID, err)
	}
	ids := make(map[string]bool)
	for _, tl := range timelines {
		if holdsResource(tl.Stream, obj) {
			ids[tl.StreamID] = true
		}
	}
	for _, v := range versions {
		ids[v.StreamID] = true
	}
	if qc.streamID != "" {
		for id := range ids {
			if id != qc.streamID {
				delete(ids, id)
			}
		}
	}
	return ids, nil
}

// lossEntry returns the history entry of a gap or coverage-change record;
// false for any other record.
func lossEntry(rec event.Record) (Entry, bool) {
	e := Entry{StreamID: rec.StreamID, EventID: rec.EventID, ObservedAt: rec.ObservedAt}
	switch {
	case rec.Type == event.TypeGap && rec.Gap != nil:
		e.Kind, e.Gap = EntryGap, rec.Gap
	case rec.Type == event.TypeCoverageChange && rec.Coverage != nil && rec.Coverage.Available:
		e.Kind, e.Coverage = EntryAvailable, rec.Coverage
	case rec.Type == event.TypeCoverageChange && rec.Coverage != nil:
		e.Kind, e.Coverage = EntryUnavailable, rec.Coverage
	default:
		return Entry{}, false
	}
	return e, true
}
