// Package transfertest checks that a journal survives an export and an
// import query by query, for any backend: a backend's tests call
// RoundTrip with a recorded journal and fresh stores of their own kind.
package transfertest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/cputime"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/transfer"
)

// RoundTrip exports src and imports the export into stores[0], exports
// that and imports it into stores[1], and so on (each store empty at the
// start), and fails t unless: every export is byte for byte the first;
// every store gives the same Answers as src; and importing the same
// export into a store a second time stores nothing and changes no answer.
// It returns the first export.
func RoundTrip(t testing.TB, src storage.ReadWriter, stores ...storage.ReadWriter) []byte {
	t.Helper()
	ctx := context.Background()
	want := Answers(t, src)
	var first bytes.Buffer
	if _, err := transfer.Export(ctx, src, &first); err != nil {
		t.Fatalf("export the source: %v", err)
	}
	prev := first.Bytes()
	for i, st := range stores {
		res, err := transfer.Import(ctx, bytes.NewReader(prev), st)
		if err != nil {
			t.Fatalf("import into store %d: %v", i+1, err)
		}
		if res.Duplicates != 0 || res.Inserted != res.Records {
			t.Fatalf("import into the empty store %d: %+v, want every record inserted", i+1, res)
		}
		SameAnswers(t, fmt.Sprintf("store %d after import", i+1), want, Answers(t, st))
		again, err := transfer.Import(ctx, bytes.NewReader(prev), st)
		if err != nil {
			t.Fatalf("second import into store %d: %v", i+1, err)
		}
		if again.Inserted != 0 || again.Duplicates != res.Records {
			t.Fatalf("second import into store %d: %+v, want all %d records duplicates", i+1, again, res.Records)
		}
		SameAnswers(t, fmt.Sprintf("store %d after a second import", i+1), want, Answers(t, st))
		var out bytes.Buffer
		if _, err := transfer.Export(ctx, st, &out); err != nil {
			t.Fatalf("export store %d: %v", i+1, err)
		}
		if !bytes.Equal(out.Bytes(), first.Bytes()) {
			t.Fatalf("the export of store %d differs from the source's:\n%s", i+1, firstDifference(first.Bytes(), out.Bytes()))
		}
		prev = out.Bytes()
	}
	return first.Bytes()
}

// SameAnswers fails t with the first answer that differs.
func SameAnswers(t testing.TB, what string, want, got []string) {
	t.Helper()
	for i := range min(len(want), len(got)) {
		if want[i] != got[i] {
			t.Fatalf("%s: answer %d of %d differs:\nwant %s\n got %s", what, i+1, len(want), want[i], got[i])
		}
	}
	if len(want) != len(got) {
		t.Fatalf("%s: %d answers, want %d", what, len(got), len(want))
	}
}

func firstDifference(a, b []byte) string {
	al, bl := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range min(len(al), len(bl)) {
		if !bytes.Equal(al[i], bl[i]) {
			return fmt.Sprintf("line %d:\nwant %s\n got %s", i+1, al[i], bl[i])
		}
	}
	return fmt.Sprintf("%d lines, want %d", len(bl), len(al))
}

// MaxTimes bounds the number of times Answers asks about.
const MaxTimes = 60

// Answers returns every answer the journal gives, one per line, in an
// order that does not depend on the backend: every record with its body's
// SHA-256, the stream statuses, the counts of records and events (not
// those of bodies and bytes, which are the backend's: SQLite keeps a body
// no record uses after a Compact), each stream's timeline, evidence, and
// coverage and live objects at each time below, and,
// through a materialize.Materializer, the history of every object and,
// at times chosen from the journal (each record's and payload's time and
// the nanosecond before, at most MaxTimes of them spread evenly), every
// object's state, every cluster's snapshot and the diffs between
// consecutive times; the saved snapshots; the audit correlations and the
// record of each version. Sequence numbers are given as ranks ("#3" is
// the third record), so a journal that numbers its records differently
// in the same order answers the same.
func Answers(t testing.TB, j storage.ReadWriter) []string {
	t.Helper()
	ctx := context.Background()
	a := &answers{t: t, ranks: map[int64]int{}}
	fail := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("answers: %s: %v", what, err)
		}
	}
	var all []event.Record
	for q := (storage.Query{Limit: 1000}); ; {
		page, err := j.Records(ctx, q)
		fail("Records", err)
		all = append(all, page.Records...)
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	for i, r := range all {
		a.ranks[r.IngestSeq] = i + 1
	}
	objects := map[storage.ObjectID]bool{}
	clusters := map[string]bool{}
	var times []time.Time
	var eventIDs []string
	for _, r := range all {
		body := ""
		if r.Object != nil {
			body = fmt.Sprintf("%x", sha256.Sum256(r.Object))
		}
		r.Object = nil
		a.add("record", r, "body", body)
		eventIDs = append(eventIDs, r.EventID)
		if r.ClusterID != "" {
			clusters[r.ClusterID] = true
		}
		if r.IsObjectChange() {
			objects[storage.ObjectIDOf(r)] = true
			got, err := j.EventByResourceVersion(ctx, storage.ObjectIDOf(r), r.Resource.UID, r.Resource.ResourceVersion)
			a.add("EventByResourceVersion", r.EventID, got.EventID, errText(err))
		}
		times = append(times, r.ObservedAt)
		if r.Gap != nil {
			times = append(times, r.Gap.From, r.Gap.To)
		}
		if r.Inferred != nil {
			times = append(times, r.Inferred.From, r.Inferred.To)
		}
	}
	times = pickTimes(times)

	st, err := j.Stats(ctx)
	fail("Stats", err)
	a.add("stats", "records", st.Records, "events", st.Events)
	streams, err := j.Streams(ctx, "")
	fail("Streams", err)
	for _, s := range streams {
		a.add("stream", s)
		one, err := j.StreamStatus(ctx, s.StreamID)
		a.add("StreamStatus", one, errText(err))
		tl, err := storage.StreamTimeline(ctx, j, s.StreamID)
		a.add("timeline", tl, errText(err))
		ev, err := storage.StreamEvidence(ctx, j, s.StreamID)
		a.add("evidence", ev, errText(err))
		for _, at := range times {
			c, err := storage.CoverageAt(ctx, j, s.StreamID, at)
			a.add("CoverageAt", c, errText(err))
			alive, err := j.AliveAt(ctx, storage.AliveQuery{StreamID: s.StreamID, At: at, WithoutBodies: true})
			a.add("AliveAt", s.StreamID, at, alive, errText(err))
		}
	}
	clusterIDs := slices.Sorted(maps.Keys(clusters))
	for _, c := range clusterIDs {
		ss, err := j.Streams(ctx, c)
		fail("Streams", err)
		a.add("streams of", c, len(ss))
	}
	corrs, err := j.Correlations(ctx, eventIDs)
	fail("Correlations", err)
	for _, id := range slices.Sorted(maps.Keys(corrs)) {
		a.add("correlations", id, corrs[id])
	}

	at0 := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	m, err := materialize.New(j, materialize.WithClock(clock.PassiveClock(clocktesting.NewFakePassiveClock(at0))),
		materialize.WithIDGenerator(func() string { return "id" }))
	fail("materialize.New", err)
	objs := slices.SortedFunc(maps.Keys(objects), func(x, y storage.ObjectID) int {
		return strings.Compare(fmt.Sprint(x), fmt.Sprint(y))
	})
	for _, obj := range objs {
		h, err := m.History(ctx, obj)
		a.add("History", obj, h, errText(err))
		for _, at := range times {
			s, err := m.ObjectAt(ctx, obj, at)
			a.add("ObjectAt", s, errText(err))
		}
	}
	for _, c := range clusterIDs {
		scope := materialize.Scope{ClusterID: c}
		for i, at := range times {
			s, err := m.Snapshot(ctx, scope, at)
			a.add("Snapshot", s, errText(err))
			if i > 0 {
				d, err := m.Diff(ctx, scope, times[i-1], at)
				a.add("Diff", d, errText(err))
			}
		}
		saved, err := m.ListSnapshots(ctx, c)
		a.add("ListSnapshots", saved, errText(err))
		for _, s := range saved {
			got, err := m.GetSnapshot(ctx, s.ID)
			a.add("GetSnapshot", got, errText(err))
		}
	}
	return a.lines
}

// pickTimes sorts and de-duplicates times, keeps at most MaxTimes/2 of
// them spread evenly, and adds the nanosecond before each.
func pickTimes(in []time.Time) []time.Time {
	sort.Slice(in, func(i, k int) bool { return in[i].Before(in[k]) })
	in = slices.CompactFunc(in, func(x, y time.Time) bool { return x.Equal(y) })
	if n := MaxTimes / 2; len(in) > n {
		picked := make([]time.Time, 0, n)
		for i := range n {
			picked = append(picked, in[i*(len(in)-1)/(n-1)])
		}
		in = picked
	}
	var out []time.Time
	for _, t := range in {
		out = append(out, t.Add(-time.Nanosecond), t)
	}
	return out
}

type answers struct {
	t     testing.TB
	ranks map[int64]int
	lines []string
}

var seqField = regexp.MustCompile(`"(ingestSeq|lastSeq)":(\d+)`)

// add appends one answer: what, and the JSON of each value, with
// sequence numbers as ranks.
func (a *answers) add(what string, values ...any) {
	a.t.Helper()
	parts := []string{what}
	for _, v := range values {
		data, err := json.Marshal(v)
		if err != nil {
			a.t.Fatalf("answers: %s: %v", what, err)
		}
		parts = append(parts, seqField.ReplaceAllStringFunc(string(data), func(m string) string {
			sub := seqField.FindStringSubmatch(m)
			seq, _ := strconv.ParseInt(sub[2], 10, 64)
			rank, ok := a.ranks[seq]
			if !ok {
				return fmt.Sprintf(`"%s":"not a record's: %d"`, sub[1], seq)
			}
			return fmt.Sprintf(`"%s":"#%d"`, sub[1], rank)
		}))
	}
	a.lines = append(a.lines, strings.Join(parts, " "))
}

func errText(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, storage.ErrNotFound):
		return "error: not found" // the message names the backend
	}
	return "error: " + err.Error()
}

// Bench runs fn as the sub-benchmark name of b and reports the records moved
// per second, the process's CPU time per record and the bytes per record;
// every run of fn must move n records. The transfer benchmarks of every
// backend report the same metrics through it.
func Bench(b *testing.B, name string, n int, fn func(b *testing.B) transfer.Result) {
	b.Run(name, func(b *testing.B) {
		var res transfer.Result
		cpu0, t0 := cputime.Process(), time.Now()
		for range b.N {
			res = fn(b)
		}
		wall, cpu := time.Since(t0), cputime.Process()-cpu0
		if res.Records != int64(n) {
			b.Fatalf("%d records, want %d", res.Records, n)
		}
		records := float64(res.Records) * float64(b.N)
		b.ReportMetric(records/wall.Seconds(), "records/s")
		b.ReportMetric(float64(cpu.Microseconds())/records, "µs-CPU/record")
		b.ReportMetric(float64(res.Bytes)/float64(res.Records), "B/record")
	})
}
