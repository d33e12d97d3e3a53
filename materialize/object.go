package materialize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// ObjectState is one object at one time, with how far that answer can be
// trusted.
type ObjectState struct {
	// ID names the object; At is the time asked about.
	ID storage.ObjectID `json:"id"`
	At time.Time        `json:"at"`
	// Exists is true when the object's last version at or before At is not
	// a deletion (real or inferred).
	Exists bool `json:"exists"`
	// Object is that version's body as received; nil when !Exists.
	Object json.RawMessage `json:"object,omitempty"`
	// Record is the object's last change record at or before At, across
	// streams; nil when the journal has none. It may be a deletion.
	Record *event.Record `json:"record,omitempty"`
	// Inferred is set when that record is an inferred deletion ("absent
	// from relist"): the object was deleted between Inferred.From and
	// Inferred.To.
	Inferred *event.InferredDeletion `json:"inferred,omitempty"`
	// Covered is true when at least one stream that records the object's
	// resource and namespace is covered at At, so Exists is certain.
	Covered bool `json:"covered"`
	// Coverage holds the coverage at At of every stream that records the
	// object's resource in its namespace (or in all namespaces), covered
	// streams first, then by stream ID. It carries each stream's watermark
	// and the gaps that break coverage at At.
	Coverage []Coverage `json:"coverage,omitempty"`
	// NearbyGaps are, for each of those streams, the last gap or loss of
	// availability recorded at or before At and the first recorded after
	// it, oldest first.
	NearbyGaps []event.Record `json:"nearbyGaps,omitempty"`
	// ExcludedByRule says why the journal does not know the object at At
	// although a stream records its resource: that stream records only
	// the objects its recording rule matches (event.Stream.Rule), and the
	// object was not one of them at At. Coverage says whether the stream
	// was also not continuous at At. Empty when the answer is known
	// (Covered), or no stream with a rule records the resource.
	ExcludedByRule string `json:"excludedByRule,omitempty"`
	// Warnings are human-readable notes about the answer.
	Warnings []string `json:"warnings,omitempty"`
}

// ObjectAt returns obj's last version at or before at — none after a
// deletion, real or inferred — with the coverage of at.
//
// When several streams record the object, its newest record across them
// decides (they observe the same object), except that a deletion inferred
// by the baseline coverage rests on counts from that baseline's end.
func (m *Materializer) ObjectAt(ctx context.Context, obj storage.ObjectID, at time.Time) (*ObjectState, error) {
	if obj.ClusterID == "" || obj.Resource == "" || obj.Name == "" {
		return nil, fmt.Errorf("materialize: %w: object %+v needs a cluster, a resource and a name", ErrInvalidArgument, obj)
	}
	st := &ObjectState{ID: obj, At: at}
	// The streams' evidence is read first, then the object's record: a
	// change observed at or before a time the evidence covers was
	// appended with it or before it (a stream's records are appended in
	// the order observed), so the record read after is at least as new.
	// Read the other way round, a batch appended in between (a change
	// observed just before at, and evidence past it: what a recorder
	// appends a few milliseconds after observing them, so for at "now")
	// would make the older version look covered.
	timelines, err := m.timelinesOf(ctx, obj)
	if err != nil {
		return nil, err
	}
	rec, err := m.store.LatestAt(ctx, obj, at)
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil:
		return nil, fmt.Errorf("%s at %s: %w", describeObject(obj), at.UTC().Format(time.RFC3339Nano), err)
	default:
		st.Record = &rec
		switch {
		case rec.IsExclusion():
		case rec.WatchType == event.Deleted:
			st.Inferred = rec.Inferred
		default:
			st.Exists = true
			st.Object = rec.Object
		}
	}

	var ruled *event.Stream // a stream with a recording rule that does not know the object
	for _, tl := range timelines {
		cov, err := storage.CoverageFrom(ctx, m.store, tl.Timeline, tl.evidence, at)
		if err != nil {
			return nil, err
		}
		st.Coverage = append(st.Coverage, cov)
		before, after := tl.LossesAround(at)
		for _, loss := range []*event.Record{before, after} {
			if loss != nil {
				st.NearbyGaps = append(st.NearbyGaps, *loss)
			}
		}
		if tl.Stream.Rule() != "" {
			// Every change of an object its rule matches is recorded,
			// up to the change that leaves the rule: a stream that
			// selects by nothing else knows such an object's state.
			if ruleOnly(tl.Stream) && st.Exists && st.Record.StreamID == tl.Stream.ID() {
				st.Covered = st.Covered || cov.Covered
			} else if ruled == nil && (!st.Exists || st.Record.StreamID != tl.Stream.ID()) {
				ruled = &tl.Stream
			}
			continue
		}
		if !cov.Covered {
			continue
		}
		if tl.Stream.Selector == "" {
			st.Covered = true
		}
		// Only a version older than the baseline's end can have been
		// found absent by it.
		if st.Exists && !st.Record.ObservedAt.After(cov.BaselineEndAt) {
			pending, err := m.pendingInferredDeletions(ctx, tl.Timeline, cov, at)
			if err != nil {
				return nil, err
			}
			if pending[obj] {
				st.Exists, st.Object = false, nil
				st.Warnings = append(st.Warnings, fmt.Sprintf("absent from baseline %s of %s, which ended at %s", cov.BaselineID, cov.StreamID, cov.BaselineEndAt.UTC().Format(time.RFC3339Nano)))
			}
		}
	}
	if !st.Covered && ruled != nil {
		st.ExcludedByRule = excludedByRule(*ruled, st.Record)
	}
	sort.SliceStable(st.Coverage, func(i, j int) bool {
		if st.Coverage[i].Covered != st.Coverage[j].Covered {
			return st.Coverage[i].Covered
		}
		return st.Coverage[i].StreamID < st.Coverage[j].StreamID
	})
	sort.SliceStable(st.NearbyGaps, func(i, j int) bool { return st.NearbyGaps[i].IngestSeq < st.NearbyGaps[j].IngestSeq })
	if len(timelines) == 0 {
		st.Warnings = append(st.Warnings, fmt.Sprintf("no stream records %s", describeObject(obj)))
	}
	return st, nil
}

// resourceKey names a resource of a cluster.
type resourceKey struct{ cluster, group, resource string }

// timelinesOf returns the timelines of the streams that record obj's
// resource in its namespace (or all namespaces), as timelinesClaiming does,
// reading the evidence of those streams only. It reads the evidence of the
// streams it guesses record obj (those of obj's resource that the last
// call found, or those of the cluster's timelines), then the timelines,
// whose streams recording obj must be the ones guessed, else it starts
// over with those. The evidence is read before the timelines used, as
// storage.CoverageFrom requires.
func (m *Materializer) timelinesOf(ctx context.Context, obj storage.ObjectID) ([]claimingTimeline, error) {
	key := resourceKey{obj.ClusterID, obj.Group, obj.Resource}
	var streams []event.Stream
	v, cached := m.resourceStreams.Load(key)
	if cached {
		streams = v.([]event.Stream)
	} else {
		all, err := storage.Timelines(ctx, m.store, obj.ClusterID)
		if err != nil {
			return nil, fmt.Errorf("streams of cluster %q: %w", obj.ClusterID, err)
		}
		streams = streamsOf(all, key)
	}
	for range 3 {
		var claimed []string
		var evidence []time.Time
		for _, s := range streams {
			if !holdsResource(s, obj) {
				continue
			}
			id := s.ID()
			ev, err := storage.StreamEvidence(ctx, m.store, id)
			if err != nil {
				return nil, err
			}
			claimed, evidence = append(claimed, id), append(evidence, ev)
		}
		all, err := storage.Timelines(ctx, m.store, obj.ClusterID)
		if err != nil {
			return nil, fmt.Errorf("streams of cluster %q: %w", obj.ClusterID, err)
		}
		var out []claimingTimeline
		same := true
		for _, tl := range all {
			if !holdsResource(tl.Stream, obj) {
				continue
			}
			if i := len(out); i < len(claimed) && claimed[i] == tl.StreamID {
				out = append(out, claimingTimeline{Timeline: tl, evidence: evidence[i]})
			} else {
				same = false
				break
			}
		}
		now := streamsOf(all, key)
		if same && len(out) == len(claimed) {
			if len(now) > 0 && (!cached || !slices.Equal(now, streams)) {
				m.resourceStreams.Store(key, now)
			}
			return out, nil
		}
		// A stream that records obj began meanwhile, or the guess was
		// old.
		streams, cached = now, false
	}
	return m.timelinesClaiming(ctx, obj)
}

// streamsOf returns the streams of the timelines that record the resource
// of key.
func streamsOf(all []storage.Timeline, key resourceKey) []event.Stream {
	var out []event.Stream
	for _, tl := range all {
		if tl.Stream.ClusterID == key.cluster && tl.Stream.Group == key.group && tl.Stream.Resource == key.resource {
			out = append(out, tl.Stream)
		}
	}
	return out
}
