// Package golden compares what tests produce with files checked in under
// testdata, for the tests that pin krply's formats: the journal's file
// format (storage/sqlite's format tests) and the JSON wire schema
// (internal/testing/wiretest).
//
// A golden file is the truth: a difference fails the test with a line diff.
// Rewrite golden files only for a deliberate change, with the -update flag
// this package registers:
//
//	go test ./pkg -run TestX -update
//
// then review the change with git diff before committing. A test binary
// that imports this package must not register a flag named "update" of its
// own; it reads this one with Update.
package golden

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/krply/krply/internal/testing/textdiff"
)

var update = flag.Bool("update", false, "rewrite golden files (testdata/format, testdata/wire) from today's code")

// Update reports whether the test binary runs with -update.
func Update() bool { return *update }

// Check compares got with the text file at path, or writes it under
// -update. A difference fails t with a line diff; hint, if not empty, is
// added to the message (what the difference means, what to do).
func Check(t testing.TB, path string, got []byte, hint string) {
	t.Helper()
	want, ok := Read(t, path, got)
	if !ok || bytes.Equal(got, want) {
		return
	}
	if hint != "" {
		hint = "\n" + hint
	}
	t.Errorf("%s differs from today's answer (- golden, + today); if the change is deliberate, rerun with -update:\n%s%s",
		path, Diff(string(want), string(got)), hint)
}

// Read returns the content of the golden file at path to compare got with;
// under -update it writes got there instead and returns false.
func Read(t testing.TB, path string, got []byte) ([]byte, bool) {
	t.Helper()
	if *update {
		Write(t, path, got)
		return nil, false
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file: %v (run with -update to create it)", err)
	}
	return want, true
}

// Write writes a golden file, and says so when its content changed
// (review those with git diff before committing).
func Write(t testing.TB, path string, data []byte) {
	t.Helper()
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("CHANGED %s (%d bytes): review it with git diff", path, len(data))
}

// ModuleRoot returns the directory of the module's go.mod, found upwards
// from the test's working directory (its package directory), so tests of
// any package can name files under the module's testdata.
func ModuleRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("golden: no go.mod above the working directory")
		}
		dir = parent
	}
}

// Diff returns a unified-style diff of two texts: changed lines with two
// lines of context, at most 120 lines (textdiff.Diff).
func Diff(a, b string) string { return textdiff.Diff(a, b) }
