package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/recorder"
	"github.com/krply/krply/storage/sqlite"
)

// goIdentifier matches what reads as a Go identifier of the library in a
// message: an option (WithReadOnly), a Policy or config field
// (Policy.AllowGaps, AllowSecrets, KeepOwnerReferences), a qualified
// name (sqlite.Open, storage.ErrReadOnly) or a call (Close()).
var goIdentifier = regexp.MustCompile(`\bWith[A-Z]\w*|\bPolicy\.\w+|\b(Allow|Keep)[A-Z]\w+|\b[a-z]+\.[A-Z]\w+\b|\b[A-Z]\w+\(\)`)

// checkNoGoIdentifiers fails t when text names Go identifiers: the
// plugin's messages name flags, or say that the command cannot do it.
func checkNoGoIdentifiers(t *testing.T, what, text string) {
	t.Helper()
	if ids := goIdentifier.FindAllString(text, -1); len(ids) > 0 {
		t.Errorf("%s names Go identifiers %q:\n%s", what, ids, text)
	}
}

// No transcript of the golden tests names a Go identifier.
func TestGoldenNameNoGoIdentifiers(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.golden"))
	if err != nil || len(files) == 0 {
		t.Fatalf("golden files: %v, %v", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		checkNoGoIdentifiers(t, f, string(data))
	}
}

// Errors opening a journal name it once, with one prefix, and what to do
// in flags: a file that is no journal, an empty one, one the user may
// not write (which a test running as root cannot make: the library's
// typed error stands in for it).
func TestJournalErrors(t *testing.T) {
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.db")
	if err := os.WriteFile(corrupt, []byte("garbage garbage garbage\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		journal string
		args    []string
		want    string
	}{
		{corrupt, []string{"status"}, "kubectl krply: error: journal corrupt.db cannot be opened: not a SQLite database (only 24 bytes)\n"},
		{corrupt, []string{"record"}, "kubectl krply: error: journal corrupt.db cannot be opened: not a SQLite database (only 24 bytes)\n"},
		{corrupt, []string{"snapshot", "--save", "x", "-A"}, "kubectl krply: error: journal corrupt.db cannot be opened: not a SQLite database (only 24 bytes)\n"},
		{corrupt, []string{"export"}, "kubectl krply: error: journal corrupt.db cannot be opened: not a SQLite database (only 24 bytes)\n"},
		{corrupt, []string{"migrate"}, "kubectl krply: error: journal corrupt.db cannot be opened: not a SQLite database (only 24 bytes)\n"},
		{empty, []string{"status"}, "kubectl krply: error: journal empty.db cannot be opened: an empty file, not a journal (a read-only open creates none)\n"},
	} {
		// record needs a cluster before it opens the journal.
		args := append([]string{"--journal", tc.journal, "--kubeconfig", testKubeconfig(t)}, tc.args...)
		r := runPlugin(t, args...)
		got := strings.ReplaceAll(r.stderr, dir+string(filepath.Separator), "")
		if r.code != exitError || got != tc.want {
			t.Errorf("%s: exit %d, stderr %q; want 1, %q", tc.args, r.code, got, tc.want)
		}
		checkNoGoIdentifiers(t, fmt.Sprint(tc.args), r.stderr)
	}

	ro := &sqlite.ReadOnlyError{Path: "ro.db", Cannot: "ro.db", Err: fs.ErrPermission}
	got := message(recorder.JournalError("ro.db", fmt.Errorf("krply: %w", ro)))
	if want := "journal ro.db: this user cannot write it (permission denied): fix the permissions, or give --journal a file this user may write"; got != want {
		t.Errorf("read-only journal: %q, want %q", got, want)
	}
	ro.Cannot = "/srv"
	got = message(recorder.JournalError("ro.db", ro))
	if !strings.Contains(got, "cannot write /srv (permission denied)") || strings.Count(got, "ro.db") != 1 {
		t.Errorf("read-only folder: %q, want it to name the folder and the journal once", got)
	}
	if !errors.Is(recorder.JournalError("ro.db", ro), fs.ErrPermission) {
		t.Error("JournalError does not wrap the library's error")
	}
	checkNoGoIdentifiers(t, "read-only journal", got)
}

// testKubeconfig writes a kubeconfig naming a cluster nobody serves, for
// commands that need one before they fail on something else.
func testKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	const cfg = `apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: none, user: {}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A KUBECONFIG that names only missing files is no configuration: record
// fails at once, naming it, instead of recording http://localhost:8080,
// and creates no journal.
func TestRecordWithoutKubeconfig(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such-kubeconfig")
	t.Setenv("KUBECONFIG", missing)
	journal := filepath.Join(t.TempDir(), "kc.db")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r := runPluginContext(ctx, t, "--journal", journal, "record", "--status-every", "0")
	if ctx.Err() != nil {
		t.Fatalf("record without a kubeconfig still ran after 20s:\n%s%s", r.stdout, r.stderr)
	}
	want := "kubectl krply: error: cluster to record: no cluster configured: KUBECONFIG=" + missing + ": " + missing + " does not exist, and this is not a pod with a service account (choose it with --kubeconfig and --context)\n"
	if r.code != exitError || r.stderr != want || strings.Contains(r.stdout, "localhost:8080") {
		t.Errorf("record without a kubeconfig: exit %d\nstdout %q\nstderr %q\nwant exit 1, stderr %q", r.code, r.stdout, r.stderr, want)
	}
	if _, err := os.Stat(journal); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("record without a kubeconfig left the journal: %v", err)
	}
}

// A record the configuration dooms fails before it creates the journal,
// naming the flag: a resource the cluster does not serve, Secrets
// without --allow-secrets, flags that do not go together.
func TestRecordRefusedCreatesNothing(t *testing.T) {
	env := testenv.Shared(t)
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--resource", "nosuchthing"}, exitError, "kubectl krply: error: --resource nosuchthing: the cluster serves no such resource\n"},
		{[]string{"--resource", "deploymentz"}, exitError, "kubectl krply: error: --resource deploymentz: the cluster serves no such resource; did you mean deployment?\n"},
		{[]string{"--resource", "cm,secrets"}, exitError, "kubectl krply: error: recording Secrets needs --allow-secrets (their values are redacted, and reading them needs RBAC on secrets)\n"},
		{[]string{"--resource", "v1/secrets"}, exitError, "kubectl krply: error: recording Secrets needs --allow-secrets (their values are redacted, and reading them needs RBAC on secrets)\n"},
		{[]string{"--all-resources", "--include", "secrets"}, exitError, "kubectl krply: error: recording Secrets needs --allow-secrets (their values are redacted, and reading them needs RBAC on secrets)\n"},
		{[]string{"--all-resources", "--resource", "cm"}, exitUsage, "kubectl krply: error: --all-resources records every resource and --resource the ones it names: give one of them\n"},
		{[]string{"--exclude", "pods"}, exitUsage, "kubectl krply: error: --exclude and --include adjust --all-resources: give it too, or name the resources with --resource\n"},
	} {
		journal := filepath.Join(t.TempDir(), "refused.db")
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		r := runPluginContext(ctx, t, append([]string{"--kubeconfig", env.Kubeconfig(), "--journal", journal, "record", "--status-every", "0"}, tc.args...)...)
		cancel()
		got, _, _ := strings.Cut(r.stderr, "See 'kubectl krply --help'")
		if r.code != tc.code || got != tc.want || r.stdout != "" {
			t.Errorf("record %s: exit %d\nstdout %q\nstderr %q\nwant exit %d, nothing on stdout, stderr %q", tc.args, r.code, r.stdout, r.stderr, tc.code, tc.want)
		}
		if names, _ := filepath.Glob(journal + "*"); len(names) > 0 {
			t.Errorf("record %s left %q", tc.args, names)
		}
		checkNoGoIdentifiers(t, fmt.Sprint(tc.args), r.stderr)
	}
}
