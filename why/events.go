package why

import (
	"context"
	"sort"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// eventStreams returns the streams that record Events in the namespaces.
func eventStreams(streams []storage.StreamStatus, namespaces map[string]bool) []storage.StreamStatus {
	var out []storage.StreamStatus
	for _, st := range streams {
		s := st.Stream
		if s.Resource != "events" || (s.Group != "" && s.Group != "events.k8s.io") || s.Selector != "" {
			continue
		}
		if s.Namespace == "" || namespaces[s.Namespace] {
			out = append(out, st)
		}
	}
	return out
}

// eventKey names an Event object.
type eventKey struct{ namespace, name string }

// events returns the Events in [from, to] about the graph's nodes, the
// latest version of each Event object, in time order.
func (e *Explainer) events(ctx context.Context, streams []storage.StreamStatus, namespaces map[string]bool, nodes map[storage.ObjectID]*gnode, cluster string, from, to time.Time) ([]KubeEvent, error) {
	latest := map[eventKey]event.Record{}
	for _, st := range streams {
		q := storage.Query{StreamID: st.StreamID, Types: []event.RecordType{event.TypeEvent}, Since: from, Until: to, WithoutBodies: true}
		for {
			page, err := e.store.Records(ctx, q)
			if err != nil {
				return nil, err
			}
			for _, rec := range page.Records {
				if !namespaces[rec.Resource.Namespace] {
					continue
				}
				k := eventKey{rec.Resource.Namespace, rec.Resource.Name}
				if old, ok := latest[k]; ok && old.StreamID != rec.StreamID {
					continue // the same Event recorded by both APIs
				}
				latest[k] = rec
			}
			if page.Next == "" {
				break
			}
			q.Cursor = page.Next
		}
	}
	var out []KubeEvent
	for _, rec := range latest {
		if rec.WatchType == event.Deleted {
			continue
		}
		full, err := e.store.Get(ctx, rec.EventID)
		if err != nil {
			return nil, err
		}
		body, err := decode(full.Object)
		if err != nil {
			continue
		}
		ke, ok := kubeEvent(cluster, rec, body)
		if !ok {
			continue
		}
		if _, inGraph := nodes[ke.Regarding]; inGraph {
			out = append(out, ke)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].LastSeen.Equal(out[j].LastSeen) {
			return out[i].LastSeen.Before(out[j].LastSeen)
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// kubeEvent reads a core/v1 or events.k8s.io/v1 Event.
func kubeEvent(cluster string, rec event.Record, body map[string]any) (KubeEvent, bool) {
	ke := KubeEvent{Name: rec.Resource.Name, ObservedAt: rec.ObservedAt, Type: str(body, "type"), Reason: str(body, "reason")}
	var about map[string]any
	if rec.Resource.Group == "events.k8s.io" {
		ke.API = "events.k8s.io/v1"
		about, _ = body["regarding"].(map[string]any)
		ke.Message = str(body, "note")
		ke.FirstSeen = timeOf(str(body, "deprecatedFirstTimestamp"), str(body, "eventTime"))
		ke.LastSeen = timeOf(str(body, "series", "lastObservedTime"), str(body, "deprecatedLastTimestamp"), str(body, "eventTime"))
		ke.Count = countOf(get(body, "series", "count"), get(body, "deprecatedCount"))
	} else {
		ke.API = "core/v1"
		about, _ = body["involvedObject"].(map[string]any)
		ke.Message = str(body, "message")
		ke.FirstSeen = timeOf(str(body, "firstTimestamp"), str(body, "eventTime"))
		ke.LastSeen = timeOf(str(body, "lastTimestamp"), str(body, "series", "lastObservedTime"), str(body, "eventTime"))
		ke.Count = countOf(get(body, "count"), get(body, "series", "count"))
	}
	if about == nil || str(about, "kind") == "" {
		return ke, false
	}
	ke.Regarding = idOf(cluster, str(about, "apiVersion"), str(about, "kind"), str(about, "namespace"), str(about, "name"))
	if ke.LastSeen.IsZero() {
		ke.LastSeen = rec.ObservedAt
	}
	return ke, true
}

// timeOf parses the first RFC 3339 time that parses.
func timeOf(values ...string) time.Time {
	for _, v := range values {
		if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
			return t
		}
	}
	return time.Time{}
}

// countOf returns the first count given.
func countOf(values ...any) int64 {
	for _, v := range values {
		if f, ok := v.(float64); ok && f > 0 {
			return int64(f)
		}
	}
	return 0
}
