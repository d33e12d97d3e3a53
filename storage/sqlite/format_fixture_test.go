package sqlite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// The journals under testdata/format (v<N>.db, written by the writer of
// schema version N) are the file format's truth. TestFormatFixtures opens
// a copy of each with today's code, which migrates an older one, and
// compares the answers to every query of the store with v<N>.answers.json.
// A journal of an older version stays checked in forever; a new schema
// version adds its own (see testdata/format/README.md).

// TestFormatFixtures opens a copy of every checked-in journal and compares
// its answers with the golden file; then it checks that today's writer,
// given the same history, writes a journal that answers the same as the
// current version's fixture.
func TestFormatFixtures(t *testing.T) {
	ctx := context.Background()
	currentName := fmt.Sprintf("v%d.db", SchemaVersion)
	if *regenerateFixtures {
		path := filepath.Join(t.TempDir(), currentName)
		if err := writeFormatJournal(ctx, path); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(formatDir, currentName)
		if old, err := os.ReadFile(dst); err == nil && !bytes.Equal(old, data) {
			t.Fatalf("%s exists and today's writer writes other bytes: the format, the fixture's history or the SQLite library changed.\n"+
				"A format change is a new schema version (SchemaVersion, a migration); its fixture is then written next to this one.\n"+
				"To replace the fixture of a version no journal was ever written with, delete %s first.", dst, dst)
		}
		writeGolden(t, dst, data)
	}
	fixtures, err := filepath.Glob(filepath.Join(formatDir, "v*.db"))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(fixtures, filepath.Join(formatDir, currentName)) {
		t.Fatalf("no fixture of the current schema version %d in %s: write it with -regenerate-fixtures (and -update for its answers)", SchemaVersion, formatDir)
	}
	fresh := filepath.Join(t.TempDir(), "fresh.db")
	if err := writeFormatJournal(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	freshSchema := schemaOf(t, fresh)

	for _, fixture := range fixtures {
		name := strings.TrimSuffix(filepath.Base(fixture), ".db")
		version, err := strconv.Atoi(strings.TrimPrefix(name, "v"))
		if err != nil {
			t.Fatalf("fixture %s: want a name v<schema version>.db", fixture)
		}
		t.Run(name, func(t *testing.T) {
			path := copyFixture(t, fixture)
			if got := headerVersion(t, path); got != version {
				t.Fatalf("%s has schema version %d in its header, want %d", fixture, got, version)
			}
			got := fixtureAnswers(t, path)
			checkGolden(t, filepath.Join(formatDir, name+".answers.json"), got)

			// Opening migrated the copy to today's schema: exactly the
			// tables and indexes of a journal written today, and a second
			// Open answers the same.
			if schema := schemaOf(t, path); schema != freshSchema {
				t.Errorf("the schema of %s after Open (- today's writer, + migrated):\n%s", fixture, lineDiff(freshSchema, schema))
			}
			if again := fixtureAnswers(t, path); !bytes.Equal(again, got) {
				t.Errorf("%s answers differently when opened a second time (- first, + second):\n%s", fixture, lineDiff(string(got), string(again)))
			}
		})
	}

	t.Run("today's writer", func(t *testing.T) {
		golden := filepath.Join(formatDir, fmt.Sprintf("v%d.answers.json", SchemaVersion))
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if got := fixtureAnswers(t, fresh); !bytes.Equal(got, want) {
			t.Errorf("a journal written today from the fixture's history answers differently from %s (- fixture, + today);\n"+
				"if the writer changed deliberately, add a new schema version (with a migration) rather than rewriting the fixture:\n%s",
				golden, lineDiff(string(want), string(got)))
		}
	})
}

// TestFormatFixtureContents checks, with SQL on the files themselves, that
// every fixture holds what the format tests claim to cover: every record
// type, every shape of stored body, a compaction, an interrupted baseline.
func TestFormatFixtureContents(t *testing.T) {
	fixtures, err := filepath.Glob(filepath.Join(formatDir, "v*.db"))
	if err != nil || len(fixtures) == 0 {
		t.Fatalf("no fixtures in %s: %v", formatDir, err)
	}
	for _, fixture := range fixtures {
		t.Run(filepath.Base(fixture), func(t *testing.T) {
			db, err := sql.Open(driverName, fileURL(copyFixture(t, fixture))+"?mode=ro")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			// From schema version 4 on, a record's baseline ID is in its
			// baseline column, and an event's meta may be binary.
			baselineOf := func(a string) string { return "json_extract(" + a + ".meta, '$.b')" }
			binaryMetas := 0
			if headerVersion(t, fixture) >= 4 {
				baselineOf = func(a string) string { return a + ".baseline" }
				binaryMetas = 1
			}
			for _, c := range []struct {
				what, query string
				min         int
			}{
				{"record types 1-8", `SELECT count(DISTINCT type) FROM records WHERE type BETWEEN 1 AND 8`, 8},
				{"ADDED, MODIFIED and DELETED events", `SELECT count(DISTINCT watch_type) FROM records WHERE type = 1 AND watch_type IN (1, 2, 3)`, 3},
				{"baseline items", `SELECT count(*) FROM records r WHERE type = 1 AND synthetic = 1 AND ` + baselineOf("r") + ` IS NOT NULL AND ` + metaField("$.inf") + ` IS NULL`, 1},
				{"inferred deletions", `SELECT count(*) FROM records WHERE type = 1 AND watch_type = 3 AND synthetic = 1 AND ` + metaField("$.inf") + ` IS NOT NULL`, 2},
				{"baseline begins without an end", `SELECT count(*) FROM records b WHERE b.type = 2 AND json_extract(b.meta, '$.bl.phase') = 'begin' AND NOT EXISTS
					(SELECT 1 FROM records e WHERE e.type = 2 AND json_extract(e.meta, '$.bl.phase') = 'end' AND ` + baselineOf("e") + ` = ` + baselineOf("b") + `)`, 1},
				{"binary metas", `SELECT count(*) FROM records WHERE substr(CAST(meta AS TEXT), 1, 1) <> '{'`, binaryMetas},
				{"baseline ends closing a gap", `SELECT count(*) FROM records WHERE type = 2 AND json_extract(meta, '$.bl.closesGap') IS NOT NULL`, 1},
				{"synthetic baselines of a compaction", `SELECT count(*) FROM records WHERE type = 2 AND json_extract(meta, '$.bl.reason') = 'compaction'`, 1},
				{"coverage changes to unavailable", `SELECT count(*) FROM records WHERE type = 4 AND json_extract(meta, '$.cov.available') = 0`, 1},
				{"coverage changes to available", `SELECT count(*) FROM records WHERE type = 4 AND json_extract(meta, '$.cov.available') = 1`, 1},
				{"bookmark checkpoints", `SELECT count(*) FROM records WHERE type = 7 AND json_extract(meta, '$.cp.bookmark') = 1`, 1},
				{"text event IDs", `SELECT count(*) FROM records WHERE typeof(event_id) = 'text'`, 1},
				{"16-byte event IDs", `SELECT count(*) FROM records WHERE typeof(event_id) = 'blob' AND length(event_id) = 16`, 1},
				{"times with nanoseconds", `SELECT count(*) FROM records WHERE observed_at % 1000000000 <> 0`, 1},
				{"keyframes", `SELECT count(*) FROM bodies WHERE base IS NULL`, 1},
				{"deltas against the same object's keyframe", `SELECT count(*) FROM bodies d WHERE d.base IS NOT NULL AND EXISTS
					(SELECT 1 FROM records r, records k WHERE r.body = d.id AND k.body = d.base AND k.obj = r.obj)`, 1},
				{"deltas of a new object against another object's keyframe", `SELECT count(*) FROM bodies d WHERE d.base IS NOT NULL AND NOT EXISTS
					(SELECT 1 FROM records r, records k WHERE r.body = d.id AND k.body = d.base AND k.obj = r.obj)`, 1},
				{"a compaction's sequence floor", `SELECT seq_floor FROM totals`, 1},
				{"clusters", `SELECT count(DISTINCT cluster) FROM records`, 2},
			} {
				var n int
				if err := db.QueryRow(c.query).Scan(&n); err != nil {
					t.Fatalf("%s: %v", c.what, err)
				}
				if n < c.min {
					t.Errorf("%s: %d, want at least %d", c.what, n, c.min)
				}
			}
		})
	}
}

// metaField extracts a field of the meta column when it is JSON (NULL
// when it is binary).
func metaField(path string) string {
	return `CASE WHEN substr(CAST(meta AS TEXT), 1, 1) = '{' THEN json_extract(CAST(meta AS TEXT), '` + path + `') END`
}

// copyFixture copies a checked-in file to a temporary directory: the
// tests never open the checked-in files themselves, which Open migrates
// and writes.
func copyFixture(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), filepath.Base(path))
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// headerVersion reads the schema version (user_version) from a database
// file's header, without SQLite.
func headerVersion(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil || len(data) < 100 {
		t.Fatalf("read the header of %s: %v (%d bytes)", path, err, len(data))
	}
	return int(binary.BigEndian.Uint32(data[60:64]))
}

// schemaOf lists a journal's version, application ID, tables and indexes.
func schemaOf(t *testing.T, path string) string {
	t.Helper()
	db, err := sql.Open(driverName, fileURL(path)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version, appID int
	if err := db.QueryRow(`PRAGMA user_version`).Scan(&version); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(`PRAGMA application_id`).Scan(&appID); err != nil {
		t.Fatal(err)
	}
	lines := []string{fmt.Sprintf("user_version %d, application_id %#x", version, appID)}
	rows, err := db.Query(`SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_master
		WHERE type IN ('table', 'index') AND name NOT LIKE 'sqlite_stat%' ORDER BY type, name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var typ, name, table, text string
		if err := rows.Scan(&typ, &name, &table, &text); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("%s %s on %s: %s", typ, name, table, strings.Join(strings.Fields(text), " ")))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(lines, "\n")
}

// fixtureAnswers opens the journal at path and returns its answers.
func fixtureAnswers(t *testing.T, path string) []byte {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open %s: %v", path, err)
	}
	defer func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	return formatAnswers(t, s)
}

// answerSet collects the answers of a journal as named sections of lines.
// Every record an answer returns is checked against the same record as
// the full Records listing returns it (with its body), and written as a
// one-line summary; the full records are in the "records" section, their
// bodies in "bodies".
type answerSet struct {
	t        *testing.T
	ctx      context.Context
	s        *Store
	sections []answerSection
	bySeq    map[int64]event.Record
}

type answerSection struct {
	name  string
	items []any
}

func (a *answerSet) add(section string, items ...any) {
	for i := range a.sections {
		if a.sections[i].name == section {
			a.sections[i].items = append(a.sections[i].items, items...)
			return
		}
	}
	a.sections = append(a.sections, answerSection{name: section, items: items})
}

// marshal writes the sections as one JSON object, one item per line, so
// that a changed answer is a changed line.
func (a *answerSet) marshal() []byte {
	var buf bytes.Buffer
	buf.WriteString("{\n")
	for i, sec := range a.sections {
		fmt.Fprintf(&buf, "%q: [\n", sec.name)
		for j, item := range sec.items {
			var line bytes.Buffer
			enc := json.NewEncoder(&line)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(item); err != nil {
				a.t.Fatal(err)
			}
			buf.WriteString("  ")
			buf.Write(bytes.TrimSuffix(line.Bytes(), []byte("\n")))
			if j < len(sec.items)-1 {
				buf.WriteByte(',')
			}
			buf.WriteByte('\n')
		}
		buf.WriteString("]")
		if i < len(a.sections)-1 {
			buf.WriteByte(',')
		}
		buf.WriteByte('\n')
	}
	buf.WriteString("}\n")
	return buf.Bytes()
}

// series asks a question at every time and adds the answers, a line per
// change: a line "<what> from T: answer" holds from T until the next
// line's time.
func (a *answerSet) series(section, what string, times []time.Time, answer func(time.Time) string) {
	last := ""
	for i, at := range times {
		ans := answer(at)
		if i == 0 || ans != last {
			a.add(section, fmt.Sprintf("%s from %s: %s", what, stamp(at), ans))
		}
		last = ans
	}
}

// summary checks rec against the full listing and returns a one-line
// description of it.
func (a *answerSet) summary(what string, rec event.Record, withBody bool) string {
	a.t.Helper()
	want, ok := a.bySeq[rec.IngestSeq]
	if !ok {
		a.t.Errorf("%s: record #%d is not in the full listing", what, rec.IngestSeq)
	} else {
		if !withBody {
			want.Object = nil
		}
		if w, g := jsonOf(want), jsonOf(rec); w != g {
			a.t.Errorf("%s: record #%d differs from the full listing's:\n want %s\n  got %s", what, rec.IngestSeq, w, g)
		}
	}
	return summarize(rec)
}

func (a *answerSet) summaries(what string, recs []event.Record, withBody bool) string {
	a.t.Helper()
	parts := make([]string, len(recs))
	for i, r := range recs {
		parts[i] = a.summary(what, r, withBody)
	}
	if len(parts) == 0 {
		return "(none)"
	}
	return strings.Join(parts, " | ")
}

// jsonOf is the JSON of a record or a status, for comparisons.
func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// summarize describes a record in one line: its seq, type and what
// identifies it.
func summarize(r event.Record) string {
	s := fmt.Sprintf("#%d %s", r.IngestSeq, r.Type)
	switch r.Type {
	case event.TypeEvent:
		s += fmt.Sprintf(" %s %s/%s uid=%s rv=%s", r.WatchType, r.Resource.Namespace, r.Resource.Name, r.Resource.UID, r.Resource.ResourceVersion)
		if r.Synthetic {
			s += " synthetic"
		}
		if r.Inferred != nil {
			s += " inferred"
		}
	case event.TypeBaseline:
		if r.Baseline != nil {
			s += fmt.Sprintf(" %s %s", r.Baseline.Phase, r.Baseline.ID)
		}
	case event.TypeCheckpoint:
		if r.Checkpoint != nil {
			s += " rv=" + r.Checkpoint.ResourceVersion
		}
	case event.TypeCoverageChange:
		if r.Coverage != nil {
			s += fmt.Sprintf(" available=%t", r.Coverage.Available)
		}
	case event.TypeSnapshot, event.TypePlan:
		if r.Saved != nil {
			s += " " + r.Saved.ID
		}
	case event.TypeAuditCorrelation:
		if r.Audit != nil {
			s += " " + r.Audit.AuditID
		}
	}
	return s + " @" + stamp(r.ObservedAt)
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "zero"
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// errClass names an error by the sentinel it wraps, which is the part of
// an error the Reader contract fixes.
func errClass(err error) string {
	for _, e := range []error{storage.ErrNotFound, storage.ErrInvalidQuery, storage.ErrInvalidRecord, storage.ErrClosed, storage.ErrIncompatible} {
		if errors.Is(err, e) {
			return "error: " + strings.TrimPrefix(e.Error(), "storage: ")
		}
	}
	return "error: " + err.Error()
}

// goldenRecord is a record of the "records" section: its body is in the
// "bodies" section, named by its SHA-256 as read.
type goldenRecord struct {
	event.Record
	Body string `json:"body,omitempty"`
}

func bodySum(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// formatAnswers asks s every question of the store's interfaces about the
// objects, streams and times found in it, and returns the answers.
func formatAnswers(t *testing.T, s *Store) []byte {
	t.Helper()
	a := &answerSet{t: t, ctx: context.Background(), s: s, bySeq: map[int64]event.Record{}}
	ctx := a.ctx
	fail := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	// Every record, with its body, in IngestSeq order.
	var all []event.Record
	for q := (storage.Query{Limit: 1000}); ; {
		page, err := s.Records(ctx, q)
		fail("Records", err)
		all = append(all, page.Records...)
		if page.Next == "" {
			break
		}
		q.Cursor = page.Next
	}
	bodies := map[string]string{}
	var bodyOrder []string
	for _, r := range all {
		a.bySeq[r.IngestSeq] = r
		g := goldenRecord{Record: r, Body: bodySum(r.Object)}
		g.Object = nil
		a.add("records", g)
		if g.Body != "" {
			if _, ok := bodies[g.Body]; !ok {
				bodyOrder = append(bodyOrder, g.Body)
			}
			bodies[g.Body] = string(r.Object)
			if r.ObjectHash != g.Body {
				t.Errorf("record #%d: body read has SHA-256 %s, ObjectHash %s", r.IngestSeq, g.Body, r.ObjectHash)
			}
		}
	}
	for _, sum := range bodyOrder {
		a.add("bodies", sum+" "+bodies[sum])
	}

	// Stats, without the file's size, which SQLite decides.
	st, err := s.Stats(ctx)
	fail("Stats", err)
	st.FileBytes = 0
	st.UsedBytes = 0
	a.add("stats", st)

	// Streams and their status.
	streams, err := s.Streams(ctx, "")
	fail("Streams", err)
	clusters := map[string]bool{}
	for _, r := range all {
		clusters[r.ClusterID] = true
	}
	var streamIDs []string
	for _, ss := range streams {
		a.add("streams", ss)
		streamIDs = append(streamIDs, ss.StreamID)
		one, err := s.StreamStatus(ctx, ss.StreamID)
		fail("StreamStatus", err)
		if jsonOf(one) != jsonOf(ss) {
			t.Errorf("StreamStatus(%s) = %+v, Streams says %+v", ss.StreamID, one, ss)
		}
	}
	clusterIDs := slices.Sorted(func(yield func(string) bool) {
		for c := range clusters {
			if !yield(c) {
				return
			}
		}
	})
	for _, c := range append(slices.Clone(clusterIDs), "no-such-cluster") {
		ss, err := s.Streams(ctx, c)
		fail("Streams", err)
		ids := make([]string, len(ss))
		for i := range ss {
			ids[i] = ss[i].StreamID
		}
		a.add("streams by cluster", fmt.Sprintf("%s: %s", c, strings.Join(ids, " ")))
	}
	_, err = s.StreamStatus(ctx, "c1/core/v1/pods")
	a.add("streams by cluster", "StreamStatus(c1/core/v1/pods): "+errClass(err))

	// Timelines.
	for _, c := range append([]string{""}, append(slices.Clone(clusterIDs), "no-such-cluster")...) {
		tls, err := s.Timelines(ctx, c)
		fail("Timelines", err)
		if len(tls) == 0 {
			a.add("timelines", fmt.Sprintf("cluster %q: (none)", c))
		}
		for _, tl := range tls {
			a.add("timelines", fmt.Sprintf("cluster %q: %s: %s", c, tl.StreamID, a.summaries("Timelines", tl.Records, false)))
		}
	}

	// Get: every record; an unknown ID; a hex ID in upper case.
	for _, r := range all {
		got, err := s.Get(ctx, r.EventID)
		fail("Get "+r.EventID, err)
		a.summary("Get", got, true)
	}
	for _, id := range []string{"0123456789abcdef0123456789abcdef", "no-such-id", strings.ToUpper(all[len(all)-1].EventID)} {
		_, err := s.Get(ctx, id)
		a.add("get", fmt.Sprintf("%s: %s", id, errClass(err)))
	}

	// The times asked about: every ObservedAt, a nanosecond before each,
	// and times before and after the journal.
	var times []time.Time
	for _, r := range all {
		times = append(times, r.ObservedAt, r.ObservedAt.Add(-time.Nanosecond))
	}
	slices.SortFunc(times, func(x, y time.Time) int { return x.Compare(y) })
	times = slices.CompactFunc(times, time.Time.Equal)
	mid := times[len(times)/2]
	times = append([]time.Time{times[1].Add(-time.Hour)}, append(times, times[len(times)-1].Add(time.Hour))...)

	// Records with filters, page by page.
	records := func(name string, q storage.Query) {
		t.Helper()
		var pages []string
		for i := 0; ; i++ {
			page, err := s.Records(ctx, q)
			if err != nil {
				pages = append(pages, errClass(err))
				break
			}
			pages = append(pages, a.summaries("Records "+name, page.Records, !q.WithoutBodies))
			if page.Next == "" {
				break
			}
			if i > len(all) {
				t.Fatalf("Records %s: more pages than records", name)
			}
			q.Cursor = page.Next
		}
		a.add("records queries", name)
		for i, p := range pages {
			a.add("records queries", fmt.Sprintf("  page %d: %s", i+1, p))
		}
	}
	records("all, pages of 7", storage.Query{Limit: 7})
	records("all, descending, pages of 9, without bodies", storage.Query{Limit: 9, Descending: true, WithoutBodies: true})
	for _, c := range clusterIDs {
		records("cluster "+c, storage.Query{ClusterID: c})
	}
	for _, id := range streamIDs {
		records("stream "+id, storage.Query{StreamID: id})
		records("stream "+id+", until "+stamp(mid)+", descending, 2", storage.Query{StreamID: id, Until: mid, Descending: true, Limit: 2})
		records("stream "+id+", timeline types", storage.Query{StreamID: id, Types: storage.TimelineTypes, WithoutBodies: true})
	}
	for _, types := range [][]event.RecordType{
		{event.TypeBaseline}, {event.TypeGap, event.TypeCoverageChange}, {event.TypeCheckpoint},
		{event.TypeAuditCorrelation}, {event.TypeSnapshot, event.TypePlan}, {event.TypeEvent},
	} {
		records(fmt.Sprintf("types %v", types), storage.Query{Types: types, Limit: 5})
	}
	records("since "+stamp(mid), storage.Query{Since: mid})
	records("until "+stamp(mid)+", descending", storage.Query{Until: mid, Descending: true})
	records("after seq 5, before seq 15", storage.Query{AfterSeq: 5, BeforeSeq: 15})
	records("a cursor no page returned", storage.Query{Cursor: "not-a-cursor"})

	// Objects: every object of an event record.
	var objects []storage.ObjectID
	objStream := map[storage.ObjectID]string{}
	for _, r := range all {
		if r.IsObjectChange() {
			obj := storage.ObjectIDOf(r)
			if _, ok := objStream[obj]; !ok {
				objects = append(objects, obj)
			}
			objStream[obj] = r.StreamID
		}
	}
	objects = append(objects, storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: "no-such-object"})
	for _, obj := range objects {
		name := objectLabel(obj)
		for _, h := range []struct {
			what string
			q    storage.HistoryQuery
		}{
			{"all", storage.HistoryQuery{}},
			{"since " + stamp(mid), storage.HistoryQuery{Since: mid}},
			{"until " + stamp(mid), storage.HistoryQuery{Until: mid}},
			{"limit 2, without bodies", storage.HistoryQuery{Limit: 2, WithoutBodies: true}},
			{"stream " + objStream[obj], storage.HistoryQuery{StreamID: objStream[obj]}},
			{"another stream", storage.HistoryQuery{StreamID: "c1/core/v1/pods"}},
		} {
			recs, err := s.ObjectHistory(ctx, obj, h.q)
			answer := ""
			if err != nil {
				answer = errClass(err)
			} else {
				answer = a.summaries("ObjectHistory", recs, !h.q.WithoutBodies)
			}
			a.add("object history", fmt.Sprintf("%s, %s: %s", name, h.what, answer))
		}
		a.series("latest at", name, times, func(at time.Time) string {
			rec, err := s.LatestAt(ctx, obj, at)
			if err != nil {
				return errClass(err)
			}
			return a.summary("LatestAt", rec, true)
		})
	}

	// EventByResourceVersion: every object change, by its UID, without
	// one, and with another.
	seen := map[string]bool{}
	for _, r := range all {
		if !r.IsObjectChange() {
			continue
		}
		obj := storage.ObjectIDOf(r)
		for _, uid := range []string{r.Resource.UID, "", "no-such-uid"} {
			key := fmt.Sprintf("%s uid=%q rv=%s", objectLabel(obj), uid, r.Resource.ResourceVersion)
			if seen[key] {
				continue
			}
			seen[key] = true
			rec, err := s.EventByResourceVersion(ctx, obj, uid, r.Resource.ResourceVersion)
			answer := ""
			if err != nil {
				answer = errClass(err)
			} else {
				answer = a.summary("EventByResourceVersion", rec, true)
			}
			a.add("event by resource version", key+": "+answer)
		}
	}

	// AliveAt by stream, cluster, namespace and resource.
	scopes := []storage.AliveQuery{}
	for _, id := range streamIDs {
		scopes = append(scopes, storage.AliveQuery{StreamID: id})
	}
	for _, c := range clusterIDs {
		scopes = append(scopes, storage.AliveQuery{ClusterID: c})
	}
	for _, obj := range objects[:len(objects)-1] {
		ns := storage.AliveQuery{ClusterID: obj.ClusterID, Namespace: obj.Namespace}
		res := storage.AliveQuery{ClusterID: obj.ClusterID, Group: obj.Group, Resource: obj.Resource}
		for _, q := range []storage.AliveQuery{ns, res} {
			if !slices.Contains(scopes, q) {
				scopes = append(scopes, q)
			}
		}
	}
	for _, q := range scopes {
		var parts []string
		for _, f := range [][2]string{{"stream", q.StreamID}, {"cluster", q.ClusterID}, {"namespace", q.Namespace}, {"group", q.Group}, {"resource", q.Resource}} {
			if f[1] != "" {
				parts = append(parts, f[0]+" "+f[1])
			}
		}
		scope := strings.Join(parts, ", ")
		a.series("alive at", scope, times, func(at time.Time) string {
			q.At = at
			recs, err := s.AliveAt(ctx, q)
			fail("AliveAt", err)
			q.WithoutBodies = true
			bare, err := s.AliveAt(ctx, q)
			fail("AliveAt", err)
			q.WithoutBodies = false
			answer := a.summaries("AliveAt", recs, true)
			if other := a.summaries("AliveAt without bodies", bare, false); other != answer {
				t.Errorf("AliveAt %s at %s: %s with bodies, %s without", scope, stamp(at), answer, other)
			}
			return answer
		})
	}

	// Correlations of every event ID (and of an unknown one).
	var ids []string
	for _, r := range all {
		ids = append(ids, r.EventID)
	}
	corr, err := s.Correlations(ctx, append(ids, "0123456789abcdef0123456789abcdef"))
	fail("Correlations", err)
	for _, r := range all {
		if c, ok := corr[r.EventID]; ok {
			a.add("correlations", fmt.Sprintf("%s <- %s", summarize(r), a.summaries("Correlations", c, true)))
		}
	}
	a.add("correlations", fmt.Sprintf("%d event IDs have correlations", len(corr)))

	// Watermark and coverage of every stream at every time.
	for _, id := range append(slices.Clone(streamIDs), "c1/core/v1/pods") {
		a.series("coverage", id, times, func(at time.Time) string {
			rv, rvAt, err := s.Watermark(ctx, id, at)
			fail("Watermark", err)
			cov, err := storage.CoverageAt(ctx, s, id, at)
			fail("CoverageAt", err)
			if cov.Watermark != rv || !cov.WatermarkAt.Equal(rvAt) {
				t.Errorf("%s at %s: Watermark %q @%s, CoverageAt's %q @%s", id, stamp(at), rv, stamp(rvAt), cov.Watermark, stamp(cov.WatermarkAt))
			}
			line := fmt.Sprintf("watermark %q @%s, ", rv, stamp(rvAt))
			if cov.Covered {
				line += fmt.Sprintf("covered by %s (ended %s)", cov.BaselineID, stamp(cov.BaselineEndAt))
			} else {
				line += fmt.Sprintf("not covered: %s; baseline %q (ended %s); breaks: %s", cov.Reason, cov.BaselineID, stamp(cov.BaselineEndAt), a.summaries("CoverageAt", cov.Gaps, false))
			}
			return line
		})
	}
	return a.marshal()
}

// objectLabel names an object in the answers.
func objectLabel(obj storage.ObjectID) string {
	return fmt.Sprintf("%s/%s/%s/%s/%s", obj.ClusterID, obj.Group, obj.Resource, obj.Namespace, obj.Name)
}
