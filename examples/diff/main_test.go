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
	if err := run(&out, r.Path, "", []string{"shop"}, before.Format(time.RFC3339Nano), after.Format(time.RFC3339Nano), false, "table"); err != nil {
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
	if err := run(&out, r.Path, "", []string{"shop"}, before.Format(time.RFC3339Nano), after.Format(time.RFC3339Nano), false, "unified"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "-  color: blue") || !strings.Contains(out.String(), "+  color: green") {
		t.Errorf("unified diff lacks the color change:\n%s", out.String())
	}
}
