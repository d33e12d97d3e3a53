package sqlite

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"

	"github.com/krply/krply/internal/diskspace"
)

// Opening an older journal reports the migration's progress, to
// WithMigrationProgress and in the log with the percent, ending at 100
// once it committed; a journal already current reports nothing.
func TestMigrationProgress(t *testing.T) {
	path := copyFixture(t, "testdata/format/v5.db")
	var (
		mu   sync.Mutex
		seen []MigrationProgress
		logs []string
	)
	log := funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		logs = append(logs, args)
	}, funcr.Options{})
	record := func(p MigrationProgress) {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, p)
	}
	s, err := Open(context.Background(), path, WithMigrationProgress(record), WithLogger(log))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	first, last := seen[0], seen[len(seen)-1]
	mu.Unlock()
	if first.From != 5 || first.To != SchemaVersion || first.Done || first.Percent() != 0 || first.Expected <= 0 {
		t.Errorf("first progress %+v (%d%%), want from 5 to %d at 0%% with an expected size", first, first.Percent(), SchemaVersion)
	}
	if !last.Done || last.Percent() != 100 {
		t.Errorf("last progress %+v (%d%%), want done at 100%%", last, last.Percent())
	}
	all := strings.Join(logs, "\n")
	for _, want := range []string{`"msg"="migrating the journal's schema; queries and recording wait until it is done"`, `"from"=5 "to"=6 "bytes"=`,
		`"msg"="migrated the journal's schema"`, `"from"=5 "to"=6 "percent"=100`} {
		if !strings.Contains(all, want) {
			t.Errorf("log lacks %s:\n%s", want, all)
		}
	}

	seen = nil
	s, err = Open(context.Background(), path, WithMigrationProgress(record))
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	if len(seen) != 0 {
		t.Errorf("a current journal reported %+v", seen)
	}

	for _, p := range []MigrationProgress{{Written: 50, Expected: 100}, {Written: 150, Expected: 100}, {Written: 1}} {
		if got, want := p.Percent(), map[int64]int{50: 50, 150: 99, 1: 0}[p.Written]; got != want {
			t.Errorf("%+v: %d%%, want %d%%", p, got, want)
		}
	}
}

// A migration that would not fit on the journal's disk is refused before
// it starts, naming the free space and the space it needs, and leaves
// the file as it was.
func TestMigrationRefusedWithoutSpace(t *testing.T) {
	path := copyFixture(t, "testdata/format/v5.db")
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	freeSpace = func(string) (int64, error) { return 4096, nil }
	t.Cleanup(func() { freeSpace = diskspace.Free })
	_, err = Open(context.Background(), path)
	var se *MigrationSpaceError
	if !errors.As(err, &se) || !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Open = %v, want a *MigrationSpaceError wrapping ErrDiskFull", err)
	}
	if se.Free != 4096 || se.Needed != 2*int64(len(before)) || se.From != 5 || se.To != SchemaVersion {
		t.Errorf("error %+v, want 4096 free, %d needed, from 5 to %d", se, 2*len(before), SchemaVersion)
	}
	for _, want := range []string{"from schema version 5 to 6", "4.0 KiB (4096 bytes)", "free space there or enlarge the volume", "nothing was changed"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	after, err := os.ReadFile(path)
	if err != nil || string(after) != string(before) {
		t.Errorf("the journal changed (%v)", err)
	}
	if headerVersion(t, path) != 5 {
		t.Error("the journal's schema version changed")
	}
}
