package sqlite

import (
	"bytes"
	"flag"
	"testing"

	"github.com/krply/krply/krplytest/golden"
)

// The format tests (format_*_test.go) compare what today's code reads and
// writes with files checked in under testdata/format. Those files are the
// truth: a failure means the file format, or an answer read from it,
// changed. Rewrite them only for a deliberate change, with
//
//	go test ./storage/sqlite -run TestFormat -update
//
// (the -update flag is krplytest/golden's) and, to rebuild the journal of
// the current schema version with today's writer (older versions' journals
// are never rebuilt),
//
//	go test ./storage/sqlite -run TestFormatFixtures -regenerate-fixtures
var regenerateFixtures = flag.Bool("regenerate-fixtures", false, "rebuild testdata/format/v<SchemaVersion>.db with today's writer")

// formatDir holds the format fixtures and golden files.
const formatDir = "testdata/format"

// checkGolden compares got with the text file at path, or writes it under
// -update. A difference fails with a line diff.
func checkGolden(t *testing.T, path string, got []byte) {
	t.Helper()
	golden.Check(t, path, got, "")
}

// checkGoldenBytes compares got with the binary file at path, or writes it
// under -update. A difference fails naming the first differing offset.
func checkGoldenBytes(t *testing.T, path string, got []byte, hint string) {
	t.Helper()
	want, ok := golden.Read(t, path, got)
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

func window(b []byte, at int) []byte {
	return b[max(at-8, 0):min(at+16, len(b))]
}

// writeGolden writes a golden file, and says so when its content changed.
func writeGolden(t *testing.T, path string, data []byte) { golden.Write(t, path, data) }

// lineDiff returns a unified-style diff of two texts.
func lineDiff(a, b string) string { return golden.Diff(a, b) }
