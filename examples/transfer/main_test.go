package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/krply/krply/examples/internal/clitest"
	"github.com/krply/krply/storage/transfer/transfertest"
)

// A recorded journal goes out and into a new journal, which answers as
// the first; a second import stores nothing; a cut file fails with its
// line.
func TestTransfer(t *testing.T) {
	ctx := context.Background()
	r, _, _ := clitest.Shop(t)
	copyPath := filepath.Join(t.TempDir(), "copy.db")
	var file, log bytes.Buffer
	if err := run(ctx, "export", r.Path, "", nil, &file, &log); err != nil {
		t.Fatal(err)
	}
	if err := run(ctx, "verify", "", "", bytes.NewReader(file.Bytes()), nil, &log); err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"inserted, 0 already there", "(0 inserted, "} {
		log.Reset()
		if err := run(ctx, "import", copyPath, "", bytes.NewReader(file.Bytes()), nil, &log); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(log.String(), want) {
			t.Errorf("import %d said %q, want %q", i+1, log.String(), want)
		}
	}
	transfertest.SameAnswers(t, "the imported journal", transfertest.Answers(t, clitest.Open(t, r.Path)), transfertest.Answers(t, clitest.Open(t, copyPath)))

	half := file.Bytes()[:file.Len()/2]
	if err := run(ctx, "verify", "", "", bytes.NewReader(half), nil, &log); err == nil || !strings.Contains(err.Error(), "line ") {
		t.Errorf("verify of half a file: %v, want an error naming the line", err)
	}
	var window bytes.Buffer
	if err := run(ctx, "export", r.Path, "2000-01-01T00:00:00Z", nil, &window, &log); err != nil || !strings.Contains(window.String(), `"since":"2000-01-01T00:00:00Z"`) {
		t.Errorf("export --since: %v:\n%.200s", err, window.String())
	}
	if err := run(ctx, "export", r.Path, "yesterday", nil, &window, &log); err == nil || !strings.Contains(err.Error(), "--since") {
		t.Errorf("a bad --since: %v, want an error naming the flag", err)
	}
	if err := run(ctx, "copy", r.Path, "", nil, &window, &log); err == nil {
		t.Error("an unknown command was accepted")
	}
}
