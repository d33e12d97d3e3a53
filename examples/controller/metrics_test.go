package main

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/metrics"
)

// The Collector's metrics reach Prometheus with the names and labels of
// krply/metrics.
func TestPrometheusMetrics(t *testing.T) {
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "shop", "name": "settings"}, "data": map[string]any{"k": "v"}}}
	c := krplytest.NewCluster(t, krplytest.WithResources("cm"), krplytest.WithObjects(cm), krplytest.WithClusterID("c1"))
	c.Modify("cm", "shop", "settings", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "w", "data", "k")
	})
	c.Sync()

	reg := prometheus.NewRegistry()
	if err := NewPrometheusMetrics(reg, metrics.NewHandler(metrics.WithCollector(c.Collector), metrics.WithStore(c.Store))); err != nil {
		t.Fatal(err)
	}
	labels := `{cluster="c1",group="",namespace="",resource="configmaps",version="v1"}`
	want := `
# HELP krply_stream_baselines_total Complete baselines (lists) taken since start.
# TYPE krply_stream_baselines_total counter
krply_stream_baselines_total` + labels + ` 1
# HELP krply_stream_covered 1 while the journal is continuous for the stream.
# TYPE krply_stream_covered gauge
krply_stream_covered` + labels + ` 1
# HELP krply_stream_events_total Object-change records made durable since start.
# TYPE krply_stream_events_total counter
krply_stream_events_total` + labels + ` 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "krply_stream_events_total", "krply_stream_covered", "krply_stream_baselines_total"); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg, "krply_journal_records", "krply_synced"); err != nil || n != 2 {
		t.Fatalf("journal and synced metrics: %d, %v", n, err)
	}
	// Registering twice fails instead of panicking.
	if err := NewPrometheusMetrics(reg, metrics.NewHandler()); err == nil {
		t.Error("a second registration on the same registry succeeded")
	}
}
