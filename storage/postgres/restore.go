package postgres

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/journal"
)

// RestoreStreams sets the checkpoint and availability of streams in one
// transaction; see storage.StreamRestorer. It locks the streams' clusters
// as an Append does, so it is ordered with their writers: an Append that
// commits after it goes on from the restored state.
func (s *Store) RestoreStreams(ctx context.Context, streams []storage.StreamStatus) error {
	if err := s.check(ctx, "restore streams"); err != nil {
		return err
	}
	clusters, err := journal.ParseStreams(streams)
	if err != nil {
		return fmt.Errorf("postgres: restore streams: %w", err)
	}
	if len(streams) == 0 {
		return nil
	}
	err = s.inTx(ctx, "restore streams", func(tx pgx.Tx) error {
		in := &appendInput{statuses: map[baselineKey]*storage.StreamStatus{}}
		for i, want := range streams {
			sk := baselineKey{cluster: clusters[i], stream: want.StreamID}
			if in.statuses[sk] == nil {
				st := journal.NewStatus(want.StreamID)
				in.statuses[sk] = &st
				in.skeys = append(in.skeys, sk)
				if !slices.Contains(in.clusters, clusters[i]) {
					in.clusters = append(in.clusters, clusters[i])
				}
			}
		}
		slices.Sort(in.clusters)
		reads := &pgx.Batch{}
		queueLock(reads, in.clusters)
		queueStatusRead(reads, in)
		br := tx.SendBatch(ctx, reads)
		for range 2 { // the cluster rows, their locks
			if _, err := br.Exec(); err != nil {
				_ = br.Close()
				return err
			}
		}
		if err := readStatuses(br, in); err != nil {
			_ = br.Close()
			return err
		}
		if err := br.Close(); err != nil {
			return err
		}
		for i, want := range streams {
			journal.RestoreDurable(in.statuses[baselineKey{cluster: clusters[i], stream: want.StreamID}], want)
		}
		writes := &pgx.Batch{}
		if err := queueStatuses(writes, in.statuses); err != nil {
			return err
		}
		return sendBatch(ctx, tx, writes)
	})
	if err != nil {
		return fmt.Errorf("postgres: restore streams: %w", err)
	}
	return nil
}
