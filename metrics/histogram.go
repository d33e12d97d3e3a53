package metrics

import (
	"slices"
	"sync"

	"github.com/krply/krply/watch"
)

// Bucket is a histogram's cumulative count of observations at or below
// UpperBound.
type Bucket struct {
	UpperBound float64
	Count      uint64
}

// HistogramValue is a histogram sample: its buckets (cumulative, in
// increasing order, without +Inf, which is Count), the number of
// observations and their sum.
type HistogramValue struct {
	Buckets []Bucket
	Count   uint64
	Sum     float64
}

// histogram counts observations into fixed buckets. It is safe for
// concurrent use.
type histogram struct {
	mu     sync.Mutex
	bounds []float64
	counts []uint64 // per bucket, not cumulative
	count  uint64
	sum    float64
}

func newHistogram(bounds []float64) *histogram {
	return &histogram{bounds: bounds, counts: make([]uint64, len(bounds))}
}

// Observe adds one observation.
func (h *histogram) Observe(v float64) {
	i, _ := slices.BinarySearch(h.bounds, v)
	h.mu.Lock()
	defer h.mu.Unlock()
	if i < len(h.counts) {
		h.counts[i]++
	}
	h.count++
	h.sum += v
}

func (h *histogram) value() *HistogramValue {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := &HistogramValue{Buckets: make([]Bucket, len(h.bounds)), Count: h.count, Sum: h.sum}
	var cum uint64
	for i, b := range h.bounds {
		cum += h.counts[i]
		v.Buckets[i] = Bucket{UpperBound: b, Count: cum}
	}
	return v
}

// The buckets of the latency histograms, in seconds: those of an append
// and a request span a millisecond to ten seconds (Prometheus's default
// buckets), those of a baseline a tenth of a second to ten minutes.
var (
	latencyBuckets  = []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
	baselineBuckets = []float64{.1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600}
)

// Histograms are krply's latency distributions, measured where the work
// happens: the Collector's appends and baselines (give it to
// watch.WithMetrics) and the query API's requests by route (give it to
// server.WithRequestMetrics). A Handler given it (WithHistograms) serves
// them beside the gauges and counters it reads at each scrape. The zero
// value is not usable: call NewHistograms. It is safe for concurrent use.
type Histograms struct {
	appendSeconds   *histogram
	baselineSeconds *histogram

	mu       sync.Mutex
	requests map[requestKey]*histogram
}

type requestKey struct{ method, route string }

// NewHistograms returns empty Histograms.
func NewHistograms() *Histograms {
	return &Histograms{
		appendSeconds:   newHistogram(latencyBuckets),
		baselineSeconds: newHistogram(baselineBuckets),
		requests:        map[requestKey]*histogram{},
	}
}

// NewEventsCounter and the other per-stream counters and gauges of
// watch.MetricsProvider count nothing: a Handler reads them from the
// Collector's Status at each scrape.
func (hs *Histograms) NewEventsCounter(string) watch.Counter    { return nothing{} }
func (hs *Histograms) NewBytesCounter(string) watch.Counter     { return nothing{} }
func (hs *Histograms) NewGapsCounter(string) watch.Counter      { return nothing{} }
func (hs *Histograms) NewBaselinesCounter(string) watch.Counter { return nothing{} }
func (hs *Histograms) NewErrorsCounter(string) watch.Counter    { return nothing{} }
func (hs *Histograms) NewCoveredGauge(string) watch.Gauge       { return nothing{} }

// NewBatchRecords observes nothing: the records of an append are counted
// per stream.
func (hs *Histograms) NewBatchRecords() watch.Histogram { return nothing{} }

type nothing struct{}

func (nothing) Inc()            {}
func (nothing) Add(float64)     {}
func (nothing) Set(float64)     {}
func (nothing) Observe(float64) {}

// NewAppendSeconds is the histogram of the Collector's store appends
// (watch.MetricsProvider).
func (hs *Histograms) NewAppendSeconds() watch.Histogram { return hs.appendSeconds }

// NewBaselineSeconds is the histogram of the Collector's complete
// baselines (watch.BaselineMetricsProvider).
func (hs *Histograms) NewBaselineSeconds() watch.Histogram { return hs.baselineSeconds }

// NewRequestSeconds is the histogram of the query API's requests of one
// method and route (server.RequestMetricsProvider).
func (hs *Histograms) NewRequestSeconds(method, route string) watch.Histogram {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	k := requestKey{method, route}
	h, ok := hs.requests[k]
	if !ok {
		h = newHistogram(latencyBuckets)
		hs.requests[k] = h
	}
	return h
}

// families returns the histograms as metric families, requests sorted by
// route and method.
func (hs *Histograms) families() []Family {
	hs.mu.Lock()
	keys := make([]requestKey, 0, len(hs.requests))
	for k := range hs.requests {
		keys = append(keys, k)
	}
	hs.mu.Unlock()
	slices.SortFunc(keys, func(a, b requestKey) int {
		if a.route != b.route {
			return cmpString(a.route, b.route)
		}
		return cmpString(a.method, b.method)
	})
	requests := Family{Name: "krply_api_request_duration_seconds", Type: "histogram",
		Help: "Seconds the query API took to answer a request, by method and route (the change feed's route excluded: a feed lasts as long as its client)."}
	for _, k := range keys {
		hs.mu.Lock()
		h := hs.requests[k]
		hs.mu.Unlock()
		requests.Samples = append(requests.Samples, Sample{Labels: []Label{{"method", k.method}, {"route", k.route}}, Histogram: h.value()})
	}
	return []Family{
		{Name: "krply_append_duration_seconds", Type: "histogram", Help: "Seconds each append of a batch of records to the journal took, until durable.",
			Samples: []Sample{{Histogram: hs.appendSeconds.value()}}},
		{Name: "krply_relist_duration_seconds", Type: "histogram", Help: "Seconds each complete baseline of a stream took (the initial list and every relist), from its start until its end was durable.",
			Samples: []Sample{{Histogram: hs.baselineSeconds.value()}}},
		requests,
	}
}

func cmpString(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
