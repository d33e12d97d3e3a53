package watch

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/krply/krply/storage/sqlite"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// Benchmarks (figures in docs/performance.md):
//
//	go test -run '^$' -bench . -benchtime 1x ./watch/            # relist and RSS
//	go test -run '^$' -bench Pipeline -benchtime 200000x ./watch/ # throughput

func openSQLite(tb testing.TB, dir string) *sqlite.Store {
	tb.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(dir, "journal.db"))
	if err != nil {
		tb.Fatal(err)
	}
	return st
}

// synthCollector returns a Collector for srv made as users make one, with
// NewCollectorForConfig.
func synthCollector(tb testing.TB, srv *synthServer, st *sqlite.Store, opts ...Option) *Collector {
	tb.Helper()
	c, err := NewCollectorForConfig(srv.Config(), st, append([]Option{
		WithClusterID("bench"), WithResources("cm"), WithLogger(logr.Discard()), WithRediscoveryInterval(0),
	}, opts...)...)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// runUntil starts c and polls its status until done says so.
func runUntil(tb testing.TB, c *Collector, done func(StreamStatus) bool) (stop func()) {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Start(ctx) }()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		if s := c.Status(); len(s) == 1 && done(s[0]) {
			break
		}
		select {
		case err := <-errc:
			tb.Fatalf("Start returned early: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			tb.Fatalf("not done after 10 minutes: %+v", c.Status())
		}
		time.Sleep(time.Millisecond)
	}
	return func() {
		cancel()
		if err := <-errc; err != nil {
			tb.Fatal(err)
		}
	}
}

// BenchmarkPipeline measures watch events per second from a synthetic watch
// (realistic 1.7 KB ConfigMaps over HTTP) into the SQLite journal, with the
// default batching.
func BenchmarkPipeline(b *testing.B) {
	srv := newSynthServer(0, int64(b.N))
	defer srv.Close()
	st := openSQLite(b, b.TempDir())
	defer st.Close()
	c := synthCollector(b, srv, st, WithWatchList(WatchListOff))
	b.ResetTimer()
	start := time.Now()
	stop := runUntil(b, c, func(s StreamStatus) bool { return s.LastResourceVersion == srv.finalRV() })
	elapsed := time.Since(start)
	b.StopTimer()
	stop()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "events/s")
}

// BenchmarkRelist150k measures a baseline of 150,000 ConfigMaps into the
// SQLite journal, by paginated list (page 500) and by WatchList, in wall
// time and in the process's CPU time (steadier on a shared machine).
// Target: at most 15 s.
func BenchmarkRelist150k(b *testing.B) {
	const objects = 150_000
	for _, mode := range []WatchListMode{WatchListOff, WatchListOn} {
		b.Run("watchlist="+string(mode), func(b *testing.B) {
			srv := newSynthServer(objects, 0)
			defer srv.Close()
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				st := openSQLite(b, b.TempDir())
				c := synthCollector(b, srv, st, WithWatchList(mode))
				b.StartTimer()
				start := time.Now()
				cpuStart, cpuOK := processCPU()
				stop := runUntil(b, c, func(s StreamStatus) bool { return s.Baselines == 1 })
				elapsed := time.Since(start)
				cpuEnd, _ := processCPU()
				b.StopTimer()
				stop()
				_ = st.Close()
				b.ReportMetric(elapsed.Seconds(), "s/relist")
				b.ReportMetric(objects/elapsed.Seconds(), "objects/s")
				if cpuOK {
					// The whole process: the Collector, SQLite and the
					// synthetic server rendering the bodies.
					b.ReportMetric((cpuEnd - cpuStart).Seconds(), "cpu-s/relist")
				}
			}
		})
	}
}

// BenchmarkRSSVersusInformer records 150,000 ConfigMaps in a child process
// with the Collector (into SQLite) and, in another child, syncs a typed
// client-go informer over the same synthetic server, and reports the peak
// RSS of both and their ratio. Target: ratio at most 0.25.
func BenchmarkRSSVersusInformer(b *testing.B) {
	if runtime.GOOS != "linux" {
		b.Skip("reads /proc/self/status")
	}
	const objects = 150_000
	srv := newSynthServer(objects, 0)
	defer srv.Close()
	for i := 0; i < b.N; i++ {
		collector := rssChild(b, "collector", srv.srv.URL)
		informer := rssChild(b, "informer", srv.srv.URL)
		b.ReportMetric(float64(collector)/1024, "collector-MiB")
		b.ReportMetric(float64(informer)/1024, "informer-MiB")
		b.ReportMetric(float64(collector)/float64(informer), "ratio")
	}
}

const (
	rssChildEnv = "KRPLY_WATCH_RSS_CHILD"
	rssURLEnv   = "KRPLY_WATCH_RSS_URL"
)

// rssChild runs the test binary as a child in the given role and returns
// its peak RSS in KiB.
func rssChild(b *testing.B, role, url string) int64 {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^$")
	cmd.Env = append(os.Environ(), rssChildEnv+"="+role, rssURLEnv+"="+url, "TMPDIR="+b.TempDir())
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s child: %v\n%s%s", role, err, out.String(), errb.String())
	}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "KRPLY_RSS_PEAK_KB "); ok {
			kb, err := strconv.ParseInt(v, 10, 64)
			if err == nil {
				return kb
			}
		}
	}
	b.Fatalf("%s child printed no RSS:\n%s%s", role, out.String(), errb.String())
	return 0
}

// runRSSChild is the child side of BenchmarkRSSVersusInformer, run from
// TestMain when rssChildEnv is set. It returns the process exit code.
func runRSSChild(role string) int {
	cfg := &rest.Config{Host: os.Getenv(rssURLEnv), QPS: -1}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	switch role {
	case "collector":
		dir, err := os.MkdirTemp("", "rss")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		st, err := sqlite.Open(ctx, filepath.Join(dir, "journal.db"))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer st.Close()
		c, err := NewCollectorForConfig(cfg, st, WithClusterID("rss"), WithResources("cm"), WithRediscoveryInterval(0))
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		errc := make(chan error, 1)
		go func() { errc <- c.Start(ctx) }()
		if err := c.WaitForSync(ctx); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		cancel()
		if err := <-errc; err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	case "informer":
		client, err := corev1client.NewForConfig(cfg)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		lw := cache.NewListWatchFromClient(client.RESTClient(), "configmaps", "", fields.Everything())
		inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
		go inf.Run(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			fmt.Fprintln(os.Stderr, "informer did not sync")
			return 1
		}
		if n := len(inf.GetStore().ListKeys()); n == 0 {
			fmt.Fprintln(os.Stderr, "informer holds no objects")
			return 1
		}
	default:
		fmt.Fprintln(os.Stderr, "unknown role", role)
		return 2
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			fmt.Println("KRPLY_RSS_PEAK_KB", strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return 0
		}
	}
	fmt.Fprintln(os.Stderr, "no VmHWM")
	return 1
}
