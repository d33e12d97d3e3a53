package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// view answers storage.Reader from a state without locking; the Store's
// methods hold the lock around it, and Compact hands it to the compaction
// planner while holding the write lock.
type view struct{ st *state }

var (
	_ storage.Reader         = view{}
	_ storage.TimelineReader = view{}
)

func (s *Store) view() view { return view{&s.st} }

func (v view) Get(_ context.Context, eventID string) (event.Record, error) {
	e, ok := v.st.byID[eventID]
	if !ok {
		return event.Record{}, fmt.Errorf("memory: get %q: %w", eventID, storage.ErrNotFound)
	}
	return *copyRecord(e, true), nil
}

func (v view) Records(_ context.Context, q storage.Query) (storage.Page, error) {
	p, err := v.st.records(q)
	if err != nil {
		return p, fmt.Errorf("memory: records: %w", err)
	}
	return p, nil
}

func (v view) StreamStatus(_ context.Context, streamID string) (storage.StreamStatus, error) {
	st, ok := v.st.status[streamID]
	if !ok {
		return storage.StreamStatus{}, fmt.Errorf("memory: stream %q: %w", streamID, storage.ErrNotFound)
	}
	return *st, nil
}

func (v view) Streams(_ context.Context, clusterID string) ([]storage.StreamStatus, error) {
	return v.st.streams(clusterID), nil
}

func (v view) Timelines(_ context.Context, clusterID string) ([]storage.Timeline, error) {
	return v.st.timelines(clusterID), nil
}

func (v view) ObjectHistory(_ context.Context, obj storage.ObjectID, q storage.HistoryQuery) ([]event.Record, error) {
	return v.st.history(obj, q), nil
}

func (v view) LatestAt(_ context.Context, obj storage.ObjectID, at time.Time) (event.Record, error) {
	e := v.st.latestAt(obj, at)
	if e == nil {
		return event.Record{}, fmt.Errorf("memory: %s/%s %s at %s: %w", obj.Group, obj.Resource, objectKey(obj), at.UTC().Format(time.RFC3339Nano), storage.ErrNotFound)
	}
	return *copyRecord(e, true), nil
}

func (v view) AliveAt(_ context.Context, q storage.AliveQuery) ([]event.Record, error) {
	return v.st.aliveAt(q), nil
}

func (v view) EventByResourceVersion(_ context.Context, obj storage.ObjectID, uid, rv string) (event.Record, error) {
	e := v.st.byResourceVersion(obj, uid, rv)
	if e == nil {
		return event.Record{}, fmt.Errorf("memory: %s/%s %s uid %q resourceVersion %q: %w", obj.Group, obj.Resource, objectKey(obj), uid, rv, storage.ErrNotFound)
	}
	return *copyRecord(e, true), nil
}

func (v view) Correlations(_ context.Context, eventIDs []string) (map[string][]event.Record, error) {
	out := map[string][]event.Record{}
	for _, id := range eventIDs {
		list := v.st.correlations[id]
		if len(list) == 0 {
			continue
		}
		recs := make([]event.Record, len(list))
		for i, e := range list {
			recs[i] = *copyRecord(e, true)
		}
		out[id] = recs
	}
	return out, nil
}

func (v view) Stats(context.Context) (storage.Stats, error) {
	return storage.Stats{
		Records:      int64(len(v.st.all)),
		Events:       v.st.events,
		Bodies:       int64(len(v.st.bodies)),
		BodyBytes:    v.st.bodyBytes,
		RawBodyBytes: v.st.bodyBytes,
	}, nil
}
