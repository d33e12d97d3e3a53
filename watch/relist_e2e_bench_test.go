package watch

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/krply/krply/internal/cputime"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/storage/sqlite"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// relist150kEnv opts BenchmarkRelistVersusList into its 150,000-object
// case, whose ConfigMaps take minutes to create.
const relist150kEnv = "KRPLY_BENCH_RELIST_150K"

// BenchmarkRelistVersusList measures, on the local control plane, the
// end-to-end relist of a namespace of ConfigMaps (about 600 B of JSON
// each) into a new SQLite journal — a Collector started until its first
// baseline ended — against a bare paginated list of the same objects (the
// raw JSON pages, the Collector's page size) by the same client config in
// the same run, and reports relist/list; the apiserver's own speed is the
// limit. It also reports the CPU time of this process (the client side)
// for both, and the journal's bytes on disk per object and over the JSON
// recorded. 5,000 objects always; 150,000 when
// KRPLY_BENCH_RELIST_150K=1 (creating them takes minutes).
func BenchmarkRelistVersusList(b *testing.B) {
	sizes := []int{5_000}
	if os.Getenv(relist150kEnv) == "1" {
		sizes = append(sizes, 150_000)
	}
	env := testenv.Shared(b)
	cfg := rest.CopyConfig(env.Config())
	cfg.QPS, cfg.Burst = -1, 0    // no client-side throttling: the server is the limit
	populated := map[int]string{} // objects → namespace, kept across runs of a sub-benchmark
	for _, n := range sizes {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			ns, ok := populated[n]
			if !ok {
				ns = env.CreateNamespace(b)
				start := time.Now()
				createConfigMaps(b, cfg, ns, n)
				b.Logf("created %d ConfigMaps in %v", n, time.Since(start).Round(time.Millisecond))
				populated[n] = ns
			}
			var listTime, relistTime, listCPU, relistCPU time.Duration
			var fileBytes, jsonBytes int64
			b.ResetTimer()
			for range b.N {
				cpu0 := cputime.Process()
				lt, items := bareList(b, cfg, ns)
				if items != n {
					b.Fatalf("bare list found %d objects, want %d", items, n)
				}
				cpu1 := cputime.Process()
				rt, fb, jb := relistOnce(b, cfg, ns)
				listTime += lt
				relistTime += rt
				listCPU += cpu1 - cpu0
				relistCPU += cputime.Process() - cpu1
				fileBytes, jsonBytes = fb, jb
			}
			b.StopTimer()
			// The CPU of this process (the client side; the apiserver is
			// another), steadier than wall time on a shared machine.
			b.ReportMetric(listCPU.Seconds()/float64(b.N), "list-cpu-s")
			b.ReportMetric(relistCPU.Seconds()/float64(b.N), "relist-cpu-s")
			b.ReportMetric(listTime.Seconds()/float64(b.N), "list-s")
			b.ReportMetric(relistTime.Seconds()/float64(b.N), "relist-s")
			b.ReportMetric(relistTime.Seconds()/listTime.Seconds(), "relist/list")
			b.ReportMetric(float64(fileBytes)/float64(n), "disk-B/object")
			b.ReportMetric(float64(jsonBytes)/float64(n), "json-B/object")
			b.ReportMetric(float64(fileBytes)/float64(jsonBytes), "disk/json")
		})
	}
}

// createConfigMaps creates n ConfigMaps in ns with concurrent requests.
func createConfigMaps(b *testing.B, cfg *rest.Config, ns string, n int) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				cm := &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%06d", i), Namespace: ns,
						Labels: map[string]string{"app": "shop", "tier": "backend", "shard": strconv.Itoa(i % 16)}},
					Data: map[string]string{
						"LOG_LEVEL":       "info",
						"REPLICA_ID":      strconv.Itoa(i),
						"application.yml": fmt.Sprintf("server:\n  port: %d\n  name: cm-%06d\ncache:\n  size: %d\n", 8000+i%1000, i, 64<<(i%4)),
					},
				}
				if _, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("create %s: %w", cm.Name, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
}

// bareList lists the ConfigMaps of ns as raw JSON pages of the Collector's
// page size, reading of each page only its continue token and item count,
// and returns how long that took and how many items it saw.
func bareList(b *testing.B, cfg *rest.Config, ns string) (time.Duration, int) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	start := time.Now()
	items, cont := 0, ""
	for {
		req := cs.CoreV1().RESTClient().Get().Namespace(ns).Resource("configmaps").
			Param("limit", strconv.Itoa(DefaultPageSize))
		if cont != "" {
			req = req.Param("continue", cont)
		}
		raw, err := req.DoRaw(ctx)
		if err != nil {
			b.Fatal(err)
		}
		var page struct {
			Metadata struct {
				Continue string `json:"continue"`
			} `json:"metadata"`
			Items []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(raw, &page); err != nil {
			b.Fatal(err)
		}
		items += len(page.Items)
		if cont = page.Metadata.Continue; cont == "" {
			return time.Since(start), items
		}
	}
}

// relistOnce records the ConfigMaps of ns into a new journal until the
// first baseline ended and returns how long that took, the journal's size
// once closed and the JSON bytes of the bodies it holds.
func relistOnce(b *testing.B, cfg *rest.Config, ns string) (time.Duration, int64, int64) {
	dir := b.TempDir()
	path := filepath.Join(dir, "journal.db")
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		b.Fatal(err)
	}
	c, err := NewCollectorForConfig(cfg, st, WithClusterID("bench"), WithResources("cm"), WithNamespaces(ns),
		WithWatchList(WatchListOff), WithLogger(logr.Discard()), WithRediscoveryInterval(0))
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	stop := runUntil(b, c, func(s StreamStatus) bool { return s.Baselines == 1 })
	elapsed := time.Since(start)
	stop()
	stats, err := st.Stats(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	if err := st.Close(); err != nil {
		b.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	return elapsed, fi.Size(), stats.RawBodyBytes
}
