package recorder_test

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"

	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/krplytest/testenv/faultproxy"
	"github.com/krply/krply/recorder"
	"github.com/krply/krply/recorder/recordertest"
	"github.com/krply/krply/storage/sqlite"
)

func TestMain(m *testing.M) { os.Exit(testenv.RunMain(m)) }

var (
	regexpSynced        = regexp.MustCompile(`synced: every stream`)
	regexpStreamsFailed = regexp.MustCompile(`\[-\]streams failed: .*configmaps`)
)

// The chart's liveness probe: the kubelet declares the container dead
// after failureThreshold failed probes in a row, each failing when no
// answer comes within timeoutSeconds.
const (
	probeTimeout     = time.Second
	failureThreshold = 3
)

// oldJournal writes a journal of schema version 5 holding the format
// fixture's history and events more ConfigMap events (spread over 10,000
// objects, each with a body of its own), written with SQL in the
// version-5 layout, as a recorder of that version would have left it.
func oldJournal(t *testing.T, events int) string {
	t.Helper()
	fixture, err := os.ReadFile("../storage/sqlite/testdata/format/v5.db")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "krply.db")
	if err := os.WriteFile(path, fixture, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=synchronous(OFF)&_pragma=cache_size(-262144)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	objects := min(events, 10_000)
	n := strconv.Itoa(events - 1)
	for _, stmt := range []string{
		`BEGIN`,
		`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM n WHERE i < ` + strconv.Itoa(objects-1) + `)
		 INSERT INTO objects (id, scope, name) SELECT 1000+i, 2, printf('gen-%05d', i) FROM n`,
		`INSERT INTO stream_objects (stream, obj) SELECT 2, id FROM objects WHERE id >= 1000`,
		// Each event's body is the fixture's keyframe of a ConfigMap.
		`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM n WHERE i < ` + n + `)
		 INSERT INTO bodies (id, hash_key, hash, raw_len, base, data)
		 SELECT 1000+i, 0, randomblob(32), raw_len, NULL, data FROM n, (SELECT raw_len, data FROM bodies WHERE id = 3)`,
		`WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i+1 FROM n WHERE i < ` + n + `)
		 INSERT INTO records (seq, id_key, event_id, type, cluster, stream, observed_at, watch_type, synthetic, obj, body, target, baseline, meta)
		 SELECT 1000+i, random(), randomblob(16), 1, 1, 2, 1767225600000000000 + i*1000000, 2, 0, 1000 + i % ` + strconv.Itoa(objects) + `, 1000+i, NULL, NULL, m
		 FROM n, (SELECT meta AS m FROM records WHERE seq = 14)`,
		fmt.Sprintf(`UPDATE totals SET records = records + %[1]d, events = events + %[1]d, bodies = bodies + %[1]d,
		 body_bytes = body_bytes + %[1]d * (SELECT length(data) FROM bodies WHERE id = 3), raw_bytes = raw_bytes + %[1]d * (SELECT raw_len FROM bodies WHERE id = 3)`, events),
		`COMMIT`,
		`PRAGMA journal_mode = WAL`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	var version int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil || version != 5 {
		t.Fatalf("schema version %d, %v; want 5", version, err)
	}
	return path
}

// probe is one kind of probe's results.
type probe struct {
	mu         sync.Mutex
	ok, failed int
	// inARow and longestRun count failures in a row.
	inARow, longestRun int
	failures, bodies   []string
}

// run probes url every interval with the kubelet's timeout until ctx
// ends, counting the answers: a status of 200 to 399 within the timeout
// passes, as the kubelet's httpGet probe.
func (p *probe) run(ctx context.Context, url string, interval time.Duration) {
	client := &http.Client{Timeout: probeTimeout}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		start := time.Now()
		code, body := 0, ""
		resp, err := client.Get(url)
		if err == nil {
			b := make([]byte, 4096)
			n, _ := resp.Body.Read(b)
			resp.Body.Close()
			code, body = resp.StatusCode, string(b[:n])
		} else {
			body = err.Error()
		}
		p.mu.Lock()
		if code >= 200 && code < 400 {
			p.ok++
			p.inARow = 0
		} else if ctx.Err() == nil {
			p.failed++
			p.inARow++
			p.longestRun = max(p.longestRun, p.inARow)
			p.failures = append(p.failures, fmt.Sprintf("%s after %s: %d %s", start.Format("15:04:05.000"), time.Since(start).Round(time.Millisecond), code, body))
		}
		p.bodies = append(p.bodies, body)
		p.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

func (p *probe) counts() (ok, failed, longestRun int, failures, bodies []string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ok, p.failed, p.longestRun, append([]string(nil), p.failures...), append([]string(nil), p.bodies...)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// A recorder started on a journal of an older schema migrates it while
// probed as the kubelet probes it, only 200 times as often: /livez answers
// within the probe's timeout from the first moment, never failing three
// probes in a row, so the recorder is never declared dead
// however long the migration takes; the serving readiness check says the
// journal is migrating, with the percent, until it is open; the log
// reports the migration's progress; then the pod becomes ready and the
// migrated journal is recorded into.
//
// KRPLY_MIGRATION_EVENTS sets the journal's size (default 20,000 events,
// which migrate in seconds); make migration-soak runs it with 1,000,000.
func TestMigrationUnderProbes(t *testing.T) {
	events := 20_000
	if s := os.Getenv("KRPLY_MIGRATION_EVENTS"); s != "" {
		var err error
		if events, err = strconv.Atoi(s); err != nil || events < 1 {
			t.Fatalf("KRPLY_MIGRATION_EVENTS=%q: want a positive number of events", s)
		}
	}
	env := testenv.Shared(t)
	ns := env.CreateNamespace(t)
	built := time.Now()
	journal := oldJournal(t, events)
	st, _ := os.Stat(journal)
	t.Logf("a schema-5 journal of %d events (%d bytes) built in %s", events, st.Size(), time.Since(built).Round(time.Millisecond))

	addr := freeAddr(t)
	var logMu sync.Mutex
	var logs strings.Builder
	log := funcr.New(func(prefix, args string) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintln(&logs, prefix, args)
	}, funcr.Options{})
	var progressMu sync.Mutex
	var progress []sqlite.MigrationProgress
	started := time.Now()
	rec := recordertest.Start(t, recorder.Config{Cluster: kube(env.Config()), Journal: journal, Resources: []string{"configmaps"}, Namespaces: []string{ns},
		MetricsAddr: addr, Log: log, MigrationProgress: func(p sqlite.MigrationProgress) {
			progressMu.Lock()
			defer progressMu.Unlock()
			progress = append(progress, p)
		}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// The process answers within moments of its start, long before the
	// kubelet's third failed probe (a minute with the chart's timings).
	for code, _ := get("http://" + addr + "/livez"); code != http.StatusOK; code, _ = get("http://" + addr + "/livez") {
		if time.Since(started) > 5*time.Second {
			t.Fatalf("/livez did not answer within 5s of the start: %d\n%s", code, rec.Out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("/livez answered %s after the start", time.Since(started).Round(time.Millisecond))
	probes, stopProbes := context.WithCancel(context.Background())
	var live, ready probe
	var wg sync.WaitGroup
	for p, path := range map[*probe]string{&live: "/livez", &ready: recorder.ReadyzServing} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.run(probes, "http://"+addr+path, 100*time.Millisecond)
		}()
	}
	rec.WaitFor(ctx, regexpSynced)
	migrated := time.Since(started)
	// A few probes more once recording.
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); {
		if ok, _, _, _, _ := ready.counts(); ok > 3 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stopProbes()
	wg.Wait()
	rec.Stop(ctx)

	liveOK, liveFailed, liveRun, liveFailures, _ := live.counts()
	readyOK, readyFailed, _, _, readyBodies := ready.counts()
	t.Logf("started to synced in %s; /livez %d ok, %d failed (at most %d in a row); readiness %d ok, %d failed",
		migrated.Round(time.Millisecond), liveOK, liveFailed, liveRun, readyOK, readyFailed)
	// Probing 200 times as often as the kubelet (every 20s) and declaring
	// death after the same number of failures in a row is stricter than
	// the kubelet.
	if liveRun >= failureThreshold || liveOK == 0 {
		t.Errorf("/livez failed %d probes in a row (%d of %d): the kubelet would have killed the recorder:\n%s",
			liveRun, liveFailed, liveOK+liveFailed, strings.Join(liveFailures, "\n"))
	}
	if readyOK == 0 {
		t.Errorf("the serving readiness check never passed: %q", readyBodies)
	}
	progressMu.Lock()
	if n := len(progress); n < 2 || progress[0].Percent() != 0 || !progress[n-1].Done || progress[n-1].From != 5 {
		t.Errorf("MigrationProgress got %+v; want from 0%% to done, from schema version 5", progress)
	}
	progressMu.Unlock()
	logMu.Lock()
	logged := logs.String()
	logMu.Unlock()
	for _, want := range []string{`"msg"="migrating the journal's schema; queries and recording wait until it is done"`, `"from"=5 "to"=6`,
		`"msg"="migrated the journal's schema"`, `"percent"=100`} {
		if !strings.Contains(logged, want) {
			t.Errorf("the log lacks %s:\n%s", want, logged)
		}
	}
	if readyFailed > 0 && !strings.Contains(strings.Join(readyBodies, "\n"), "[-]journal failed: migrating the journal's schema from version 5 to 6, about ") {
		t.Errorf("readiness failed %d times without saying the journal is migrating: %q", readyFailed, readyBodies)
	}
}

// A stream denied by the server (403) degrades the recorder but leaves it
// serving: the chart's readiness probe (ReadyzServing) still passes, while
// /readyz (every check), /readyz/streams and /readyz?verbose name the
// degraded stream and the check, and the status lines show it too.
func TestDegradedStreamStaysReady(t *testing.T) {
	env := testenv.Shared(t)
	ns := env.CreateNamespace(t)
	proxy := faultproxy.Start(t, env.Config())
	addr := freeAddr(t)
	rec := recordertest.Start(t, recorder.Config{Cluster: kube(proxy.Config()), Journal: filepath.Join(t.TempDir(), "krply.db"),
		Resources: []string{"configmaps", "services"}, Namespaces: []string{ns}, MetricsAddr: addr, StatusEvery: 100 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec.WaitFor(ctx, regexpSynced)
	base := "http://" + addr
	// Every stream's watch opens just after its baseline.
	for code, body := get(base + "/readyz?verbose"); code != http.StatusOK || !strings.Contains(body, "[+]streams ok"); code, body = get(base + "/readyz?verbose") {
		select {
		case <-ctx.Done():
			t.Fatalf("/readyz?verbose once synced: %d\n%s", code, body)
		case <-time.After(20 * time.Millisecond):
		}
	}

	cms := faultproxy.Match{Resource: "configmaps"}
	proxy.FailNext(1_000_000, cms, faultproxy.Status(http.StatusForbidden))
	proxy.CutWatches(cms)
	var code int
	var verbose string
	for {
		// First the cut watch's backoff, then the server's 403.
		if code, verbose = get(base + "/readyz?verbose"); strings.Contains(verbose, "[-]streams failed") && strings.Contains(strings.ToLower(verbose), "forbidden") {
			break
		}
		select {
		case <-ctx.Done():
			t.Fatalf("/readyz?verbose never reported the denied stream: %d\n%s\n%s", code, verbose, rec.Out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
	if code != http.StatusServiceUnavailable || !strings.Contains(verbose, "configmaps") || !strings.Contains(verbose, "[+]journal ok") ||
		!strings.Contains(verbose, "readyz check failed") {
		t.Errorf("/readyz?verbose with a denied stream: %d\n%s\nwant 503 naming the streams check and configmaps, the journal ok", code, verbose)
	}
	if code, body := get(base + recorder.ReadyzServing); code != http.StatusOK || body != "ok\n" {
		t.Errorf("%s with a denied stream: %d %q; want 200 ok: the pod keeps serving answers", recorder.ReadyzServing, code, body)
	}
	if code, body := get(base + recorder.ReadyzServing + "&verbose"); code != http.StatusOK || !strings.Contains(body, "[+]streams excluded: ok") {
		t.Errorf("%s&verbose: %d\n%s", recorder.ReadyzServing, code, body)
	}
	if code, body := get(base + "/readyz/streams"); code != http.StatusServiceUnavailable || !strings.Contains(body, "configmaps") || !strings.Contains(strings.ToLower(body), "forbidden") {
		t.Errorf("/readyz/streams: %d %q; want 503 naming the denied stream", code, body)
	}
	if code, body := get(base + "/readyz/journal"); code != http.StatusOK {
		t.Errorf("/readyz/journal: %d %q", code, body)
	}
	if code, body := get(base + "/readyz/nonesuch"); code != http.StatusNotFound || !strings.Contains(body, "journal, synced, streams, retention") {
		t.Errorf("/readyz/nonesuch: %d %q; want 404 naming the checks", code, body)
	}
	if code, body := get(base + "/livez?verbose"); code != http.StatusOK || !strings.Contains(body, "[+]ping ok") {
		t.Errorf("/livez?verbose: %d %q", code, body)
	}
	rec.WaitFor(ctx, regexpStreamsFailed)
	proxy.ClearFaults()
}
