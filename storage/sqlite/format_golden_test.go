package sqlite

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The format tests (format_*_test.go) compare what today's code reads and
// writes with files checked in under testdata/format. Those files are the
// truth: a failure means the file format, or an answer read from it,
// changed. Rewrite them only for a deliberate change, with
//
//	go test ./storage/sqlite -run TestFormat -update
//
// and, to rebuild the journal of the current schema version with today's
// writer (older versions' journals are never rebuilt),
//
//	go test ./storage/sqlite -run TestFormatFixtures -regenerate-fixtures
var (
	updateGolden       = flag.Bool("update", false, "rewrite the golden files under testdata/format from today's code")
	regenerateFixtures = flag.Bool("regenerate-fixtures", false, "rebuild testdata/format/v<SchemaVersion>.db with today's writer")
)

// formatDir holds the format fixtures and golden files.
const formatDir = "testdata/format"

// checkGolden compares got with the text file at path, or writes it under
// -update. A difference fails with a line diff.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	if want, ok := golden(t, path, got); ok && !bytes.Equal(got, want) {
		t.Errorf("%s differs from today's answer (- golden, + today); if the change is deliberate, rerun with -update:\n%s",
			path, lineDiff(string(want), string(got)))
	}
}

// checkGoldenBytes compares got with the binary file at path, or writes it
// under -update. A difference fails naming the first differing offset.
func checkGoldenBytes(t *testing.T, path string, got []byte, hint string) {
	t.Helper()
	want, ok := golden(t, path, got)
	if !ok || bytes.Equal(got, want) {
		return
	}
	i := 0
	for i < len(got) && i < len(want) && got[i] == want[i] {
		i++
	}
	t.Errorf("%s: %d bytes, today's encoding %d bytes; first difference at offset %d:\n golden % x\n  today % x\n%s",
		path, len(want), len(got), i, window(want, i), window(got, i), hint)
}

// golden returns the content of the golden file at path to compare got
// with; under -update it writes got there instead and returns false.
func golden(t *testing.T, path string, got []byte) ([]byte, bool) {
	t.Helper()
	if *updateGolden {
		writeGolden(t, path, got)
		return nil, false
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file: %v (run with -update to create it)", err)
	}
	return want, true
}

func window(b []byte, at int) []byte {
	return b[max(at-8, 0):min(at+16, len(b))]
}

// writeGolden writes a golden file, and says so when its content changed
// (review those with git diff before committing).
func writeGolden(t *testing.T, path string, data []byte) {
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

// lineDiff returns a unified-style diff of two texts: changed lines with
// two lines of context, at most maxDiffLines lines.
func lineDiff(a, b string) string {
	const context, maxDiffLines = 2, 120
	x, y := strings.Split(a, "\n"), strings.Split(b, "\n")
	// Longest common subsequence by dynamic programming: the golden files
	// are a few thousand lines, so n*m cells are affordable in a test.
	lcs := make([][]int32, len(x)+1)
	for i := range lcs {
		lcs[i] = make([]int32, len(y)+1)
	}
	for i := len(x) - 1; i >= 0; i-- {
		for j := len(y) - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	type op struct {
		kind byte // ' ', '-', '+'
		line string
		at   int // line number in a (for ' ' and '-') or b (for '+'), from 1
	}
	var ops []op
	i, j := 0, 0
	for i < len(x) || j < len(y) {
		switch {
		case i < len(x) && j < len(y) && x[i] == y[j]:
			ops = append(ops, op{' ', x[i], i + 1})
			i, j = i+1, j+1
		case i < len(x) && (j == len(y) || lcs[i+1][j] >= lcs[i][j+1]):
			ops = append(ops, op{'-', x[i], i + 1})
			i++
		default:
			ops = append(ops, op{'+', y[j], j + 1})
			j++
		}
	}
	var out []string
	last := -1 // index of the last op printed
	for k, o := range ops {
		if o.kind == ' ' {
			continue
		}
		from := max(k-context, last+1)
		if last < 0 || from > last+1 {
			out = append(out, fmt.Sprintf("@@ line %d @@", ops[from].at))
		}
		for _, c := range ops[from:k] {
			out = append(out, " "+c.line)
		}
		out = append(out, string(o.kind)+o.line)
		last = k
		// Trailing context, unless the next change comes first.
		for c := k + 1; c < len(ops) && c <= k+context && ops[c].kind == ' '; c++ {
			out = append(out, " "+ops[c].line)
			last = c
		}
		if len(out) > maxDiffLines {
			out = append(out[:maxDiffLines], "... (diff cut)")
			break
		}
	}
	return strings.Join(out, "\n")
}
