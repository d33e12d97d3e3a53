//go:build unix

package sqlite_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/storagetest"
)

// The permission tests open journals in a child process that file
// permissions apply to: root ignores them, so as root the child runs as
// nobody (uid and gid 65534), and the journals are made by root, readable
// by all.

func init() {
	childRoles["perm-rw"] = permWritableChild
	childRoles["perm-ro"] = permReadOnlyChild
}

// permReport is what a permission child saw, one JSON line per step.
type permReport struct {
	Err                  string
	ReadOnly, Permission bool // errors.Is the error storage.ErrReadOnly, fs.ErrPermission
	Records              int64
	AppendReadOnly       bool
	CompactReadOnly      bool
}

func report(err error) permReport {
	r := permReport{}
	if err != nil {
		r.Err = err.Error()
		r.ReadOnly = errors.Is(err, storage.ErrReadOnly)
		r.Permission = errors.Is(err, fs.ErrPermission)
	}
	return r
}

// permWritableChild opens the journal writable, reports, and appends a
// record when it could open it.
func permWritableChild(path, _ string) error {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path)
	r := report(err)
	if err == nil {
		_, err = s.Append(ctx, []event.Record{permRecord(1)})
		r = report(errors.Join(err, s.Close()))
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

// permReadOnlyChild opens the journal read-only and reports what it
// reads, then again for every line read from stdin.
func permReadOnlyChild(path, _ string) error {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, path, sqlite.WithReadOnly())
	out := json.NewEncoder(os.Stdout)
	if err != nil {
		return out.Encode(report(err))
	}
	defer s.Close()
	count := func() permReport {
		stats, err := s.Stats(ctx)
		r := report(err)
		r.Records = stats.Records
		return r
	}
	r := count()
	_, err = s.Append(ctx, []event.Record{permRecord(2)})
	r.AppendReadOnly = errors.Is(err, storage.ErrReadOnly)
	_, err = s.Compact(ctx, benchStart)
	r.CompactReadOnly = errors.Is(err, storage.ErrReadOnly)
	if err := out.Encode(r); err != nil {
		return err
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if err := out.Encode(count()); err != nil {
			return err
		}
	}
	return nil
}

func permRecord(i int) event.Record {
	s := event.Stream{ClusterID: "perm", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	return storagetest.Checkpoint(s, fmt.Sprint(i), true, benchStart.Add(time.Duration(i)*time.Second))
}

// unprivileged is a copy of the test binary that an unprivileged child
// can run, in a folder it can enter.
type unprivileged struct {
	dir, exe string
}

func newUnprivileged(t *testing.T) *unprivileged {
	t.Helper()
	dir := t.TempDir()
	// t.TempDir's parent is private to this user.
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	exe := filepath.Join(dir, "sqlite.test")
	if err := os.WriteFile(exe, self, 0o755); err != nil {
		t.Fatal(err)
	}
	return &unprivileged{dir: dir, exe: exe}
}

// folder makes a folder for a journal, with mode set once populate has
// run in it; it is made writable again for the cleanup.
func (u *unprivileged) folder(t *testing.T, name string, mode os.FileMode, populate func(dir string)) string {
	t.Helper()
	dir := filepath.Join(u.dir, name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	populate(dir)
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(dir, 0o755) })
	return dir
}

// cmd is a child playing role on path without privileges.
func (u *unprivileged) cmd(role, path string) *exec.Cmd {
	cmd := exec.Command(u.exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childRoleEnv+"="+role, childJournalEnv+"="+path)
	if os.Getuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	return cmd
}

// run runs a child to its end and returns its report.
func (u *unprivileged) run(t *testing.T, role, path string) permReport {
	t.Helper()
	cmd := u.cmd(role, path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s child: %v: %s", role, err, stderr.String())
	}
	var r permReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%s child: %v: %q", role, err, out)
	}
	return r
}

// withJournal writes a closed journal holding one record at
// dir/journal.db, readable by all.
func withJournal(t *testing.T, fileMode os.FileMode) func(dir string) {
	return func(dir string) {
		path := filepath.Join(dir, "journal.db")
		writeJournal(t, path)
		if err := os.Chmod(path, fileMode); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReadOnlyFilesAndFolders opens journals that the opening process
// may not write: a writable Open fails at once, naming the file and the
// fix, and leaves no -wal or -shm file behind; a read-only Open answers,
// and leaves the folder as it found it.
func TestReadOnlyFilesAndFolders(t *testing.T) {
	u := newUnprivileged(t)
	for i, tc := range []struct {
		name              string
		dirMode, fileMode os.FileMode
		folderNamed       bool // the writable Open names the folder, not the file
	}{
		{"read-only file in a read-only folder", 0o555, 0o444, false},
		{"read-only file in a writable folder", 0o777, 0o444, false},
		{"file of another user in a writable folder", 0o777, 0o644, false},
		{"writable file in a read-only folder", 0o555, 0o666, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := u.folder(t, fmt.Sprint("case", i), tc.dirMode, withJournal(t, tc.fileMode))
			path := filepath.Join(dir, "journal.db")
			before := dirNames(t, dir)

			rw := u.run(t, "perm-rw", path)
			if rw.Err == "" || !rw.ReadOnly || !rw.Permission {
				t.Errorf("writable Open: %+v; want an error wrapping storage.ErrReadOnly and fs.ErrPermission", rw)
			}
			named := path
			if tc.folderNamed {
				named = dir
			}
			for _, want := range []string{path, "cannot write " + named + " (", "open it read-only (WithReadOnly) or fix the permissions"} {
				if !strings.Contains(rw.Err, want) {
					t.Errorf("writable Open error %q does not say %q", rw.Err, want)
				}
			}
			if got := dirNames(t, dir); got != before {
				t.Errorf("after the failed writable Open the folder holds %s, want %s", got, before)
			}

			ro := u.run(t, "perm-ro", path)
			if ro.Err != "" || ro.Records != 1 || !ro.AppendReadOnly || !ro.CompactReadOnly {
				t.Errorf("read-only Open: %+v; want 1 record, Append and Compact refused with storage.ErrReadOnly", ro)
			}
			// No writer is live and none may write the file: the
			// read-only Open reads it as immutable and creates nothing.
			if got := dirNames(t, dir); got != before {
				t.Errorf("after the read-only Open the folder holds %s, want %s", got, before)
			}
		})
	}

	t.Run("new journal in a read-only folder", func(t *testing.T) {
		dir := u.folder(t, "new", 0o555, func(string) {})
		path := filepath.Join(dir, "journal.db")
		rw := u.run(t, "perm-rw", path)
		if !rw.Permission || !strings.Contains(rw.Err, "cannot create files in "+dir) {
			t.Errorf("writable Open: %+v; want fs.ErrPermission, saying it cannot create files in %s", rw, dir)
		}
		if got := dirNames(t, dir); got != "" {
			t.Errorf("the failed Open left %s", got)
		}
	})

	t.Run("write-ahead log with commits but no -shm in a read-only folder", func(t *testing.T) {
		dir := u.folder(t, "wal", 0o555, func(dir string) {
			// A copy of a live journal's file and log, as a crashed
			// writer leaves them, without the -shm file.
			live := filepath.Join(t.TempDir(), "journal.db")
			writeJournal(t, live)
			s, err := sqlite.Open(context.Background(), live)
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Append(context.Background(), []event.Record{permRecord(3)}); err != nil {
				t.Fatal(err)
			}
			for _, f := range []string{"", "-wal"} {
				data, err := os.ReadFile(live + f)
				if err != nil || len(data) == 0 {
					t.Fatalf("%s%s: %d bytes, %v", live, f, len(data), err)
				}
				if err := os.WriteFile(filepath.Join(dir, "journal.db"+f), data, 0o444); err != nil {
					t.Fatal(err)
				}
			}
		})
		path := filepath.Join(dir, "journal.db")
		ro := u.run(t, "perm-ro", path)
		if !strings.Contains(ro.Err, "write-ahead log "+path+"-wal holds commits") || !strings.Contains(ro.Err, "make the folder writable") {
			t.Errorf("read-only Open: %+v; want an error saying the log holds commits and how to read them", ro)
		}
		if got := dirNames(t, dir); got != "journal.db,journal.db-wal" {
			t.Errorf("the failed read-only Open left %s", got)
		}
	})

	t.Run("read-only folder of a live journal", func(t *testing.T) {
		// A writer of another user keeps the journal open: its -wal and
		// -shm files exist, readable by all.
		var w *sqlite.Store
		dir := u.folder(t, "live", 0o555, func(dir string) {
			withJournal(t, 0o644)(dir)
			var err error
			if w, err = sqlite.Open(context.Background(), filepath.Join(dir, "journal.db")); err != nil {
				t.Fatal(err)
			}
			if _, err := w.Append(context.Background(), []event.Record{permRecord(4)}); err != nil {
				t.Fatal(err)
			}
		})
		defer w.Close()
		reader := startReader(t, u, filepath.Join(dir, "journal.db"))
		if r := reader.next(t); r.Err != "" || r.Records != 2 {
			t.Fatalf("read-only Open: %+v; want 2 records", r)
		}
		if _, err := w.Append(context.Background(), []event.Record{permRecord(5)}); err != nil {
			t.Fatal(err)
		}
		if r := reader.ask(t); r.Err != "" || r.Records != 3 {
			t.Errorf("after the writer's commit: %+v; want 3 records", r)
		}
	})

	t.Run("immutable journal written after all", func(t *testing.T) {
		dir := u.folder(t, "immutable", 0o555, withJournal(t, 0o644))
		path := filepath.Join(dir, "journal.db")
		reader := startReader(t, u, path)
		if r := reader.next(t); r.Err != "" || r.Records != 1 {
			t.Fatalf("read-only Open: %+v; want 1 record", r)
		}
		// This process may write the folder (as root, or its owner).
		os.Chmod(dir, 0o755)
		s, err := sqlite.Open(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if _, err := s.Append(context.Background(), []event.Record{permRecord(6)}); err != nil {
			t.Fatal(err)
		}
		if r := reader.ask(t); !strings.Contains(r.Err, "another process wrote the journal") || !strings.Contains(r.Err, "open it again") {
			t.Errorf("read-only store after another process wrote the journal: %+v; want an error saying to open it again", r)
		}
	})
}

// reader is a running perm-ro child.
type reader struct {
	in  io.WriteCloser
	out *bufio.Scanner
}

func startReader(t *testing.T, u *unprivileged, path string) *reader {
	t.Helper()
	in, out := startChild(t, "perm-ro child", u.cmd("perm-ro", path))
	return &reader{in: in, out: out}
}

// next reads the child's next report.
func (r *reader) next(t *testing.T) permReport {
	t.Helper()
	if !r.out.Scan() {
		t.Fatalf("perm-ro child: no report: %v", r.out.Err())
	}
	var rep permReport
	if err := json.Unmarshal(r.out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	return rep
}

// ask makes the child read again.
func (r *reader) ask(t *testing.T) permReport {
	t.Helper()
	if _, err := io.WriteString(r.in, "again\n"); err != nil {
		t.Fatal(err)
	}
	return r.next(t)
}
