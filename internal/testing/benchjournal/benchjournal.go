// Package benchjournal is the shape of the query API benchmark's journal
// (server.BenchmarkQueryAPI), shared with the storage benchmarks that read
// the same journal: ConfigMaps in Namespaces streams of one cluster,
// Objects objects with Versions versions each.
package benchjournal

import (
	"fmt"
	"strconv"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage/storagetest"
)

// The journal's size: Objects × Versions events (1,000,000).
const (
	Namespaces = 10
	Objects    = 10_000
	Versions   = 100
)

// Start is the time of the streams' baselines; events follow it.
var Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Stream is the stream of the ConfigMaps of namespace ns-NN.
func Stream(ns int) event.Stream {
	return event.Stream{ClusterID: "bench", Version: "v1", Resource: "configmaps", Namespace: fmt.Sprintf("ns-%02d", ns)}
}

// Object is the event of version version of ConfigMap cm-NNNNN (obj) in
// its namespace's stream, observed at at.
func Object(obj, version int, at time.Time) event.Record {
	s := Stream(obj % Namespaces)
	name, rv := fmt.Sprintf("cm-%05d", obj), strconv.Itoa(1000+obj*Versions+version)
	uid := "uid-" + name
	ref := storagetest.Ref(s, "ConfigMap", s.Namespace, name, uid, rv)
	body := storagetest.ConfigMap(s.Namespace, name, uid, rv, map[string]string{"version": strconv.Itoa(version), "owner": "team-" + strconv.Itoa(obj%7)})
	return storagetest.Event(s, event.Modified, ref, body, at)
}
