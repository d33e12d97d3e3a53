package truth

// The seams of TestTruth: a recorder killed during its initial baseline,
// processes querying the journal while it is recorded, snapshots after
// stops and kills, and the audit log ingested across relists.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/krply/krply/audit"
	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest/testenv/faultproxy"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
)

const (
	// bulkObjects ConfigMaps in the bulk namespace make its baseline
	// bulkObjects/pageSize pages long; each list request of the first
	// recorder is held bulkListDelay.
	bulkObjects   = 60
	bulkListDelay = time.Second
)

// createBulk creates the bulk namespace's ConfigMaps, before recording.
func (r *run) createBulk() {
	cm := r.kinds[0]
	for i := 0; i < bulkObjects; i++ {
		if _, err := r.w.create(r.ctx, cm, r.bulk, fmt.Sprintf("bulk-%d", i), r.rnd); err != nil {
			r.t.Fatal(err)
		}
	}
}

// killDuringInitialBaseline starts the first recorder as a child process
// whose lists of the bulk namespace's ConfigMaps are slowed down, and kills
// it with SIGKILL once the first page of that baseline is committed: the
// journal then holds a baseline that never ends. The workload goes on
// meanwhile.
func (r *run) killDuringInitialBaseline() {
	cfg := r.proxy.Config()
	slow := faultproxy.Match{Verb: "list", Resource: "configmaps", Namespace: r.bulk}
	r.proxy.FailNext(-1, slow, faultproxy.Delay(bulkListDelay))
	defer r.proxy.ClearFaults()
	child, err := startChild(r.ctx, childConfig{Journal: r.journal, Host: cfg.Host, Token: cfg.BearerToken, CAData: cfg.CAData,
		Namespaces: r.namespaces, ListOnly: true}, r.dir, r.logFile, false)
	if err != nil {
		r.t.Fatalf("recording child: %v", err)
	}
	r.t.Cleanup(func() { _ = child.kill() })          // when the test fails before the kill below
	st, err := r.backend.OpenReader(r.ctx, r.journal) // watched while the child writes
	if err != nil {
		r.t.Fatal(err)
	}
	defer st.Close()
	stream := event.Stream{ClusterID: clusterID, Version: "v1", Resource: "configmaps", Namespace: r.bulk}.ID()
	// No writes meanwhile: a version written while its stream's first
	// baseline is taken proves nothing (Check counts it as written
	// before recording). The child's requests through the proxy are its
	// progress.
	if err := poll(r.ctx, "the first recorder to write an item of the bulk namespace's baseline", 20*time.Millisecond, func() (bool, string, error) {
		items, err := openBaselineItems(r.ctx, st, stream)
		return items > 0, fmt.Sprintf("%d requests through the proxy, %d lists of the bulk namespace", r.proxy.Count(faultproxy.Match{}), r.proxy.Count(slow)), err
	}); err != nil {
		r.t.Fatalf("%v (seed %d)", err, r.seed)
	}
	killed := time.Now()
	if err := child.kill(); err != nil {
		r.t.Fatalf("kill the recording child: %v", err)
	}
	items, err := openBaselineItems(r.ctx, st, stream)
	if err != nil {
		r.t.Fatal(err)
	}
	if items == 0 || items >= bulkObjects {
		r.t.Fatalf("the recorder was killed with %d items of the bulk namespace's baseline written, want some of %d", items, bulkObjects)
	}
	fmt.Fprintf(r.logFile, "%s test: killed the first recorder during its initial baseline of %s (%d of %d items written)\n", stamp(time.Now()), stream, items, bulkObjects)
	r.probe("after a kill during the initial baseline", killed)
}

// openBaselineItems counts the items of the stream's baseline that began
// and has not ended yet.
func openBaselineItems(ctx context.Context, st storage.Reader, stream string) (int, error) {
	status, err := st.StreamStatus(ctx, stream)
	if errors.Is(err, storage.ErrNotFound) {
		return 0, nil
	}
	if err != nil || status.OpenBaselineID == "" || status.LastBaselineID != "" {
		return 0, err
	}
	recs, err := allRecords(ctx, st, storage.Query{StreamID: stream, Types: []event.RecordType{event.TypeEvent}, WithoutBodies: true})
	n := 0
	for _, rec := range recs {
		if rec.BaselineID == status.OpenBaselineID {
			n++
		}
	}
	return n, err
}

// startQueries starts the processes that query the journal while it is
// recorded.
func (r *run) startQueries() {
	cfg := r.checkConfig()
	for i := 0; i < *queriesFlag; i++ {
		q, err := startQuery(r.ctx, queryConfig{Name: fmt.Sprintf("query-%d", i), Journal: r.journal, Namespaces: cfg.Namespaces,
			Resources: cfg.Resources, AuditLog: r.env.AuditLogPath(), Seed: r.seed + int64(i)}, r.dir, r.logFile)
		if err != nil {
			r.t.Fatal(err)
		}
		r.queries = append(r.queries, q)
	}
	// When the test fails before stopQueries; what they saved is then
	// kept for TestRecheck.
	r.t.Cleanup(r.stopQueries)
}

// stopQueries stops the querying processes and collects what they did.
func (r *run) stopQueries() {
	for _, q := range r.queries {
		res, err := q.stop()
		r.saved = append(r.saved, res.saved...)
		r.queried.saved = append(r.queried.saved, res.saved...)
		r.queried.answers = append(r.queried.answers, res.answers...)
		r.queried.audits = append(r.queried.audits, res.audits...)
		r.queried.errors = append(r.queried.errors, res.errors...)
		if err != nil {
			r.t.Error(err)
		}
	}
	r.queries = nil
}

// probe saves snapshots of the whole scope while nothing records: now,
// after every record (never Complete), and at times before the recorder
// stopped (or was killed) at lastAlive. Check computes those saved Complete
// again at the end: they must not have flipped.
func (r *run) probe(label string, lastAlive time.Time) {
	st, err := r.backend.Open(r.ctx, r.journal)
	if err != nil {
		r.t.Fatal(err)
	}
	defer st.Close()
	times := []time.Time{time.Now(), lastAlive.Add(-time.Second), lastAlive.Add(-3 * time.Second)}
	if points := r.oracle.QuiescentPoints(); len(points) > 0 && lastAlive.After(points[len(points)-1]) {
		last := points[len(points)-1]
		times = append(times, last.Add(time.Duration(r.rnd.Int63n(int64(lastAlive.Sub(last))))))
	}
	var said []string
	for _, at := range times {
		if snap := r.saveSnapshot(st, "truth probe "+label, at); snap != nil {
			said = append(said, fmt.Sprintf("%s complete=%v", stamp(at), snap.Complete))
		}
	}
	fmt.Fprintf(r.logFile, "%s test: snapshots %s: %s\n", stamp(time.Now()), label, strings.Join(said, ", "))
}

// snapshotOfNow waits until every stream's evidence of continuity passes
// now (Collector.WaitForProgress: a quiet stream's progress checkpoint
// comes within the progress interval) and saves a snapshot of now, which
// must then be Complete.
func (r *run) snapshotOfNow() {
	now := time.Now()
	ctx, cancel := watchdog(r.ctx, fmt.Sprintf("the journal's evidence to pass %s", stamp(now)), func() string { return collectorState(r.rec.collector) })
	defer cancel()
	if err := r.rec.collector.WaitForProgress(ctx, now); err != nil {
		r.t.Errorf("wait until the journal's evidence passes %s: %v", stamp(now), causeOf(ctx, err))
		return
	}
	waited := time.Since(now)
	r.waitedForProgress = waited
	snap := r.saveSnapshot(r.rec.store, "truth now, after WaitForProgress", now)
	if snap != nil && !snap.Complete {
		r.t.Errorf("the snapshot of %s, once WaitForProgress returned (after %v), is not Complete: %v", stamp(now), waited, snap.Missing)
	}
	fmt.Fprintf(r.logFile, "%s test: snapshot of %s after waiting %v for progress: complete=%v\n", stamp(time.Now()), stamp(now), waited, snap != nil && snap.Complete)
}

// saveSnapshot saves a snapshot of the whole scope at at into st, and
// notes it in r.saved; nil (and the test failed) if that failed.
func (r *run) saveSnapshot(st storage.Store, name string, at time.Time) *materialize.Snapshot {
	mat, err := materialize.New(st)
	if err != nil {
		r.t.Fatal(err)
	}
	snap, err := mat.Snapshot(r.ctx, r.scope(), at)
	if err == nil {
		err = mat.SaveSnapshot(r.ctx, snap, name)
	}
	if err != nil {
		r.t.Errorf("%s at %s: %v", name, stamp(at), err)
		return nil
	}
	r.saved = append(r.saved, Saved{Kind: SavedSnapshot, By: "test", ID: snap.ID, At: snap.At, Complete: snap.Complete, Objects: len(snap.Objects)})
	return snap
}

// ingestAudit waits until the audit log holds every write of the oracle,
// then ingests it twice, and returns what each ingest did: the second must
// store nothing.
func (r *run) ingestAudit() []audit.Summary {
	path := r.env.AuditLogPath()
	want := map[string]bool{}
	for _, v := range r.oracle.Versions() {
		want[v.AuditID] = true
	}
	if err := poll(r.ctx, fmt.Sprintf("the audit log %s to hold the workload's %d writes", path, len(want)), 100*time.Millisecond, func() (bool, string, error) {
		missing, err := missingAuditIDs(path, want)
		return missing == 0, fmt.Sprintf("%d writes missing", missing), err
	}); err != nil {
		r.t.Fatalf("%v (seed %d)", err, r.seed)
	}
	st, err := r.backend.Open(r.ctx, r.journal)
	if err != nil {
		r.t.Fatal(err)
	}
	defer st.Close()
	c, err := audit.NewCorrelator(st, clusterID)
	if err != nil {
		r.t.Fatal(err)
	}
	var out []audit.Summary
	for i := 0; i < 2; i++ {
		src, err := audit.OpenFiles([]string{path})
		if err != nil {
			r.t.Fatal(err)
		}
		sum, err := c.Ingest(r.ctx, src)
		_ = src.Close()
		if err != nil {
			r.t.Fatalf("ingest the audit log: %v", err)
		}
		out = append(out, sum)
	}
	return out
}

// missingAuditIDs counts the IDs of want that no complete line of the
// audit log names with stage ResponseComplete.
func missingAuditIDs(path string, want map[string]bool) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	seen := map[string]bool{}
	lines := bytes.Split(data, []byte("\n"))
	for _, line := range lines[:len(lines)-1] { // the last is empty or being written
		var e struct {
			AuditID string `json:"auditID"`
			Stage   string `json:"stage"`
		}
		if json.Unmarshal(line, &e) == nil && e.Stage == "ResponseComplete" && want[e.AuditID] {
			seen[e.AuditID] = true
		}
	}
	return len(want) - len(seen), nil
}

// queriedSummary says what the querying processes and the final ingests
// did.
func (r *run) queriedSummary(ingests []audit.Summary) string {
	var snapshots, plans, complete int
	for _, s := range r.queried.saved {
		if s.Kind == SavedPlan {
			plans++
		} else {
			snapshots++
		}
		if s.Complete {
			complete++
		}
	}
	var recorded int
	for _, a := range r.queried.audits {
		recorded += a.Recorded
	}
	parts := []string{fmt.Sprintf("query processes %d: snapshots %d, plans %d (Complete %d), ObjectAt answers %d, audit ingests %d storing %d correlations, errors %d",
		*queriesFlag, snapshots, plans, complete, len(r.queried.answers), len(r.queried.audits), recorded, len(r.queried.errors)),
		fmt.Sprintf("waited for progress %v", r.waitedForProgress.Round(time.Millisecond))}
	for i, s := range ingests {
		parts = append(parts, fmt.Sprintf("final audit ingest %d: events %d, exact %d, scored %d, unmatched %d, recorded %d", i+1, s.Events, s.Exact, s.Scored, s.Unmatched, s.Recorded))
	}
	return strings.Join(parts, ", ")
}

// writeKept and readKept keep what a failed run saved, and the answers
// its processes got, next to its journal, for TestRecheck.
func writeKept(path string, v any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return os.WriteFile(path, raw, 0o600)
}

func readKept[T any](path string) (T, error) {
	var v T
	raw, err := os.ReadFile(path)
	if err != nil {
		return v, err
	}
	return v, json.Unmarshal(raw, &v)
}
