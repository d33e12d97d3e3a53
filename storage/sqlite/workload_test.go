package sqlite_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/krply/krply/event"
)

// The workload of the crash test and the benchmarks: Deployments, Pods and
// ConfigMaps from testdata/bodies (2–4 KB with managedFields), each new
// version changing what a controller would change — the resourceVersion,
// the time of the last managedFields entry and one field.

// kind is one body template, split at its placeholders.
type kind struct {
	stream   event.Stream
	kindName string
	parts    [][]byte // literal parts; between them the holes below
	holes    []byte   // which value fills each hole: N, U, R, T, C
}

// Placeholders in the marshaled template.
const hole = `\u0000`

func loadKind(t testing.TB, file string, stream event.Stream, churn func(obj map[string]any)) *kind {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "testdata", "bodies", file))
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		t.Fatal(err)
	}
	meta := obj["metadata"].(map[string]any)
	meta["name"], meta["uid"], meta["resourceVersion"] = "\x00N", "\x00U", "\x00R"
	mf := meta["managedFields"].([]any)
	mf[len(mf)-1].(map[string]any)["time"] = "\x00T"
	churn(obj)
	tmpl, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	k := &kind{stream: stream, kindName: obj["kind"].(string)}
	for {
		i := bytes.Index(tmpl, []byte(hole))
		if i < 0 {
			k.parts = append(k.parts, tmpl)
			return k
		}
		k.parts = append(k.parts, tmpl[:i])
		k.holes = append(k.holes, tmpl[i+len(hole)])
		tmpl = tmpl[i+len(hole)+1:]
	}
}

// body returns version v of object name.
func (k *kind) body(name, uid, rv string, v int, at time.Time) []byte {
	out := make([]byte, 0, 4096)
	for i, h := range k.holes {
		out = append(out, k.parts[i]...)
		switch h {
		case 'N':
			out = append(out, name...)
		case 'U':
			out = append(out, uid...)
		case 'R':
			out = append(out, rv...)
		case 'T':
			out = at.UTC().AppendFormat(out, time.RFC3339)
		case 'C':
			out = strconv.AppendInt(out, int64(v), 10)
		}
	}
	return append(out, k.parts[len(k.parts)-1]...)
}

type workload struct {
	kinds []*kind
	rv    int64 // the last resourceVersion handed out
}

func newWorkload(t testing.TB) *workload {
	deploy := event.Stream{ClusterID: "bench", Group: "apps", Version: "v1", Resource: "deployments", Namespace: "shop"}
	pods := event.Stream{ClusterID: "bench", Version: "v1", Resource: "pods", Namespace: "shop"}
	cms := event.Stream{ClusterID: "bench", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	return &workload{kinds: []*kind{
		loadKind(t, "deployment.json", deploy, func(o map[string]any) {
			o["status"].(map[string]any)["observedGeneration"] = "\x00C"
		}),
		loadKind(t, "pod.json", pods, func(o map[string]any) {
			cs := o["status"].(map[string]any)["containerStatuses"].([]any)
			cs[0].(map[string]any)["restartCount"] = "\x00C"
		}),
		loadKind(t, "configmap.json", cms, func(o map[string]any) {
			o["data"].(map[string]any)["LOG_LEVEL"] = "\x00C"
		}),
	}}
}

// newEventsWorkload is a workload of Kubernetes Events (core/v1, from
// testdata/bodies/event.json, as the kubelet writes them): each new version
// raises the count and moves lastTimestamp, as the kubelet does when an
// Event repeats.
func newEventsWorkload(t testing.TB) *workload {
	events := event.Stream{ClusterID: "bench", Version: "v1", Resource: "events", Namespace: "shop"}
	return &workload{kinds: []*kind{loadKind(t, "event.json", events, func(o map[string]any) {
		o["count"], o["lastTimestamp"] = "\x00C", "\x00T"
	})}}
}

// event returns version v of object obj (ADDED for version 0, MODIFIED
// after), observed at at, with the next resourceVersion.
func (w *workload) event(obj, v int, at time.Time) event.Record {
	wt := event.Modified
	if v == 0 {
		wt = event.Added
	}
	return w.record(w.kinds[obj%len(w.kinds)], obj, v, wt, "", at)
}

// baselineItem returns the first version of object obj of kind k as an
// item of baseline baselineID, the way the Collector records a list:
// a synthetic ADDED carrying its ObjectHash.
func (w *workload) baselineItem(k *kind, obj int, baselineID string, at time.Time) event.Record {
	rec := w.record(k, obj, 0, event.Added, baselineID, at)
	rec.ObjectHash = event.ObjectHash(rec.Object)
	return rec
}

// record returns version v of object obj of kind k with the next
// resourceVersion; a baselineID makes it a synthetic baseline item.
func (w *workload) record(k *kind, obj, v int, wt event.WatchType, baselineID string, at time.Time) event.Record {
	w.rv++
	rv := strconv.FormatInt(w.rv, 10)
	name := fmt.Sprintf("%s-%06d", k.stream.Resource, obj)
	uid := fmt.Sprintf("00000000-0000-4000-8000-%012d", obj)
	ref := event.ResourceRef{Group: k.stream.Group, Version: k.stream.Version, Kind: k.kindName, Resource: k.stream.Resource,
		Namespace: k.stream.Namespace, Name: name, UID: uid, ResourceVersion: rv}
	sid := k.stream.ID()
	var extra []string
	if baselineID != "" {
		extra = append(extra, baselineID)
	}
	return event.Record{Type: event.TypeEvent, EventID: event.EventID(sid, event.TypeEvent, ref, wt, extra...), ClusterID: k.stream.ClusterID,
		StreamID: sid, ObservedAt: at, WatchType: wt, Synthetic: baselineID != "", BaselineID: baselineID,
		Resource: ref, Object: k.body(name, uid, rv, v, at)}
}
