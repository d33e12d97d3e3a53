package postgres_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krply/krply/krplytest/recording"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/postgres"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/transfer"
	"github.com/krply/krply/storage/transfer/transfertest"
)

func openSQLite(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "journal.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// A journal recorded from the real control plane — writes by two users,
// an outage during which etcd is compacted (the restarted recorder gets
// 410 Gone, records a gap, relists and infers a deletion), audit
// correlations, a saved snapshot and a saved plan — goes SQLite → NDJSON →
// PostgreSQL → NDJSON → SQLite and answers every query the same; the
// exports are byte for byte the same; a second import into PostgreSQL
// stores nothing and changes no answer (transfertest.RoundTrip). The same
// after compacting the source just after the relist that closed the gap,
// which PostgreSQL's RestoreStreams must carry. Broken copies of either
// export leave whole batches in PostgreSQL and nothing of the batch at
// fault, and importing the whole export afterwards completes the journal.
func TestRoundTripRecordedJournal(t *testing.T) {
	t.Parallel()
	src := openSQLite(t)
	counts := recording.Outage(t, src)
	t.Logf("recorded %v", counts)
	good := transfertest.RoundTrip(t, src, openFresh(t), openSQLite(t))
	t.Run("BrokenStreams", func(t *testing.T) { brokenStreams(t, src, good) })

	t.Logf("compacted: %+v", recording.CompactAfterRelist(t, src))
	compacted := transfertest.RoundTrip(t, src, openFresh(t), openSQLite(t))
	t.Run("BrokenCompactedStreams", func(t *testing.T) { brokenStreams(t, src, compacted) })
}

// brokenStreams imports broken copies of good into PostgreSQL with
// batches of a few records: each fails with the line at fault, and the
// journal holds exactly the whole batches before it — also when
// PostgreSQL itself refuses a record in the middle of a batch — and the
// full import afterwards completes it without duplicates, answering every
// query as src does.
func brokenStreams(t *testing.T, src storage.ReadWriter, good []byte) {
	ctx := context.Background()
	ls := strings.SplitAfter(string(good), "\n")
	ls = ls[:len(ls)-1]
	n := len(ls)
	records := n - 2 // header and trailer
	for _, l := range ls {
		if strings.HasPrefix(l, `{"stream":`) {
			records--
		}
	}
	const batch = 5
	// mid: the first record line with a body in the second half.
	mid := records / 2
	for !strings.Contains(ls[mid], `"objectHash":"`) {
		mid++
	}
	// A record line PostgreSQL refuses: its text columns cannot hold NUL.
	nul := strings.Replace(ls[mid], `"eventID":"`, `"eventID":"\u0000`, 1)
	if nul == ls[mid] {
		t.Fatalf("line %d has no eventID: %s", mid+1, ls[mid])
	}
	withLine := func(i int, with string) string {
		c := append([]string(nil), ls...)
		c[i-1] = with
		return strings.Join(c, "")
	}
	cases := []struct {
		name string
		data string
		line int64
	}{
		{"cut inside a line", strings.Join(ls[:mid], "") + ls[mid][:len(ls[mid])/2], int64(mid + 1)},
		{"no trailer", strings.Join(ls[:n-1], ""), int64(n)},
		{"body changed", withLine(mid+1, strings.Replace(ls[mid], `"objectHash":"`, `"objectHash":"0`, 1)), int64(mid + 1)},
		{"refused by PostgreSQL", withLine(mid+1, nul), 0},
	}
	want := transfertest.Answers(t, src)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dst := openFresh(t)
			res, err := transfer.Import(ctx, strings.NewReader(tc.data), dst, transfer.WithBatchSize(batch))
			var le *transfer.LineError
			if !errors.As(err, &le) {
				t.Fatalf("Import: %v, want a *LineError", err)
			}
			if tc.line != 0 && le.Line != tc.line {
				t.Errorf("Import: %v (line %d), want line %d", err, le.Line, tc.line)
			}
			if tc.line == 0 && (errors.Is(err, transfer.ErrInvalidStream) || !strings.Contains(err.Error(), "postgres: append")) {
				t.Errorf("Import: %v, want PostgreSQL's refusal of the batch", err)
			}
			st, serr := dst.Stats(ctx)
			if serr != nil {
				t.Fatal(serr)
			}
			stored := int(st.Records)
			t.Logf("%d of %d records stored after: %v", stored, records, err)
			if stored != countAll(t, dst) || int64(stored) != le.Records || stored%batch != 0 || res.Inserted != int64(stored) {
				t.Errorf("%d records stored, the error says %d, the result %+v: want whole batches of %d", stored, le.Records, res, batch)
			}
			line := int(tc.line)
			if line == 0 {
				line = mid + 1
			}
			if before := min(line-2, records); stored > before {
				t.Errorf("%d records stored, but only %d come before line %d: its batch is in", stored, before, line)
			}
			full, err := transfer.Import(ctx, bytes.NewReader([]byte(strings.Join(ls, ""))), dst)
			if err != nil {
				t.Fatal(err)
			}
			if full.Duplicates != int64(stored) || full.Inserted != int64(records-stored) {
				t.Errorf("the full import after the broken one: %+v, want %d duplicates and %d inserted", full, stored, records-stored)
			}
			transfertest.SameAnswers(t, "after the full import", want, transfertest.Answers(t, dst))
		})
	}
}

// countAll counts the records Records pages through.
func countAll(t *testing.T, s *postgres.Store) int {
	t.Helper()
	n := 0
	for q := (storage.Query{Limit: 1000, WithoutBodies: true}); ; {
		page, err := s.Records(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		n += len(page.Records)
		if page.Next == "" {
			return n
		}
		q.Cursor = page.Next
	}
}
