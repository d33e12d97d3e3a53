package main

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/krply/krply/metrics"
)

// promMetrics is a prometheus.Collector of krply's metrics: those of the
// krply/metrics package (per stream, labelled by cluster, group, version,
// resource and namespace; the journal's size), the same names and labels
// the recorder serves without the Prometheus client, gathered at each
// scrape.
type promMetrics struct{ h *metrics.Handler }

// NewPrometheusMetrics registers krply's metrics, as the handler h gathers
// them, in reg.
func NewPrometheusMetrics(reg prometheus.Registerer, h *metrics.Handler) error {
	return reg.Register(promMetrics{h})
}

// Describe sends the description of krply_synced only, so that the
// registry refuses a second registration; the other metrics depend on the
// streams. (A pedantic registry would refuse the undescribed ones.)
func (promMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- prometheus.NewDesc("krply_synced", "1 while every stream records (Collector.Synced).", nil, nil)
}

// Collect implements prometheus.Collector.
func (m promMetrics) Collect(ch chan<- prometheus.Metric) {
	families, err := m.h.Gather(context.Background())
	if err != nil {
		ch <- prometheus.NewInvalidMetric(prometheus.NewDesc("krply_journal_error", "krply's metrics could not be gathered.", nil, nil), err)
		return
	}
	for _, f := range families {
		typ := prometheus.GaugeValue
		if f.Type == "counter" {
			typ = prometheus.CounterValue
		}
		for _, s := range f.Samples {
			names := make([]string, len(s.Labels))
			values := make([]string, len(s.Labels))
			for i, l := range s.Labels {
				names[i], values[i] = l.Name, l.Value
			}
			metric, err := prometheus.NewConstMetric(prometheus.NewDesc(f.Name, f.Help, names, nil), typ, s.Value, values...)
			if err != nil {
				metric = prometheus.NewInvalidMetric(prometheus.NewDesc(f.Name, f.Help, names, nil), errors.Join(errors.New("krply metric"), err))
			}
			ch <- metric
		}
	}
}
