package materialize

import (
	"encoding/json"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/cputime"
	"github.com/krply/krply/storage/storagetest"
)

// benchHistoryStream is the stream of the history benchmarks' versions.
var benchHistoryStream = event.Stream{ClusterID: "bench", Version: "v1", Resource: "configmaps", Namespace: "ns-00"}

// configMapVersions returns n versions of one ConfigMap as the server's
// BenchmarkQueryAPI writes them: version v differs from the one before in
// data.version and metadata.resourceVersion.
func configMapVersions(n int) []event.Record {
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := make([]event.Record, n)
	for v := range recs {
		rv := strconv.Itoa(1000 + v)
		ref := storagetest.Ref(benchHistoryStream, "ConfigMap", "ns-00", "cm-00000", "uid-cm-00000", rv)
		body := storagetest.ConfigMap("ns-00", "cm-00000", "uid-cm-00000", rv, map[string]string{"version": strconv.Itoa(v), "owner": "team-0"})
		recs[v] = storagetest.Event(benchHistoryStream, event.Modified, ref, body, start.Add(time.Duration(v+1)*time.Second))
		recs[v].IngestSeq = int64(v + 1)
	}
	return recs
}

// deploymentVersions returns n versions of a Deployment as a rollout and
// its controller write them: each version changes the status (generation,
// replica counts, a condition's times) and the controller's managedFields
// time; every tenth changes the image, an env var and the revision
// annotation through kubectl.
func deploymentVersions(n int) []event.Record {
	s := event.Stream{ClusterID: "bench", Group: "apps", Version: "v1", Resource: "deployments", Namespace: "shop"}
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	recs := make([]event.Record, n)
	for v := range recs {
		rv := strconv.Itoa(5000 + v)
		rollout := v / 10
		at := start.Add(time.Duration(v+1) * time.Second)
		body := deploymentBody(rv, rollout, v, at)
		ref := storagetest.Ref(s, "Deployment", "shop", "web", "uid-web", rv)
		recs[v] = storagetest.Event(s, event.Modified, ref, body, at)
		recs[v].IngestSeq = int64(v + 1)
	}
	return recs
}

func deploymentBody(rv string, rollout, v int, at time.Time) []byte {
	ts := at.Format(time.RFC3339)
	applied := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rollout*10) * time.Second).Format(time.RFC3339)
	container := func(name, image string, port int) map[string]any {
		return map[string]any{
			"name": name, "image": image, "imagePullPolicy": "IfNotPresent",
			"args": []any{"--port=" + strconv.Itoa(port), "--log-level=info", "--metrics"},
			"env": []any{
				map[string]any{"name": "ROLLOUT", "value": strconv.Itoa(rollout)},
				map[string]any{"name": "POD_NAME", "valueFrom": map[string]any{"fieldRef": map[string]any{"apiVersion": "v1", "fieldPath": "metadata.name"}}},
				map[string]any{"name": "MODE", "value": "production"},
			},
			"ports":                  []any{map[string]any{"containerPort": port, "name": "http", "protocol": "TCP"}},
			"resources":              map[string]any{"limits": map[string]any{"cpu": "1", "memory": "512Mi"}, "requests": map[string]any{"cpu": "100m", "memory": "128Mi"}},
			"readinessProbe":         map[string]any{"httpGet": map[string]any{"path": "/ready", "port": port, "scheme": "HTTP"}, "periodSeconds": 10, "timeoutSeconds": 1, "successThreshold": 1, "failureThreshold": 3},
			"volumeMounts":           []any{map[string]any{"mountPath": "/etc/config", "name": "config", "readOnly": true}},
			"terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
		}
	}
	obj := map[string]any{
		"apiVersion": "apps/v1",
		"kind":       "Deployment",
		"metadata": map[string]any{
			"name": "web", "namespace": "shop", "uid": "uid-web", "resourceVersion": rv, "generation": rollout + 1,
			"creationTimestamp": "2025-01-01T00:00:00Z",
			"labels":            map[string]any{"app": "web", "tier": "frontend"},
			"annotations":       map[string]any{"deployment.kubernetes.io/revision": strconv.Itoa(rollout + 1), "example.com/team": "shop"},
			"managedFields": []any{
				map[string]any{"manager": "kubectl-client-side-apply", "operation": "Update", "apiVersion": "apps/v1", "time": applied, "fieldsType": "FieldsV1",
					"fieldsV1": map[string]any{"f:spec": map[string]any{"f:replicas": map[string]any{}, "f:template": map[string]any{"f:spec": map[string]any{"f:containers": map[string]any{
						`k:{"name":"web"}`: map[string]any{".": map[string]any{}, "f:image": map[string]any{}, "f:env": map[string]any{}}}}}}}},
				map[string]any{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "apps/v1", "time": ts, "fieldsType": "FieldsV1", "subresource": "status",
					"fieldsV1": map[string]any{"f:metadata": map[string]any{"f:annotations": map[string]any{"f:deployment.kubernetes.io/revision": map[string]any{}}},
						"f:status": map[string]any{"f:conditions": map[string]any{`k:{"type":"Available"}`: map[string]any{"f:lastUpdateTime": map[string]any{}}, `k:{"type":"Progressing"}`: map[string]any{"f:lastUpdateTime": map[string]any{}}},
							"f:observedGeneration": map[string]any{}, "f:readyReplicas": map[string]any{}, "f:replicas": map[string]any{}, "f:updatedReplicas": map[string]any{}}}},
			},
		},
		"spec": map[string]any{
			"replicas":             3,
			"revisionHistoryLimit": 10,
			"selector":             map[string]any{"matchLabels": map[string]any{"app": "web"}},
			"strategy":             map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxSurge": "25%", "maxUnavailable": "25%"}},
			"template": map[string]any{
				"metadata": map[string]any{"labels": map[string]any{"app": "web", "tier": "frontend"}, "annotations": map[string]any{"example.com/rollout": strconv.Itoa(rollout)}},
				"spec": map[string]any{
					"containers":                    []any{container("web", "shop/web:1."+strconv.Itoa(rollout), 8080), container("sidecar", "shop/proxy:2.0", 9090)},
					"volumes":                       []any{map[string]any{"name": "config", "configMap": map[string]any{"name": "web-config", "defaultMode": 420}}},
					"restartPolicy":                 "Always",
					"terminationGracePeriodSeconds": 30,
					"dnsPolicy":                     "ClusterFirst",
					"schedulerName":                 "default-scheduler",
					"securityContext":               map[string]any{},
				},
			},
		},
		"status": map[string]any{
			"observedGeneration": rollout + 1, "replicas": 3 + v%2, "readyReplicas": 3 - v%2, "updatedReplicas": 1 + v%3, "availableReplicas": 3 - v%2,
			"conditions": []any{
				map[string]any{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable", "message": "Deployment has minimum availability.",
					"lastTransitionTime": "2025-01-01T00:00:00Z", "lastUpdateTime": ts},
				map[string]any{"type": "Progressing", "status": "True", "reason": "NewReplicaSetAvailable", "message": fmt.Sprintf("ReplicaSet \"web-%d\" has successfully progressed.", rollout),
					"lastTransitionTime": "2025-01-01T00:00:00Z", "lastUpdateTime": ts},
			},
		},
	}
	b, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	return b
}

// BenchmarkHistoryVersions measures the part of a history of 100
// versions that is not the store's: comparing each version with the one
// before it, attributing the changes to field managers, and writing the
// history as JSON. It reports the process CPU per history.
func BenchmarkHistoryVersions(b *testing.B) {
	for _, c := range []struct {
		name string
		recs []event.Record
	}{
		{"configmap", configMapVersions(100)},
		{"deployment", deploymentVersions(100)},
	} {
		b.Run(c.name, func(b *testing.B) {
			_, cc, err := newHistoryConfig(nil)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			start := cputime.Process()
			for b.Loop() {
				h := &History{}
				entries := h.versions(c.recs, nil, "", nil, &cc)
				h.Entries = make([]Entry, len(entries))
				for i, e := range entries {
					h.Entries[i] = e.Entry
				}
				if _, err := h.MarshalJSON(); err != nil {
					b.Fatal(err)
				}
			}
			if start >= 0 {
				b.ReportMetric(float64((cputime.Process()-start).Microseconds())/1000/float64(b.N), "cpu-ms/op")
			}
		})
	}
}
