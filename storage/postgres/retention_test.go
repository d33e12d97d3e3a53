package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/postgres"
	"github.com/krply/krply/storage/storagetest"
)

// TestRetentionDropsPartitions records half an hour of changes to a few
// objects in partitions of one minute, compacts at minute 20, and checks
// that the partitions before the cut are gone (dropped, their kept
// records moved to the base partition) while every answer about a time
// at or after the cut is the same as before.
func TestRetentionDropsPartitions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, schema := openSchema(t, postgres.WithPartitionWidth(time.Minute))
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	stream := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	var items []storagetest.Item
	for i := range 5 {
		name := fmt.Sprintf("cm-%d", i)
		items = append(items, storagetest.Item{Ref: storagetest.Ref(stream, "ConfigMap", "shop", name, "u"+name, fmt.Sprint(10+i)),
			Object: storagetest.ConfigMap("shop", name, "u"+name, fmt.Sprint(10+i), map[string]string{"v": "0"})})
	}
	if _, err := s.Append(ctx, storagetest.Baseline(stream, "b1", t0, "14", items)); err != nil {
		t.Fatal(err)
	}
	rv := 100
	for sec := 10; sec < 30*60; sec += 10 {
		rv++
		name := fmt.Sprintf("cm-%d", rv%5)
		at := t0.Add(time.Duration(sec) * time.Second)
		var batch []event.Record
		if rv%37 == 0 && name != "cm-0" {
			batch = append(batch, storagetest.Event(stream, event.Deleted, storagetest.Ref(stream, "ConfigMap", "shop", name, "u"+name, fmt.Sprint(rv)), nil, at))
		} else {
			batch = append(batch, storagetest.Event(stream, event.Modified, storagetest.Ref(stream, "ConfigMap", "shop", name, "u"+name, fmt.Sprint(rv)),
				storagetest.ConfigMap("shop", name, "u"+name, fmt.Sprint(rv), map[string]string{"v": fmt.Sprint(rv)}), at))
		}
		if sec%60 == 0 {
			batch = append(batch, storagetest.Checkpoint(stream, fmt.Sprint(rv), true, at.Add(time.Millisecond)))
		}
		if _, err := s.Append(ctx, batch); err != nil {
			t.Fatal(err)
		}
	}
	cut := t0.Add(20 * time.Minute)
	times := []time.Time{cut, cut.Add(time.Second), cut.Add(3 * time.Minute), t0.Add(29 * time.Minute), t0.Add(40 * time.Minute)}
	answers := func() []string {
		var out []string
		for _, at := range times {
			alive, err := s.AliveAt(ctx, storage.AliveQuery{StreamID: stream.ID(), At: at})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range alive {
				out = append(out, fmt.Sprintf("%s alive %s@%s %s", at.Format(time.TimeOnly), r.Resource.Name, r.Resource.ResourceVersion, r.Object))
			}
			for i := range 5 {
				obj := storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: fmt.Sprintf("cm-%d", i)}
				r, err := s.LatestAt(ctx, obj, at)
				if err == nil && r.WatchType != event.Deleted {
					out = append(out, fmt.Sprintf("%s latest %s@%s", at.Format(time.TimeOnly), obj.Name, r.Resource.ResourceVersion))
				} else {
					out = append(out, fmt.Sprintf("%s latest %s absent", at.Format(time.TimeOnly), obj.Name))
				}
				hist, err := s.ObjectHistory(ctx, obj, storage.HistoryQuery{Since: at})
				if err != nil {
					t.Fatal(err)
				}
				out = append(out, fmt.Sprintf("%s history %s %d", at.Format(time.TimeOnly), obj.Name, len(hist)))
			}
			cov, err := storage.CoverageAt(ctx, s, stream.ID(), at)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, fmt.Sprintf("%s coverage %v %q %s", at.Format(time.TimeOnly), cov.Covered, cov.Reason, cov.Watermark))
		}
		return out
	}
	before := answers()
	partsBefore := partitionsOf(t, schema)
	statsBefore, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Compact(ctx, cut)
	if err != nil {
		t.Fatal(err)
	}
	partsAfter := partitionsOf(t, schema)
	if after := answers(); !slices.Equal(before, after) {
		t.Fatalf("answers at or after the cut changed:\nbefore %q\n after %q", before, after)
	}
	// The partitions of minutes 0-19 are gone; the base one holds what
	// was kept of them.
	for _, p := range partsBefore[1:] {
		minute := int((p.from - t0.UnixNano()) / int64(time.Minute))
		kept := slices.ContainsFunc(partsAfter, func(q partition) bool { return q.name == p.name })
		if kept != (minute >= 20) {
			t.Errorf("partition of minute %d (%s): kept %v after Compact(minute 20)", minute, p.name, kept)
		}
	}
	if partsAfter[0].name != "krply_records_base" || partsAfter[0].rows == 0 {
		t.Errorf("the base partition after Compact: %+v", partsAfter[0])
	}
	statsAfter, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if statsBefore.FileBytes == 0 || statsAfter.FileBytes >= statsBefore.FileBytes {
		t.Errorf("Stats.FileBytes %d -> %d: want the dropped partitions' bytes gone", statsBefore.FileBytes, statsAfter.FileBytes)
	}
	if statsAfter.Records != statsBefore.Records-res.RecordsRemoved || res.RecordsRemoved < 100 {
		t.Errorf("Stats.Records %d -> %d, Compact removed %d", statsBefore.Records, statsAfter.Records, res.RecordsRemoved)
	}
	t.Logf("partitions %d -> %d, records %d -> %d, base holds %d", len(partsBefore), len(partsAfter), statsBefore.Records, statsAfter.Records, partsAfter[0].rows)
}

type partition struct {
	name string
	from int64
	rows int64
}

// partitionsOf lists the partitions of a journal's records table, the
// base one first, then by time.
func partitionsOf(t *testing.T, schema string) []partition {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, database(t))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $1::regclass`,
		pgx.Identifier{schema, "krply_records"}.Sanitize())
	if err != nil {
		t.Fatal(err)
	}
	var out []partition
	for rows.Next() {
		var p partition
		if err := rows.Scan(&p.name); err != nil {
			t.Fatal(err)
		}
		// krply_records_p<n> holds [n, n+1) minutes since the epoch.
		if _, err := fmt.Sscanf(p.name, "krply_records_p%d", &p.from); err != nil && p.name != "krply_records_base" {
			t.Fatalf("partition %s: %v", p.name, err)
		}
		out = append(out, p)
	}
	rows.Close()
	for i := range out {
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+pgx.Identifier{schema, out[i].name}.Sanitize()).Scan(&out[i].rows); err != nil {
			t.Fatal(err)
		}
		if out[i].name == "krply_records_base" {
			out[i].from = -1 << 63
		} else {
			out[i].from *= int64(time.Minute)
		}
	}
	slices.SortFunc(out, func(a, b partition) int { return int((a.from >> 1) - (b.from >> 1)) })
	return out
}

// TestDroppedPartitionRecreated has one store drop partitions (a
// compaction) that another store, as another process would, remembers
// creating: the other store's next Append into one of them finds it gone,
// forgets what it knew, creates it again and stores the record.
func TestDroppedPartitionRecreated(t *testing.T) {
	ctx := context.Background()
	a, schema := openSchema(t, postgres.WithPartitionWidth(time.Minute))
	b, err := postgres.Open(ctx, database(t), postgres.WithSchema(schema))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	stream := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	// a creates the partitions of minutes 0 and 1; b those of 10 and 11.
	if _, err := a.Append(ctx, []event.Record{storagetest.Checkpoint(stream, "1", true, t0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Append(ctx, []event.Record{storagetest.Checkpoint(stream, "2", true, t0.Add(10*time.Minute))}); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Compact(ctx, t0.Add(5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	for _, p := range partitionsOf(t, schema) {
		if p.name == "krply_records_p"+fmt.Sprint(t0.Unix()/60+1) {
			t.Fatalf("the compaction left partition %s", p.name)
		}
	}
	late := storagetest.Checkpoint(stream, "3", false, t0.Add(time.Minute+time.Second))
	res, err := a.Append(ctx, []event.Record{late})
	if err != nil || res.Inserted != 1 {
		t.Fatalf("Append into a partition another store dropped: %+v, %v", res, err)
	}
	if got, err := b.Get(ctx, late.EventID); err != nil || got.IngestSeq != res.Seqs[0] {
		t.Fatalf("Get of the late record = seq %d, %v; Append said %d", got.IngestSeq, err, res.Seqs[0])
	}
}
