package retention_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/krply/krply/event"
	"github.com/krply/krply/retention"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/storagetest"
)

var (
	t0     = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	stream = event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
)

const objects = 40

// journal records a baseline of 40 ConfigMaps at t0, then, every minute
// for the given hours, changes to 10 of them (each with 2 KiB of data no
// other body shares) and a progress checkpoint. It returns the store.
func journal(t *testing.T, s storage.Store, hours int) {
	t.Helper()
	journalOf(t, s, stream, hours)
}

// journalOf is journal for the given stream.
func journalOf(t *testing.T, s storage.Store, stream event.Stream, hours int) {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	data := func() map[string]string {
		b := make([]byte, 1024)
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return map[string]string{"blob": fmt.Sprintf("%x", b)}
	}
	var items []storagetest.Item
	for i := range objects {
		name := fmt.Sprintf("cm-%02d", i)
		items = append(items, storagetest.Item{Ref: storagetest.Ref(stream, "ConfigMap", "shop", name, "uid-"+name, "1"),
			Object: storagetest.ConfigMap("shop", name, "uid-"+name, "1", data())})
	}
	if _, err := s.Append(ctx, storagetest.Baseline(stream, "bl-1", t0, "1", items)); err != nil {
		t.Fatal(err)
	}
	rv := 1
	for m := 1; m <= hours*60; m++ {
		at := t0.Add(time.Duration(m) * time.Minute)
		var batch []event.Record
		for range 10 {
			rv++
			name := fmt.Sprintf("cm-%02d", rng.IntN(objects))
			ref := storagetest.Ref(stream, "ConfigMap", "shop", name, "uid-"+name, fmt.Sprint(rv))
			batch = append(batch, storagetest.Event(stream, event.Modified, ref, storagetest.ConfigMap("shop", name, "uid-"+name, fmt.Sprint(rv), data()), at))
		}
		batch = append(batch, storagetest.Checkpoint(stream, fmt.Sprint(rv), false, at.Add(30*time.Second)))
		if _, err := s.Append(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
}

func openSQLite(t *testing.T) (*sqlite.Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "krply.db")
	s, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, path
}

// answers returns what the journal says at a time: the stream's coverage
// and every object alive, with its resourceVersion.
func answers(t *testing.T, s storage.Reader, at time.Time) string {
	t.Helper()
	return answersOf(t, s, stream, at)
}

// answersOf is answers for the given stream.
func answersOf(t *testing.T, s storage.Reader, stream event.Stream, at time.Time) string {
	t.Helper()
	ctx := context.Background()
	cov, err := storage.CoverageAt(ctx, s, stream.ID(), at)
	if err != nil {
		t.Fatal(err)
	}
	alive, err := s.AliveAt(ctx, storage.AliveQuery{StreamID: stream.ID(), At: at, WithoutBodies: true})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "covered %v (%s), watermark %s;", cov.Covered, cov.Reason, cov.Watermark)
	for _, r := range alive {
		fmt.Fprintf(&b, " %s@%s", r.Resource.Name, r.Resource.ResourceVersion)
	}
	return b.String()
}

// stores are the stores the retention tests run on.
var stores = []struct {
	name  string
	store func(t *testing.T) storage.Store
}{
	{"sqlite", func(t *testing.T) storage.Store { s, _ := openSQLite(t); return s }},
	{"memory", func(t *testing.T) storage.Store { return memory.New() }},
}

// Retention by age compacts before now minus the age: every answer after
// the cut is unchanged, and coverage before it says where history begins.
func TestMaxAge(t *testing.T) {
	for _, tc := range stores {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.store(t)
			journal(t, s, 3)
			now := t0.Add(3*time.Hour + time.Minute)
			k, err := retention.New(s, retention.WithMaxAge(time.Hour), retention.WithClock(clocktesting.NewFakeClock(now)))
			if err != nil {
				t.Fatal(err)
			}
			times := []time.Time{now.Add(-time.Hour), now.Add(-30 * time.Minute), t0.Add(3 * time.Hour)}
			var before []string
			for _, at := range times {
				before = append(before, answers(t, s, at))
			}
			statsBefore, _ := s.Stats(context.Background())
			res, err := k.Enforce(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if want := now.Add(-time.Hour); !res.Cut.Equal(want) || res.Removed.RecordsRemoved == 0 {
				t.Fatalf("Enforce = %+v, want a cut at %s that removed records", res, want)
			}
			statsAfter, _ := s.Stats(context.Background())
			if statsAfter.Records >= statsBefore.Records {
				t.Fatalf("records %d before, %d after", statsBefore.Records, statsAfter.Records)
			}
			for i, at := range times {
				if got := answers(t, s, at); got != before[i] {
					t.Errorf("at %s after the cut:\n got %s\nwant %s", at, got, before[i])
				}
			}
			early, err := storage.CoverageAt(context.Background(), s, stream.ID(), t0.Add(30*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if early.Covered || !strings.Contains(early.Reason, "the history kept begins at 2026-01-01T02:0") {
				t.Fatalf("coverage before the cut = %v %q, want not covered, saying where history begins", early.Covered, early.Reason)
			}
			st := k.Status()
			if st.Runs != 1 || st.Compactions != 1 || !st.Cut.Equal(res.Cut) || st.RecordsRemoved != res.Removed.RecordsRemoved || st.LastError != "" || st.Pressure != "" {
				t.Fatalf("Status = %+v after %+v", st, res)
			}
			if err := k.Ready(); err != nil {
				t.Fatalf("Ready = %v", err)
			}
			// A second run at the same time finds nothing to remove.
			if res, err := k.Enforce(context.Background()); err != nil || !res.Cut.IsZero() {
				t.Fatalf("second Enforce = %+v, %v; want nothing removed", res, err)
			}
		})
	}
}

// A resource's own retention (WithResourceMaxAge) compacts its streams
// alone: the Events stream's answers after its cut are unchanged and its
// coverage before the cut says where its history begins; the ConfigMaps
// stream keeps every record and answer.
func TestResourceMaxAge(t *testing.T) {
	events := event.Stream{ClusterID: "c1", Version: "v1", Resource: "events", Namespace: "shop"}
	for _, tc := range stores {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := tc.store(t)
			journal(t, s, 3)
			journalOf(t, s, events, 3)
			now := t0.Add(3*time.Hour + time.Minute)
			k, err := retention.New(s, retention.WithResourceMaxAge(time.Hour, "events"), retention.WithClock(clocktesting.NewFakeClock(now)))
			if err != nil {
				t.Fatal(err)
			}
			all := []time.Time{t0.Add(30 * time.Minute), now.Add(-time.Hour), now.Add(-30 * time.Minute), t0.Add(3 * time.Hour)}
			var cms, evs []string
			for _, at := range all {
				cms = append(cms, answersOf(t, s, stream, at))
				evs = append(evs, answersOf(t, s, events, at))
			}
			cmRecords, err := s.Records(ctx, storage.Query{StreamID: stream.ID(), Limit: 100000, WithoutBodies: true})
			if err != nil {
				t.Fatal(err)
			}
			res, err := k.Enforce(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !res.Cut.IsZero() || res.Removed.RecordsRemoved == 0 {
				t.Fatalf("Enforce = %+v, want records removed and no cut of every stream", res)
			}
			for i, at := range all {
				if got := answersOf(t, s, stream, at); got != cms[i] {
					t.Errorf("ConfigMaps at %s:\n got %s\nwant %s", at, got, cms[i])
				}
				if got := answersOf(t, s, events, at); at.After(now.Add(-time.Hour)) && got != evs[i] {
					t.Errorf("Events at %s, after their cut:\n got %s\nwant %s", at, got, evs[i])
				}
			}
			after, err := s.Records(ctx, storage.Query{StreamID: stream.ID(), Limit: 100000, WithoutBodies: true})
			if err != nil || len(after.Records) != len(cmRecords.Records) {
				t.Fatalf("ConfigMaps records: %d before, %d after (%v)", len(cmRecords.Records), len(after.Records), err)
			}
			early, err := storage.CoverageAt(ctx, s, events.ID(), t0.Add(30*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			if early.Covered || !strings.Contains(early.Reason, "the history kept begins at 2026-01-01T02:0") {
				t.Fatalf("Events' coverage before their cut = %v %q, want not covered, saying where their history begins", early.Covered, early.Reason)
			}
			if st := k.Status(); st.Compactions != 1 || !st.Cut.IsZero() || st.RecordsRemoved != res.Removed.RecordsRemoved {
				t.Fatalf("Status = %+v after %+v", st, res)
			}
		})
	}
}

// Retention by size brings a SQLite journal (its file less the pages
// compaction freed) under the maximum size, keeping the minimum age.
func TestMaxSize(t *testing.T) {
	s, _ := openSQLite(t)
	journal(t, s, 4)
	ctx := context.Background()
	stats, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	usedBefore := stats.UsedBytes
	if usedBefore <= 0 || usedBefore > stats.FileBytes {
		t.Fatalf("stats %+v: want 0 < UsedBytes <= FileBytes", stats)
	}
	now := t0.Add(4*time.Hour + time.Minute)
	maxSize := usedBefore / 2
	var logged strings.Builder
	log := funcr.New(func(prefix, args string) { logged.WriteString(prefix + " " + args + "\n") }, funcr.Options{})
	k, err := retention.New(s, retention.WithMaxSize(maxSize), retention.WithMinAge(30*time.Minute),
		retention.WithClock(clocktesting.NewFakeClock(now)), retention.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	keep := answers(t, s, now.Add(-30*time.Minute))
	res, err := k.Enforce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	after, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if used := after.UsedBytes; used > maxSize || res.UsedBytes != used {
		t.Fatalf("after Enforce (%+v): uses %d, want at most %d (%d before)", res, used, maxSize, usedBefore)
	}
	if res.Pressure != "" || res.Cut.After(now.Add(-30*time.Minute)) || res.Cut.Before(t0) {
		t.Fatalf("Enforce = %+v, want a cut between the start and the minimum age, no pressure", res)
	}
	if got := answers(t, s, now.Add(-30*time.Minute)); got != keep {
		t.Fatalf("answer within the minimum age changed:\n got %s\nwant %s", got, keep)
	}
	if !strings.Contains(logged.String(), `"msg"="compacted the journal"`) {
		t.Fatalf("log:\n%s\nwant the compaction logged", logged.String())
	}

	// A size the state of now alone exceeds: pressure, said in Status,
	// Ready and the log; nothing within the minimum age is removed.
	k2, err := retention.New(s, retention.WithMaxSize(4096), retention.WithMinAge(30*time.Minute),
		retention.WithClock(clocktesting.NewFakeClock(now)), retention.WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	res, err = k2.Enforce(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Pressure, "more than its maximum size 4096") || k2.Status().Pressure != res.Pressure {
		t.Fatalf("Enforce = %+v, status %+v: want pressure", res, k2.Status())
	}
	if err := k2.Ready(); !errors.Is(err, retention.ErrPressure) || !strings.Contains(err.Error(), "raise the maximum size") {
		t.Fatalf("Ready = %v, want ErrPressure naming the fix", err)
	}
	if got := answers(t, s, now.Add(-30*time.Minute)); got != keep {
		t.Fatalf("answer within the minimum age changed under pressure:\n got %s\nwant %s", got, keep)
	}
	if !strings.Contains(logged.String(), `"msg"="journal under pressure"`) {
		t.Fatalf("log:\n%s\nwant the pressure logged", logged.String())
	}
}

// A disk with less free space than the reserve is pressure; the free
// space is reported.
func TestDiskReserve(t *testing.T) {
	s, path := openSQLite(t)
	journal(t, s, 0)
	for _, tc := range []struct {
		reserve  int64
		pressure bool
	}{{1, false}, {1 << 62, true}} {
		k, err := retention.New(s, retention.WithDiskReserve(filepath.Dir(path), tc.reserve))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := k.Enforce(context.Background()); err != nil {
			t.Fatal(err)
		}
		st := k.Status()
		if st.DiskFreeBytes <= 0 || (st.Pressure != "") != tc.pressure || (k.Ready() != nil) != tc.pressure {
			t.Fatalf("reserve %d: status %+v, ready %v; want pressure %v", tc.reserve, st, k.Ready(), tc.pressure)
		}
		if tc.pressure && !strings.Contains(st.Pressure, "less than the reserve") {
			t.Fatalf("pressure %q", st.Pressure)
		}
	}
}

// Run enforces at once and then every interval, until its context ends;
// a failed run is reported by Status and Ready, and the next success
// clears it.
func TestRun(t *testing.T) {
	s, _ := openSQLite(t)
	journal(t, s, 2)
	clk := clocktesting.NewFakeClock(t0.Add(2 * time.Hour))
	k, err := retention.New(s, retention.WithMaxAge(90*time.Minute), retention.WithInterval(10*time.Minute), retention.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- k.Run(ctx) }()
	waitRuns := func(n int64) retention.Status {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for k.Status().Runs < n {
			if time.Now().After(deadline) {
				t.Fatalf("runs = %d, want %d", k.Status().Runs, n)
			}
			time.Sleep(5 * time.Millisecond)
		}
		return k.Status()
	}
	if st := waitRuns(1); !st.Cut.Equal(t0.Add(30 * time.Minute)) {
		t.Fatalf("first run: cut %s", st.Cut)
	}
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	clk.Step(10 * time.Minute)
	if st := waitRuns(2); !st.Cut.Equal(t0.Add(40*time.Minute)) || st.Compactions != 2 {
		t.Fatalf("second run: %+v", st)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}

	// A closed store fails the run.
	s.Close()
	res, err := k.Enforce(context.Background())
	if err == nil {
		t.Fatalf("Enforce on a closed store = %+v, nil", res)
	}
	if st := k.Status(); st.Failures != 1 || st.LastError == "" || !errors.Is(k.Ready(), retention.ErrPressure) {
		t.Fatalf("status %+v, ready %v after a failed run", st, k.Ready())
	}
}

func TestInvalid(t *testing.T) {
	s := memory.New()
	for _, opts := range [][]retention.Option{
		{retention.WithMaxAge(-time.Second)},
		{retention.WithInterval(0)},
		{retention.WithDiskReserve("", 1)},
		{retention.WithClock(nil)},
		{retention.WithResourceMaxAge(-time.Hour, "events")},
		{retention.WithResourceMaxAge(time.Hour)},
	} {
		if _, err := retention.New(s, opts...); !errors.Is(err, retention.ErrInvalidArgument) {
			t.Errorf("New(%v) = %v, want ErrInvalidArgument", opts, err)
		}
	}
	if _, err := retention.New(nil); !errors.Is(err, retention.ErrInvalidArgument) {
		t.Errorf("New(nil) = %v", err)
	}
	// A store that cannot compact a resource alone is refused, naming the
	// option.
	narrow := struct{ storage.ReadWriter }{s}
	if _, err := retention.New(narrow, retention.WithResourceMaxAge(time.Hour, "events")); !errors.Is(err, retention.ErrInvalidArgument) || !strings.Contains(err.Error(), "WithResourceMaxAge") {
		t.Errorf("New(a store without CompactResources) = %v", err)
	}
}
