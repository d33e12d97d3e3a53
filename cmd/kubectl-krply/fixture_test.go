package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/storagetest"
)

// t0 is the start of the fixed journal; now is when its commands run.
var (
	t0  = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	now = t0.Add(120 * time.Second)
)

func at(seconds float64) time.Time { return t0.Add(time.Duration(seconds * float64(time.Second))) }

func stamp(seconds float64) string { return at(seconds).Format(time.RFC3339Nano) }

// shopJournal writes a journal with fixed times and IDs: cluster c1,
// namespace shop with Deployment web (scaled 1 → 3 by alice at 10.123456789
// s, its image changed at 30 s) and ConfigMaps settings (blue, green at
// 20 s) and debug; the ConfigMaps' stream has a gap from 40 s to 80 s,
// during which settings became red and debug was deleted (inferred by the
// relist). Every stream has evidence up to 100 s.
func shopJournal(t testing.TB) string {
	t.Helper()
	ns := event.Stream{ClusterID: "c1", Version: "v1", Resource: "namespaces"}
	dep := event.Stream{ClusterID: "c1", Group: "apps", Version: "v1", Resource: "deployments"}
	cm := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	deployment := func(wt event.WatchType, rv string, replicas int, image string, when time.Time) event.Record {
		return storagetest.Event(dep, wt, storagetest.Ref(dep, "Deployment", "shop", "web", "u-web", rv),
			storagetest.Deployment("shop", "web", "u-web", rv, replicas, image), when)
	}
	cmItem := func(name, uid, rv, color string) storagetest.Item {
		return storagetest.Item{Ref: storagetest.Ref(cm, "ConfigMap", "shop", name, uid, rv), Object: storagetest.ConfigMap("shop", name, uid, rv, map[string]string{"color": color})}
	}
	nsBody, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop", "uid": "u-shop", "resourceVersion": "5"}})

	var recs []event.Record
	recs = append(recs, storagetest.Baseline(ns, "bl-ns-1", at(1), "9", []storagetest.Item{{Ref: storagetest.Ref(ns, "Namespace", "", "shop", "u-shop", "5"), Object: nsBody}})...)
	recs = append(recs, storagetest.Baseline(dep, "bl-dep-1", at(1), "12", []storagetest.Item{
		{Ref: storagetest.Ref(dep, "Deployment", "shop", "web", "u-web", "10"), Object: storagetest.Deployment("shop", "web", "u-web", "10", 1, "registry.example.com/web:1.0")},
	})...)
	recs = append(recs, storagetest.Baseline(cm, "bl-cm-1", at(1), "12", []storagetest.Item{
		cmItem("debug", "u-debug", "8", "white"), cmItem("settings", "u-settings", "11", "blue"),
	})...)
	scaled := deployment(event.Modified, "13", 3, "registry.example.com/web:1.0", at(10.123456789))
	recs = append(recs, scaled, storagetest.Correlation(scaled, "audit-0001", "alice", at(11)))
	green := storagetest.Event(cm, event.Modified, storagetest.Ref(cm, "ConfigMap", "shop", "settings", "u-settings", "14"),
		storagetest.ConfigMap("shop", "settings", "u-settings", "14", map[string]string{"color": "green"}), at(20))
	recs = append(recs, green, deployment(event.Modified, "17", 3, "registry.example.com/web:1.1", at(30)))
	recs = append(recs, storagetest.Checkpoint(cm, "18", false, at(39)))

	gap := storagetest.Gap(cm, at(40), at(80), "410 Gone: too old resource version", "18")
	relist := storagetest.BaselineBegin(cm, "bl-cm-2", at(81), []storagetest.Item{cmItem("settings", "u-settings", "40", "red")})
	relist[0].Baseline.Reason = "relist after gap"
	end := storagetest.BaselineEnd(cm, "bl-cm-2", at(81), "42", 1)
	end.Baseline.Reason, end.Baseline.ClosesGap = "relist after gap", gap.EventID
	debug := storagetest.Event(cm, event.Added, cmItem("debug", "u-debug", "8", "white").Ref, storagetest.ConfigMap("shop", "debug", "u-debug", "8", map[string]string{"color": "white"}), at(1))
	recs = append(recs, gap)
	recs = append(recs, relist...)
	recs = append(recs, end, storagetest.InferredDelete(cm, debug, at(40), at(81), "bl-cm-2"))
	for _, s := range []event.Stream{ns, dep, cm} {
		recs = append(recs, storagetest.Checkpoint(s, "45", false, at(100)))
	}
	return writeJournal(t, recs)
}

// relistJournal writes a journal with fixed times and IDs: cluster c1,
// ConfigMaps of namespace shop, steady (white, yellow at 25 s) and gone
// (deleted at 30 s, a watch DELETED); a gap from 40 s to 80 s, then a
// relist that finds steady as the watch left it. The stream has evidence
// up to 100 s.
func relistJournal(t testing.TB) string {
	t.Helper()
	cm := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	item := func(name, uid, rv, color string) storagetest.Item {
		return storagetest.Item{Ref: storagetest.Ref(cm, "ConfigMap", "shop", name, uid, rv), Object: storagetest.ConfigMap("shop", name, uid, rv, map[string]string{"color": color})}
	}
	watched := func(wt event.WatchType, it storagetest.Item, when time.Time) event.Record {
		return storagetest.Event(cm, wt, it.Ref, it.Object, when)
	}
	recs := storagetest.Baseline(cm, "bl-cm-1", at(1), "12", []storagetest.Item{item("gone", "u-gone", "8", "white"), item("steady", "u-steady", "7", "white")})
	recs = append(recs, watched(event.Modified, item("steady", "u-steady", "15", "yellow"), at(25)),
		watched(event.Deleted, item("gone", "u-gone", "16", "white"), at(30)),
		storagetest.Checkpoint(cm, "18", false, at(39)))
	gap := storagetest.Gap(cm, at(40), at(80), "410 Gone: too old resource version", "18")
	relist := storagetest.Baseline(cm, "bl-cm-2", at(81), "42", []storagetest.Item{item("steady", "u-steady", "15", "yellow")})
	relist[0].Baseline.Reason, relist[len(relist)-1].Baseline.Reason = "relist after gap", "relist after gap"
	relist[len(relist)-1].Baseline.ClosesGap = gap.EventID
	recs = append(append(recs, gap), relist...)
	return writeJournal(t, append(recs, storagetest.Checkpoint(cm, "45", false, at(100))))
}

// writeJournal writes recs, one append each, into a new SQLite journal and
// returns its path.
func writeJournal(t testing.TB, recs []event.Record) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "krply.db")
	ctx := context.Background()
	store, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if _, err := store.Append(ctx, []event.Record{r}); err != nil {
			t.Fatalf("append %s: %v", r.EventID, err)
		}
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// result is one run of the plugin.
type result struct {
	code           int
	stdout, stderr string
}

// runLive runs the plugin in this process as a user would: the real
// clock and IDs.
func runLive(t testing.TB, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	code := newEnv(streams(&out, &errOut)).execute(context.Background(), args)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// runPlugin runs the plugin in this process with now, the clock and IDs
// pinned.
func runPlugin(t testing.TB, args ...string) result {
	t.Helper()
	return runPluginContext(context.Background(), t, args...)
}

// runPluginContext is runPlugin until ctx ends.
func runPluginContext(ctx context.Context, t testing.TB, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	e := newEnv(streams(&out, &errOut))
	e.now = func() time.Time { return now }
	e.planOptions = testPlanOptions(t)
	e.matOptions = []materialize.Option{materialize.WithClock(clocktesting.NewFakePassiveClock(now)), materialize.WithIDGenerator(func() string { return "snapshot-1" })}
	code := e.execute(ctx, args)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}
