package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"runtime"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/metrics"
	"github.com/krply/krply/retention"
	"github.com/krply/krply/watch"
)

var sampleLine = regexp.MustCompile(`^[a-z_]+(\{([a-z_]+="(\\.|[^"\\])*",?)*\})? -?[0-9.e+-]+$`)

// scrape returns the body of a GET of h, failing on a malformed line.
func scrape(t *testing.T, h http.Handler) string {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != metrics.ContentType {
		t.Fatalf("GET /metrics = %d %q: %s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(body), "\n"), "\n") {
		if !strings.HasPrefix(line, "# HELP ") && !strings.HasPrefix(line, "# TYPE ") && !sampleLine.MatchString(line) {
			t.Errorf("malformed line %q", line)
		}
	}
	return string(body)
}

// The metrics of a recording Collector, its journal and its retention, with
// source cluster, resource and namespace as separate labels.
func TestHandler(t *testing.T) {
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"namespace": "shop", "name": "web", "uid": "u1"}, "data": map[string]any{"k": "v"}}}
	c := krplytest.NewCluster(t, krplytest.WithObjects(cm), krplytest.WithResources("cm"), krplytest.WithClusterID("c1"))
	k, err := retention.New(c.Store, retention.WithMaxAge(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := k.Enforce(context.Background()); err != nil {
		t.Fatal(err)
	}
	h := metrics.NewHandler(metrics.WithCollector(c.Collector), metrics.WithStore(c.Store), metrics.WithRetention(k))
	body := scrape(t, h)
	labels := `{source_cluster="c1",group="",version="v1",resource="configmaps",namespace=""}`
	for _, want := range []string{
		"# TYPE krply_stream_events_total counter",
		"krply_stream_events_total" + labels + " 1\n",
		"krply_stream_baselines_total" + labels + " 1\n",
		"krply_stream_relists_total" + labels + " 0\n",
		"krply_stream_gaps" + labels + " 0\n",
		"krply_stream_covered" + labels + " 1\n",
		"krply_stream_recording" + labels + " 1\n",
		"krply_stream_last_record_timestamp_seconds" + labels + " 1.",
		"krply_stream_lag_seconds" + labels + " ",
		"krply_synced 1\n",
		"krply_journal_records ",
		"krply_retention_runs_total 1\n",
		"krply_retention_pressure 0\n",
		"krply_retention_cut_timestamp_seconds 0\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
	families, err := h.Gather(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.Name == "krply_stream_events_total" {
			if len(f.Samples) != 1 || f.Samples[0].Value != 1 || f.Type != "counter" || len(f.Samples[0].Labels) != 5 || f.Samples[0].Labels[3] != (metrics.Label{Name: "resource", Value: "configmaps"}) {
				t.Errorf("Gather: %+v", f)
			}
		}
	}
	if strings.Contains(body, "krply_disk_free_bytes") {
		t.Errorf("disk free reported without a reserve:\n%s", body)
	}

	// Only GET and HEAD.
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Post(srv.URL, "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("POST = %d", resp.StatusCode)
	}
}

// Label values are escaped.
func TestEscaping(t *testing.T) {
	c := krplytest.NewCluster(t, krplytest.WithResources("cm"), krplytest.WithClusterID("a\"b\\c\nd"))
	body := scrape(t, metrics.NewHandler(metrics.WithCollector(c.Collector)))
	if !strings.Contains(body, `source_cluster="a\"b\\c\nd"`) {
		t.Fatalf("cluster label not escaped:\n%s", body)
	}
}

// The histograms of a Collector's appends and baselines and of the query
// API's requests are served as Prometheus histograms: cumulative buckets
// up to +Inf, sum and count; krply_build_info says the version.
func TestHistograms(t *testing.T) {
	hs := metrics.NewHistograms()
	c := krplytest.NewCluster(t, krplytest.WithResources("cm"), krplytest.WithCollectorOptions(watch.WithMetrics(hs)))
	hs.NewRequestSeconds("GET", "/api/v1/object").Observe(0.003)
	hs.NewRequestSeconds("GET", "/api/v1/object").Observe(0.2)
	hs.NewRequestSeconds("GET", "/api/v1/diff").Observe(20)
	body := scrape(t, metrics.NewHandler(metrics.WithCollector(c.Collector), metrics.WithHistograms(hs)))
	for _, want := range []string{
		"# TYPE krply_api_request_duration_seconds histogram\n",
		`krply_api_request_duration_seconds_bucket{method="GET",route="/api/v1/object",le="0.0025"} 0` + "\n",
		`krply_api_request_duration_seconds_bucket{method="GET",route="/api/v1/object",le="0.005"} 1` + "\n",
		`krply_api_request_duration_seconds_bucket{method="GET",route="/api/v1/object",le="0.25"} 2` + "\n",
		`krply_api_request_duration_seconds_bucket{method="GET",route="/api/v1/object",le="+Inf"} 2` + "\n",
		`krply_api_request_duration_seconds_sum{method="GET",route="/api/v1/object"} 0.203` + "\n",
		`krply_api_request_duration_seconds_count{method="GET",route="/api/v1/object"} 2` + "\n",
		`krply_api_request_duration_seconds_bucket{method="GET",route="/api/v1/diff",le="10"} 0` + "\n",
		`krply_api_request_duration_seconds_bucket{method="GET",route="/api/v1/diff",le="+Inf"} 1` + "\n",
		// The Collector's initial list: one baseline, at least one append.
		"# TYPE krply_relist_duration_seconds histogram\n",
		"krply_relist_duration_seconds_count 1\n",
		"# TYPE krply_append_duration_seconds histogram\n",
		`krply_build_info{version="(devel)",goversion="` + runtime.Version() + `"} 1` + "\n",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %q:\n%s", want, body)
		}
	}
	if strings.Contains(body, "krply_append_duration_seconds_count 0\n") {
		t.Errorf("no append observed:\n%s", body)
	}
	// diff sorts before object.
	if strings.Index(body, `route="/api/v1/diff"`) > strings.Index(body, `route="/api/v1/object"`) {
		t.Errorf("request histograms not in route order:\n%s", body)
	}
}
