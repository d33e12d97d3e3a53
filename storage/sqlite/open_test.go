package sqlite_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/sqlite"
)

// writeJournal creates a closed journal with one record in it.
func writeJournal(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	stream := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	ref := event.ResourceRef{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "shop", Name: "a", UID: "u1", ResourceVersion: "1"}
	rec := event.Record{Type: event.TypeEvent, EventID: event.EventID(stream.ID(), event.TypeEvent, ref, event.Added), ClusterID: "c1",
		StreamID: stream.ID(), ObservedAt: time.Unix(100, 0), WatchType: event.Added, Resource: ref, Object: []byte(`{"kind":"ConfigMap"}`)}
	if _, err := s.Append(ctx, []event.Record{rec}); err != nil {
		t.Fatalf("Append: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// rawExec runs statements on a file with a plain SQLite connection.
func rawExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func TestOpenRefusesForeignFilesUntouched(t *testing.T) {
	tests := []struct {
		name        string
		make        func(t *testing.T, path string)
		wantReason  string
		wantVersion int
	}{
		{
			name: "newer krply",
			make: func(t *testing.T, path string) {
				writeJournal(t, path)
				rawExec(t, path, `PRAGMA user_version = 99`)
			},
			wantReason:  "newer krply (schema version 99",
			wantVersion: 99,
		},
		{
			name: "other SQLite database",
			make: func(t *testing.T, path string) {
				rawExec(t, path, `CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)`, `INSERT INTO notes (text) VALUES ('hello')`)
			},
			wantReason: "not a krply journal",
		},
		{
			name: "not SQLite",
			make: func(t *testing.T, path string) {
				if err := os.WriteFile(path, bytes.Repeat([]byte("krply? no, just text.\n"), 500), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			wantReason: "not a SQLite database",
		},
		{
			name: "short file",
			make: func(t *testing.T, path string) {
				if err := os.WriteFile(path, []byte("SQLite format 3"), 0o644); err != nil {
					t.Fatal(err)
				}
			},
			wantReason: "only 15 bytes",
		},
		{
			// Journals written before the event ID and body hash keys
			// (id_key, hash_key) said schema version 1 too.
			name:        "schema version 1 of an earlier layout",
			make:        writeUnpinnedLayoutJournal,
			wantReason:  "table records has no column id_key",
			wantVersion: 1,
		},
		{
			name: "corrupt schema page",
			make: func(t *testing.T, path string) {
				writeJournal(t, path)
				f, err := os.OpenFile(path, os.O_RDWR, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer f.Close()
				// Keep the 100-byte header, trash the rest of page 1
				// (the schema).
				if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5}, 4096-100), 100); err != nil {
					t.Fatal(err)
				}
			},
			wantReason:  "corrupt",
			wantVersion: sqlite.SchemaVersion, // written by this build
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "journal.db")
			tc.make(t, path)
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			entriesBefore := dirNames(t, dir)

			// Neither a writable nor a read-only Open touches the file.
			for _, opts := range [][]sqlite.Option{nil, {sqlite.WithReadOnly()}} {
				s, err := sqlite.Open(context.Background(), path, opts...)
				if err == nil {
					s.Close()
					t.Fatalf("Open(%d options) succeeded, want an error", len(opts))
				}
				if !errors.Is(err, storage.ErrIncompatible) {
					t.Fatalf("error %v does not wrap storage.ErrIncompatible", err)
				}
				var ie *sqlite.IncompatibleError
				if !errors.As(err, &ie) {
					t.Fatalf("error %v is not an *IncompatibleError", err)
				}
				if ie.Path != path || ie.FileVersion != tc.wantVersion || ie.SupportedVersion != sqlite.SchemaVersion {
					t.Errorf("IncompatibleError{Path: %q, FileVersion: %d, SupportedVersion: %d}, want %q, %d, %d",
						ie.Path, ie.FileVersion, ie.SupportedVersion, path, tc.wantVersion, sqlite.SchemaVersion)
				}
				if msg := err.Error(); !strings.Contains(msg, tc.wantReason) || !strings.Contains(msg, path) {
					t.Errorf("error %q should name the file and say %q", msg, tc.wantReason)
				}
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(before, after) {
				t.Errorf("the file changed: %d bytes before, %d after", len(before), len(after))
			}
			if got := dirNames(t, dir); got != entriesBefore {
				t.Errorf("directory holds %s after the failed Open, want %s", got, entriesBefore)
			}
		})
	}
}

// writeUnpinnedLayoutJournal writes a journal of the layout journals had
// before the format was pinned (and still schema version 1 in the
// header): today's journal with a unique event_id column instead of its
// 64-bit key (id_key), a unique index of body hashes, and without the
// indexes of the later versions.
func writeUnpinnedLayoutJournal(t *testing.T, path string) {
	writeJournal(t, path)
	rawExec(t, path,
		`DROP INDEX records_id`, `DROP INDEX records_stream_time`, `DROP INDEX records_type_seq`,
		`ALTER TABLE records DROP COLUMN id_key`,
		`CREATE UNIQUE INDEX records_event_id ON records (event_id)`, `CREATE UNIQUE INDEX bodies_hash_unique ON bodies (hash)`,
		`PRAGMA user_version = 1`)
}

func dirNames(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return strings.Join(names, ",")
}

func TestReopenKeepsJournal(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "journal.db")
	writeJournal(t, path)
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()
	st, err := s.StreamStatus(ctx, "c1/core/v1/configmaps/shop")
	if err != nil {
		t.Fatal(err)
	}
	if st.Records != 1 || st.CheckpointRV != "1" {
		t.Errorf("after reopen: %d records, checkpoint %q; want 1 and \"1\"", st.Records, st.CheckpointRV)
	}
	rec, err := s.LatestAt(ctx, storage.ObjectID{ClusterID: "c1", Resource: "configmaps", Namespace: "shop", Name: "a"}, time.Unix(200, 0))
	if err != nil {
		t.Fatal(err)
	}
	if string(rec.Object) != `{"kind":"ConfigMap"}` || rec.IngestSeq != 1 {
		t.Errorf("LatestAt after reopen = seq %d body %s", rec.IngestSeq, rec.Object)
	}
}

// TestMigratesOlderVersions opens journals of older schema versions
// (version 1 has no index to seek a stream by time, version 2 none to find
// the newest record of a type, version 5 keeps records by seq alone):
// Open migrates them to the current version, adding the indexes and
// clustering records and bodies by object, and keeps their records.
func TestMigratesOlderVersions(t *testing.T) {
	ctx := context.Background()
	for version := 1; version < sqlite.SchemaVersion; version++ {
		t.Run(fmt.Sprintf("version%d", version), func(t *testing.T) {
			path := olderJournal(t, version)
			s, err := sqlite.Open(ctx, path)
			if err != nil {
				t.Fatalf("open a version %d journal: %v", version, err)
			}
			p, err := s.Records(ctx, storage.Query{StreamID: "c1/core/v1/configmaps/shop", Limit: 1, Descending: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Records) != 1 || p.Records[0].Type != event.TypeCheckpoint {
				t.Fatalf("Records after migration: %+v, want the stream's last record, a checkpoint", p.Records)
			}
			tls, err := s.Timelines(ctx, "c1")
			if err != nil || len(tls) != 2 || tls[1].StreamID != "c1/core/v1/configmaps/shop" {
				t.Fatalf("Timelines after migration = %+v, %v; want the two streams of c1", tls, err)
			}
			db := closeAndOpenRaw(t, s, path)
			var got, tables, clustered int
			var bodyIndexes string
			if err := db.QueryRow(`PRAGMA user_version`).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('clusters', 'scopes', 'baselines')`).Scan(&tables); err != nil {
				t.Fatal(err)
			}
			if err := db.QueryRow(`SELECT coalesce(group_concat(name), '') FROM sqlite_master WHERE type = 'index' AND tbl_name = 'bodies'`).Scan(&bodyIndexes); err != nil {
				t.Fatal(err)
			}
			if err := db.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN ('records', 'bodies') AND sql LIKE '%PRIMARY KEY (obj, %) WITHOUT ROWID'`).Scan(&clustered); err != nil {
				t.Fatal(err)
			}
			if got != sqlite.SchemaVersion || sqlite.SchemaVersion != 6 || tables != 3 || bodyIndexes != "bodies_id" || clustered != 2 {
				t.Fatalf("after migration: user_version %d (SchemaVersion %d), %d of the 3 name tables, indexes of bodies %q, %d of records and bodies keyed by object; want 6, 6, 3, \"bodies_id\", 2",
					got, sqlite.SchemaVersion, tables, bodyIndexes, clustered)
			}
		})
	}
}

// olderJournal copies the format fixture of an older schema version
// (testdata/format) to a temporary file and returns its name.
func olderJournal(t *testing.T, version int) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "format", fmt.Sprintf("v%d.db", version)))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "journal.db")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMigrationCopiesSharedBodies: writers before schema version 5 stored
// a body once per journal, so records of two objects could point at one
// body row. Version 6 keys bodies by object; the migration copies such a
// body to each object, and both objects' records read it.
func TestMigrationCopiesSharedBodies(t *testing.T) {
	ctx := context.Background()
	path := olderJournal(t, 4)
	// Record 3 (of object 2) points at body 5, which record 9 (of object
	// 1) points at.
	rawExec(t, path, `UPDATE records SET body = 5 WHERE seq = 3 AND obj = 2`,
		`UPDATE records SET body = 5 WHERE seq = 9 AND obj = 1`,
		// And the latest records of objects 1 and 2 share body 10.
		`UPDATE records SET body = 10 WHERE seq = 39 AND obj = 2`)
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	bodyAt := func(seq int64) []byte {
		t.Helper()
		p, err := s.Records(ctx, storage.Query{AfterSeq: seq - 1, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(p.Records) != 1 || p.Records[0].IngestSeq != seq {
			t.Fatalf("Records after seq %d: %+v", seq-1, p.Records)
		}
		return p.Records[0].Object
	}
	shared, own := bodyAt(3), bodyAt(9)
	if len(shared) == 0 || !bytes.Equal(shared, own) {
		t.Fatalf("the body of record 3 after migration is %q, want that of record 9, %q", shared, own)
	}
	// A compaction recounts the totals: a body stored twice now counts
	// once, as its writer counted it (body 10, which the compaction
	// keeps: it is the latest of both objects).
	if res, err := s.Compact(ctx, time.Unix(0, 1735689690000000000)); err != nil || res.RecordsRemoved == 0 {
		t.Fatalf("Compact: %+v, %v; want records removed", res, err)
	}
	stats, err := s.Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	db := closeAndOpenRaw(t, s, path)
	var objs string
	if err := db.QueryRow(`SELECT coalesce(group_concat(obj), '') FROM (SELECT obj FROM bodies WHERE id = 10 ORDER BY obj)`).Scan(&objs); err != nil {
		t.Fatal(err)
	}
	if objs != "1,2" {
		t.Errorf("body 10 is stored under objects %q, want 1,2", objs)
	}
	var rows, ids int64
	if err := db.QueryRow(`SELECT count(*), count(DISTINCT id) FROM bodies`).Scan(&rows, &ids); err != nil {
		t.Fatal(err)
	}
	if rows == ids || stats.Bodies != ids {
		t.Errorf("after the compaction: %d body rows of %d ids, Stats counts %d bodies; want more rows than ids, and the ids counted", rows, ids, stats.Bodies)
	}
}

// closeAndOpenRaw closes s and opens its file with database/sql, to look
// at the tables themselves; the database closes with the test.
func closeAndOpenRaw(t *testing.T, s *sqlite.Store, path string) *sql.DB {
	t.Helper()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
