package prom_test

import (
	"io"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/krply/krply/crutil/prom"
	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/metrics"
	"github.com/krply/krply/watch"
)

// The Collector's metrics reach Prometheus with the names, help texts and
// labels of krply/metrics, the histograms as Prometheus histograms.
func TestRegister(t *testing.T) {
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "shop", "name": "settings"}, "data": map[string]any{"k": "v"}}}
	hs := metrics.NewHistograms()
	c := krplytest.NewCluster(t, krplytest.WithResources("cm"), krplytest.WithObjects(cm), krplytest.WithClusterID("c1"),
		krplytest.WithCollectorOptions(watch.WithMetrics(hs)))
	c.Modify("cm", "shop", "settings", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "w", "data", "k")
	})
	c.Sync()
	hs.NewRequestSeconds("GET", "/api/v1/object").Observe(0.003)

	reg := prometheus.NewRegistry()
	h := metrics.NewHandler(metrics.WithCollector(c.Collector), metrics.WithStore(c.Store), metrics.WithHistograms(hs))
	if err := prom.Register(reg, h); err != nil {
		t.Fatal(err)
	}
	labels := `{group="",namespace="",resource="configmaps",source_cluster="c1",version="v1"}`
	want := `
# HELP krply_api_request_duration_seconds Seconds the query API took to answer a request, by method and route (the change feed's route excluded: a feed lasts as long as its client).
# TYPE krply_api_request_duration_seconds histogram
krply_api_request_duration_seconds_bucket{method="GET",route="/api/v1/object",le="0.001"} 0
krply_api_request_duration_seconds_bucket{method="GET",route="/api/v1/object",le="0.0025"} 0
krply_api_request_duration_seconds_bucket{method="GET",route="/api/v1/object",le="0.005"} 1
krply_api_request_duration_seconds_bucket{method="GET",route="/api/v1/object",le="0.01"} 1
krply_api_request_duration_seconds_bucket{method="GET",route="/api/v1/object",le="0.025"} 1
krply_api_request_duration_seconds_bucket{method="GET",route="/api/v1/object",le="0.05"} 1
krply_api_request_duration_seconds_bucket{method="GET",route="/api/v1/object",le="0.1"} 1
krply_api_request_duration_seconds_bucket{method="GET",route="/api/v1/object",le="0.25"} 1
krply_api_request_duration_seconds_bucket{method="GET",route="/api/v1/object",le="0.5"} 1
krply_api_request_duration_seconds_bucket{method="GET",route="/api/v1/object",le="1"} 1
krply_api_request_duration_seconds_bucket{method="GET",route="/api/v1/object",le="2.5"} 1
krply_api_request_duration_seconds_bucket{method="GET",route="/api/v1/object",le="5"} 1
krply_api_request_duration_seconds_bucket{method="GET",route="/api/v1/object",le="10"} 1
krply_api_request_duration_seconds_bucket{method="GET",route="/api/v1/object",le="+Inf"} 1
krply_api_request_duration_seconds_sum{method="GET",route="/api/v1/object"} 0.003
krply_api_request_duration_seconds_count{method="GET",route="/api/v1/object"} 1
# HELP krply_build_info Always 1, labelled with the version of krply and of Go the program was built with.
# TYPE krply_build_info gauge
krply_build_info{goversion="` + runtime.Version() + `",version="(devel)"} 1
# HELP krply_stream_events_total Object-change records made durable since start.
# TYPE krply_stream_events_total counter
krply_stream_events_total` + labels + ` 2
# HELP krply_stream_covered 1 while the journal is continuous for the stream.
# TYPE krply_stream_covered gauge
krply_stream_covered` + labels + ` 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "krply_stream_events_total", "krply_stream_covered", "krply_build_info", "krply_api_request_duration_seconds"); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg, "krply_journal_records", "krply_synced", "krply_relist_duration_seconds"); err != nil || n != 3 {
		t.Fatalf("journal, synced and relist metrics: %d, %v", n, err)
	}
	// Registering twice fails instead of panicking.
	if err := prom.Register(reg, metrics.NewHandler()); err == nil {
		t.Error("a second registration on the same registry succeeded")
	}
	if err := prom.Register(reg, nil); err == nil {
		t.Error("Register(reg, nil) succeeded")
	}
}

// Handler serves krply's metrics with the Go runtime's and the process's.
func TestHandler(t *testing.T) {
	h, err := prom.Handler(metrics.NewHandler())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	body := string(raw)
	for _, want := range []string{"\ngo_goroutines ", "\nprocess_cpu_seconds_total ", "\nkrply_build_info{"} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", strings.TrimSpace(want), body)
		}
	}
}
