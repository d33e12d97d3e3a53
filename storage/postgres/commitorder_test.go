package postgres_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/postgres"
	"github.com/krply/krply/storage/transfer"
)

// TestReadsFollowCommitOrder: an Append of cluster a takes its sequence
// number and is held before its commit (another transaction holds the row
// of a's stream status, which the Append writes last); an Append of
// cluster b then takes a larger number and commits. A reader of the whole
// journal in IngestSeq order (a change feed, an export) must not see b's
// record before a's commits — else it resumes after b's number and never
// sees a's. While a's Append is held: the newest record (where a feed
// starts), a scan of every record, and an export leave b's record out;
// once a's commits, a reader resuming after the last number it saw gets
// both.
func TestReadsFollowCommitOrder(t *testing.T) {
	ctx := context.Background()
	s, schema := openSchema(t)
	ev := func(cluster string, i int) event.Record { return benchEvents(cluster, 10, i, 1)[0] }
	// a's stream has a status row already, which the blocker locks.
	first := ev("a", 0)
	if _, err := s.Append(ctx, []event.Record{first}); err != nil {
		t.Fatal(err)
	}
	blocker, err := pgx.Connect(ctx, database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer blocker.Close(ctx)
	tx, err := blocker.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT 1 FROM "+pgx.Identifier{schema, "krply_streams"}.Sanitize()+" WHERE cluster_id = 'a' FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	held := ev("a", 1)
	done := make(chan error, 1)
	go func() {
		_, err := s.Append(ctx, []event.Record{held})
		done <- err
	}()
	waitBlocked(t, blocker)
	later := ev("b", 2)
	res, err := s.Append(ctx, []event.Record{later})
	if err != nil {
		t.Fatal(err)
	}
	laterSeq := res.Seqs[0]

	// While a's Append is held.
	newest, err := s.Records(ctx, storage.Query{Descending: true, Limit: 1, WithoutBodies: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(newest.Records) != 1 || newest.Records[0].EventID != first.EventID {
		t.Errorf("newest record while an earlier number is uncommitted: %v, want %s (b's #%d must wait for a's commit)", ids(newest.Records), first.EventID, laterSeq)
	}
	seen := scanAll(t, s, 0)
	if got := ids(seen); strings.Join(got, ",") != first.EventID {
		t.Errorf("records while an earlier number is uncommitted: %v, want only %s", got, first.EventID)
	}
	var out bytes.Buffer
	if _, err := transfer.Export(ctx, s, &out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), later.EventID) {
		t.Errorf("the export holds b's record #%d while a's Append with a smaller number is uncommitted", laterSeq)
	}
	if !strings.Contains(out.String(), first.EventID) {
		t.Errorf("the export lacks the committed first record")
	}

	// a's Append commits; a reader resuming after what it saw gets both.
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a's Append did not finish after the blocker let go")
	}
	var after int64
	if len(seen) > 0 {
		after = seen[len(seen)-1].IngestSeq
	}
	rest := scanAll(t, s, after)
	if got, want := strings.Join(ids(rest), ","), held.EventID+","+later.EventID; got != want {
		t.Errorf("records after #%d once both committed: %s, want %s", after, got, want)
	}
}

// waitBlocked waits until a backend of the database waits for a lock
// (pg_stat_activity names the last statement of a pipeline, not the one
// waiting: the test's one blocker is the only lock to wait for).
func waitBlocked(t *testing.T, conn *pgx.Conn) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		var n int
		if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no statement waits for the blocker's lock")
}

// scanAll reads every record after seq after, a page of one at a time.
func scanAll(t *testing.T, s *postgres.Store, after int64) []event.Record {
	t.Helper()
	var out []event.Record
	q := storage.Query{AfterSeq: after, Limit: 1, WithoutBodies: true}
	for {
		p, err := s.Records(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, p.Records...)
		if p.Next == "" {
			return out
		}
		q.Cursor = p.Next
	}
}

func ids(recs []event.Record) []string {
	out := []string{}
	for _, r := range recs {
		out = append(out, r.EventID)
	}
	return out
}
