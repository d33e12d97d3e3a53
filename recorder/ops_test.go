package recorder_test

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/recorder"
	"github.com/krply/krply/recorder/recordertest"
)

func TestFlagValues(t *testing.T) {
	var a recorder.Age
	for in, want := range map[string]time.Duration{"7d": 7 * 24 * time.Hour, "36h": 36 * time.Hour, "0": 0, "1.5d": 36 * time.Hour} {
		if err := a.Set(in); err != nil || time.Duration(a) != want {
			t.Errorf("age %q = %s, %v; want %s", in, time.Duration(a), err, want)
		}
	}
	var q recorder.Quantity
	for in, want := range map[string]int64{"4Gi": 4 << 30, "500M": 500e6, "0": 0} {
		if err := q.Set(in); err != nil || int64(q) != want {
			t.Errorf("quantity %q = %d, %v; want %d", in, q, err, want)
		}
	}
	for _, bad := range []string{"-1d", "seven days", "x"} {
		if a.Set(bad) == nil {
			t.Errorf("age %q accepted", bad)
		}
	}
	if q.Set("-1Gi") == nil || q.Set("lots") == nil {
		t.Error("a negative or malformed size was accepted")
	}
}

// get returns the status and body of a GET with the headers (name,
// value, …), code 0 when nothing answers.
func get(url string, header ...string) (int, string) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, err.Error()
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// waitReady waits up to a minute for the recorder's /readyz on addr to
// answer 200.
func waitReady(t *testing.T, rec *recordertest.Recorder, addr string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		code, body := get("http://" + addr + "/readyz")
		if code == http.StatusOK {
			return
		}
		select {
		case err := <-rec.Done():
			t.Fatalf("record returned: %v\n%s", err, rec.Out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz = %d %q after a minute\n%s", code, body, rec.Out.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// A journal named by a URL (PostgreSQL's) has no disk of the recorder's
// to watch: retention, on by default for Events, runs without checking
// one. It used to take the URL for a folder, fail every run with an error
// quoting the URL's password, and leave the recorder not ready.
func TestRetentionOfURLJournal(t *testing.T) {
	env := testenv.Start(t)
	ns := env.CreateNamespace(t)
	addr := freeAddr(t)
	file := filepath.Join(t.TempDir(), "krply.db")
	open := func(ctx context.Context, _ string, readOnly bool, opts ...krply.Option) (*krply.Journal, func() error, error) {
		return recorder.OpenFile(ctx, file, readOnly, opts...)
	}
	rec := recordertest.Start(t, recorder.Config{Cluster: kube(env.Config()), Journal: "postgres://krply:s3cret@127.0.0.1:1/krply", Open: open,
		Resources: []string{"configmaps"}, Namespaces: []string{ns}, EventsRetention: recorder.Age(7 * 24 * time.Hour),
		RetentionEvery: recorder.Age(time.Minute), MetricsAddr: addr})
	waitReady(t, rec, addr)
	code, body := get("http://" + addr + "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d", code)
	}
	for _, want := range []string{"krply_retention_runs_total 1", "krply_retention_failures_total 0", "krply_retention_pressure 0"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	if strings.Contains(body, "krply_disk_free_bytes") {
		t.Error("/metrics reports the free space of a disk for a journal named by a URL")
	}
	if out := rec.Out.String(); strings.Contains(out, "s3cret") {
		t.Errorf("the recorder's output holds the journal's password:\n%s", out)
	}
}

// The recorder in its operator's form: every resource (Events included),
// retention by age (Events' own too) and size, /healthz, /readyz (the Collector synced and retention within
// bounds) and /metrics labelled by resource, open on --metrics-addr and
// behind the token of --listen-token-file on --listen, and --version.
func TestOperatorFlags(t *testing.T) {
	env := testenv.Start(t)
	addr := freeAddr(t)
	store, tokens := filepath.Join(t.TempDir(), "krply.db"), filepath.Join(t.TempDir(), "tokens")
	if err := os.WriteFile(tokens, []byte("scraper-token\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rec := recordertest.Start(t, recorder.Config{Cluster: kube(env.Config()), Journal: store, AllResources: true, Exclude: []string{"pods"},
		Retention: recorder.Age(30 * 24 * time.Hour), EventsRetention: recorder.Age(7 * 24 * time.Hour), MaxSize: 1 << 30, MinAge: recorder.Age(time.Hour), DiskReserve: 1,
		RetentionEvery: recorder.Age(time.Minute), MetricsAddr: addr, Listen: "127.0.0.1:0", TokenFile: tokens})
	waitReady(t, rec, addr)
	if code, body := get("http://" + addr + "/healthz"); code != http.StatusOK || body != "ok\n" {
		t.Fatalf("/healthz = %d %q", code, body)
	}
	code, body := get("http://" + addr + "/metrics")
	if code != http.StatusOK {
		t.Fatalf("/metrics = %d", code)
	}
	for _, want := range []string{
		`krply_stream_recording{source_cluster="`, `,group="",version="v1",resource="configmaps",namespace=""} 1`,
		`group="apps",version="v1",resource="deployments"`, `group="",version="v1",resource="events"`, "krply_synced 1", "krply_journal_used_bytes ",
		"krply_retention_runs_total 1", "krply_retention_pressure 0", "krply_disk_free_bytes ",
		"krply_relist_duration_seconds_count ", "krply_append_duration_seconds_count ", "krply_build_info{version=",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	for _, excluded := range []string{`resource="secrets"`, `resource="pods"`, `resource="leases"`} {
		if strings.Contains(body, excluded) {
			t.Errorf("/metrics has %s, which is excluded", excluded)
		}
	}
	// On --listen, /metrics takes the API's token: refused without it or
	// with another, served with it.
	listen := rec.Serving(ctx)
	for _, header := range [][]string{nil, {"Authorization", "Bearer wrong-token"}} {
		if code, body := get(listen+"/metrics", header...); code != http.StatusUnauthorized || !strings.Contains(body, `"code":"unauthenticated"`) || strings.Contains(body, "krply_") {
			t.Errorf("--listen /metrics with %q: %d %s; want 401 unauthenticated", header, code, body)
		}
	}
	if code, body := get(listen+"/metrics", "Authorization", "Bearer scraper-token"); code != http.StatusOK || !strings.Contains(body, "krply_synced 1") ||
		!strings.Contains(body, `resource="deployments"`) {
		t.Errorf("--listen /metrics with the token: %d\n%s\nwant 200 with the recorder's metrics", code, body)
	}
	rec.Stop(ctx)
	if code, _ := get("http://" + addr + "/healthz"); code != 0 {
		t.Fatalf("/healthz answers %d after the stop", code)
	}
	j, err := krply.Open(ctx, store, krply.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	streams, err := j.Store().Streams(ctx, "")
	if err != nil || len(streams) < 30 {
		t.Fatalf("%d streams recorded (%v), want every resource", len(streams), err)
	}
}

// Version is the stamped version, else the module's with the build's.
func TestVersion(t *testing.T) {
	if v := recorder.Version("v9.8.7-test"); v != "v9.8.7-test" {
		t.Fatalf("stamped version %q", v)
	}
	if v := recorder.Version(""); !strings.HasPrefix(v, krply.Version()) {
		t.Fatalf("unstamped version %q, want it to start with %s", v, krply.Version())
	}
}

// A connection string is printed without its password.
func TestRedacted(t *testing.T) {
	for in, want := range map[string]string{
		"krply.db":                                  "krply.db",
		"/var/lib/krply/krply.db":                   "/var/lib/krply/krply.db",
		"postgres://krply:s3cret@db:5432/krply":     "postgres://krply:xxxxx@db:5432/krply",
		"postgres://krply@db/krply?sslmode=disable": "postgres://krply@db/krply?sslmode=disable",
	} {
		if got := recorder.Redacted(in); got != want {
			t.Errorf("Redacted(%q) = %q, want %q", in, got, want)
		}
	}
}
