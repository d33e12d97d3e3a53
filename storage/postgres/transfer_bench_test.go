package postgres_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/postgres"
	"github.com/krply/krply/storage/transfer"
	"github.com/krply/krply/storage/transfer/transfertest"
)

// BenchmarkTransfer imports an export of KRPLY_PG_BENCH_TRANSFER records
// (default 200,000 ConfigMap changes, of 10,000 objects) into an empty
// PostgreSQL journal in batches of transfer.DefaultBatchSize, and exports
// it again, reporting records per second (wall) and the CPU time per
// record of this process (the server's is not counted).
//
//	go test -run '^$' -bench Transfer -benchtime 1x ./
func BenchmarkTransfer(b *testing.B) {
	ctx := context.Background()
	n := 200_000
	if v, err := strconv.Atoi(os.Getenv("KRPLY_PG_BENCH_TRANSFER")); err == nil && v > 0 {
		n = v
	}
	src := memory.New()
	for i := 0; i < n; i += 2000 {
		if _, err := src.Append(ctx, benchEvents("c1", 10000, i, min(2000, n-i))); err != nil {
			b.Fatal(err)
		}
	}
	var file bytes.Buffer
	if _, err := transfer.Export(ctx, src, &file); err != nil {
		b.Fatal(err)
	}
	_ = src.Close()
	var schemaSeq atomic.Int64
	var imported *postgres.Store
	step := func(name string, fn func(b *testing.B) transfer.Result) { transfertest.Bench(b, name, n, fn) }
	step("ImportPostgres", func(b *testing.B) transfer.Result {
		s, err := postgres.Open(ctx, database(b), postgres.WithSchema(fmt.Sprintf("bench_transfer_%d", schemaSeq.Add(1))))
		if err != nil {
			b.Fatal(err)
		}
		res, err := transfer.Import(ctx, bytes.NewReader(file.Bytes()), s)
		if err != nil {
			b.Fatal(err)
		}
		if res.Inserted != int64(n) {
			b.Fatalf("%d records inserted, want %d", res.Inserted, n)
		}
		if imported != nil {
			_ = imported.Close()
		}
		imported = s
		return res
	})
	step("ExportPostgres", func(b *testing.B) transfer.Result {
		if imported == nil {
			b.Fatal("nothing imported")
		}
		res, err := transfer.Export(ctx, imported, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		return res
	})
	if imported != nil {
		_ = imported.Close()
	}
}
