package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/jackc/pgx/v5"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/postgres"
	"github.com/krply/krply/storage/storagetest"
)

// TestOpenOptions checks the options of Open and the errors it names:
// values out of range and a connection string that cannot be parsed are
// ErrInvalidArgument, a journal keeps the partition width it was created
// with, and tables of a newer schema version are ErrIncompatible.
func TestOpenOptions(t *testing.T) {
	ctx := context.Background()
	dsn := database(t)
	for _, tc := range []struct {
		name string
		dsn  string
		opts []postgres.Option
	}{
		{"negative pool", dsn, []postgres.Option{postgres.WithMaxConns(-1)}},
		{"tiny partitions", dsn, []postgres.Option{postgres.WithPartitionWidth(time.Microsecond)}},
		{"bad dsn", "postgres://%zz", nil},
	} {
		if _, err := postgres.Open(ctx, tc.dsn, tc.opts...); !errors.Is(err, storage.ErrInvalidArgument) {
			t.Errorf("%s: Open = %v, want ErrInvalidArgument", tc.name, err)
		}
	}

	// A logger sees compactions; a pool of two connections serves
	// concurrent use.
	var lines []string
	log := funcr.New(func(prefix, args string) { lines = append(lines, args) }, funcr.Options{Verbosity: 1})
	s, err := postgres.Open(ctx, dsn, postgres.WithSchema("options"), postgres.WithMaxConns(2), postgres.WithLogger(log), postgres.WithPartitionWidth(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	stream := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 3 {
		cp := storagetest.Checkpoint(stream, "1"+strings.Repeat("0", i), true, t0.Add(time.Duration(i)*time.Hour))
		if _, err := s.Append(ctx, []event.Record{cp}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Compact(ctx, t0.Add(150*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if len(lines) == 0 || !strings.Contains(lines[len(lines)-1], "compacted journal") {
		t.Errorf("the logger saw %q, want the compaction", lines)
	}

	// The width stays the journal's.
	if _, err := postgres.Open(ctx, dsn, postgres.WithSchema("options"), postgres.WithPartitionWidth(time.Minute)); !errors.Is(err, storage.ErrInvalidArgument) || !strings.Contains(err.Error(), "1h0m0s") {
		t.Errorf("reopening with another width: %v, want ErrInvalidArgument naming 1h0m0s", err)
	}
	again, err := postgres.Open(ctx, dsn, postgres.WithSchema("options"))
	if err != nil {
		t.Fatal(err)
	}
	again.Close()

	// Tables of a newer krply are refused, untouched.
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "UPDATE options.krply_meta SET value = '99' WHERE key = 'schema_version'"); err != nil {
		t.Fatal(err)
	}
	if _, err := postgres.Open(ctx, dsn, postgres.WithSchema("options")); !errors.Is(err, storage.ErrIncompatible) {
		t.Errorf("Open of schema version 99: %v, want ErrIncompatible", err)
	}
}
