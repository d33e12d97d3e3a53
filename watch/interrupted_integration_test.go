package watch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/rest"

	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/krplytest/testenv/faultproxy"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/sqlite"
)

// killedListChildEnv makes the test binary run killedListChild instead of
// the tests: a Collector recording one namespace's configmaps into a
// journal, until it is killed.
const killedListChildEnv = "KRPLY_WATCH_KILLED_LIST_CHILD"

// killedListConfig is what the child needs, passed as JSON in
// killedListChildEnv.
type killedListConfig struct {
	Host, Token, Journal, Namespace string
	CA                              []byte
}

// killedListChild is the child side of TestIntegrationKilledInitialBaseline,
// run from TestMain. It returns only on an error (its exit code).
func killedListChild(spec string) int {
	var cfg killedListConfig
	if err := json.Unmarshal([]byte(spec), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, cfg.Journal)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	rc := &rest.Config{Host: cfg.Host, BearerToken: cfg.Token, TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CA}}
	log := funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{})
	c, err := NewCollectorForConfig(rc, st, WithClusterID("it"), WithResources("cm"), WithNamespaces(cfg.Namespace),
		WithPageSize(2), WithWatchList(WatchListOff), WithRediscoveryInterval(0), WithLogger(log),
		WithBatching(16, 1<<20, time.Millisecond))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	err = c.Start(ctx) // until killed
	fmt.Fprintln(os.Stderr, "Start returned:", err)
	return 1
}

// TestIntegrationKilledInitialBaseline: a recorder, a real separate
// process, is killed (SIGKILL) during its initial list, after it wrote the
// begin and the first page. Its items are invisible to every query. A
// Collector restarted on the journal takes the initial baseline again and
// says so — no gap, no "relist after gap" — and every object has one
// version, its own.
func TestIntegrationKilledInitialBaseline(t *testing.T) {
	env := testenv.Shared(t)
	ns := env.CreateNamespace(t)
	dyn := dynFor(t, env.Config())
	names := []string{"a0", "a1", "a2", "a3", "a4", "a5"}
	for _, n := range names {
		mustCreateCM(t, dyn, ns, n, "v1")
	}
	p := faultproxy.Start(t, env.Config())
	// The first page passes; the next pages hang until the child is gone.
	listCM := faultproxy.Match{Verb: "list", Resource: "configmaps", Namespace: ns}
	p.FailNext(1, listCM, faultproxy.Delay(time.Millisecond))
	p.FailNext(-1, listCM, faultproxy.Delay(time.Hour))

	// The journal exists before the child opens it, so that this process
	// can read it while the child writes.
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	st, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	pc := p.Config()
	spec, err := json.Marshal(killedListConfig{Host: pc.Host, Token: pc.BearerToken, CA: pc.CAData, Journal: path, Namespace: ns})
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), killedListChildEnv+"="+string(spec))
	var childLog bytes.Buffer
	cmd.Stdout, cmd.Stderr = &childLog, &childLog
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		_ = cmd.Process.Kill()
		<-exited
		t.Logf("child log:\n%s", childLog.String())
	}()

	if st, err = sqlite.Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	defer func() { st.Close() }()
	id := nsStreamID("it", ns)
	var killedID string
	eventually(t, 60*time.Second, "the child's begin and first page", func() bool {
		select {
		case err := <-exited:
			t.Fatalf("child exited before it was killed: %v\n%s", err, childLog.String())
		default:
		}
		status, err := st.StreamStatus(ctx, id)
		if err != nil || status.OpenBaselineID == "" {
			return false
		}
		killedID = status.OpenBaselineID
		return len(ofType(streamRecords(t, st, id), event.TypeEvent)) >= 2
	})
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	exited <- nil // for the deferred wait
	p.ClearFaults()

	// What the killed recorder left: a begin, two items, no end; none of
	// it is visible.
	recs := streamRecords(t, st, id)
	if items := ofType(recs, event.TypeEvent); len(items) != 2 || ofType(recs, event.TypeBaseline)[0].Baseline.Phase != event.BaselineBegin || len(ofType(recs, event.TypeBaseline)) != 1 {
		t.Fatalf("the killed recorder left %d records, want a begin and 2 items: %+v", len(recs), recs)
	}
	alive, err := st.AliveAt(ctx, storage.AliveQuery{At: time.Now(), StreamID: id})
	if err != nil || len(alive) != 0 {
		t.Fatalf("AliveAt after the kill: %d objects, %v; want none", len(alive), err)
	}
	item := ofType(recs, event.TypeEvent)[0]
	if h, err := st.ObjectHistory(ctx, storage.ObjectIDOf(item), storage.HistoryQuery{}); err != nil || len(h) != 0 {
		t.Fatalf("history of %s after the kill: %d records, %v; want none", item.Resource.Name, len(h), err)
	}

	// The restart: a new process would open the journal anew.
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if st, err = sqlite.Open(ctx, path); err != nil {
		t.Fatal(err)
	}
	var logs logLines
	c := newReal(t, env.Config(), st, realOpts(t, ns, WithLogger(logs.logger(t)), WithPageSize(2), WithWatchList(WatchListOff))...)
	run(t, c)
	waitSync(t, c)
	assertRestartAfterKilledBaseline(t, st, &logs, id, killedID, names...)
	if got, want := journalState(t, st, id), serverState(t, dyn, ns); !sameState(got, want) {
		t.Fatalf("journal %v, server %v", got, want)
	}
}
