package truth

import (
	"context"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/krplytest/testenv/faultproxy"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
)

// Settings of a run. The flags are registered in every test binary that
// imports this package (only tests do); the environment variables are for
// `make`.
var (
	seedFlag = flag.Int64("truth.seed", 0, "seed of the workload and the faults (0: a new one; also "+seedEnv+")")
	longFlag = flag.Bool("truth.long", false, "run the long form (also "+longEnv+"=1)")
	// queriesFlag lets a failure be bisected: does it need processes
	// sharing the journal?
	queriesFlag = flag.Int("truth.queries", 2, "how many processes query the journal while it is recorded")
)

const (
	seedEnv = "KRPLY_TRUTH_SEED"
	longEnv = "KRPLY_TRUTH_LONG"
)

// The sizes of the two forms.
const (
	shortOps, shortFaults = 2000, 12
	longOps, longFaults   = 10000, 24
)

// Fault kinds.
const (
	faultCut               = "cut"
	faultForced410         = "forced-410"
	faultCompaction        = "compaction+cut"
	fault403               = "403-flap"
	fault500               = "500"
	faultAPIServerRestart  = "apiserver-restart"
	faultCollectorRestart  = "collector-restart"
	faultCollectorSIGKILL  = "collector-sigkill"
	namesPerKindNamespace  = 6
	workloadNamespaces     = 3
	quiescentPointsPerForm = 8
)

var faultKinds = []string{faultCut, faultForced410, faultCompaction, fault403, fault500, faultAPIServerRestart, faultCollectorRestart, faultCollectorSIGKILL}

func settings(t testing.TB) (seed int64, ops, faults int) {
	seed = *seedFlag
	if s := os.Getenv(seedEnv); s != "" && seed == 0 {
		var err error
		if seed, err = strconv.ParseInt(s, 10, 64); err != nil {
			t.Fatalf("%s=%q: %v", seedEnv, s, err)
		}
	}
	if seed == 0 {
		seed = time.Now().UnixNano() % 1e9
	}
	long, _ := strconv.ParseBool(os.Getenv(longEnv))
	if *longFlag || long {
		return seed, longOps, longFaults
	}
	return seed, shortOps, shortFaults
}

// run is one run of the workload with faults.
type run struct {
	t          *testing.T
	backend    Backend
	ctx        context.Context
	seed       int64
	rnd        *rand.Rand
	env        *testenv.Env
	direct     *testenv.APIServer
	proxy      *faultproxy.Proxy
	oracle     *Oracle
	w          *writer
	kinds      []kind
	namespaces []string
	dir        string
	journal    string
	logFile    *os.File
	log        logr.Logger

	rec *recorder // in process, except inside a SIGKILL fault
	// stopErrors are errors of clean stops (see TestCleanStopLongAfterStart).
	stopErrors []error
	ops        int
	faults     map[string]int
	pending    chan error // an apiserver restart in progress

	// bulk is the namespace whose many ConfigMaps make a baseline long
	// enough to kill a recorder in the middle of it.
	bulk string
	// queries are the processes querying the journal while it is
	// recorded; saved is what they and the test saved into it, and
	// queried what they did.
	queries []*queryProcess
	saved   []Saved
	queried queryResult
	// waitedForProgress is how long the snapshot of now waited for every
	// stream's evidence.
	waitedForProgress time.Duration
}

// Backend is the store a run records into: where a journal is made, and
// how every process of the run opens it.
type Backend struct {
	// Name names the backend in the summary line ("sqlite", "postgres").
	Name string
	// Package is the test's package as `go test` takes it, for the hint
	// printed when a run fails ("./krplytest/truth/").
	Package string
	// NewJournal makes a new, empty journal for one run, whose files go in
	// dir, and returns its location: what Open and OpenReader take, and
	// what the recording and querying child processes are given (a file,
	// a connection string).
	NewJournal func(t testing.TB, dir string) string
	// Open opens the journal to record into it, query it and save into
	// it, in this process or a child, while other processes do the same.
	Open func(ctx context.Context, journal string) (storage.Store, error)
	// OpenReader opens the journal only to read it, while other processes
	// may write it: to watch a child's baseline, and for the check.
	OpenReader func(ctx context.Context, journal string) (storage.Store, error)
	// Keep, when not nil, copies the journal of a failed run into dir,
	// where TestRecheck finds it; nil when the journal is in dir already.
	Keep func(ctx context.Context, journal, dir string) error
}

// Result is what a run leaves its caller for checks of its own: the
// oracle, the journal opened read-only (closed when the test ends), the
// configuration of the check and its report.
type Result struct {
	Oracle *Oracle
	Store  storage.Reader
	Config Config
	Report *Report
}

// ChildMain runs this process as a child of a run when the test binary was
// re-executed as one (a recorder killed with SIGKILL, a process querying
// the journal): it returns the exit code and true; otherwise 0 and false.
// Every test binary that calls Run calls it first thing in TestMain, with
// the same Backend:
//
//	func TestMain(m *testing.M) {
//		if code, ok := truth.ChildMain(backend); ok {
//			os.Exit(code)
//		}
//		os.Exit(m.Run())
//	}
func ChildMain(b Backend) (int, bool) {
	if path := os.Getenv(childEnv); path != "" {
		return runChild(b, path), true
	}
	if path := os.Getenv(queryEnv); path != "" {
		return runQuery(b, path), true
	}
	return 0, false
}

// Run tests krply's central promise under a randomized workload with injected
// faults, on a real control plane, recorded into a journal of b: inside
// covered time nothing is lost, and every span not covered is reported as
// a gap. See Check for the rules, and the package documentation for the
// setup. It fails t on every mismatch, prints the summary line, and
// returns what the check saw.
func Run(t *testing.T, b Backend) *Result {
	seed, ops, faults := settings(t)
	if _, err := patience(); err != nil {
		t.Fatal(err)
	}
	t.Logf("seed %d (rerun with -truth.seed=%d or %s=%d)", seed, seed, seedEnv, seed)
	// The primary apiserver, which the workload writes to, keeps an audit
	// log of every write with its response.
	env := testenv.Start(t, testenv.WithAudit(""))
	// The Collector watches a second apiserver whose ConfigMaps are served
	// from etcd (no watch cache), so a compaction makes their watches
	// fail with a real 410; the other kinds come from its watch cache,
	// which a restart of that apiserver rebuilds (410 again).
	direct := env.StartAPIServer(t, "--watch-cache-sizes=configmaps#0")
	proxy := faultproxy.Start(t, direct.Config())

	dir, err := os.MkdirTemp("", "krply-truth-")
	if err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "collector.log"))
	if err != nil {
		t.Fatal(err)
	}
	// Made before the cleanup below is registered, so a journal that is
	// removed when the test ends (a database) is still there when the
	// cleanup keeps it.
	journal := b.NewJournal(t, dir)
	var r *run
	t.Cleanup(func() {
		_ = logFile.Close()
		if t.Failed() {
			if err := r.oracle.WriteFile(filepath.Join(dir, "oracle.json")); err != nil {
				t.Log(err)
			}
			if err := writeKept(filepath.Join(dir, "saved.json"), r.saved); err != nil {
				t.Log(err)
			}
			if err := writeKept(filepath.Join(dir, "answers.json"), r.queried.answers); err != nil {
				t.Log(err)
			}
			if b.Keep != nil {
				if err := b.Keep(context.Background(), r.journal, dir); err != nil {
					t.Logf("keep the journal: %v", err)
				}
			}
			t.Logf("journal, oracle and collector logs kept in %s; check them again with %s=%s go test -run TestRecheck %s", dir, RecheckEnv, dir, b.Package)
			return
		}
		_ = os.RemoveAll(dir)
	})
	r = &run{
		t: t, backend: b, ctx: context.Background(), seed: seed, rnd: rand.New(rand.NewSource(seed)),
		env: env, direct: direct, proxy: proxy, oracle: &Oracle{}, kinds: workloadKinds(),
		dir: dir, journal: journal, logFile: logFile, log: fileLogger(logFile, "collector"),
		faults: map[string]int{},
	}
	for i := 0; i < workloadNamespaces; i++ {
		r.namespaces = append(r.namespaces, env.CreateNamespace(t))
	}
	r.bulk = env.CreateNamespace(t)
	r.namespaces = append(r.namespaces, r.bulk)
	// Three users write: the oracle knows who made each version.
	if r.w, err = newWriter(r.oracle, clusterID, writerUser{testenv.UserAdmin, env.Config()},
		writerUser{testenv.UserAlice, env.ConfigFor(testenv.UserAlice)}, writerUser{testenv.UserBob, env.ConfigFor(testenv.UserBob)}); err != nil {
		t.Fatal(err)
	}
	// One object of each kind in the first namespaces before recording
	// starts, so some initial baselines hold items and some are empty
	// (see TestEmptyInitialBaselineInfersDeletions); and the bulk
	// namespace's ConfigMaps.
	for _, k := range r.kinds {
		for _, ns := range r.namespaces[:workloadNamespaces-1] {
			if _, err := r.w.create(r.ctx, k, ns, objectName(k, 0), r.rnd); err != nil {
				t.Fatal(err)
			}
			r.ops++
		}
	}
	r.createBulk()
	began := time.Now()
	r.killDuringInitialBaseline()
	r.startInProcess()
	r.startQueries()
	r.workload(ops, faults)
	r.snapshotOfNow()
	r.stopQueries()
	stopped := time.Now()
	r.stopInProcess()
	r.probe("after the last stop", stopped)
	elapsed := time.Since(began)

	ingests := r.ingestAudit()
	// Every query of the check works on a journal opened read-only.
	st, err := b.OpenReader(r.ctx, r.journal)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	cfg := r.checkConfig()
	cfg.Saved, cfg.Answers, cfg.AuditIngested = r.saved, r.queried.answers, true
	checkBegan := time.Now()
	report, err := Check(r.ctx, r.oracle, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if again := ingests[len(ingests)-1]; again.Recorded > 0 {
		report.Mismatches = append(report.Mismatches, Mismatch{Kind: KindAuditDuplicate,
			Detail: fmt.Sprintf("ingesting the audit log again stored %d more correlations (%+v)", again.Recorded, again)})
	}
	summary := fmt.Sprintf("truth (%s): seed %d, operations %d, faults %d %s, %s, gap reasons %s, %s, workload %v, check %v",
		b.Name, seed, r.ops, total(r.faults), formatCounts(r.faults), report.Summary(), gapReasons(t, st), r.queriedSummary(ingests),
		elapsed.Round(time.Second), time.Since(checkBegan).Round(time.Second))
	fmt.Println(summary)
	t.Log(summary)
	for _, err := range r.stopErrors {
		t.Errorf("a clean stop of the Collector failed (see TestCleanStopLongAfterStart): %v", err)
	}
	for _, e := range r.queried.errors {
		t.Errorf("a process querying the journal while it was recorded failed: %s", e)
	}
	if len(report.Mismatches) > 0 {
		t.Errorf("%d mismatches (seed %d):\n%s", len(report.Mismatches), seed, mismatchLines(report))
	}
	if total(r.faults) < faults {
		t.Errorf("%d faults injected, want %d", total(r.faults), faults)
	}
	if report.InsideGaps == 0 || report.Recorded == 0 {
		t.Errorf("the run proves little: %d versions recorded, %d inside gaps", report.Recorded, report.InsideGaps)
	}
	if report.UnfinishedItems == 0 || report.SavedComplete == 0 || report.SavedPlans == 0 || report.AnswersCovered == 0 || report.Attributed == 0 || report.ThroughRelist == 0 {
		t.Errorf("the seams prove little: %d items of unfinished baselines, %d saved Complete snapshots or plans, %d saved plans, %d covered ObjectAt answers, %d versions attributed, %d through a relist",
			report.UnfinishedItems, report.SavedComplete, report.SavedPlans, report.AnswersCovered, report.Attributed, report.ThroughRelist)
	}
	return &Result{Oracle: r.oracle, Store: st, Config: cfg, Report: report}
}

func (r *run) checkConfig() Config { return checkConfig(r.namespaces, r.seed) }

// scope is the scope of the workload.
func (r *run) scope() materialize.Scope {
	cfg := r.checkConfig()
	return materialize.Scope{ClusterID: clusterID, Namespaces: cfg.Namespaces, Resources: cfg.Resources}
}

func checkConfig(namespaces []string, seed int64) Config {
	cfg := Config{ClusterID: clusterID, Namespaces: namespaces, RandomTimes: 40, GapSnapshots: 40, Seed: seed}
	for _, k := range workloadKinds() {
		cfg.Resources = append(cfg.Resources, schema.GroupResource{Group: k.gvr.Group, Resource: k.gvr.Resource})
	}
	return cfg
}

// workload runs ops operations with faults spread over them and pauses at
// quiescent points.
func (r *run) workload(ops, faults int) {
	schedule := r.faultSchedule(faults)
	// Faults and quiescent points are spaced by operations made since the
	// last one, so outages (which make operations of their own) do not
	// bunch the faults together.
	spacing := ops / (len(schedule) + 1)
	quiescentEvery := ops / quiescentPointsPerForm
	nextFault, nextQuiescent := r.ops+spacing, r.ops+quiescentEvery
	for next := 0; r.ops < ops || next < len(schedule); {
		if next < len(schedule) && r.ops >= nextFault {
			r.inject(schedule[next])
			next++
			nextFault = r.ops + spacing
			continue
		}
		if r.ops >= nextQuiescent {
			r.quiesce()
			nextQuiescent = r.ops + quiescentEvery
		}
		r.op()
	}
	r.proxy.ClearFaults()
	r.waitPending()
	r.quiesce()
}

// faultSchedule returns every fault kind once, in random order, then random
// kinds up to n.
func (r *run) faultSchedule(n int) []string {
	out := append([]string(nil), faultKinds...)
	r.rnd.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	for len(out) < n {
		out = append(out, faultKinds[r.rnd.Intn(len(faultKinds))])
	}
	return out
}

// op makes one write: a create when the object does not exist (a re-create
// when it did), otherwise mostly updates and sometimes a delete.
func (r *run) op() {
	k := r.kinds[r.rnd.Intn(len(r.kinds))]
	ns := r.namespaces[r.rnd.Intn(len(r.namespaces))]
	r.opOn(k, ns, true)
}

// opOn creates, updates or (when mayDelete) deletes a random object of one
// kind in one namespace.
func (r *run) opOn(k kind, ns string, mayDelete bool) {
	name := objectName(k, r.rnd.Intn(namesPerKindNamespace))
	last, ok := r.oracle.Last(r.w.objectID(k, ns, name))
	var err error
	switch {
	case !ok || last.Op == OpDelete:
		_, err = r.w.create(r.ctx, k, ns, name, r.rnd)
	case mayDelete && r.rnd.Intn(5) == 0:
		_, err = r.w.delete(r.ctx, k, last, r.rnd)
	default:
		_, _, err = r.w.update(r.ctx, k, last, r.rnd, r.ops)
	}
	if err != nil {
		r.t.Fatalf("operation %d (seed %d): %v", r.ops, r.seed, err)
	}
	r.ops++
}

func objectName(k kind, n int) string { return fmt.Sprintf("%s-%d", strings.ToLower(k.kind), n) }

// inject injects one fault. Faults overlap the workload: it goes on at once
// (an apiserver restart proceeds in the background).
func (r *run) inject(kind string) {
	r.waitPending()
	r.faults[kind]++
	k := r.kinds[r.rnd.Intn(len(r.kinds))]
	watches := faultproxy.Match{Verb: "watch", Resource: k.gvr.Resource}
	fmt.Fprintf(r.logFile, "%s test: fault %s at operation %d (%s)\n", time.Now().UTC().Format("15:04:05.000000"), kind, r.ops, k.gvr.Resource)
	switch kind {
	case faultCut:
		r.proxy.CutWatches(faultproxy.Match{Verb: "watch"})
	case faultForced410:
		// An outage of one kind's watches (every namespace) while the
		// workload goes on, ended by a 410 to each stream.
		r.outage(watches, faultproxy.Status(503))
		r.proxy.FailNext(len(r.namespaces), watches, faultproxy.WatchError(410))
	case faultCompaction:
		// The same outage for ConfigMaps, which the Collector's apiserver
		// serves from etcd, then a compaction: the watches' resumes get
		// a real 410.
		cms := faultproxy.Match{Verb: "watch", Resource: "configmaps"}
		r.proxy.FailNext(-1, cms, faultproxy.Status(503))
		r.proxy.CutWatches(cms)
		r.opsFor(r.outageLength())
		if _, err := r.env.Compact(r.ctx); err != nil {
			r.t.Fatal(err)
		}
		r.proxy.ClearFaults()
	case fault403:
		// Access to one kind lost (lists too) and back.
		r.outage(faultproxy.Match{Resource: k.gvr.Resource}, faultproxy.Status(403))
	case fault500:
		r.proxy.FailNext(2, watches, faultproxy.Status(500))
		r.proxy.CutWatches(watches)
	case faultAPIServerRestart:
		r.pending = make(chan error, 1)
		go func() { r.pending <- r.direct.Restart(r.ctx) }()
	case faultCollectorRestart:
		stopped := time.Now()
		r.stopInProcess()
		r.opsFor(r.outageLength()) // while nothing records
		r.probe("after a clean stop", stopped)
		r.startInProcess()
	case faultCollectorSIGKILL:
		r.stopInProcess()
		cfg := r.proxy.Config()
		child, err := startChild(r.ctx, childConfig{Journal: r.journal, Host: cfg.Host, Token: cfg.BearerToken, CAData: cfg.CAData, Namespaces: r.namespaces}, r.dir, r.logFile, true)
		if err != nil {
			r.t.Fatalf("recording child: %v", err)
		}
		r.t.Cleanup(func() { _ = child.kill() }) // when the test fails before the kill below
		r.opsFor(r.outageLength())               // while the child records
		killed := time.Now()
		if err := child.kill(); err != nil {
			r.t.Fatalf("kill the recording child: %v", err)
		}
		r.opsFor(r.outageLength() / 2) // while nothing records
		r.probe("after a kill", killed)
		r.startInProcess()
	}
}

// outageLength is how long an outage lasts: long enough that a gap stamped
// when the loss was detected, rather than from the last durable record,
// would leave versions answered seconds before the gap's start.
func (r *run) outageLength() time.Duration {
	return 2500*time.Millisecond + time.Duration(r.rnd.Int63n(int64(2500*time.Millisecond)))
}

// outage fails the requests m selects with fault, cutting the watches,
// while the workload goes on, then lets them through again.
func (r *run) outage(m faultproxy.Match, fault faultproxy.Fault) {
	r.proxy.FailNext(-1, m, fault)
	r.proxy.CutWatches(faultproxy.Match{Verb: "watch", Resource: m.Resource, Namespace: m.Namespace})
	r.opsFor(r.outageLength())
	r.proxy.ClearFaults()
}

// opsFor runs operations for d.
func (r *run) opsFor(d time.Duration) {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		r.op()
	}
}

func (r *run) waitPending() {
	if r.pending == nil {
		return
	}
	if err := <-r.pending; err != nil {
		r.t.Fatalf("restart %s: %v", r.direct.Name(), err)
	}
	r.pending = nil
}

func (r *run) startInProcess() {
	rec, err := startInProcess(r.ctx, r.backend, r.proxy.Config(), r.journal, r.namespaces, r.log)
	if err != nil {
		for _, req := range r.proxy.Requests(faultproxy.Match{}) {
			r.t.Log(req)
		}
		r.t.Fatalf("start the collector: %v", err)
	}
	r.rec = rec
}

func (r *run) stopInProcess() {
	if err := r.rec.stop(); err != nil {
		fmt.Fprintf(r.logFile, "%s test: clean stop failed: %v\n", time.Now().UTC().Format("15:04:05.000000"), err)
		r.stopErrors = append(r.stopErrors, err)
	}
	r.rec = nil
}

// quiesce pauses the workload until the journal has caught up with every
// write and every stream is continuous, and records that moment in the
// oracle.
//
// Then it changes one object of every stream and waits for the journal to
// catch up again. A gap starts at its stream's last durable record (see
// docs/explanation/consistency.md), and a quiet stream's last record may
// be older than the quiescent point: without a record after the point, a
// fault injected right after it would truthfully leave the point uncovered; and a time is
// covered only once evidence after it is recorded. With that evidence it
// saves a snapshot of the quiescent point, which must be Complete, and
// must stay so whatever follows (see Check).
func (r *run) quiesce() {
	if !r.catchUp() {
		return
	}
	at := time.Now()
	r.oracle.Quiescent(at)
	for _, k := range r.kinds {
		for _, ns := range r.namespaces {
			r.opOn(k, ns, false)
		}
	}
	if r.catchUp() {
		if snap := r.saveSnapshot(r.rec.store, "truth quiescent point", at); snap != nil && !snap.Complete {
			r.t.Errorf("the snapshot of the quiescent point %s, saved once the journal held evidence past it, is not Complete: %v", stamp(at), snap.Missing)
		}
	}
}

// catchUp waits until the journal has caught up with every write and every
// stream is covered; it reports false (and fails the test) when the wait
// gives up (see poll: no progress of the Collector or of what is behind).
func (r *run) catchUp() bool {
	r.waitPending()
	what := fmt.Sprintf("the journal to catch up with the server at operation %d", r.ops)
	err := poll(r.ctx, what, 50*time.Millisecond, func() (bool, string, error) {
		if err := r.rec.failed(); err != nil {
			r.t.Fatalf("the recorder failed at operation %d (seed %d): %v", r.ops, r.seed, err)
		}
		why, err := r.behind()
		if err != nil {
			r.t.Fatal(err)
		}
		return why == "", why + "; " + collectorState(r.rec.collector), nil
	})
	if err != nil {
		r.t.Errorf("%v (seed %d)", err, r.seed)
		return false
	}
	return true
}

// behind says how the journal is behind the server now ("" when it is not):
// a stream not covered, or an object whose live version in the journal is
// not the server's.
func (r *run) behind() (string, error) {
	now := time.Now()
	streams, err := r.rec.store.Streams(r.ctx, clusterID)
	if err != nil {
		return "", err
	}
	if want := len(r.kinds) * len(r.namespaces); len(streams) != want {
		return fmt.Sprintf("%d streams, want %d", len(streams), want), nil
	}
	state := r.oracle.StateAt(now)
	for _, s := range streams {
		cov, err := storage.CoverageAt(r.ctx, r.rec.store, s.StreamID, now)
		if err != nil {
			return "", err
		}
		// Continuous up to now: covered, or not yet observed only
		// because its evidence cannot lie after now yet.
		if cov.BaselineID == "" || len(cov.Gaps) > 0 {
			return fmt.Sprintf("%s not covered: %s", s.StreamID, cov.Reason), nil
		}
		alive, err := r.rec.store.AliveAt(r.ctx, storage.AliveQuery{At: now, StreamID: s.StreamID, WithoutBodies: true})
		if err != nil {
			return "", err
		}
		journal := map[string]string{}
		for _, rec := range alive {
			journal[rec.Resource.Name] = rec.Resource.UID + "@" + rec.Resource.ResourceVersion
		}
		for obj, v := range state {
			if obj.Group != s.Stream.Group || obj.Resource != s.Stream.Resource || obj.Namespace != s.Stream.Namespace {
				continue
			}
			got, ok := journal[obj.Name]
			delete(journal, obj.Name)
			switch {
			case v.Op == OpDelete && ok:
				return fmt.Sprintf("%s: %s alive (%s), deleted on the server", s.StreamID, obj.Name, got), nil
			case v.Op != OpDelete && got != v.UID+"@"+v.ResourceVersion:
				return fmt.Sprintf("%s: %s at %q, server at %s", s.StreamID, obj.Name, got, v), nil
			}
		}
		for name := range journal {
			return fmt.Sprintf("%s: %s alive, unknown to the server", s.StreamID, name), nil
		}
	}
	return "", nil
}

func total(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func formatCounts(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// gapReasons counts the journal's gaps and unavailability by cause.
func gapReasons(t *testing.T, st storage.Reader) string {
	t.Helper()
	recs, err := allRecords(context.Background(), st, storage.Query{ClusterID: clusterID, Types: []event.RecordType{event.TypeGap, event.TypeCoverageChange}})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, rec := range recs {
		switch {
		case rec.Gap != nil:
			reason := rec.Gap.Reason
			if len(reason) > 3 && reason[3] == ' ' {
				reason = reason[:3] // the status code
			} else if i := strings.IndexAny(reason, ":("); i > 0 {
				reason = strings.TrimSpace(reason[:i])
			}
			counts["gap "+reason]++
		case rec.Coverage != nil && !rec.Coverage.Available:
			counts[fmt.Sprintf("unavailable %d", rec.Coverage.Code)]++
		}
	}
	return formatCounts(counts)
}

// RecheckEnv names the folder a failed run kept (its hint says so): each
// backend's TestRecheck opens the journal kept there and calls Recheck.
const RecheckEnv = "KRPLY_TRUTH_RECHECK"

// Recheck checks the journal st, kept by a failed run in dir, again with
// the oracle and the saved snapshots and plans kept next to it.
func Recheck(t testing.TB, st storage.ReadWriter, dir string) {
	t.Helper()
	recheck(t, st, dir)
}

// recheck is Recheck, returning the oracle, the check's configuration and
// its report, so that a backend's TestRecheck can check more (the SQLite
// one breaks the journal as TestTruth does).
func recheck(t testing.TB, st storage.ReadWriter, dir string) (*Oracle, Config, *Report) {
	t.Helper()
	o, err := ReadOracle(filepath.Join(dir, "oracle.json"))
	if err != nil {
		t.Fatal(err)
	}
	var namespaces []string
	seen := map[string]bool{}
	for _, v := range o.Versions() {
		if !seen[v.Object.Namespace] {
			seen[v.Object.Namespace] = true
			namespaces = append(namespaces, v.Object.Namespace)
		}
	}
	cfg := checkConfig(namespaces, 1)
	if saved, err := readKept[[]Saved](filepath.Join(dir, "saved.json")); err == nil {
		cfg.Saved, cfg.AuditIngested = saved, true
	}
	if answers, err := readKept[[]Answer](filepath.Join(dir, "answers.json")); err == nil {
		cfg.Answers = answers
	}
	report, err := Check(context.Background(), o, st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(report.Summary())
	if len(report.Mismatches) > 0 {
		t.Errorf("%d mismatches:\n%s", len(report.Mismatches), mismatchLines(report))
	}
	return o, cfg, report
}

// mismatchLines lists a report's mismatches, five of each kind at most.
func mismatchLines(r *Report) string {
	var b strings.Builder
	shown := map[string]int{}
	for _, m := range r.Mismatches {
		if shown[m.Kind]++; shown[m.Kind] <= 5 {
			fmt.Fprintf(&b, "  %s\n", m)
		}
	}
	for kind, n := range shown {
		if n > 5 {
			fmt.Fprintf(&b, "  … %d more %s\n", n-5, kind)
		}
	}
	return b.String()
}
