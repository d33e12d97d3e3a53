package soak

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/krply/krply"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/storage"
)

const (
	maxSize     = 4 << 20
	configMaps  = 50
	changeEvery = 100 * time.Millisecond
	sampleEvery = 10 * time.Second
	// walBound bounds the write-ahead log: storage/sqlite checkpoints it
	// from 1,000 pages beside the writer and, once it holds 3,000, makes
	// the writer start it over; with the pages written until then, about
	// 16 MiB at most (TestLogStartsOver).
	walBound = 20 << 20
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "krply-soak-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := testenv.RunMain(m)
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// duration is how long the workload runs: KRPLY_SOAK_DURATION, 30s by
// default.
func duration(t *testing.T) time.Duration {
	d := 30 * time.Second
	if v := os.Getenv("KRPLY_SOAK_DURATION"); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d <= 0 {
			t.Fatalf("KRPLY_SOAK_DURATION=%q: want a positive duration such as 10m", v)
		}
	}
	return d
}

// sample is one measurement.
type sample struct {
	at                time.Duration
	rss, used, files  int64
	gaps, compactions float64
	changes           int
	ready             bool
}

func TestSoak(t *testing.T) {
	d := duration(t)
	env := testenv.Start(t)
	dir := t.TempDir()
	bin := buildRecorder(t)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	store := filepath.Join(dir, "krply.db")
	logPath := filepath.Join(dir, "record.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	rec := exec.Command(bin, "record", "--kubeconfig", env.Kubeconfig(), "--journal", store, "--all-resources",
		"--max-size", strconv.Itoa(maxSize), "--min-age", "1m", "--retention-every", "10s",
		"--metrics-addr", addr, "--status-every", "0")
	rec.Stdout, rec.Stderr = logFile, logFile
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- rec.Wait() }()
	defer func() {
		_ = rec.Process.Kill()
		if t.Failed() {
			b, _ := os.ReadFile(logPath)
			t.Logf("recorder log (last 4 KiB):\n%s", tail(b, 4096))
		}
	}()
	base := "http://" + addr
	deadline := time.Now().Add(time.Minute)
	for !ready(base) {
		if time.Now().After(deadline) {
			t.Fatal("the recorder is not ready after a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}

	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	ns := env.CreateNamespace(t)
	ctx, cancel := context.WithTimeout(context.Background(), d+2*time.Minute)
	defer cancel()
	cms := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)
	deploys := dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace(ns)
	rng := rand.New(rand.NewPCG(7, 11))
	blob := func() string {
		b := make([]byte, 512)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return fmt.Sprintf("%x", b)
	}
	for i := range configMaps {
		cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": fmt.Sprintf("cm-%02d", i)}, "data": map[string]any{"blob": blob()}}}
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	start := time.Now()
	var samples []sample
	changes := 0
	lastValue := map[string]string{}
	tick := time.NewTicker(changeEvery)
	defer tick.Stop()
	nextSample := start.Add(sampleEvery)
	for time.Since(start) < d {
		select {
		case err := <-exited:
			t.Fatalf("the recorder exited: %v", err)
		case <-tick.C:
		}
		name := fmt.Sprintf("cm-%02d", rng.IntN(configMaps))
		value := blob()
		patch := fmt.Sprintf(`{"data":{"blob":%q}}`, value)
		if _, err := cms.Patch(ctx, name, "application/merge-patch+json", []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		lastValue[name] = value
		changes++
		if changes%50 == 0 { // a Deployment every 5s, deleted 5s later
			dep := fmt.Sprintf("web-%d", changes/50)
			if _, err := deploys.Create(ctx, deployment(dep), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if changes >= 100 {
				if err := deploys.Delete(ctx, fmt.Sprintf("web-%d", changes/50-1), metav1.DeleteOptions{}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if time.Now().After(nextSample) {
			nextSample = nextSample.Add(sampleEvery)
			samples = append(samples, measure(t, base, rec.Process.Pid, store, time.Since(start), changes))
		}
	}
	samples = append(samples, measure(t, base, rec.Process.Pid, store, time.Since(start), changes))

	// Every last value is in the journal, recorded by the recorder still
	// running (a read-only open beside it).
	j, err := krply.Open(ctx, store, krply.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	waitUntil := time.Now().Add(30 * time.Second)
	for name, value := range lastValue {
		for {
			state, err := j.ObjectAt(ctx, storage.ObjectID{ClusterID: clusterOf(t, j), Resource: "configmaps", Namespace: ns, Name: name}, time.Now())
			if err == nil && strings.Contains(string(state.Object), value) {
				break
			}
			if time.Now().After(waitUntil) {
				t.Fatalf("%s: the last change is not in the journal (%v)", name, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	report(t, d, samples)
}

// report logs the samples and checks the bounds of the package doc.
func report(t *testing.T, d time.Duration, samples []sample) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "soak of %s, %d samples (load %s):\n   at     RSS MiB  used MiB  files MiB  changes  gaps  compactions  ready\n", d, len(samples), loadavg())
	var firstPeak, secondPeak int64
	compacted := false
	for i, s := range samples {
		fmt.Fprintf(&b, "%5.0fs  %8.1f  %8.2f  %9.2f  %7d  %4.0f  %11.0f  %v\n", s.at.Seconds(), mib(s.rss), mib(s.used), mib(s.files), s.changes, s.gaps, s.compactions, s.ready)
		if i < len(samples)/2 {
			firstPeak = max(firstPeak, s.rss)
		} else {
			secondPeak = max(secondPeak, s.rss)
		}
		if s.gaps != 0 {
			t.Errorf("at %s: %v gaps", s.at, s.gaps)
		}
		if !s.ready {
			t.Errorf("at %s: the recorder is not ready", s.at)
		}
		if compacted && s.used > maxSize*3/2 {
			t.Errorf("at %s: the journal's data takes %d bytes, more than 1.5× --max-size once retention compacted", s.at, s.used)
		}
		if s.files > 2*maxSize+walBound {
			t.Errorf("at %s: the journal's files take %d bytes, more than 2× --max-size and the write-ahead log", s.at, s.files)
		}
		compacted = compacted || s.compactions > 0
	}
	t.Log(b.String())
	if len(samples) >= 4 && secondPeak > firstPeak*5/4+16<<20 {
		t.Errorf("RSS grew: peak %.1f MiB in the first half, %.1f MiB in the second", mib(firstPeak), mib(secondPeak))
	}
	if d >= 5*time.Minute && !compacted {
		t.Errorf("retention never compacted in %s", d)
	}
}

func measure(t *testing.T, base string, pid int, store string, at time.Duration, changes int) sample {
	t.Helper()
	s := sample{at: at, changes: changes, rss: rss(t, pid), ready: ready(base)}
	for _, suffix := range []string{"", "-wal"} {
		if fi, err := os.Stat(store + suffix); err == nil {
			s.files += fi.Size()
		}
	}
	body := get(t, base+"/metrics")
	for _, line := range strings.Split(body, "\n") {
		name, value, ok := cutSample(line)
		if !ok {
			continue
		}
		switch {
		case name == "krply_journal_used_bytes":
			s.used = int64(value)
		case name == "krply_retention_compactions_total":
			s.compactions = value
		case strings.HasPrefix(name, "krply_stream_gaps{"):
			s.gaps += value
		}
	}
	return s
}

func cutSample(line string) (string, float64, bool) {
	if strings.HasPrefix(line, "#") {
		return "", 0, false
	}
	i := strings.LastIndexByte(line, ' ')
	if i < 0 {
		return "", 0, false
	}
	v, err := strconv.ParseFloat(line[i+1:], 64)
	return line[:i], v, err == nil
}

func rss(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatalf("RSS: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("RSS: %q", rest)
			}
			return kb << 10
		}
	}
	t.Fatal("RSS: no VmRSS")
	return 0
}

func ready(base string) bool {
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(base + "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func deployment(name string) *unstructured.Unstructured {
	labels := map[string]any{"app": name}
	return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": labels},
			"template": map[string]any{"metadata": map[string]any{"labels": labels},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "web", "image": "nginx:1.27"}}}}}}}
}

func clusterOf(t *testing.T, j *krply.Journal) string {
	t.Helper()
	streams, err := j.Store().Streams(context.Background(), "")
	if err != nil || len(streams) == 0 {
		t.Fatalf("streams: %v", err)
	}
	return streams[0].Stream.ClusterID
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	return strings.Join(f[:3], " ")
}
