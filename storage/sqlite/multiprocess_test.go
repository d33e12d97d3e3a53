package sqlite_test

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/storagetest"
)

// The tests of this file share one journal between real processes: the
// test binary re-executed as a child that plays a role, chosen by these
// variables.
const (
	childRoleEnv    = "KRPLY_CHILD_ROLE"
	childJournalEnv = "KRPLY_CHILD_JOURNAL"
	childArgEnv     = "KRPLY_CHILD_ARG"
)

// childRoles are the roles a re-executed test binary can play. Each gets
// the journal's path and its argument, and fails the child by returning
// an error.
var childRoles = map[string]func(path, arg string) error{
	"recorder":     recorderChild,
	"snapshots":    func(path, arg string) error { return saverChild(path, arg, event.TypeSnapshot) },
	"plans":        func(path, arg string) error { return saverChild(path, arg, event.TypePlan) },
	"correlations": correlationsChild,
	"serve":        serveChild,
}

// runChildRole runs the role the environment names, if any, and exits.
func runChildRole() {
	role := os.Getenv(childRoleEnv)
	if role == "" {
		return
	}
	run, ok := childRoles[role]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown child role %q\n", role)
		os.Exit(2)
	}
	if err := run(os.Getenv(childJournalEnv), os.Getenv(childArgEnv)); err != nil {
		fmt.Fprintf(os.Stderr, "%s: %v\n", role, err)
		os.Exit(2)
	}
	os.Exit(0)
}

// childCmd returns the command of a child playing role on path.
func childCmd(role, path, arg string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childRoleEnv+"="+role, childJournalEnv+"="+path, childArgEnv+"="+arg)
	return cmd
}

// sharedRecords is the record sequence the recorders of
// TestProcessesShareOneJournal append: changes of 40 pods of one stream,
// a bookmark checkpoint after every 20, each with a fixed resourceVersion
// and body, so that two processes make the same EventIDs.
func sharedRecords(w *workload, n int) []event.Record {
	k := w.kinds[1]
	stream := k.stream
	versions := map[int]int{}
	recs := make([]event.Record, 0, n)
	for i := range n {
		at := benchStart.Add(time.Duration(i) * 10 * time.Millisecond)
		rv := strconv.Itoa(1000 + i)
		if i%20 == 19 {
			cp := event.Record{Type: event.TypeCheckpoint, ClusterID: stream.ClusterID, StreamID: stream.ID(), ObservedAt: at,
				Checkpoint: &event.Checkpoint{ResourceVersion: rv, Bookmark: true}}
			cp.EventID = event.EventID(cp.StreamID, event.TypeCheckpoint, event.ResourceRef{ResourceVersion: rv}, event.Bookmark)
			recs = append(recs, cp)
			continue
		}
		obj := (i * 7) % 40
		wt := event.Modified
		if versions[obj] == 0 {
			wt = event.Added
		}
		recs = append(recs, objectEvent(k, fmt.Sprintf("pod-%03d", obj), rv, versions[obj], wt, at))
		versions[obj]++
	}
	return recs
}

// objectEvent returns version v of the object name of kind k, with
// resourceVersion rv, observed at at.
func objectEvent(k *kind, name, rv string, v int, wt event.WatchType, at time.Time) event.Record {
	uid := "uid-" + name
	ref := event.ResourceRef{Group: k.stream.Group, Version: k.stream.Version, Kind: k.kindName, Resource: k.stream.Resource,
		Namespace: k.stream.Namespace, Name: name, UID: uid, ResourceVersion: rv}
	sid := k.stream.ID()
	return event.Record{Type: event.TypeEvent, EventID: event.EventID(sid, event.TypeEvent, ref, wt), ClusterID: k.stream.ClusterID,
		StreamID: sid, ObservedAt: at, WatchType: wt, Resource: ref, Object: k.body(name, uid, rv, v, at)}
}

// The size of the shared workload, and how many records each saver
// appends.
const (
	sharedCount = 1200
	savedCount  = 15
)

// recorderChild appends sharedRecords in batches of arg records, the
// way a Collector does, on one long-lived Store.
func recorderChild(path, arg string) error {
	batch, err := strconv.Atoi(arg)
	if err != nil {
		return err
	}
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		return err
	}
	recs := sharedRecords(newWorkload(&testing.B{}), sharedCount)
	for len(recs) > 0 {
		n := min(batch, len(recs))
		if _, err := s.Append(ctx, recs[:n]); err != nil {
			s.Close()
			return err
		}
		recs = recs[n:]
	}
	return s.Close()
}

// savedRecord is record i of the saver of type typ: a snapshot or a plan
// with a document of a few KB, as examples/snapshot and examples/replay
// save them.
func savedRecord(typ event.RecordType, i int) event.Record {
	doc, _ := json.Marshal(map[string]any{"type": typ, "i": i, "objects": strings.Repeat(fmt.Sprintf("object %d of %s; ", i, typ), 100)})
	return event.Record{Type: typ, EventID: fmt.Sprintf("test-%s-%d", typ, i), ClusterID: "bench",
		ObservedAt: benchStart.Add(time.Duration(i) * time.Second), Object: doc,
		Snapshot: &event.SnapshotRef{ID: fmt.Sprintf("%s-%d", typ, i), At: benchStart, Complete: true}}
}

// saverChild saves savedCount records of type typ, each with its own
// Open, Append and Close, as the command-line tools do.
func saverChild(path, _ string, typ event.RecordType) error {
	ctx := context.Background()
	for i := range savedCount {
		s, err := sqlite.Open(ctx, path)
		if err != nil {
			return err
		}
		if _, err := s.Append(ctx, []event.Record{savedRecord(typ, i)}); err != nil {
			s.Close()
			return fmt.Errorf("save %d: %w", i, err)
		}
		if err := s.Close(); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// correlationRecord is audit correlation i: one for every fourth shared
// record, as examples/history --audit-log saves them.
func correlationRecord(target event.Record, i int) event.Record {
	return event.Record{Type: event.TypeAuditCorrelation, EventID: fmt.Sprintf("test-audit-%d", i), ClusterID: "bench",
		ObservedAt: benchStart, Audit: &event.AuditCorrelation{TargetEventID: target.EventID, AuditID: fmt.Sprintf("audit-%d", i),
			User: "alice", Verb: "update", RequestReceivedAt: target.ObservedAt, Confidence: 1, Rule: "exact-resource-version"}}
}

func correlations(w *workload) []event.Record {
	var out []event.Record
	for i, rec := range sharedRecords(w, sharedCount) {
		if i%4 == 0 && rec.Type == event.TypeEvent {
			out = append(out, correlationRecord(rec, i))
		}
	}
	return out
}

// correlationsChild appends the correlations, ten at a time, on one
// Store.
func correlationsChild(path, _ string) error {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		return err
	}
	recs := correlations(newWorkload(&testing.B{}))
	for len(recs) > 0 {
		n := min(10, len(recs))
		if _, err := s.Append(ctx, recs[:n]); err != nil {
			s.Close()
			return err
		}
		recs = recs[n:]
		time.Sleep(5 * time.Millisecond)
	}
	return s.Close()
}

// TestProcessesShareOneJournal runs a recorder appending one stream's
// events while, in other processes, a second recorder appends the same
// events (the same EventIDs) in other batches, and savers append
// snapshots, plans and audit correlations, opening the journal for each
// or keeping it open. Afterwards every record is stored exactly once with
// its body, in the order each process appended it, and no process saw an
// error.
func TestProcessesShareOneJournal(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/journal.db"
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	children := []*exec.Cmd{
		childCmd("recorder", path, "20"),
		childCmd("recorder", path, "7"),
		childCmd("snapshots", path, ""),
		childCmd("plans", path, ""),
		childCmd("correlations", path, ""),
	}
	outputs := make([]bytes.Buffer, len(children))
	for i, cmd := range children {
		cmd.Stdout, cmd.Stderr = &outputs[i], &outputs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	for i, cmd := range children {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child %v failed: %v\n%s", cmd.Env[len(cmd.Env)-3:], err, outputs[i].String())
		}
	}

	// What each process appended, in its order.
	w := newWorkload(t)
	groups := map[string][]event.Record{"recorders": sharedRecords(w, sharedCount), "correlations": correlations(w)}
	for _, typ := range []event.RecordType{event.TypeSnapshot, event.TypePlan} {
		for i := range savedCount {
			groups[string(typ)] = append(groups[string(typ)], savedRecord(typ, i))
		}
	}
	s, err = sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkStoredOnce(t, s, groups)

	pods := w.kinds[1].stream.ID()
	st, err := s.StreamStatus(ctx, pods)
	if err != nil {
		t.Fatal(err)
	}
	shared := groups["recorders"]
	if last := shared[len(shared)-1]; st.Records != int64(len(shared)) || st.CheckpointRV != last.Checkpoint.ResourceVersion {
		t.Errorf("stream %s: %d records, checkpoint %q; want %d and %q", pods, st.Records, st.CheckpointRV, len(shared), last.Checkpoint.ResourceVersion)
	}
	checkIntegrity(t, path)
}

// checkStoredOnce checks that the journal holds exactly the records of
// groups, each once and with its body, and that within each group the
// sequence numbers increase in the group's order.
func checkStoredOnce(t *testing.T, s storage.Reader, groups map[string][]event.Record) {
	t.Helper()
	ctx := context.Background()
	want := map[string]event.Record{}
	for _, recs := range groups {
		for _, rec := range recs {
			want[rec.EventID] = rec
		}
	}
	stored := map[string]event.Record{}
	seqs := map[int64]bool{}
	q := storage.Query{Limit: 500}
	for {
		page, err := s.Records(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range page.Records {
			if _, dup := stored[rec.EventID]; dup {
				t.Errorf("%s stored twice (seq %d and %d)", rec.EventID, stored[rec.EventID].IngestSeq, rec.IngestSeq)
			}
			if seqs[rec.IngestSeq] {
				t.Errorf("seq %d handed out twice", rec.IngestSeq)
			}
			seqs[rec.IngestSeq] = true
			stored[rec.EventID] = rec
			w, ok := want[rec.EventID]
			switch {
			case !ok:
				t.Errorf("unexpected record %s (seq %d)", rec.EventID, rec.IngestSeq)
			case !bytes.Equal(rec.Object, w.Object):
				t.Errorf("record %s (seq %d): body of %d bytes differs from the %d appended", rec.EventID, rec.IngestSeq, len(rec.Object), len(w.Object))
			}
		}
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	for name, recs := range groups {
		var last int64
		var lost []int
		for i, rec := range recs {
			got, ok := stored[rec.EventID]
			if !ok {
				lost = append(lost, i)
				continue
			}
			if got.IngestSeq <= last {
				t.Errorf("%s: record %d (%s) has seq %d, not after the previous record's %d", name, i, rec.EventID, got.IngestSeq, last)
			}
			last = got.IngestSeq
		}
		if len(lost) > 0 {
			t.Errorf("%s: %d of %d records lost, the first %d", name, len(lost), len(recs), lost[:min(len(lost), 10)])
		}
	}
	stats, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if stats.Records != int64(len(want)) || len(stored) != len(want) {
		t.Errorf("%d records stored (Stats: %d), want %d", len(stored), stats.Records, len(want))
	}
}

func checkIntegrity(t *testing.T, path string) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check = %q, %v", check, err)
	}
}

// serveRequest and serveResponse are the protocol of the "serve" child: a
// Store driven over stdin and stdout, one JSON line each way per
// operation, so that a test interleaves the writes of processes exactly.
type serveRequest struct {
	Op      string         `json:"op"` // open, append, compact, close
	Records []event.Record `json:"records,omitempty"`
	Before  time.Time      `json:"before,omitzero"`
}

type serveResponse struct {
	Seqs    []int64               `json:"seqs,omitempty"`
	Compact storage.CompactResult `json:"compact"`
	Err     string                `json:"err,omitempty"`
}

func serveChild(path, _ string) error {
	ctx := context.Background()
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 64<<20)
	out := json.NewEncoder(os.Stdout)
	var s *sqlite.Store
	for in.Scan() {
		var req serveRequest
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			return err
		}
		var resp serveResponse
		var err error
		switch req.Op {
		case "open":
			s, err = sqlite.Open(ctx, path)
		case "append":
			var res storage.AppendResult
			res, err = s.Append(ctx, req.Records)
			resp.Seqs = res.Seqs
		case "compact":
			resp.Compact, err = s.Compact(ctx, req.Before)
		case "close":
			err = s.Close()
		default:
			err = fmt.Errorf("unknown op %q", req.Op)
		}
		if err != nil {
			resp.Err = err.Error()
		}
		if err := out.Encode(resp); err != nil {
			return err
		}
	}
	return in.Err()
}

// served is a "serve" child.
type served struct {
	name string
	in   io.WriteCloser
	out  *bufio.Scanner
	mu   sync.Mutex
}

func startServed(t *testing.T, name, path string) *served {
	t.Helper()
	in, out := startChild(t, name, childCmd("serve", path, ""))
	return &served{name: name, in: in, out: out}
}

// startChild starts cmd with pipes to its stdin and stdout; at the end of
// the test it closes stdin and waits for the child, which must succeed.
func startChild(t *testing.T, name string, cmd *exec.Cmd) (io.WriteCloser, *bufio.Scanner) {
	t.Helper()
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	})
	sc := bufio.NewScanner(out)
	sc.Buffer(nil, 64<<20)
	return in, sc
}

// do sends one request and returns the response; an error of the child's
// Store fails the test.
func (p *served) do(t *testing.T, req serveRequest) serveResponse {
	t.Helper()
	resp, err := p.try(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// try is do for any goroutine.
func (p *served) try(req serveRequest) (serveResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var resp serveResponse
	line, err := json.Marshal(req)
	if err != nil {
		return resp, err
	}
	if _, err := p.in.Write(append(line, '\n')); err != nil {
		return resp, fmt.Errorf("%s: %w", p.name, err)
	}
	if !p.out.Scan() {
		return resp, fmt.Errorf("%s: no answer to %s: %v", p.name, req.Op, p.out.Err())
	}
	if err := json.Unmarshal(p.out.Bytes(), &resp); err != nil {
		return resp, err
	}
	if resp.Err != "" {
		return resp, fmt.Errorf("%s: %s: %s", p.name, req.Op, resp.Err)
	}
	return resp, nil
}

func (p *served) append(t *testing.T, recs ...event.Record) []int64 {
	t.Helper()
	return p.do(t, serveRequest{Op: "append", Records: recs}).Seqs
}

// TestProcessesShareOneJournalAcrossCompaction interleaves a long-lived
// writer, a compacting process, a fresh writer and a long-lived reader
// (this process) step by step: the writer's and the reader's caches must
// not outlive what another process's compaction removed, nor a body ID the
// compaction freed.
func TestProcessesShareOneJournalAcrossCompaction(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/journal.db"
	w := newWorkload(t)
	cms, pods := w.kinds[2], w.kinds[1]
	at := func(s int) time.Time { return benchStart.Add(time.Duration(s) * time.Second) }
	var appended []event.Record
	keep := func(seqs []int64, recs ...event.Record) []event.Record {
		for i := range recs {
			recs[i].IngestSeq = seqs[i]
		}
		appended = append(appended, recs...)
		return recs
	}

	writer := startServed(t, "long-lived writer", path)
	writer.do(t, serveRequest{Op: "open"})
	reader, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()

	// Configmaps first, so that the pods' bodies get the highest IDs. The
	// pods stream is covered from a baseline on; its pods are deleted
	// before the compaction point, and a bookmark follows.
	var ys, zAdded, zDeleted []event.Record
	for i := range 3 {
		ys = append(ys, objectEvent(cms, fmt.Sprintf("y%d", i), fmt.Sprintf("y%d-1", i), 0, event.Added, at(300)))
		zAdded = append(zAdded, objectEvent(pods, fmt.Sprintf("z%d", i), fmt.Sprintf("z%d-1", i), 0, event.Added, at(150)))
		zDeleted = append(zDeleted, objectEvent(pods, fmt.Sprintf("z%d", i), fmt.Sprintf("z%d-2", i), 1, event.Deleted, at(200)))
	}
	keep(writer.append(t, ys...), ys...)
	writer.append(t, storagetest.Baseline(pods.stream, "b1", at(100), "z-0", nil)...)
	writer.append(t, zAdded...)
	writer.append(t, zDeleted...)
	writer.append(t, storagetest.Checkpoint(pods.stream, "z-3", true, at(240)))

	// The reader reads the pods' histories, keeping their keyframes.
	for i := range 3 {
		h, err := reader.ObjectHistory(ctx, storage.ObjectIDOf(zAdded[i]), storage.HistoryQuery{})
		if err != nil || len(h) != 2 || !bytes.Equal(h[1].Object, zDeleted[i].Object) {
			t.Fatalf("history of z%d: %d records, %v", i, len(h), err)
		}
	}
	if _, err := reader.Timelines(ctx, ""); err != nil {
		t.Fatal(err)
	}

	// Another process compacts twice, writing nothing in between: the
	// pods and their bodies go, the baseline becomes a compaction
	// baseline, which the second compaction replaces by another in the
	// same sequence numbers. The reader reads the timelines in between.
	compactor := startServed(t, "compactor", path)
	compactor.do(t, serveRequest{Op: "open"})
	if res := compactor.do(t, serveRequest{Op: "compact", Before: at(250)}).Compact; res.RecordsRemoved != 6 || res.BodiesRemoved < 4 || res.Streams != 1 {
		t.Fatalf("first compaction: %+v; want the pods' 6 records and their bodies removed (but the newest and its keyframe), one stream folded", res)
	}
	if _, err := reader.Timelines(ctx, ""); err != nil {
		t.Fatal(err)
	}
	if res := compactor.do(t, serveRequest{Op: "compact", Before: at(260)}).Compact; res.Streams != 1 {
		t.Fatalf("second compaction: %+v; want one stream folded", res)
	}
	compactor.do(t, serveRequest{Op: "close"})

	// A fresh process writes new pods: a keyframe and a delta.
	fresh := startServed(t, "fresh writer", path)
	fresh.do(t, serveRequest{Op: "open"})
	q := []event.Record{objectEvent(pods, "q0", "q0-1", 0, event.Added, at(400)), objectEvent(pods, "q0", "q0-2", 1, event.Modified, at(410))}
	keep(fresh.append(t, q...), q...)
	fresh.do(t, serveRequest{Op: "close"})

	// The long-lived writer re-creates a compacted pod and changes a
	// configmap.
	later := []event.Record{objectEvent(pods, "z0", "z0-3", 2, event.Added, at(500)), objectEvent(cms, "y0", "y0-2", 1, event.Modified, at(510))}
	keep(writer.append(t, later...), later...)
	writer.do(t, serveRequest{Op: "close"})

	// The long-lived reader reads the bodies written since.
	for _, rec := range append(q, later...) {
		h, err := reader.ObjectHistory(ctx, storage.ObjectIDOf(rec), storage.HistoryQuery{})
		if err != nil {
			t.Fatalf("history of %s: %v", rec.Resource.Name, err)
		}
		found := false
		for _, got := range h {
			if got.EventID == rec.EventID {
				found = true
				if !bytes.Equal(got.Object, rec.Object) {
					t.Errorf("long-lived reader: %s %s: body differs from the one appended:\n got %.120s\nwant %.120s", rec.Resource.Name, rec.WatchType, got.Object, rec.Object)
				}
			}
		}
		if !found {
			t.Errorf("long-lived reader: %s %s missing from its history", rec.Resource.Name, rec.WatchType)
		}
	}
	alive, err := reader.AliveAt(ctx, storage.AliveQuery{At: at(600), StreamID: pods.stream.ID()})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, rec := range alive {
		names = append(names, rec.Resource.Name)
	}
	if strings.Join(names, ",") != "q0,z0" {
		t.Errorf("pods alive at the end: %v, want q0 and z0", names)
	}

	// A fresh reader agrees with the long-lived one, and reads every body
	// appended since the compaction as it was appended.
	again, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	for _, rec := range appended {
		got, err := again.Get(ctx, rec.EventID)
		if err != nil || got.IngestSeq != rec.IngestSeq || !bytes.Equal(got.Object, rec.Object) {
			t.Errorf("%s %s: seq %d (appended as %d), body equal %v, %v", rec.Resource.Name, rec.WatchType, got.IngestSeq, rec.IngestSeq, bytes.Equal(got.Object, rec.Object), err)
		}
	}
	longLived, err := reader.Timelines(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	current, err := again.Timelines(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(longLived, current) {
		t.Errorf("the long-lived reader's timelines differ from a fresh reader's:\n%s\n%s", timelineIDs(longLived), timelineIDs(current))
	}
	checkIntegrity(t, path)
}

// timelineIDs lists the sequence numbers and EventIDs of timelines.
func timelineIDs(tls []storage.Timeline) string {
	var b strings.Builder
	for _, tl := range tls {
		fmt.Fprintf(&b, "%s:", tl.StreamID)
		for _, rec := range tl.Records {
			fmt.Fprintf(&b, " %d %s %s", rec.IngestSeq, rec.EventID, rec.BaselineID)
		}
		b.WriteString("; ")
	}
	return b.String()
}

// TestProcessesCreateOneJournal opens a journal that does not exist yet in
// several processes at once: one creates it, the others open what it
// created, and every process's record is kept.
func TestProcessesCreateOneJournal(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/journal.db"
	w := newWorkload(t)
	var procs []*served
	var recs []event.Record
	for i := range 4 {
		procs = append(procs, startServed(t, fmt.Sprintf("process %d", i), path))
		recs = append(recs, objectEvent(w.kinds[2], fmt.Sprintf("cm%d", i), fmt.Sprintf("cm%d-1", i), 0, event.Added, benchStart))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(procs))
	for i, p := range procs {
		wg.Go(func() { _, errs[i] = p.try(serveRequest{Op: "open"}) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range procs {
		p.append(t, recs[i])
		p.do(t, serveRequest{Op: "close"})
	}
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	checkStoredOnce(t, s, map[string][]event.Record{"configmaps": recs})
}
