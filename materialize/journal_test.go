package materialize_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
)

// t0 is the start of every synthetic journal.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func at(minutes float64) time.Time { return t0.Add(time.Duration(minutes * float64(time.Minute))) }

// journal writes records shaped like the Collector's output into a store.
type journal struct {
	t       testing.TB
	store   storage.Store
	cluster string
	rv      int
}

func newJournal(t testing.TB) *journal {
	t.Helper()
	s := memory.New()
	t.Cleanup(func() { _ = s.Close() })
	return newJournalIn(t, s)
}

// newJournalIn writes into store; the caller closes it.
func newJournalIn(t testing.TB, store storage.Store) *journal {
	return &journal{t: t, store: store, cluster: "c1", rv: 100}
}

func (j *journal) materializer(opts ...materialize.Option) *materialize.Materializer {
	j.t.Helper()
	m, err := materialize.New(j.store, opts...)
	if err != nil {
		j.t.Fatal(err)
	}
	return m
}

func (j *journal) stream(group, version, resource, namespace string) event.Stream {
	return event.Stream{ClusterID: j.cluster, Group: group, Version: version, Resource: resource, Namespace: namespace}
}

func (j *journal) nextRV() string {
	j.rv++
	return strconv.Itoa(j.rv)
}

func (j *journal) append(recs ...event.Record) {
	j.t.Helper()
	if _, err := j.store.Append(context.Background(), recs); err != nil {
		j.t.Fatal(err)
	}
}

// obj is an object as the API server would send it.
type obj struct {
	kind, namespace, name, uid string
	// body is the rest of the object (data, spec, status), merged in.
	body map[string]any
}

func (j *journal) ref(s event.Stream, o obj, rv string) event.ResourceRef {
	return event.ResourceRef{Group: s.Group, Version: s.Version, Kind: o.kind, Resource: s.Resource,
		Namespace: o.namespace, Name: o.name, UID: o.uid, ResourceVersion: rv}
}

// raw renders o like a watch event object: apiVersion, kind, full
// server-set metadata including managedFields.
func raw(s event.Stream, o obj, rv string) json.RawMessage {
	apiVersion := s.Version
	if s.Group != "" {
		apiVersion = s.Group + "/" + s.Version
	}
	meta := map[string]any{
		"name": o.name, "uid": o.uid, "resourceVersion": rv,
		"creationTimestamp": "2025-03-01T11:00:00Z",
		"managedFields": []any{map[string]any{"manager": "kubectl-client-side-apply", "operation": "Update",
			"apiVersion": apiVersion, "time": "2025-03-01T11:00:00Z", "fieldsType": "FieldsV1",
			"fieldsV1": map[string]any{"f:data": map[string]any{}}}},
	}
	if o.namespace != "" {
		meta["namespace"] = o.namespace
	}
	doc := map[string]any{"apiVersion": apiVersion, "kind": o.kind, "metadata": meta}
	for k, v := range o.body {
		if k == "metadata" {
			for mk, mv := range v.(map[string]any) {
				meta[mk] = mv
			}
			continue
		}
		doc[k] = v
	}
	b, err := json.Marshal(doc)
	if err != nil {
		panic(err)
	}
	return b
}

// watch records a watch event and returns it.
func (j *journal) watch(s event.Stream, wt event.WatchType, o obj, when time.Time) event.Record {
	j.t.Helper()
	rv := j.nextRV()
	ref := j.ref(s, o, rv)
	body := raw(s, o, rv)
	rec := event.Record{Type: event.TypeEvent, EventID: event.EventID(s.ID(), event.TypeEvent, ref, wt),
		ClusterID: j.cluster, StreamID: s.ID(), ObservedAt: when, WatchType: wt, Resource: ref,
		Object: body, ObjectHash: event.ObjectHash(body)}
	j.append(rec)
	return rec
}

// baseline records a complete list: begin, one synthetic ADDED per object,
// end with the list's resourceVersion.
func (j *journal) baseline(s event.Stream, id string, when time.Time, objs ...obj) {
	j.t.Helper()
	j.append(j.baselineRecords(s, id, when, true, objs...)...)
}

func (j *journal) baselineRecords(s event.Stream, id string, when time.Time, withEnd bool, objs ...obj) []event.Record {
	listRV := j.nextRV()
	recs := []event.Record{{Type: event.TypeBaseline, EventID: event.EventID(s.ID(), event.TypeBaseline, event.ResourceRef{}, "", id, "begin"),
		ClusterID: j.cluster, StreamID: s.ID(), ObservedAt: when, BaselineID: id,
		Baseline: &event.Baseline{ID: id, Phase: event.BaselineBegin, Reason: "initial"}}}
	for _, o := range objs {
		ref := j.ref(s, o, listRV)
		body := raw(s, o, listRV)
		recs = append(recs, event.Record{Type: event.TypeEvent, EventID: event.EventID(s.ID(), event.TypeEvent, ref, event.Added, id),
			ClusterID: j.cluster, StreamID: s.ID(), ObservedAt: when, WatchType: event.Added, Synthetic: true,
			Resource: ref, BaselineID: id, Object: body, ObjectHash: event.ObjectHash(body)})
	}
	if withEnd {
		recs = append(recs, event.Record{Type: event.TypeBaseline, EventID: event.EventID(s.ID(), event.TypeBaseline, event.ResourceRef{}, "", id, "end"),
			ClusterID: j.cluster, StreamID: s.ID(), ObservedAt: when, BaselineID: id,
			Baseline: &event.Baseline{ID: id, Phase: event.BaselineEnd, ResourceVersion: listRV, ItemCount: len(objs)}})
	}
	return recs
}

// gap records a gap from the stream's last durable record to detectedAt.
func (j *journal) gap(s event.Stream, from, detectedAt time.Time) {
	j.t.Helper()
	j.append(event.Record{Type: event.TypeGap, EventID: fmt.Sprintf("gap-%s-%d", s.ID(), detectedAt.UnixNano()),
		ClusterID: j.cluster, StreamID: s.ID(), ObservedAt: detectedAt,
		Gap: &event.Gap{From: from, To: detectedAt, Reason: "410 Gone: too old resource version", LastResourceVersion: strconv.Itoa(j.rv)}})
}

// progress records a progress checkpoint, as the Collector writes one while
// the stream's watch is healthy: evidence that the stream was continuous
// until when (storage.Coverage needs evidence after a time to cover it).
func (j *journal) progress(s event.Stream, when time.Time) {
	j.t.Helper()
	j.append(event.Record{Type: event.TypeCheckpoint, EventID: fmt.Sprintf("progress-%s-%d", s.ID(), when.UnixNano()),
		ClusterID: j.cluster, StreamID: s.ID(), ObservedAt: when, Checkpoint: &event.Checkpoint{ResourceVersion: strconv.Itoa(j.rv)}})
}

// unavailable records a coverage change.
func (j *journal) coverage(s event.Stream, available bool, when time.Time) {
	j.t.Helper()
	reason, code := "403 Forbidden", 403
	if available {
		reason, code = "access restored", 0
	}
	j.append(event.Record{Type: event.TypeCoverageChange, EventID: fmt.Sprintf("cov-%s-%d", s.ID(), when.UnixNano()),
		ClusterID: j.cluster, StreamID: s.ID(), ObservedAt: when, Coverage: &event.CoverageChange{Available: available, Reason: reason, Code: code}})
}

// inferredDelete records a deletion inferred by baseline id.
func (j *journal) inferredDelete(s event.Stream, o obj, lastRV string, gapFrom, relistAt time.Time, baselineID string) {
	j.t.Helper()
	ref := j.ref(s, o, lastRV)
	body := raw(s, o, lastRV)
	j.append(event.Record{Type: event.TypeEvent, EventID: event.EventID(s.ID(), event.TypeEvent, ref, event.Deleted, baselineID),
		ClusterID: j.cluster, StreamID: s.ID(), ObservedAt: relistAt, WatchType: event.Deleted, Synthetic: true,
		Resource: ref, BaselineID: baselineID, Object: body, ObjectHash: event.ObjectHash(body),
		Inferred: &event.InferredDeletion{From: gapFrom, To: relistAt, BaselineID: baselineID, Reason: "absent from relist"}})
}

// correlate records an audit correlation for a journal event.
func (j *journal) correlate(target event.Record, user, verb string, confidence float64) {
	j.t.Helper()
	j.append(event.Record{Type: event.TypeAuditCorrelation, EventID: "audit-" + target.EventID + "-" + user,
		ClusterID: j.cluster, ObservedAt: target.ObservedAt, Resource: target.Resource,
		Audit: &event.AuditCorrelation{TargetEventID: target.EventID, AuditID: "req-" + user, User: user, Verb: verb,
			UserAgent: "kubectl/v1.33.0", SourceIPs: []string{"10.0.0.7"}, RequestReceivedAt: target.ObservedAt,
			Confidence: confidence, Rule: "exact-resource-version"}})
}

func idOf(s event.Stream, name, namespace string) storage.ObjectID {
	return storage.ObjectID{ClusterID: s.ClusterID, Group: s.Group, Resource: s.Resource, Namespace: namespace, Name: name}
}

func cm(namespace, name, uid string, data map[string]any) obj {
	return obj{kind: "ConfigMap", namespace: namespace, name: name, uid: uid, body: map[string]any{"data": data}}
}

func dataOfString(raw []byte) string {
	var o struct {
		Data map[string]string `json:"data"`
	}
	if json.Unmarshal(raw, &o) != nil {
		return ""
	}
	return o.Data["v"]
}
