package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/journal"
)

// bulkCacheKiB is the writer's page cache while a bulk is open (when
// WithCacheSize asks for less): the pages a bulk changes stay in memory
// until its commit writes each of them once, instead of spilling to the
// write-ahead log and being written again as the bulk goes on.
const bulkCacheKiB = 256 << 10

// errBulkDone is the error of a Bulk used after its Commit or Rollback.
var errBulkDone = errors.New("sqlite: bulk append: the bulk was committed or rolled back already")

// bulk is the Store's storage.Bulk: one write transaction, held from
// BeginBulk to Commit or Rollback, with the writer's lock.
type bulk struct {
	s   *Store
	tx  *sql.Tx
	end func() // rolls back unless committed, releases the writer's lock
	// exit ends the bulk as an operation of the Store (Close waits).
	exit func()
	// published is set once an Append changed the writer's next IDs and
	// caches: a rollback must forget them.
	published bool
	// failed is the error of an Append that left the transaction with
	// part of a batch; done is set by Commit and Rollback.
	failed error
	done   bool
}

// BeginBulk implements storage.BulkAppender. The transaction ignores
// ctx's cancellation: a cancelled Append fails the bulk, which is then
// rolled back. A bulk is an operation in flight: Close waits for it to
// commit or roll back.
func (s *Store) BeginBulk(ctx context.Context) (storage.Bulk, error) {
	exit, err := s.enterWrite("bulk append to")
	if err != nil {
		return nil, err
	}
	tx, end, err := s.beginWrite(context.WithoutCancel(ctx), "bulk append")
	if err != nil {
		exit()
		return nil, err
	}
	if s.cfg.cacheKiB < bulkCacheKiB {
		if _, err := tx.ExecContext(ctx, cacheSizePragma(bulkCacheKiB)); err != nil {
			end()
			exit()
			return nil, fmt.Errorf("sqlite: bulk append: cache size: %w", err)
		}
	}
	return &bulk{s: s, tx: tx, end: end, exit: exit}, nil
}

// Append implements storage.Bulk.
func (b *bulk) Append(ctx context.Context, records []event.Record) (storage.AppendResult, error) {
	if err := b.usable(); err != nil {
		return storage.AppendResult{}, err
	}
	for i := range records {
		if err := journal.Validate(&records[i]); err != nil {
			b.failed = fmt.Errorf("sqlite: bulk append: record %d of %d: %w", i, len(records), err)
			return storage.AppendResult{}, b.failed
		}
	}
	if len(records) == 0 {
		return storage.AppendResult{Seqs: []int64{}}, nil
	}
	at := b.s.newAppendTx(ctx, b.tx)
	res, err := at.appendAll(records)
	if err != nil {
		b.failed = b.s.explainWrite(err)
		return storage.AppendResult{}, b.failed
	}
	// The writer's next IDs and caches follow the transaction, which
	// only this Bulk writes until it ends; Rollback forgets them.
	b.s.publish(at)
	b.published = true
	return res, nil
}

// usable returns why the bulk takes no more appends, if it does not.
func (b *bulk) usable() error {
	switch {
	case b.done:
		return errBulkDone
	case b.failed != nil:
		return fmt.Errorf("sqlite: bulk append: an append of this bulk failed, roll it back: %w", b.failed)
	}
	return nil
}

// Commit implements storage.Bulk.
func (b *bulk) Commit() error {
	if err := b.usable(); err != nil {
		return err
	}
	b.done = true
	err := b.tx.Commit()
	if err != nil {
		err = b.s.explainWrite(fmt.Errorf("sqlite: bulk append: commit: %w", err))
		b.s.forgetWrites()
	}
	b.finish()
	return err
}

// Rollback implements storage.Bulk.
func (b *bulk) Rollback() error {
	if b.done {
		return nil
	}
	b.done = true
	err := b.tx.Rollback()
	if b.published {
		b.s.forgetWrites()
	}
	b.finish()
	if err != nil {
		return fmt.Errorf("sqlite: bulk append: roll back: %w", err)
	}
	return nil
}

// finish restores the writer's cache size and releases the writer.
func (b *bulk) finish() {
	if b.s.cfg.cacheKiB < bulkCacheKiB {
		// Shrinking the cache only lets go of clean pages; should it
		// fail, the writer keeps the larger cache, which is no error.
		_, _ = b.s.w.Exec(cacheSizePragma(b.s.cfg.cacheKiB))
	}
	b.end()
	b.exit()
}

// forgetWrites empties every cache of the writer after a transaction
// that changed them was rolled back: the rows they name are gone, and
// the next write reads the next IDs afresh (catchUp).
func (s *Store) forgetWrites() {
	s.forgetBodies()
	clear(s.objectIDs)
	s.names = newNames()
}

// cacheSizePragma sets a connection's page cache to kib KiB.
func cacheSizePragma(kib int) string { return fmt.Sprintf("PRAGMA cache_size = -%d", kib) }
