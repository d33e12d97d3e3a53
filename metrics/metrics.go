package metrics

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"

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

// WithStore reports the size of the journal r (a Stats query per scrape).
func WithStore(r storage.Reader) Option { return optionFunc(func(h *Handler) { h.store = r }) }

// Handler serves the metrics at every path and method GET or HEAD.
type Handler struct {
	collector *watch.Collector
	keeper    *retention.Keeper
	store     storage.Reader
	now       func() time.Time
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

// Write writes the metrics in the text exposition format. It fails only
// when the journal's Stats fail.
func (h *Handler) Write(ctx context.Context, out *strings.Builder) error {
	w := &writer{b: bufio.NewWriter(out)}
	if h.collector != nil {
		h.streams(w)
	}
	if h.store != nil {
		st, err := h.store.Stats(ctx)
		if err != nil {
			return fmt.Errorf("metrics: journal size: %w", err)
		}
		w.family("krply_journal_file_bytes", "gauge", "Size of the journal's files.")
		w.sample("krply_journal_file_bytes", nil, float64(st.FileBytes))
		w.family("krply_journal_used_bytes", "gauge", "Bytes the journal's data takes (without freed pages and the write-ahead log); retention by size bounds it.")
		w.sample("krply_journal_used_bytes", nil, float64(st.UsedBytes))
		w.family("krply_journal_records", "gauge", "Records in the journal.")
		w.sample("krply_journal_records", nil, float64(st.Records))
	}
	if h.keeper != nil {
		h.retention(w)
	}
	return w.b.Flush()
}

// streams writes the per-stream metrics and krply_synced.
func (h *Handler) streams(w *writer) {
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
	for _, f := range families {
		w.family(f.name, f.typ, f.help)
		for _, st := range statuses {
			if st.StreamID == "" { // a resource not served yet
				continue
			}
			if v, ok := f.value(st); ok {
				w.sample(f.name, streamLabels(st), v)
			}
		}
	}
	w.family("krply_synced", "gauge", "1 while every stream records (Collector.Synced).")
	w.sample("krply_synced", nil, gauge(h.collector.Synced() == nil))
}

func (h *Handler) retention(w *writer) {
	st := h.keeper.Status()
	for _, m := range []struct {
		name, typ, help string
		value           float64
	}{
		{"krply_retention_runs_total", "counter", "Retention runs.", float64(st.Runs)},
		{"krply_retention_compactions_total", "counter", "Retention runs that compacted the journal.", float64(st.Compactions)},
		{"krply_retention_failures_total", "counter", "Retention runs that failed.", float64(st.Failures)},
		{"krply_retention_records_removed_total", "counter", "Records compaction removed.", float64(st.RecordsRemoved)},
		{"krply_retention_cut_timestamp_seconds", "gauge", "Where the history kept begins, in seconds since the epoch (0 before the first compaction).", seconds(st.Cut)},
		{"krply_retention_pressure", "gauge", "1 while the journal is over its maximum size with nothing left to cut, the disk is below its reserve, or the last run failed.", gauge(st.Pressure != "" || st.LastError != "")},
	} {
		w.family(m.name, m.typ, m.help)
		w.sample(m.name, nil, m.value)
	}
	if st.DiskFreeBytes >= 0 {
		w.family("krply_disk_free_bytes", "gauge", "Bytes available on the journal's file system.")
		w.sample("krply_disk_free_bytes", nil, float64(st.DiskFreeBytes))
	}
}

func streamLabels(st watch.StreamStatus) [][2]string {
	return [][2]string{{"cluster", st.Stream.ClusterID}, {"group", st.Stream.Group}, {"version", st.Stream.Version},
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

// writer writes the text exposition format.
type writer struct{ b *bufio.Writer }

func (w *writer) family(name, typ, help string) {
	fmt.Fprintf(w.b, "# HELP %s %s\n# TYPE %s %s\n", name, strings.NewReplacer(`\`, `\\`, "\n", `\n`).Replace(help), name, typ)
}

var labelEscaper = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`)

func (w *writer) sample(name string, labels [][2]string, v float64) {
	w.b.WriteString(name)
	if len(labels) > 0 {
		w.b.WriteByte('{')
		for i, l := range labels {
			if i > 0 {
				w.b.WriteByte(',')
			}
			fmt.Fprintf(w.b, `%s="%s"`, l[0], labelEscaper.Replace(l[1]))
		}
		w.b.WriteByte('}')
	}
	fmt.Fprintf(w.b, " %g\n", v)
}
