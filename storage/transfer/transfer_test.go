package transfer_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/storagetest"
	"github.com/krply/krply/storage/transfer"
	"github.com/krply/krply/storage/transfer/transfertest"
)

var (
	cmShop = event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	deploy = event.Stream{ClusterID: "c1", Group: "apps", Version: "v1", Resource: "deployments", Namespace: "shop"}
	cmC2   = event.Stream{ClusterID: "c2", Version: "v1", Resource: "configmaps"}
	t0     = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// handJournal appends a journal with every record type, a gap closed by a
// relist with an inferred deletion, an open baseline, a coverage change,
// bodies that cannot be embedded as they are (indented, HTML characters,
// not JSON), and a second cluster.
func handJournal(t *testing.T, s storage.ReadWriter) {
	t.Helper()
	ctx := context.Background()
	a := storagetest.ConfigMap("shop", "a", "ua", "10", map[string]string{"k": "<&>"})
	b := storagetest.ConfigMap("shop", "b", "ub", "11", map[string]string{"k": "v"})
	refA := storagetest.Ref(cmShop, "ConfigMap", "shop", "a", "ua", "10")
	refB := storagetest.Ref(cmShop, "ConfigMap", "shop", "b", "ub", "11")
	var recs []event.Record
	recs = append(recs, storagetest.Baseline(cmShop, "b1", at(0), "11", []storagetest.Item{{Ref: refA, Object: a}, {Ref: refB, Object: b}})...)
	a2 := storagetest.ConfigMap("shop", "a", "ua", "12", map[string]string{"k": "v2"})
	refA2 := storagetest.Ref(cmShop, "ConfigMap", "shop", "a", "ua", "12")
	eA2 := storagetest.Event(cmShop, event.Modified, refA2, a2, at(5))
	recs = append(recs, eA2, storagetest.Checkpoint(cmShop, "13", true, at(10)))
	recs = append(recs, storagetest.CoverageChange(cmShop, false, "403 Forbidden", 403, at(12)),
		storagetest.CoverageChange(cmShop, true, "coverage restored", 0, at(15)))
	recs = append(recs, storagetest.Gap(cmShop, at(10), at(20), "410 Gone: too old resource version", "13"))
	relist := storagetest.BaselineBegin(cmShop, "b2", at(21), []storagetest.Item{{Ref: refA2, Object: a2}})
	end := storagetest.BaselineEnd(cmShop, "b2", at(21), "30", 1)
	end.Baseline.ClosesGap = recs[len(recs)-1].EventID
	recs = append(recs, relist...)
	// The collector appends the end, then the deletions it infers, in one batch.
	recs = append(recs, end, storagetest.InferredDelete(cmShop, recs[2], at(10), at(21), "b2"))
	recs = append(recs, storagetest.Checkpoint(cmShop, "31", false, at(25)))

	d := storagetest.Deployment("shop", "web", "uw", "5", 2, "nginx:1.27")
	refD := storagetest.Ref(deploy, "Deployment", "shop", "web", "uw", "5")
	recs = append(recs, storagetest.Baseline(deploy, "d1", at(1), "5", []storagetest.Item{{Ref: refD, Object: d}})...)
	recs = append(recs, storagetest.BaselineBegin(deploy, "d2", at(30), []storagetest.Item{{Ref: refD, Object: d}})...)

	other := storagetest.ConfigMap("default", "x", "ux", "3", nil)
	refO := storagetest.Ref(cmC2, "ConfigMap", "default", "x", "ux", "3")
	recs = append(recs, storagetest.Baseline(cmC2, "o1", at(2), "3", []storagetest.Item{{Ref: refO, Object: other}})...)

	recs = append(recs, storagetest.Correlation(eA2, "audit-1", "alice", at(6)))
	recs = append(recs, storagetest.Document(event.TypeSnapshot, "c1", "snap-1", "before", at(4), true,
		[]byte("{\n  \"items\": [],\n  \"note\": \"indented\"\n}")))
	recs = append(recs, storagetest.Document(event.TypePlan, "", "plan-1", "plan", at(7), false, []byte(" not JSON \xff")))
	// Appended in the order of time, as recorders write (a stable sort
	// keeps a baseline's end before the deletions inferred from it).
	sort.SliceStable(recs, func(i, k int) bool { return recs[i].ObservedAt.Before(recs[k].ObservedAt) })
	if _, err := s.Append(ctx, recs); err != nil {
		t.Fatal(err)
	}
}

func openSQLite(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// memory → NDJSON → SQLite → NDJSON → memory answers every query the same,
// and the exports are byte for byte the same.
func TestRoundTripHandJournal(t *testing.T) {
	src := memory.New()
	handJournal(t, src)
	out := transfertest.RoundTrip(t, src, openSQLite(t), memory.New())
	if !bytes.Contains(out, []byte(`"objectBase64":`)) || !bytes.Contains(out, []byte(`\u003c\u0026\u003e`)) {
		t.Errorf("the export should carry the indented and the non-JSON bodies in base64, the others as they are:\n%s", out)
	}
}

func export(t *testing.T, r storage.Reader, opts ...transfer.ExportOption) []byte {
	t.Helper()
	var buf bytes.Buffer
	if _, err := transfer.Export(context.Background(), r, &buf, opts...); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func lines(data []byte) []string {
	out := strings.SplitAfter(string(data), "\n")
	return out[:len(out)-1]
}

func countRecords(t *testing.T, r storage.Reader) int {
	t.Helper()
	page, err := r.Records(context.Background(), storage.Query{Limit: 10000, WithoutBodies: true})
	if err != nil {
		t.Fatal(err)
	}
	return len(page.Records)
}

// A stream cut short or corrupted fails with the number of the line at
// fault, stores no record of that line's batch (only whole batches
// before it), and a later import of the whole stream completes the
// journal without duplicates.
func TestBrokenStreams(t *testing.T) {
	src := memory.New()
	handJournal(t, src)
	good := export(t, src)
	ls := lines(good)
	n := len(ls) // header, records, streams, trailer
	records := countRecords(t, src)
	if n != 1+records+3+1 {
		t.Fatalf("%d lines for %d records and 3 streams", n, records)
	}
	join := func(parts ...[]string) []byte {
		var b strings.Builder
		for _, p := range parts {
			for _, l := range p {
				b.WriteString(l)
			}
		}
		return []byte(b.String())
	}
	replace := func(i int, with string) []byte {
		c := append([]string(nil), ls...)
		c[i-1] = with
		return join(c)
	}
	const batch = 4
	cases := []struct {
		name string
		data []byte
		line int64
		want string
	}{
		{"empty", nil, 1, "empty"},
		{"not an export", []byte("{\"type\":\"event\"}\n"), 1, "not the header"},
		{"newer version", replace(1, strings.Replace(ls[0], `"version":1`, `"version":2`, 1)), 1, "newer than this krply reads"},
		{"cut inside a line", good[:len(join(ls[:9]))+20], 10, "without a newline"},
		{"cut after a line", join(ls[:9]), 10, "without its trailer"},
		{"no trailer", join(ls[:n-1]), int64(n), "without its trailer"},
		{"not JSON", replace(7, "{\"type\":\"event\",\n"), 7, "not a line of an export"},
		{"unknown key", replace(7, strings.Replace(ls[6], `{"type"`, `{"colour":1,"type"`, 1)), 7, "unknown field"},
		{"body changed", replace(3, strings.Replace(ls[2], `"k":"\u003c`, `"k":"\u003e`, 1)), 3, "does not match its objectHash"},
		{"invalid record", replace(6, strings.Replace(ls[5], `"eventID":"`, `"eventID":"","x":"`, 1)), 6, "unknown field"},
		{"ingestSeq", replace(6, strings.Replace(ls[5], `{"type"`, `{"ingestSeq":9,"type"`, 1)), 6, "ingestSeq"},
		{"record after streams", join(ls[:n-2], []string{ls[5]}, ls[n-2:]), int64(n - 1), "records come first"},
		{"wrong count", replace(n, strings.Replace(ls[n-1], `"streams":3`, `"streams":4`, 1)), int64(n), "trailer counts"},
		{"after the trailer", join(ls, []string{ls[1]}), int64(n + 1), "after the trailer"},
		{"two headers", replace(2, ls[0]), 2, "second header"},
		{"version not a number", replace(1, strings.Replace(ls[0], `"version":1`, `"version":"1"`, 1)), 1, `"krplyExport.version" is a string, want an integer`},
		{"key of the wrong kind", replace(6, strings.Replace(ls[5], `"clusterID":"c1"`, `"clusterID":7`, 1)), 6, `"clusterID" is a number, want a string`},
		{"not a time", replace(6, strings.Replace(ls[5], `"observedAt":"2026`, `"observedAt":"x2026`, 1)), 6, "not RFC 3339"},
		{"no eventID", replace(6, regexp.MustCompile(`"eventID":"[^"]+"`).ReplaceAllString(ls[5], `"eventID":""`)), 6, "empty eventID"},
	}
	// Messages name the keys of the line, never the Go fields they decode into.
	goNames := regexp.MustCompile(`Go struct|Record\.|\b(EventID|ObservedAt|ClusterID|ObjectHash)\b`)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := transfer.Verify(context.Background(), bytes.NewReader(tc.data)); !errors.Is(err, transfer.ErrInvalidStream) {
				t.Errorf("Verify: %v, want ErrInvalidStream", err)
			}
			dst := memory.New()
			res, err := transfer.Import(context.Background(), bytes.NewReader(tc.data), dst, transfer.WithBatchSize(batch))
			var le *transfer.LineError
			if !errors.As(err, &le) || !errors.Is(err, transfer.ErrInvalidStream) {
				t.Fatalf("Import: %v, want a *LineError wrapping ErrInvalidStream", err)
			}
			if le.Line != tc.line || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Import: %v (line %d), want line %d and %q", err, le.Line, tc.line, tc.want)
			}
			if m := goNames.FindString(err.Error()); m != "" {
				t.Errorf("Import: %v: names the Go field %q", err, m)
			}
			stored := countRecords(t, dst)
			if int64(stored) != le.Records || stored%batch != 0 || res.Inserted != int64(stored) {
				t.Errorf("%d records stored, the error says %d, the result %+v: want whole batches of %d", stored, le.Records, res, batch)
			}
			if stored >= int(tc.line)-1 && tc.line > 1 {
				t.Errorf("%d records stored: the batch of line %d is in", stored, tc.line)
			}
			full, err := transfer.Import(context.Background(), bytes.NewReader(good), dst)
			if err != nil {
				t.Fatal(err)
			}
			if full.Duplicates != int64(stored) || full.Inserted != int64(records-stored) {
				t.Errorf("the full import after the broken one: %+v, want %d duplicates and %d inserted", full, stored, records-stored)
			}
			transfertest.SameAnswers(t, "after the full import", transfertest.Answers(t, src), transfertest.Answers(t, dst))
		})
	}
}

// Export, Import and Verify report the time range of the records.
func TestResultTimeRange(t *testing.T) {
	ctx := context.Background()
	src := memory.New()
	handJournal(t, src)
	var buf bytes.Buffer
	exported, err := transfer.Export(ctx, src, &buf)
	if err != nil {
		t.Fatal(err)
	}
	verified, err := transfer.Verify(ctx, bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	imported, err := transfer.Import(ctx, bytes.NewReader(buf.Bytes()), memory.New())
	if err != nil {
		t.Fatal(err)
	}
	for name, res := range map[string]transfer.Result{"Export": exported, "Verify": verified, "Import": imported} {
		if !res.FirstObservedAt.Equal(at(0)) || !res.LastObservedAt.Equal(at(30)) {
			t.Errorf("%s: records observed from %s to %s, want %s to %s", name, res.FirstObservedAt, res.LastObservedAt, at(0), at(30))
		}
	}
	empty, err := transfer.Export(ctx, memory.New(), &buf)
	if err != nil || !empty.FirstObservedAt.IsZero() || !empty.LastObservedAt.IsZero() {
		t.Errorf("export of an empty journal: %+v, %v: want no time range", empty, err)
	}
}

// Clusters, Since and Until select records; WithProgress reports each
// batch and the end; WithBatchSize sets the batch; bad values are
// ErrInvalidArgument.
func TestOptions(t *testing.T) {
	ctx := context.Background()
	src := memory.New()
	handJournal(t, src)

	c2 := export(t, src, transfer.Clusters("c2"))
	res, err := transfer.Verify(ctx, bytes.NewReader(c2))
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 3 || res.Streams != 1 || strings.Join(res.Clusters, ",") != "c2" {
		t.Errorf("export of c2: %+v, want its baseline's 3 records, 1 stream, cluster c2", res)
	}
	window := export(t, src, transfer.Since(at(5)), transfer.Until(at(10)))
	for _, l := range lines(window)[1:] {
		if strings.HasPrefix(l, `{"type"`) && !strings.Contains(l, `"observedAt":"2026-03-01T12:00:0`) && !strings.Contains(l, `"observedAt":"2026-03-01T12:00:10Z"`) {
			t.Errorf("a record outside [5s, 10s]: %s", l)
		}
	}
	if res, _ := transfer.Verify(ctx, bytes.NewReader(window)); res.Records != 4 { // event, checkpoint, correlation, plan
		t.Errorf("export of [5s, 10s]: %d records, want 4", res.Records)
	}
	if !strings.Contains(lines(window)[0], `"since":"2026-03-01T12:00:05Z","until":"2026-03-01T12:00:10Z"`) {
		t.Errorf("the header does not name the window: %s", lines(window)[0])
	}

	var exported, imported []transfer.Progress
	all := export(t, src, transfer.WithBatchSize(5), transfer.WithProgress(func(p transfer.Progress) { exported = append(exported, p) }))
	total := int64(countRecords(t, src))
	if len(exported) < int(total/5) || exported[len(exported)-1].Records != total || exported[len(exported)-1].Bytes != int64(len(all)) {
		t.Errorf("export progress %+v, want one report per 5 records and the total (%d records, %d bytes) last", exported, total, len(all))
	}
	dst := memory.New()
	if _, err := transfer.Import(ctx, bytes.NewReader(all), dst, transfer.WithBatchSize(5),
		transfer.WithProgress(func(p transfer.Progress) { imported = append(imported, p) })); err != nil {
		t.Fatal(err)
	}
	if len(imported) != int((total+4)/5)+1 || imported[0].Records != 5 || imported[len(imported)-1].Lines != int64(len(lines(all))) {
		t.Errorf("import progress %+v, want one report per batch of 5 and the end", imported)
	}

	for _, bad := range []struct {
		name string
		err  error
	}{
		{"batch 0", func() error {
			_, err := transfer.Export(ctx, src, &bytes.Buffer{}, transfer.WithBatchSize(0))
			return err
		}()},
		{"nil progress", func() error {
			_, err := transfer.Import(ctx, bytes.NewReader(all), dst, transfer.WithProgress(nil))
			return err
		}()},
		{"empty cluster", func() error { _, err := transfer.Export(ctx, src, &bytes.Buffer{}, transfer.Clusters("")); return err }()},
		{"until before since", func() error {
			_, err := transfer.Export(ctx, src, &bytes.Buffer{}, transfer.Since(at(2)), transfer.Until(at(1)))
			return err
		}()},
		{"nil store", func() error { _, err := transfer.Import(ctx, bytes.NewReader(all), nil); return err }()},
	} {
		if !errors.Is(bad.err, storage.ErrInvalidArgument) {
			t.Errorf("%s: %v, want ErrInvalidArgument", bad.name, bad.err)
		}
	}
}

// Import adds to a stream only after the stream's last record in the
// journal: an older record of a stream the journal records (a merge into
// the middle of its history) is refused with ErrOutOfOrder, and its batch
// stores nothing; a record the journal holds already, or a later one, is
// fine.
func TestImportKeepsStreamOrder(t *testing.T) {
	ctx := context.Background()
	dst := memory.New()
	handJournal(t, dst) // its configmaps stream ends at 25s
	ref := storagetest.Ref(cmShop, "ConfigMap", "shop", "z", "uz", "99")
	older := memory.New()
	if _, err := older.Append(ctx, []event.Record{
		storagetest.Checkpoint(deploy, "6", false, at(40)), // after the deployments stream's last record (30s)
		storagetest.Event(cmShop, event.Added, ref, storagetest.ConfigMap("shop", "z", "uz", "99", nil), at(8)),
	}); err != nil {
		t.Fatal(err)
	}
	before := countRecords(t, dst)
	_, err := transfer.Import(ctx, bytes.NewReader(export(t, older)), dst)
	var le *transfer.LineError
	if !errors.Is(err, transfer.ErrOutOfOrder) || !errors.As(err, &le) || le.Line != 6 || !strings.Contains(err.Error(), "2026-03-01T12:00:25Z") {
		t.Fatalf("Import of an older record of a recorded stream: %v, want ErrOutOfOrder at line 6 (the trailer: one batch) naming the stream's last time", err)
	}
	if got := countRecords(t, dst); got != before {
		t.Errorf("%d records after the refused import, want %d", got, before)
	}

	later := memory.New()
	if _, err := later.Append(ctx, []event.Record{storagetest.Event(cmShop, event.Added, ref, storagetest.ConfigMap("shop", "z", "uz", "99", nil), at(50))}); err != nil {
		t.Fatal(err)
	}
	if res, err := transfer.Import(ctx, bytes.NewReader(export(t, later)), dst); err != nil || res.Inserted != 1 {
		t.Errorf("Import of a later record: %+v, %v, want it inserted", res, err)
	}
	if res, err := transfer.Import(ctx, bytes.NewReader(export(t, dst)), dst); err != nil || res.Inserted != 0 {
		t.Errorf("Import of the journal into itself: %+v, %v, want every record a duplicate", res, err)
	}
}

// Times are written in UTC whatever zone the store hands out (the memory
// store keeps the zone it was given, SQLite does not), so that exports of
// the same journal from any backend are the same bytes; the instants stay.
func TestExportWritesUTC(t *testing.T) {
	ctx := context.Background()
	zone := time.FixedZone("CET", 3600)
	src := memory.New()
	gap := storagetest.Gap(cmShop, at(1).In(zone), at(2).In(zone), "410 Gone", "5")
	if _, err := src.Append(ctx, []event.Record{gap}); err != nil {
		t.Fatal(err)
	}
	out := string(export(t, src))
	if strings.Contains(out, "+01:00") || !strings.Contains(out, `"gap":{"from":"2026-03-01T12:00:01Z","to":"2026-03-01T12:00:02Z"`) {
		t.Errorf("the export has times outside UTC:\n%s", out)
	}
	dst := openSQLite(t)
	if _, err := transfer.Import(ctx, strings.NewReader(out), dst); err != nil {
		t.Fatal(err)
	}
	got, err := dst.Get(ctx, gap.EventID)
	if err != nil || !got.ObservedAt.Equal(gap.ObservedAt) || !got.Gap.From.Equal(gap.Gap.From) {
		t.Errorf("imported %+v, %v: want the same instants as %+v", got, err, gap)
	}
}

// A stream cut anywhere leaves a journal — a prefix of the source in its
// order — that never claims more than the source: every object state and
// every snapshot that it says is covered or complete is the source's.
// The cut right after a relist's baseline end, before the deletion
// inferred from it, is the delicate one: the end's time is covered only
// with later evidence of its stream, which comes after the deletion.
func TestCutImportClaimsNoMore(t *testing.T) {
	ctx := context.Background()
	src := memory.New()
	handJournal(t, src)
	ls := lines(export(t, src))
	var times []time.Time
	for s := 0; s <= 32; s++ {
		times = append(times, at(s).Add(-time.Nanosecond), at(s))
	}
	objs := []storage.ObjectID{
		{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: "a"},
		{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: "b"},
		{ClusterID: "c1", Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web"},
		{ClusterID: "c2", Resource: "configmaps", Namespace: "default", Name: "x"},
	}
	want, err := materialize.New(src)
	if err != nil {
		t.Fatal(err)
	}
	for cut := 2; cut < len(ls); cut++ {
		dst := memory.New()
		if _, err := transfer.Import(ctx, strings.NewReader(strings.Join(ls[:cut], "")), dst, transfer.WithBatchSize(1)); !errors.Is(err, transfer.ErrInvalidStream) {
			t.Fatalf("cut at line %d: %v, want ErrInvalidStream", cut+1, err)
		}
		got, err := materialize.New(dst)
		if err != nil {
			t.Fatal(err)
		}
		for _, at := range times {
			for _, obj := range objs {
				g, err := got.ObjectAt(ctx, obj, at)
				if err != nil {
					t.Fatal(err)
				}
				w, err := want.ObjectAt(ctx, obj, at)
				if err != nil {
					t.Fatal(err)
				}
				if g.Covered && (g.Exists != w.Exists || string(g.Object) != string(w.Object)) {
					t.Errorf("cut at line %d: %s at %s is covered, exists=%v; the source says exists=%v", cut+1, obj.Name, at.Format(time.RFC3339Nano), g.Exists, w.Exists)
				}
			}
			for _, c := range []string{"c1", "c2"} {
				g, err := got.Snapshot(ctx, materialize.Scope{ClusterID: c}, at)
				if err != nil {
					t.Fatal(err)
				}
				w, err := want.Snapshot(ctx, materialize.Scope{ClusterID: c}, at)
				if err != nil {
					t.Fatal(err)
				}
				if g.Complete && (!w.Complete || len(g.Objects) != len(w.Objects)) {
					t.Errorf("cut at line %d: the snapshot of %s at %s is complete with %d objects; the source's complete=%v with %d", cut+1, c, at.Format(time.RFC3339Nano), len(g.Objects), w.Complete, len(w.Objects))
				}
			}
		}
	}
}

// An import into a journal that records other streams and objects already
// (the hand journal) stores what an import into the memory store stores:
// the same answers to every query. The imported stream interleaves the
// changes of many objects across small batches, so that each batch's rows
// go into the SQLite tables in another order than they arrive in (Append
// inserts a batch's rows in the order of the tables' keys).
func TestImportIntoRecordedJournal(t *testing.T) {
	ctx := context.Background()
	src := memory.New()
	stream := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "other"}
	var items []storagetest.Item
	for k := range 30 {
		name := fmt.Sprintf("cm-%02d", 29-k) // the objects' rows are made in reverse name order
		ref := storagetest.Ref(stream, "ConfigMap", "other", name, "u"+name, strconv.Itoa(100+k))
		items = append(items, storagetest.Item{Ref: ref, Object: storagetest.ConfigMap("other", name, "u"+name, strconv.Itoa(100+k), map[string]string{"v": "0"})})
	}
	recs := storagetest.Baseline(stream, "other-1", at(100), "130", items)
	rv := 131
	for i := range 120 {
		k := (i * 7) % len(items)
		name := items[k].Ref.Name
		v := strconv.Itoa(rv)
		ref := storagetest.Ref(stream, "ConfigMap", "other", name, "u"+name, v)
		recs = append(recs, storagetest.Event(stream, event.Modified, ref, storagetest.ConfigMap("other", name, "u"+name, v, map[string]string{"v": strconv.Itoa(i % 5)}), at(101+i)))
		rv++
	}
	recs = append(recs, storagetest.Checkpoint(stream, strconv.Itoa(rv-1), true, at(300)))
	if _, err := src.Append(ctx, recs); err != nil {
		t.Fatal(err)
	}
	data := export(t, src)
	want, got := memory.New(), openSQLite(t)
	for _, dst := range []storage.ReadWriter{want, got} {
		handJournal(t, dst)
		before := countRecords(t, dst)
		res, err := transfer.Import(ctx, bytes.NewReader(data), dst, transfer.WithBatchSize(17))
		if err != nil || res.Inserted != int64(len(recs)) || res.Duplicates != 0 {
			t.Fatalf("import into a recorded journal: %+v, %v; want %d records inserted", res, err, len(recs))
		}
		if n := countRecords(t, dst); n != before+len(recs) {
			t.Errorf("%d records after the import, want %d", n, before+len(recs))
		}
	}
	transfertest.SameAnswers(t, "SQLite after an import into a recorded journal", transfertest.Answers(t, want), transfertest.Answers(t, got))
	// The imported objects' versions are all there, in order.
	m, err := materialize.New(got)
	if err != nil {
		t.Fatal(err)
	}
	h, err := m.History(ctx, storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "other", Name: "cm-00"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(h.Versions()); n != 5 {
		t.Errorf("cm-00 has %d versions, want 5 (its baseline item and 4 changes)", n)
	}
}

// TestImportCommitsInBulks imports into SQLite (a storage.BulkAppender)
// in batches of 7 and bulks of at least 20 records, from a stream that
// fails: at a corrupt line, the batches before it are committed, all of
// them whole; at a batch the journal refuses, the bulk it belongs to is
// rolled back, and LineError.Records counts the records of the bulks
// committed, which the journal holds. Importing a good stream again
// completes it.
func TestImportCommitsInBulks(t *testing.T) {
	transfer.SetBulkRecords(t.Cleanup, 20)
	ctx := context.Background()
	web := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "web"}
	src := memory.New()
	var recs []event.Record
	for i := range 80 {
		name, v := fmt.Sprintf("cm-%d", i%9), strconv.Itoa(200+i)
		ref := storagetest.Ref(web, "ConfigMap", "web", name, "u"+name, v)
		recs = append(recs, storagetest.Event(web, event.Modified, ref, storagetest.ConfigMap("web", name, "u"+name, v, map[string]string{"i": v}), at(1+i)))
	}
	// Records of cmShop at 500 s, 70th to 79th.
	for i := 70; i < 80; i++ {
		name, v := fmt.Sprintf("cm-%d", i), strconv.Itoa(300+i)
		ref := storagetest.Ref(cmShop, "ConfigMap", "shop", name, "u"+name, v)
		recs[i] = storagetest.Event(cmShop, event.Added, ref, storagetest.ConfigMap("shop", name, "u"+name, v, nil), at(500+i))
	}
	if _, err := src.Append(ctx, recs); err != nil {
		t.Fatal(err)
	}
	data := export(t, src)
	lines := bytes.SplitAfter(data, []byte("\n"))

	// Line 80 (record 78, of the batch of records 77 to 83) is corrupt:
	// the 77 records before that batch are committed, 63 of them in
	// three bulks of 21, 14 when the import failed.
	corrupt := slices.Concat(slices.Concat(lines[:79]...), []byte("{not json\n"), slices.Concat(lines[80:]...))
	dst := openSQLite(t)
	_, err := transfer.Import(ctx, bytes.NewReader(corrupt), dst, transfer.WithBatchSize(7))
	var le *transfer.LineError
	if !errors.As(err, &le) || le.Line != 80 || le.Records != 77 || !errors.Is(err, transfer.ErrInvalidStream) {
		t.Fatalf("import of a stream corrupt at line 80: %v (%+v), want a LineError of line 80 with 77 records committed", err, le)
	}
	if n := countRecords(t, dst); n != 77 {
		t.Fatalf("the journal holds %d records, want 77", n)
	}

	// A journal that holds a record of cmShop at 1,000 s refuses the
	// batch of records 70 to 76: the bulk of records 63 to 69 rolls back,
	// and the three bulks before it stay.
	dst = openSQLite(t)
	own := storagetest.Event(cmShop, event.Added, storagetest.Ref(cmShop, "ConfigMap", "shop", "own", "uown", "1"),
		storagetest.ConfigMap("shop", "own", "uown", "1", nil), at(1000))
	if _, err := dst.Append(ctx, []event.Record{own}); err != nil {
		t.Fatal(err)
	}
	_, err = transfer.Import(ctx, bytes.NewReader(data), dst, transfer.WithBatchSize(7))
	if !errors.As(err, &le) || le.Records != 63 || !errors.Is(err, transfer.ErrOutOfOrder) {
		t.Fatalf("import of records older than the journal's stream: %v (%+v), want ErrOutOfOrder with 63 records committed", err, le)
	}
	if n := countRecords(t, dst); n != 1+63 {
		t.Fatalf("the journal holds %d records, want 64 (its own and three bulks)", n)
	}

	// The good part again, into the journal the corrupt import left:
	// it completes, and answers as the source.
	dst = openSQLite(t)
	if _, err := transfer.Import(ctx, bytes.NewReader(corrupt), dst, transfer.WithBatchSize(7)); err == nil {
		t.Fatal("the corrupt stream imported")
	}
	res, err := transfer.Import(ctx, bytes.NewReader(data), dst, transfer.WithBatchSize(7))
	if err != nil || res.Inserted != 3 || res.Duplicates != 77 {
		t.Fatalf("import after a failed one: %+v, %v; want 3 inserted and 77 duplicates", res, err)
	}
	transfertest.SameAnswers(t, "SQLite imported in bulks", transfertest.Answers(t, src), transfertest.Answers(t, dst))
}
