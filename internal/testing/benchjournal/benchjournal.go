// Package benchjournal is the shape of the query API benchmark's journal
// (server.BenchmarkQueryAPI), shared with the storage benchmarks that read
// the same journal: ConfigMaps in Namespaces streams of one cluster,
// Objects objects with Versions versions each.
package benchjournal

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage/sqlite"
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
	body := configMap(s.Namespace, name, uid, rv, "team-"+strconv.Itoa(obj%7), strconv.Itoa(version))
	return storagetest.Event(s, event.Modified, ref, body, at)
}

// configMap returns the bytes storagetest.ConfigMap returns for the
// ConfigMap with the data owner and version (TestConfigMap), written
// straight: storagetest's maps through encoding/json cost about 100 µs of
// CPU each, which the query API benchmark's recorder would spend beside
// the requests it measures. The arguments are the journal's names and
// numbers, which JSON takes as they are.
func configMap(namespace, name, uid, rv, owner, version string) []byte {
	b := make([]byte, 0, 640)
	b = append(b, `{"apiVersion":"v1","data":{"owner":"`...)
	b = append(b, owner...)
	b = append(b, `","version":"`...)
	b = append(b, version...)
	b = append(b, `"},"kind":"ConfigMap","metadata":{"annotations":{"example.com/owner":"team-`...)
	b = append(b, name...)
	b = append(b, `"},"creationTimestamp":"2025-01-01T00:00:00Z","labels":{"app":"`...)
	b = append(b, name...)
	b = append(b, `","team":"platform"},"managedFields":[{"apiVersion":"v1","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:owner":{},"f:version":{}},"f:metadata":{"f:labels":{".":{},"f:app":{}}}},"manager":"kubectl-client-side-apply","operation":"Update","time":"2025-01-01T00:00:00Z"}],"name":"`...)
	b = append(b, name...)
	b = append(b, `","namespace":"`...)
	b = append(b, namespace...)
	b = append(b, `","resourceVersion":"`...)
	b = append(b, rv...)
	b = append(b, `","uid":"`...)
	b = append(b, uid...)
	return append(b, `"}}`...)
}

// SQLite returns the path of the benchmark journal in a SQLite file, built
// once and kept in the temporary folder between runs (the name carries the
// schema version): Objects × Versions events, a baseline per namespace at
// Start, the events a millisecond apart after it.
func SQLite(b testing.TB) string {
	path := filepath.Join(os.TempDir(), fmt.Sprintf("krply-bench-queryapi-v%d-%dx%d.db", sqlite.SchemaVersion, Objects, Versions))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	ctx := context.Background()
	tmp := path + ".building"
	os.Remove(tmp)
	s, err := sqlite.Open(ctx, tmp, sqlite.WithCacheSize(256<<10))
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	for ns := range Namespaces {
		if _, err := s.Append(ctx, storagetest.Baseline(Stream(ns), "b-"+strconv.Itoa(ns), Start, "1000", nil)); err != nil {
			b.Fatal(err)
		}
	}
	const batch = 20_000
	recs := make([]event.Record, 0, batch)
	for i := range Objects * Versions {
		recs = append(recs, Object(i%Objects, i/Objects, Start.Add(time.Duration(i+1)*time.Millisecond)))
		if len(recs) == batch {
			if _, err := s.Append(ctx, recs); err != nil {
				b.Fatal(err)
			}
			recs = recs[:0]
		}
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		b.Fatal(err)
	}
	b.Logf("built a %d-event journal in %v", Objects*Versions, time.Since(start))
	return path
}

// CopyFile copies the cached journal, so that the run's appends leave it
// as it was.
func CopyFile(b testing.TB, from, to string) {
	in, err := os.Open(from)
	if err != nil {
		b.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		b.Fatal(err)
	}
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
}
