package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/examples/internal/clitest"
)

func TestDiff(t *testing.T) {
	r, before, after := clitest.Shop(t)
	var out bytes.Buffer
	if err := run(&out, r.Path, "shop", before.Format(time.RFC3339Nano), after.Format(time.RFC3339Nano), false); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"4 objects", "data.color", "blue → green", "spec.replicas", "1 → 3", "shop/extra", "(added)", "shop/debug", "(removed)"} {
		if !strings.Contains(text, want) {
			t.Errorf("diff table lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "warning") {
		t.Errorf("a gap-free window has warnings:\n%s", text)
	}

	out.Reset()
	if err := run(&out, r.Path, "shop", before.Format(time.RFC3339Nano), after.Format(time.RFC3339Nano), true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "-  color: blue") || !strings.Contains(out.String(), "+  color: green") {
		t.Errorf("unified diff lacks the color change:\n%s", out.String())
	}
	if err := run(&out, r.Path, "shop", "yesterday", "now", false); err == nil {
		t.Error("a time the parser does not read was accepted")
	}
}

// A window that starts before recording began: the objects' state at its
// start is unknown, so none of them is "added".
func TestDiffBeforeRecordingBegan(t *testing.T) {
	r, before, _ := clitest.Shop(t)
	var out bytes.Buffer
	if err := run(&out, r.Path, "shop", before.Add(-time.Hour).Format(time.RFC3339Nano), before.Format(time.RFC3339Nano), false); err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{"3 objects", "shop/settings", "shop/web", "shop/debug", "(unknown at start: no complete baseline"} {
		if !strings.Contains(text, want) {
			t.Errorf("diff table lacks %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "(added)") {
		t.Errorf("objects recorded from the start are called added:\n%s", text)
	}
}
