package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krply/krply/storage/sqlite"
)

// TestMigrate: a query refuses a journal of an older schema version
// without touching it and names the command that migrates it; migrate
// does, once; the query then answers.
func TestMigrate(t *testing.T) {
	older := filepath.Join("..", "..", "storage", "sqlite", "testdata", "format", fmt.Sprintf("v%d.db", sqlite.SchemaVersion-1))
	path, data := copyJournal(t, older, "krply.db")
	r := runPlugin(t, "--journal", path, "--cluster-id", "c1", "status")
	hint := "migrate it once with kubectl krply migrate --journal " + path
	if r.code != exitError || !strings.Contains(r.stderr, hint) || !strings.Contains(r.stderr, fmt.Sprintf("schema version %d", sqlite.SchemaVersion-1)) {
		t.Fatalf("status on an older journal: exit %d, stderr %q; want 1, the version and %q", r.code, r.stderr, hint)
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, data) {
		t.Fatalf("the refused query changed the journal (%v)", err)
	}
	r = runPlugin(t, "--journal", path, "migrate")
	if want := fmt.Sprintf("journal %s: at schema version %d now (it was %d)\n", path, sqlite.SchemaVersion, sqlite.SchemaVersion-1); r.code != exitOK || r.stdout != want {
		t.Fatalf("migrate: exit %d, stdout %q, stderr %q; want 0 and %q", r.code, r.stdout, r.stderr, want)
	}
	progress := fmt.Sprintf("migrating journal %s from schema version %d to %d: ", path, sqlite.SchemaVersion-1, sqlite.SchemaVersion)
	if !strings.HasPrefix(r.stderr, progress+"0%\n") || !strings.HasSuffix(r.stderr, progress+"100%\n") {
		t.Errorf("migrate's progress on stderr: %q; want from 0%% to 100%%", r.stderr)
	}
	if r = runPlugin(t, "--journal", path, "--cluster-id", "c1", "status"); r.code != exitOK || !strings.Contains(r.stdout, "deployments.apps") {
		t.Fatalf("status after migrate: exit %d, stdout %q, stderr %q; want 0 and the deployments stream", r.code, r.stdout, r.stderr)
	}
	r = runPlugin(t, "--journal", path, "migrate")
	if want := fmt.Sprintf("journal %s: already at schema version %d, nothing to do\n", path, sqlite.SchemaVersion); r.code != exitOK || r.stdout != want {
		t.Fatalf("migrate again: exit %d, stdout %q; want 0 and %q", r.code, r.stdout, want)
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--journal", filepath.Join(t.TempDir(), "none.db"), "migrate"}, exitError, "--journal"},
		{[]string{"--server", "http://127.0.0.1:1", "migrate"}, exitUsage, "not on a query API (--server)"},
	} {
		if r := runPlugin(t, c.args...); r.code != c.code || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, r.code, r.stderr, c.code, c.want)
		}
	}
}

// copyJournal copies the journal at path to a file named name in a
// temporary folder and returns its path and its bytes.
func copyJournal(t *testing.T, path, name string) (string, []byte) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst, data
}
