package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/krply/krply/examples/internal/clitest"
)

func records(t *testing.T, path string) int64 {
	t.Helper()
	stats, err := clitest.Open(t, path).Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return stats.Records
}

func TestHistory(t *testing.T) {
	r, _, _ := clitest.Shop(t)
	before := records(t, r.Path)
	var out bytes.Buffer
	// "deployments" is resolved to apps from the journal's streams.
	if err := run(&out, r.Path, "", "deployments", "shop", "web", false, nil); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 {
		t.Fatalf("want a header and two versions:\n%s", out.String())
	}
	if !strings.Contains(lines[1], "ADDED") || !strings.Contains(lines[1], "baseline") {
		t.Errorf("first version: %q, want ADDED from the baseline", lines[1])
	}
	if !strings.Contains(lines[2], "MODIFIED") || !strings.Contains(lines[2], "spec.replicas: 1 → 3") {
		t.Errorf("second version: %q, want the scale to 3", lines[2])
	}

	out.Reset()
	if err := run(&out, r.Path, "", "pods", "shop", "debug", false, nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "DELETED") {
		t.Errorf("the deleted Pod's history has no deletion:\n%s", out.String())
	}
	if err := run(&out, r.Path, "", "widgets", "shop", "web", false, nil); err == nil {
		t.Error("a resource the journal does not record was accepted")
	}
	if after := records(t, r.Path); after != before {
		t.Errorf("history without --audit-log wrote to the journal: %d records, then %d", before, after)
	}
}
