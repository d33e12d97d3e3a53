package watch

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/storagetest"
)

// logLines is a logger that keeps every line and passes it to the test log.
type logLines struct {
	mu    sync.Mutex
	lines []string
}

func (l *logLines) logger(t *testing.T) logr.Logger {
	return funcr.New(func(prefix, args string) {
		l.mu.Lock()
		l.lines = append(l.lines, args)
		l.mu.Unlock()
		t.Log(prefix, args)
	}, funcr.Options{Verbosity: 1})
}

// containing returns the lines that contain s.
func (l *logLines) containing(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// assertRestartAfterKilledBaseline checks a stream's journal after a
// Collector restarted over an initial baseline that never ended: the
// killed baseline's items are invisible, the restart took the initial
// baseline again and said so (no gap, no inferred deletion), and every
// object has one version.
func assertRestartAfterKilledBaseline(t *testing.T, st storage.ReadWriter, logs *logLines, streamID, killedID string, names ...string) {
	t.Helper()
	recs := streamRecords(t, st, streamID)
	if gaps := ofType(recs, event.TypeGap); len(gaps) != 0 {
		t.Fatalf("%d gap records after restarting over an interrupted initial baseline, want none", len(gaps))
	}
	if dels := inferredOf(recs); len(dels) != 0 {
		t.Fatalf("%d inferred deletions, want none: %+v", len(dels), dels)
	}
	var baselines []string
	var restartID string
	for _, r := range ofType(recs, event.TypeBaseline) {
		baselines = append(baselines, string(r.Baseline.Phase)+" "+r.Baseline.Reason)
		if r.BaselineID != killedID {
			restartID = r.BaselineID
		}
	}
	if want := []string{"begin initial", "begin " + interruptedReason, "end " + interruptedReason}; !slices.Equal(baselines, want) {
		t.Fatalf("baseline records %q, want %q", baselines, want)
	}
	if lines := logs.containing("initial baseline interrupted; relisting"); len(lines) != 1 || !strings.Contains(lines[0], killedID) {
		t.Fatalf("restart logged %q, want one line naming the interrupted baseline %s", lines, killedID)
	}
	if lines := logs.containing("relist after gap"); len(lines) != 0 {
		t.Fatalf("restart logged a relist after a gap that does not exist: %q", lines)
	}
	m, err := materialize.New(st)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := event.ParseStreamID(streamID)
	if err != nil {
		t.Fatal(err)
	}
	alive, err := st.AliveAt(context.Background(), storage.AliveQuery{At: time.Now(), StreamID: streamID})
	if err != nil {
		t.Fatal(err)
	}
	var aliveNames []string
	for _, r := range alive {
		aliveNames = append(aliveNames, r.Resource.Name)
		if r.BaselineID != restartID {
			t.Fatalf("%s is alive through baseline %q, want the restart's %s", r.Resource.Name, r.BaselineID, restartID)
		}
		h, err := m.History(context.Background(), storage.ObjectIDOf(r))
		if err != nil {
			t.Fatal(err)
		}
		if vs := h.Versions(); len(vs) != 1 || vs[0].BaselineID != restartID {
			t.Fatalf("history of %s has %d versions (%+v), want the restart's baseline item only", r.Resource.Name, len(vs), vs)
		}
	}
	slices.Sort(aliveNames)
	if !slices.Equal(aliveNames, names) {
		t.Fatalf("alive after the restart: %v, want %v (stream %s)", aliveNames, names, stream)
	}
}

// A recorder killed during its initial list left the begin and some items
// (one of an object deleted since). The restarted Collector takes the
// initial baseline again, says why, and the killed items stay invisible.
func TestRestartAfterKilledInitialBaseline(t *testing.T) {
	st := newMemory(t)
	stream := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps"}
	item := func(name string) storagetest.Item {
		cm := configMap("shop", name, "killed")
		body, _ := cm.MarshalJSON()
		return storagetest.Item{Ref: storagetest.Ref(stream, "ConfigMap", "shop", name, "uid-shop-"+name, "1"), Object: body}
	}
	killed := storagetest.BaselineBegin(stream, "killed", time.Now().Add(-time.Minute), []storagetest.Item{item("a"), item("gone")})
	if _, err := st.Append(context.Background(), killed); err != nil {
		t.Fatal(err)
	}
	var logs logLines
	c, err := NewCollector(fakeDynamic(configMap("shop", "a", "1"), configMap("shop", "b", "2")), fakeDiscovery(), st,
		testOpts(t, WithLogger(logs.logger(t)))...)
	if err != nil {
		t.Fatal(err)
	}
	run(t, c)
	waitSync(t, c)
	assertRestartAfterKilledBaseline(t, st, &logs, stream.ID(), "killed", "a", "b")
}
