package main

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/krply/krply/watch"
)

// PrometheusMetrics is a watch.MetricsProvider whose metrics are Prometheus
// metrics labelled by stream. Prometheus counters, gauges and histograms
// already satisfy watch.Counter, watch.Gauge and watch.Histogram.
type PrometheusMetrics struct {
	events, bytes, gaps, baselines, errors *prometheus.CounterVec
	covered                                *prometheus.GaugeVec
	appendSeconds, batchRecords            prometheus.Histogram
}

var _ watch.MetricsProvider = (*PrometheusMetrics)(nil)

// NewPrometheusMetrics makes the krply_* metrics and registers them.
func NewPrometheusMetrics(reg prometheus.Registerer) (*PrometheusMetrics, error) {
	counter := func(name, help string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: "krply_" + name, Help: help}, []string{"stream"})
	}
	m := &PrometheusMetrics{
		events:    counter("events_total", "Object-change records made durable (real and synthetic)."),
		bytes:     counter("event_bytes_total", "Object body bytes made durable."),
		gaps:      counter("gaps_total", "Gaps recorded: continuity lost, changes may be missing."),
		baselines: counter("baselines_total", "Complete baselines (lists) taken."),
		errors:    counter("watch_errors_total", "Failed list and watch calls."),
		covered: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "krply_stream_covered",
			Help: "1 while the stream's journal is continuous, 0 otherwise."}, []string{"stream"}),
		appendSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "krply_append_seconds",
			Help: "Duration of each journal append.", Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14)}),
		batchRecords: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "krply_append_records",
			Help: "Records per journal append.", Buckets: prometheus.ExponentialBuckets(1, 2, 11)}),
	}
	var errs []error
	for _, c := range []prometheus.Collector{m.events, m.bytes, m.gaps, m.baselines, m.errors, m.covered, m.appendSeconds, m.batchRecords} {
		errs = append(errs, reg.Register(c))
	}
	return m, errors.Join(errs...)
}

// NewEventsCounter implements watch.MetricsProvider.
func (m *PrometheusMetrics) NewEventsCounter(stream string) watch.Counter {
	return m.events.WithLabelValues(stream)
}

// NewBytesCounter implements watch.MetricsProvider.
func (m *PrometheusMetrics) NewBytesCounter(stream string) watch.Counter {
	return m.bytes.WithLabelValues(stream)
}

// NewGapsCounter implements watch.MetricsProvider.
func (m *PrometheusMetrics) NewGapsCounter(stream string) watch.Counter {
	return m.gaps.WithLabelValues(stream)
}

// NewBaselinesCounter implements watch.MetricsProvider.
func (m *PrometheusMetrics) NewBaselinesCounter(stream string) watch.Counter {
	return m.baselines.WithLabelValues(stream)
}

// NewErrorsCounter implements watch.MetricsProvider.
func (m *PrometheusMetrics) NewErrorsCounter(stream string) watch.Counter {
	return m.errors.WithLabelValues(stream)
}

// NewCoveredGauge implements watch.MetricsProvider.
func (m *PrometheusMetrics) NewCoveredGauge(stream string) watch.Gauge {
	return m.covered.WithLabelValues(stream)
}

// NewAppendSeconds implements watch.MetricsProvider.
func (m *PrometheusMetrics) NewAppendSeconds() watch.Histogram { return m.appendSeconds }

// NewBatchRecords implements watch.MetricsProvider.
func (m *PrometheusMetrics) NewBatchRecords() watch.Histogram { return m.batchRecords }
