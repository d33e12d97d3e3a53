package metrics

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/krply/krply/internal/buildinfo"
	"github.com/krply/krply/retention"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/watch"
)

// ContentType is the media type of the text exposition format.
const ContentType = "text/plain; version=0.0.4; charset=utf-8"

// Option says what a Handler reports.
type Option interface{ apply(*Handler) }

type optionFunc func(*Handler)

func (f optionFunc) apply(h *Handler) { f(h) }

// WithCollector reports the streams of c.
func WithCollector(c *watch.Collector) Option {
	return optionFunc(func(h *Handler) { h.collector = c })
}

// WithRetention reports the runs of k.
func WithRetention(k *retention.Keeper) Option { return optionFunc(func(h *Handler) { h.keeper = k }) }

// WithHistograms reports the latency distributions hs measures (give hs
// to the Collector, watch.WithMetrics, and to the query API,
// server.WithRequestMetrics, too).
func WithHistograms(hs *Histograms) Option {
	return optionFunc(func(h *Handler) { h.histograms = hs })
}

// WithStore reports the size of the journal r (a Stats query per scrape).
func WithStore(r storage.Reader) Option { return optionFunc(func(h *Handler) { h.store = r }) }

// Handler serves the metrics at every path and method GET or HEAD.
type Handler struct {
	collector  *watch.Collector
	keeper     *retention.Keeper
	store      storage.Reader
	histograms *Histograms
	now        func() time.Time
}

// NewHandler returns a Handler reporting what the options name.
func NewHandler(opts ...Option) *Handler {
	h := &Handler{now: time.Now}
	for _, o := range opts {
		if o != nil {
			o.apply(h)
		}
	}
	return h
}

// ServeHTTP implements http.Handler.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "metrics: method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var b strings.Builder
	if err := h.Write(r.Context(), &b); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", ContentType)
	_, _ = w.Write([]byte(b.String()))
}

// Family is one metric: its name, type ("counter", "gauge" or
// "histogram"), help text and samples. Gather returns them for a Prometheus client library's
// collector; ServeHTTP writes them as text.
type Family struct {
	Name, Type, Help string
	Samples          []Sample
}

// Sample is one value of a Family, with its labels in order: Value for a
// counter or a gauge, Histogram for a histogram.
type Sample struct {
	Labels    []Label
	Value     float64
	Histogram *HistogramValue
}

// Label is a label's name and value.
type Label struct{ Name, Value string }

// Gather returns the metrics now. It fails only when the journal's Stats
// fail.
func (h *Handler) Gather(ctx context.Context) ([]Family, error) {
	out := []Family{buildInfo()}
	if h.collector != nil {
		out = append(out, h.streams()...)
	}
	if h.store != nil {
		st, err := h.store.Stats(ctx)
		if err != nil {
			return nil, fmt.Errorf("metrics: journal size: %w", err)
		}
		out = append(out,
			single("krply_journal_file_bytes", "gauge", "Size of the journal's files.", float64(st.FileBytes)),
			single("krply_journal_used_bytes", "gauge", "Bytes the journal's data takes (without freed pages and the write-ahead log); retention by size bounds it.", float64(st.UsedBytes)),
			single("krply_journal_records", "gauge", "Records in the journal.", float64(st.Records)))
	}
	if h.keeper != nil {
		out = append(out, h.retention()...)
	}
	if h.histograms != nil {
		out = append(out, h.histograms.families()...)
	}
	return out, nil
}

// Write writes the metrics in the text exposition format. It fails only
// when the journal's Stats fail.
func (h *Handler) Write(ctx context.Context, out *strings.Builder) error {
	families, err := h.Gather(ctx)
	if err != nil {
		return err
	}
	help := strings.NewReplacer(`\`, `\\`, "\n", `\n`)
	for _, f := range families {
		fmt.Fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", f.Name, help.Replace(f.Help), f.Name, f.Type)
		for _, smp := range f.Samples {
			if smp.Histogram == nil {
				writeSample(out, f.Name, smp.Labels, smp.Value)
				continue
			}
			for _, b := range smp.Histogram.Buckets {
				writeSample(out, f.Name+"_bucket", append(smp.Labels[:len(smp.Labels):len(smp.Labels)], Label{"le", strconv.FormatFloat(b.UpperBound, 'g', -1, 64)}), float64(b.Count))
			}
			writeSample(out, f.Name+"_bucket", append(smp.Labels[:len(smp.Labels):len(smp.Labels)], Label{"le", "+Inf"}), float64(smp.Histogram.Count))
			writeSample(out, f.Name+"_sum", smp.Labels, smp.Histogram.Sum)
			writeSample(out, f.Name+"_count", smp.Labels, float64(smp.Histogram.Count))
		}
	}
	return nil
}

// writeSample writes one sample line.
func writeSample(out *strings.Builder, name string, labels []Label, v float64) {
	out.WriteString(name)
	if len(labels) > 0 {
		out.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				out.WriteByte(',')
			}
			fmt.Fprintf(out, `%s="%s"`, l.Name, labelEscaper.Replace(l.Value))
		}
		out.WriteByte('}')
	}
	fmt.Fprintf(out, " %g\n", v)
}

// buildInfo is krply_build_info: 1, labelled with the krply module's
// version and the Go version the program was built with, in the manner of
// Prometheus's own build_info metrics.
func buildInfo() Family {
	return Family{Name: "krply_build_info", Type: "gauge", Help: "Always 1, labelled with the version of krply and of Go the program was built with.",
		Samples: []Sample{{Labels: []Label{{"version", buildinfo.Version()}, {"goversion", runtime.Version()}}, Value: 1}}}
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

// single is a family of one sample without labels.
func single(name, typ, help string, v float64) Family {
	return Family{Name: name, Type: typ, Help: help, Samples: []Sample{{Value: v}}}
}

// streams returns the per-stream metrics and krply_synced.
func (h *Handler) streams() []Family {
	statuses := h.collector.Status()
	now := h.now()
	type family struct {
		name, typ, help string
		value           func(watch.StreamStatus) (float64, bool)
	}
	families := []family{
		{"krply_stream_events_total", "counter", "Object-change records made durable since start.", func(s watch.StreamStatus) (float64, bool) { return float64(s.Events), true }},
		{"krply_stream_bytes_total", "counter", "Object body bytes made durable since start.", func(s watch.StreamStatus) (float64, bool) { return float64(s.Bytes), true }},
		{"krply_stream_baselines_total", "counter", "Complete baselines (lists) taken since start.", func(s watch.StreamStatus) (float64, bool) { return float64(s.Baselines), true }},
		{"krply_stream_relists_total", "counter", "Baselines taken over an earlier history (after a gap or an outage) since start.", func(s watch.StreamStatus) (float64, bool) { return float64(s.Relists), true }},
		{"krply_stream_gaps", "gauge", "Gap records of the stream in the journal: continuity lost, changes may be missing.", func(s watch.StreamStatus) (float64, bool) { return float64(s.Gaps), true }},
		{"krply_stream_covered", "gauge", "1 while the journal is continuous for the stream.", func(s watch.StreamStatus) (float64, bool) { return gauge(s.Covered), true }},
		{"krply_stream_recording", "gauge", "1 while the stream is synced and watching.", func(s watch.StreamStatus) (float64, bool) {
			return gauge(s.Synced && s.State == watch.StateWatching), true
		}},
		{"krply_stream_last_record_timestamp_seconds", "gauge", "When the stream's last durable evidence (event, bookmark, progress checkpoint, baseline end) was observed, in seconds since the epoch.", func(s watch.StreamStatus) (float64, bool) {
			return seconds(s.LastDurableAt), !s.LastDurableAt.IsZero()
		}},
		{"krply_stream_lag_seconds", "gauge", "Seconds since the stream's last durable evidence, at the scrape.", func(s watch.StreamStatus) (float64, bool) {
			return now.Sub(s.LastDurableAt).Seconds(), !s.LastDurableAt.IsZero()
		}},
	}
	var out []Family
	for _, f := range families {
		fam := Family{Name: f.name, Type: f.typ, Help: f.help}
		for _, st := range statuses {
			if st.StreamID == "" { // a resource not served yet
				continue
			}
			if v, ok := f.value(st); ok {
				fam.Samples = append(fam.Samples, Sample{Labels: streamLabels(st), Value: v})
			}
		}
		out = append(out, fam)
	}
	return append(out, single("krply_synced", "gauge", "1 while every stream records (Collector.Synced).", gauge(h.collector.Synced() == nil)))
}

func (h *Handler) retention() []Family {
	st := h.keeper.Status()
	out := []Family{
		single("krply_retention_runs_total", "counter", "Retention runs.", float64(st.Runs)),
		single("krply_retention_compactions_total", "counter", "Retention runs that compacted the journal.", float64(st.Compactions)),
		single("krply_retention_failures_total", "counter", "Retention runs that failed.", float64(st.Failures)),
		single("krply_retention_records_removed_total", "counter", "Records compaction removed.", float64(st.RecordsRemoved)),
		single("krply_retention_cut_timestamp_seconds", "gauge", "Where the history kept begins, in seconds since the epoch (0 before the first compaction).", seconds(st.Cut)),
		single("krply_retention_pressure", "gauge", "1 while the journal is over its maximum size with nothing left to cut, the disk is below its reserve, or the last run failed.", gauge(st.Pressure != "" || st.LastError != "")),
	}
	if st.DiskFreeBytes >= 0 {
		out = append(out, single("krply_disk_free_bytes", "gauge", "Bytes available on the journal's file system.", float64(st.DiskFreeBytes)))
	}
	return out
}

func streamLabels(st watch.StreamStatus) []Label {
	return []Label{{"source_cluster", st.Stream.ClusterID}, {"group", st.Stream.Group}, {"version", st.Stream.Version},
		{"resource", st.Stream.Resource}, {"namespace", st.Stream.Namespace}}
}

func gauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func seconds(t time.Time) float64 {
	if t.IsZero() {
		return 0
	}
	return float64(t.UnixNano()) / 1e9
}
