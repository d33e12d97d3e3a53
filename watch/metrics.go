package watch

// Counter is a monotonically increasing metric. prometheus.Counter
// satisfies it.
type Counter interface {
	Inc()
	Add(float64)
}

// Gauge is a metric that goes up and down. prometheus.Gauge satisfies it.
type Gauge interface {
	Set(float64)
}

// Histogram observes a distribution. prometheus.Histogram and
// prometheus.Observer satisfy it.
type Histogram interface {
	Observe(float64)
}

// MetricsProvider makes the Collector's metrics, in the manner of
// client-go's workqueue.MetricsProvider. Per-stream metrics receive the
// stream ID, which a Prometheus provider turns into a label. Each method is
// called once per stream (or once per Collector), at Start or when a stream
// is discovered.
type MetricsProvider interface {
	// NewEventsCounter counts object-change records (real and synthetic)
	// made durable for a stream.
	NewEventsCounter(streamID string) Counter
	// NewBytesCounter counts the object body bytes made durable for a stream.
	NewBytesCounter(streamID string) Counter
	// NewGapsCounter counts the gaps recorded for a stream.
	NewGapsCounter(streamID string) Counter
	// NewBaselinesCounter counts the complete baselines taken for a stream.
	NewBaselinesCounter(streamID string) Counter
	// NewErrorsCounter counts failed list and watch calls of a stream.
	NewErrorsCounter(streamID string) Counter
	// NewCoveredGauge is 1 while a stream is covered, 0 otherwise.
	NewCoveredGauge(streamID string) Gauge
	// NewAppendSeconds observes the duration of each store Append.
	NewAppendSeconds() Histogram
	// NewBatchRecords observes the number of records of each Append.
	NewBatchRecords() Histogram
}

// BaselineMetricsProvider is a MetricsProvider that also times baselines.
// The Collector uses it when its MetricsProvider implements it, so that
// MetricsProvider's implementations keep compiling.
type BaselineMetricsProvider interface {
	// NewBaselineSeconds observes how long each complete baseline (the
	// initial list or a relist) took, from its start until its end record
	// was durable. It is called once per Collector.
	NewBaselineSeconds() Histogram
}

// baselineSeconds is p's baseline histogram, or one that observes nothing.
func baselineSeconds(p MetricsProvider) Histogram {
	if bp, ok := p.(BaselineMetricsProvider); ok {
		return bp.NewBaselineSeconds()
	}
	return noopMetric{}
}

type noopMetric struct{}

func (noopMetric) Inc()            {}
func (noopMetric) Add(float64)     {}
func (noopMetric) Set(float64)     {}
func (noopMetric) Observe(float64) {}

type noopMetrics struct{}

func (noopMetrics) NewEventsCounter(string) Counter    { return noopMetric{} }
func (noopMetrics) NewBytesCounter(string) Counter     { return noopMetric{} }
func (noopMetrics) NewGapsCounter(string) Counter      { return noopMetric{} }
func (noopMetrics) NewBaselinesCounter(string) Counter { return noopMetric{} }
func (noopMetrics) NewErrorsCounter(string) Counter    { return noopMetric{} }
func (noopMetrics) NewCoveredGauge(string) Gauge       { return noopMetric{} }
func (noopMetrics) NewAppendSeconds() Histogram        { return noopMetric{} }
func (noopMetrics) NewBatchRecords() Histogram         { return noopMetric{} }

type streamMetrics struct {
	events, bytes, gaps, baselines, errors Counter
	covered                                Gauge
}

func newStreamMetrics(p MetricsProvider, streamID string) streamMetrics {
	return streamMetrics{
		events:    p.NewEventsCounter(streamID),
		bytes:     p.NewBytesCounter(streamID),
		gaps:      p.NewGapsCounter(streamID),
		baselines: p.NewBaselinesCounter(streamID),
		errors:    p.NewErrorsCounter(streamID),
		covered:   p.NewCoveredGauge(streamID),
	}
}
