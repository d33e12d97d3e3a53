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

// ObjectState is one object at one time, with how far that answer can be
// trusted.
type ObjectState struct {
	// ID names the object; At is the time asked about.
	ID storage.ObjectID
	At time.Time
	// Exists is true when the object's last version at or before At is not
	// a deletion (real or inferred).
	Exists bool
	// Object is that version's body as received; nil when !Exists.
	Object json.RawMessage
	// Record is the object's last change record at or before At, across
	// streams; nil when the journal has none. It may be a deletion.
	Record *event.Record
	// Inferred is set when that record is an inferred deletion ("absent
	// from relist"): the object was deleted between Inferred.From and
	// Inferred.To.
	Inferred *event.InferredDeletion
	// Covered is true when at least one stream that records the object's
	// resource and namespace is covered at At, so Exists is certain.
	Covered bool
	// Coverage holds the coverage at At of every stream that records the
	// object's resource in its namespace (or in all namespaces), covered
	// streams first, then by stream ID. It carries each stream's watermark
	// and the gaps that break coverage at At.
	Coverage []Coverage
	// NearbyGaps are, for each of those streams, the last gap or loss of
	// availability recorded at or before At and the first recorded after
	// it, oldest first.
	NearbyGaps []event.Record
	// Warnings are human-readable notes about the answer.
	Warnings []string
}

// ObjectAt returns obj's last version at or before at — none after a
// deletion, real or inferred — with the coverage of at.
//
// When several streams record the object, its newest record across them
// decides (they observe the same object), except that a deletion inferred
// by the baseline coverage rests on counts from that baseline's end.
func (m *Materializer) ObjectAt(ctx context.Context, obj storage.ObjectID, at time.Time) (*ObjectState, error) {
	if obj.ClusterID == "" || obj.Resource == "" || obj.Name == "" {
		return nil, fmt.Errorf("%w: object %+v needs a cluster, a resource and a name", ErrInvalidArgument, obj)
	}
	st := &ObjectState{ID: obj, At: at}
	rec, err := m.reader.LatestAt(ctx, obj, at)
	switch {
	case errors.Is(err, storage.ErrNotFound):
	case err != nil:
		return nil, fmt.Errorf("%s at %s: %w", describeObject(obj), at.UTC().Format(time.RFC3339Nano), err)
	default:
		st.Record = &rec
		if rec.WatchType == event.Deleted {
			st.Inferred = rec.Inferred
		} else {
			st.Exists = true
			st.Object = rec.Object
		}
	}

	streams, err := m.streamsClaiming(ctx, obj)
	if err != nil {
		return nil, err
	}
	for _, s := range streams {
		cov, err := storage.CoverageAt(ctx, m.reader, s.StreamID, at)
		if err != nil {
			return nil, err
		}
		st.Coverage = append(st.Coverage, cov)
		gaps, err := m.nearbyGaps(ctx, s.StreamID, at)
		if err != nil {
			return nil, err
		}
		st.NearbyGaps = append(st.NearbyGaps, gaps...)
		if !cov.Covered {
			continue
		}
		if s.Stream.Selector == "" {
			st.Covered = true
		}
		// Only a version older than the baseline's end can have been
		// found absent by it.
		if st.Exists && !st.Record.ObservedAt.After(cov.BaselineEndAt) {
			pending, err := m.pendingInferredDeletions(ctx, cov, at)
			if err != nil {
				return nil, err
			}
			if pending[obj] {
				st.Exists, st.Object = false, nil
				st.Warnings = append(st.Warnings, fmt.Sprintf("absent from baseline %s of %s, which ended at %s", cov.BaselineID, cov.StreamID, cov.BaselineEndAt.UTC().Format(time.RFC3339Nano)))
			}
		}
	}
	sort.SliceStable(st.Coverage, func(i, j int) bool {
		if st.Coverage[i].Covered != st.Coverage[j].Covered {
			return st.Coverage[i].Covered
		}
		return st.Coverage[i].StreamID < st.Coverage[j].StreamID
	})
	sort.SliceStable(st.NearbyGaps, func(i, j int) bool { return st.NearbyGaps[i].IngestSeq < st.NearbyGaps[j].IngestSeq })
	if len(streams) == 0 {
		st.Warnings = append(st.Warnings, fmt.Sprintf("no stream records %s", describeObject(obj)))
	}
	return st, nil
}

var lossTypes = []event.RecordType{event.TypeGap, event.TypeCoverageChange}

// nearbyGaps returns the last loss record of a stream at or before at and
// the first after it.
func (m *Materializer) nearbyGaps(ctx context.Context, streamID string, at time.Time) ([]event.Record, error) {
	var out []event.Record
	before, err := m.firstLoss(ctx, storage.Query{StreamID: streamID, Types: lossTypes, Until: at, Descending: true, WithoutBodies: true})
	if err != nil {
		return nil, err
	}
	if before != nil {
		out = append(out, *before)
	}
	after, err := m.firstLoss(ctx, storage.Query{StreamID: streamID, Types: lossTypes, Since: at.Add(time.Nanosecond), WithoutBodies: true})
	if err != nil {
		return nil, err
	}
	if after != nil {
		out = append(out, *after)
	}
	return out, nil
}

// firstLoss returns the first record of q that says the stream lost
// continuity.
func (m *Materializer) firstLoss(ctx context.Context, q storage.Query) (*event.Record, error) {
	q.Limit = 64
	for {
		page, err := m.reader.Records(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("gaps of %s: %w", q.StreamID, err)
		}
		for _, rec := range page.Records {
			if _, ok := storage.LossStart(rec); ok {
				return &rec, nil
			}
		}
		if page.Next == "" {
			return nil, nil
		}
		q.Cursor = page.Next
	}
}
