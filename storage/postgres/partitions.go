package postgres

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// DefaultPartitionWidth is the span of ObservedAt each partition of the
// records table holds unless WithPartitionWidth says otherwise.
const DefaultPartitionWidth = 24 * time.Hour

// basePart is the partition key of the base partition, which holds the
// records a compaction kept from the partitions it dropped.
const basePart = math.MinInt64

// partitions knows which partitions of krply_records exist. It is the
// store's one cache of database state: another process may drop a
// partition (a compaction) or create one, and an insert into a dropped
// one fails with "no partition", after which Append forgets what it knew
// and creates the partition again.
type partitions struct {
	width time.Duration
	mu    sync.Mutex
	known map[int64]bool
}

// of returns the partition of a time: floor(nanos / width).
func (p *partitions) of(t time.Time) int64 {
	n, w := t.UnixNano(), int64(p.width)
	q := n / w
	if n%w != 0 && n < 0 {
		q--
	}
	if q == basePart {
		q++
	}
	return q
}

func partitionName(part int64) string {
	if part < 0 {
		return "krply_records_m" + strconv.FormatInt(-part, 10)
	}
	return "krply_records_p" + strconv.FormatInt(part, 10)
}

// ensure creates the partitions parts and the one after each (so that
// appends crossing into the next span rarely wait for DDL), each in a
// short transaction of its own, outside the append.
func (p *partitions) ensure(ctx context.Context, pool querier, parts []int64) error {
	p.mu.Lock()
	var missing []int64
	for _, part := range parts {
		for _, q := range []int64{part, part + 1} {
			if !p.known[q] {
				missing = append(missing, q)
			}
		}
	}
	p.mu.Unlock()
	sort.Slice(missing, func(i, j int) bool { return missing[i] < missing[j] })
	for i, part := range missing {
		if i > 0 && missing[i-1] == part {
			continue
		}
		sql := fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s PARTITION OF krply_records FOR VALUES FROM (%d) TO (%d)",
			pgx.Identifier{partitionName(part)}.Sanitize(), part, part+1)
		if _, err := pool.Exec(ctx, sql); err != nil && !alreadyExists(err) {
			return fmt.Errorf("creating partition %s: %w", partitionName(part), err)
		}
		p.mu.Lock()
		p.known[part] = true
		p.mu.Unlock()
	}
	return nil
}

// forget drops what p knows, after an insert found a partition missing.
func (p *partitions) forget() {
	p.mu.Lock()
	p.known = map[int64]bool{}
	p.mu.Unlock()
}

// alreadyExists reports a concurrent creation of the same table by
// another process.
func alreadyExists(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "42P07" || pe.Code == "23505")
}

// noPartition reports an insert into a partition that does not exist
// (dropped by another process's compaction since this one created it).
func noPartition(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23514"
}

// droppable returns the partitions that lie entirely before the time
// before: the spans that end at or before it.
func droppable(ctx context.Context, tx pgx.Tx, p *partitions, before time.Time) ([]int64, error) {
	rows, err := tx.Query(ctx, `SELECT c.relname FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
WHERE i.inhparent = 'krply_records'::regclass`)
	if err != nil {
		return nil, fmt.Errorf("listing partitions: %w", err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("listing partitions: %w", err)
	}
	// Partition part spans [part*width, (part+1)*width): it lies before
	// `before` when part is smaller than before's own partition.
	cut := p.of(before)
	var out []int64
	for _, name := range names {
		var part int64
		switch {
		case len(name) > 15 && name[:15] == "krply_records_p":
			part, err = strconv.ParseInt(name[15:], 10, 64)
		case len(name) > 15 && name[:15] == "krply_records_m":
			part, err = strconv.ParseInt(name[15:], 10, 64)
			part = -part
		default:
			continue
		}
		if err != nil {
			continue
		}
		if part < cut {
			out = append(out, part)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out, nil
}
