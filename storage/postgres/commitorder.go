package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Commit order across clusters.
//
// The Appends of one cluster take turns (the cluster's row lock), so a
// cluster's IngestSeqs follow commit order. Appends of different clusters
// do not wait for each other: one may take smaller numbers than another
// and commit after it. A reader of the whole journal in IngestSeq order
// (a change feed, an export) that saw the larger number would resume past
// the smaller one and never read it. So reads of every cluster at once
// stop below the smallest number an Append still in flight may hold.
//
// An Append announces itself before it takes numbers: it takes a shared
// advisory lock (held until its transaction ends) whose key carries the
// sequence's last value, which all its numbers exceed. A reader first
// reads the sequence's last value, then the keys of the advisory locks
// held, then the records, in three statements in that order, and reads
// only numbers up to the smallest of them. An Append whose lock the
// reader did not see either ended before (its records are in the reader's
// snapshot, taken after) or locked after; then it took its numbers after
// the reader read the sequence, so they are larger than the bound.
//
// The key: the top 16 bits tag the journal's sequence (0x4000 and 14 bits
// of its OID; another journal with the same tag only makes the bound
// lower, never higher), the low 48 its last value.

// seqTag is the tag of the keys of this journal's in-flight locks.
const seqTag = `(16384 | ('krply_seq'::regclass::oid::bigint & 16383))`

// lastTaken is the last number the sequence gave out (0 before the first).
const lastTaken = `CASE WHEN is_called THEN last_value ELSE last_value - 1 END`

// inFlightLock is the statement an Append runs before it takes numbers.
const inFlightLock = `SELECT pg_advisory_xact_lock_shared((` + seqTag + ` << 48) | least(` + lastTaken + `, 281474976710655)) FROM krply_seq`

// readLastTaken and readInFlight are what a reader runs, in this order,
// before its query: the bound is the smaller of their answers.
const (
	readLastTaken = `SELECT ` + lastTaken + ` FROM krply_seq`
	readInFlight  = `SELECT min(((classid::bigint & 65535) << 32) | objid::bigint) FROM pg_locks
WHERE locktype = 'advisory' AND objsubid = 1 AND database = (SELECT oid FROM pg_database WHERE datname = current_database())
  AND (classid::bigint >> 16) = ` + seqTag
)

// committedBound returns the largest IngestSeq up to which every record
// that will ever be committed is committed already: a read of every
// cluster in IngestSeq order stops there.
func committedBound(ctx context.Context, q batcher) (int64, error) {
	b := &pgx.Batch{}
	b.Queue(readLastTaken)
	b.Queue(readInFlight)
	br := q.SendBatch(ctx, b)
	defer br.Close()
	var last int64
	var inFlight *int64
	if err := br.QueryRow().Scan(&last); err != nil {
		return 0, fmt.Errorf("reading the sequence: %w", err)
	}
	if err := br.QueryRow().Scan(&inFlight); err != nil {
		return 0, fmt.Errorf("reading the appends in flight: %w", err)
	}
	if inFlight != nil && *inFlight < last {
		last = *inFlight
	}
	return last, br.Close()
}

// batcher sends a pipeline of statements.
type batcher interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}
