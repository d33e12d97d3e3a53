package prom

import (
	"context"
	"errors"
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/krply/krply/metrics"
)

// Collector is a prometheus.Collector of krply's metrics: those a
// metrics.Handler gathers at each scrape (per stream, the journal's size,
// retention, the latency histograms, krply_build_info), with the same
// names, help texts and labels the Handler serves itself.
type Collector struct{ h *metrics.Handler }

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns the Collector of what h gathers.
func NewCollector(h *metrics.Handler) *Collector { return &Collector{h: h} }

// Register registers the Collector of what h gathers in reg: in
// controller-runtime's registry (sigs.k8s.io/controller-runtime/pkg/metrics
// Registry) to serve them on a manager's /metrics. A second registration
// in the same registry is an error (prometheus.AlreadyRegisteredError).
func Register(reg prometheus.Registerer, h *metrics.Handler) error {
	if reg == nil || h == nil {
		return errors.New("prom: Register needs a registry and a metrics.Handler")
	}
	return reg.Register(NewCollector(h))
}

// Handler returns an http.Handler serving what h gathers beside the Go
// runtime's (go_*) and the process's (process_*) metrics, from a registry
// of its own: the /metrics of a recorder that is no controller-runtime
// manager (kubectl krply record).
func Handler(h *metrics.Handler) (http.Handler, error) {
	reg := prometheus.NewRegistry()
	for _, c := range []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		NewCollector(h),
	} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{}), nil
}

// buildInfo describes krply_build_info, the one family every Handler
// gathers with the same labels: Describe sends it alone, so that a
// registry refuses a second registration, while the other families
// depend on the streams recorded (a pedantic registry would refuse
// those undescribed).
var buildInfo = prometheus.NewDesc("krply_build_info", "Always 1, labelled with the version of krply and of Go the program was built with.", []string{"version", "goversion"}, nil)

// Describe implements prometheus.Collector.
func (*Collector) Describe(ch chan<- *prometheus.Desc) { ch <- buildInfo }

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	families, err := c.h.Gather(context.Background())
	if err != nil {
		ch <- prometheus.NewInvalidMetric(prometheus.NewDesc("krply_journal_error", "krply's metrics could not be gathered.", nil, nil), err)
		return
	}
	for _, f := range families {
		for _, s := range f.Samples {
			ch <- metric(f, s)
		}
	}
}

// metric converts one sample of a family.
func metric(f metrics.Family, s metrics.Sample) prometheus.Metric {
	names := make([]string, len(s.Labels))
	values := make([]string, len(s.Labels))
	for i, l := range s.Labels {
		names[i], values[i] = l.Name, l.Value
	}
	desc := prometheus.NewDesc(f.Name, f.Help, names, nil)
	var m prometheus.Metric
	var err error
	switch {
	case s.Histogram != nil:
		buckets := make(map[float64]uint64, len(s.Histogram.Buckets))
		for _, b := range s.Histogram.Buckets {
			buckets[b.UpperBound] = b.Count
		}
		m, err = prometheus.NewConstHistogram(desc, s.Histogram.Count, s.Histogram.Sum, buckets, values...)
	case f.Type == "counter":
		m, err = prometheus.NewConstMetric(desc, prometheus.CounterValue, s.Value, values...)
	default:
		m, err = prometheus.NewConstMetric(desc, prometheus.GaugeValue, s.Value, values...)
	}
	if err != nil {
		return prometheus.NewInvalidMetric(desc, errors.Join(errors.New("krply metric "+f.Name), err))
	}
	return m
}
