package watch

import (
	"encoding/base64"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/krply/krply/event"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// RedactedValue replaces the values of a recorded Secret's stringData and
// the kubectl last-applied-configuration annotation; the values of data are
// replaced by its base64 encoding, so the body stays a valid Secret.
const RedactedValue = event.RedactedValue

var redactedData = base64.StdEncoding.EncodeToString([]byte(RedactedValue))

const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// initialEventsEndAnnotation marks the bookmark that ends a WatchList's
// initial events (metav1.InitialEventsAnnotationKey).
const initialEventsEndAnnotation = "k8s.io/initial-events-end"

// redactSecret replaces secret values in place; keys are kept.
func redactSecret(u *unstructured.Unstructured) {
	for field, placeholder := range map[string]string{"data": redactedData, "stringData": RedactedValue} {
		m, ok := u.Object[field].(map[string]any)
		if !ok {
			continue
		}
		for k := range m {
			m[k] = placeholder
		}
	}
	if ann := u.GetAnnotations(); ann != nil {
		if _, ok := ann[lastAppliedAnnotation]; ok {
			ann[lastAppliedAnnotation] = RedactedValue
			u.SetAnnotations(ann)
		}
	}
}

// objectRecord makes the event record of one object (see body).
// baselineID is set for baseline items.
func (s *stream) objectRecord(obj runtime.Object, wt event.WatchType, observedAt time.Time, baselineID string) (event.Record, error) {
	raw, m, err := s.body(obj, s.redact)
	if err != nil {
		return event.Record{}, fmt.Errorf("encode %s %s/%s: %w", s.res, m.namespace, m.name, err)
	}
	ref := event.ResourceRef{
		Group:           s.res.Group,
		Version:         s.res.Version,
		Kind:            m.kind,
		Resource:        s.res.Resource,
		Namespace:       m.namespace,
		Name:            m.name,
		UID:             m.uid,
		ResourceVersion: m.resourceVersion,
	}
	var extra []string
	if baselineID != "" {
		extra = append(extra, baselineID)
	}
	if ref.ResourceVersion == "" {
		// Without a resourceVersion (some fakes) two changes of one object
		// would share an ID; the body tells them apart.
		extra = append(extra, event.ObjectHash(raw))
	}
	return event.Record{
		Type:       event.TypeEvent,
		EventID:    event.EventID(s.id, event.TypeEvent, ref, wt, extra...),
		ClusterID:  s.stream.ClusterID,
		StreamID:   s.id,
		ObservedAt: observedAt,
		WatchType:  wt,
		Synthetic:  baselineID != "",
		Resource:   ref,
		// ObjectHash is left to the store, which fills it in (every
		// store does): given, it would be hashed twice, once here and
		// once when Append checks it.
		Object:     raw,
		BaselineID: baselineID,
	}, nil
}

func (s *stream) baselineRecord(id string, phase event.BaselinePhase, reason, rv string, items int, at time.Time) event.Record {
	return event.Record{
		Type:       event.TypeBaseline,
		EventID:    event.StreamRecordID(s.id, event.TypeBaseline, event.ResourceRef{ResourceVersion: rv}, id, string(phase)),
		ClusterID:  s.stream.ClusterID,
		StreamID:   s.id,
		ObservedAt: at,
		BaselineID: id,
		Baseline:   &event.Baseline{ID: id, Phase: phase, ResourceVersion: rv, ItemCount: items, Reason: reason},
	}
}

func (s *stream) checkpointRecord(rv string, bookmark, initialEventsEnd bool, at time.Time) event.Record {
	return event.Record{
		Type:       event.TypeCheckpoint,
		EventID:    event.EventID(s.id, event.TypeCheckpoint, event.ResourceRef{ResourceVersion: rv}, event.Bookmark),
		ClusterID:  s.stream.ClusterID,
		StreamID:   s.id,
		ObservedAt: at,
		Checkpoint: &event.Checkpoint{ResourceVersion: rv, Bookmark: bookmark, InitialEventsEnd: initialEventsEnd},
	}
}

// progressRecord makes a checkpoint that repeats the stream's
// resourceVersion: evidence that the stream was continuous until at. Its
// EventID includes at, so that every one is stored.
func (s *stream) progressRecord(rv string, bookmark bool, at time.Time) event.Record {
	rec := s.checkpointRecord(rv, bookmark, false, at)
	rec.EventID = event.EventID(s.id, event.TypeCheckpoint, event.ResourceRef{ResourceVersion: rv}, "", "progress", at.UTC().Format(time.RFC3339Nano))
	return rec
}

func (s *stream) gapRecord(from, to time.Time, reason, lastRV string) event.Record {
	return event.Record{
		Type:       event.TypeGap,
		EventID:    event.StreamRecordID(s.id, event.TypeGap, event.ResourceRef{ResourceVersion: lastRV}, uuid.NewString()),
		ClusterID:  s.stream.ClusterID,
		StreamID:   s.id,
		ObservedAt: to,
		Gap:        &event.Gap{From: from, To: to, Reason: reason, LastResourceVersion: lastRV},
	}
}

func (s *stream) coverageRecord(available bool, reason string, code int, at time.Time) event.Record {
	return event.Record{
		Type:       event.TypeCoverageChange,
		EventID:    event.StreamRecordID(s.id, event.TypeCoverageChange, event.ResourceRef{}, uuid.NewString()),
		ClusterID:  s.stream.ClusterID,
		StreamID:   s.id,
		ObservedAt: at,
		Coverage:   &event.CoverageChange{Available: available, Reason: reason, Code: code},
	}
}

// inferredDeletion makes the synthetic DELETED record of an object that the
// journal believed alive but a new baseline lacks. last is the object's
// last known record, whose body the deletion carries.
func (s *stream) inferredDeletion(last event.Record, from, to time.Time, baselineID string) event.Record {
	return event.Record{
		Type:       event.TypeEvent,
		EventID:    event.EventID(s.id, event.TypeEvent, last.Resource, event.Deleted, baselineID),
		ClusterID:  s.stream.ClusterID,
		StreamID:   s.id,
		ObservedAt: to,
		WatchType:  event.Deleted,
		Synthetic:  true,
		Resource:   last.Resource,
		ObjectHash: last.ObjectHash,
		Object:     last.Object,
		BaselineID: baselineID,
		Inferred:   &event.InferredDeletion{From: from, To: to, BaselineID: baselineID, Reason: "absent from relist"},
	}
}
