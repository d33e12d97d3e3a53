package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krply/krply/examples/internal/clitest"
	"github.com/krply/krply/storage/transfer/transfertest"
)

// A recorded journal goes out to a file and into a new journal, which
// answers as the first; a second import stores nothing; a cut file fails
// with its line.
func TestTransfer(t *testing.T) {
	ctx := context.Background()
	r, _, _ := clitest.Shop(t)
	dir := t.TempDir()
	file, copyPath := filepath.Join(dir, "shop.ndjson"), filepath.Join(dir, "copy.db")
	var stdout, stderr bytes.Buffer
	if err := run(ctx, "export", r.Path, "-", file, nil, "", "", nil, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, "verify", "", file, "-", nil, "", "", nil, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"inserted, 0 already there", "(0 inserted, "} {
		stderr.Reset()
		if err := run(ctx, "import", copyPath, file, "-", nil, "", "", nil, &stdout, &stderr); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("import %d said %q, want %q", i+1, stderr.String(), want)
		}
	}
	transfertest.SameAnswers(t, "the imported journal", transfertest.Answers(t, clitest.Open(t, r.Path)), transfertest.Answers(t, clitest.Open(t, copyPath)))

	// To stdout, one cluster, a window; then a cut file.
	stdout.Reset()
	if err := run(ctx, "export", r.Path, "-", "-", []string{"no-such-cluster"}, "1h ago", "now", nil, &stdout, &stderr); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(stdout.String(), "\n"); lines != 2 {
		t.Errorf("export of an unknown cluster: %d lines, want the header and the trailer:\n%s", lines, stdout.String())
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	err = run(ctx, "verify", "", "-", "-", nil, "", "", bytes.NewReader(data[:len(data)/2]), &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "line ") {
		t.Errorf("verify of half a file: %v, want an error naming the line", err)
	}
	if err := run(ctx, "export", r.Path, "-", "-", nil, "yesterday", "", nil, &stdout, &stderr); err == nil || !strings.Contains(err.Error(), "--since") {
		t.Errorf("a bad --since: %v, want an error naming the flag", err)
	}
}
