package main

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/watch"
)

// The Collector's metrics reach Prometheus, labelled by stream.
func TestPrometheusMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewPrometheusMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "shop", "name": "settings"}, "data": map[string]any{"k": "v"}}}
	c := krplytest.NewCluster(t, krplytest.WithResources("cm"), krplytest.WithObjects(cm),
		krplytest.WithCollectorOptions(watch.WithMetrics(m)))
	c.Modify("cm", "shop", "settings", func(u *unstructured.Unstructured) {
		_ = unstructured.SetNestedField(u.Object, "w", "data", "k")
	})
	c.Sync()

	stream := event.Stream{ClusterID: c.ClusterID, Version: "v1", Resource: "configmaps"}.ID()
	if got := testutil.ToFloat64(m.events.WithLabelValues(stream)); got != 2 {
		t.Errorf("krply_events_total{stream=%q} = %v, want 2 (the baseline item and the update)", stream, got)
	}
	if got := testutil.ToFloat64(m.covered.WithLabelValues(stream)); got != 1 {
		t.Errorf("krply_stream_covered = %v, want 1", got)
	}
	if got := testutil.ToFloat64(m.baselines.WithLabelValues(stream)); got != 1 {
		t.Errorf("krply_baselines_total = %v, want 1", got)
	}
	if n := testutil.CollectAndCount(m.appendSeconds); n != 1 {
		t.Errorf("krply_append_seconds collects %d series, want 1", n)
	}
	// Registering twice fails instead of panicking.
	if _, err := NewPrometheusMetrics(reg); err == nil {
		t.Error("a second registration on the same registry succeeded")
	}
}
