package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/krply/krply/examples/internal/clitest"
)

func TestHistory(t *testing.T) {
	r, _, _ := clitest.Shop(t)
	before, err := clitest.Open(t, r.Path).Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(&out, r.Path, "shop", "deployments.apps/web"); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) < 3 || !strings.Contains(lines[0], "ADDED") || !strings.Contains(lines[0], "from baseline") ||
		!strings.Contains(lines[1], "MODIFIED") || !strings.Contains(lines[2], "replace spec.replicas: 1 → 3") {
		t.Errorf("want ADDED from the baseline, then MODIFIED with the scale 1 → 3:\n%s", out.String())
	}

	out.Reset()
	if err := run(&out, r.Path, "shop", "pods/debug"); err != nil || !strings.Contains(out.String(), "DELETED") {
		t.Errorf("the deleted Pod's history has no deletion (%v):\n%s", err, out.String())
	}
	if err := run(&out, r.Path, "shop", "widgets/web"); err == nil || !strings.Contains(err.Error(), "no version") {
		t.Errorf("a resource the journal does not record: %v", err)
	}
	if err := run(&out, r.Path, "shop", "web"); err == nil || !strings.Contains(err.Error(), "RESOURCE.GROUP/NAME") {
		t.Errorf("an argument without a resource: %v", err)
	}
	after, err := clitest.Open(t, r.Path).Stats(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if after.Records != before.Records {
		t.Errorf("history wrote to the journal: %d records, then %d", before.Records, after.Records)
	}
}
