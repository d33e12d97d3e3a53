package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSlug(t *testing.T) {
	for text, want := range map[string]string{
		"Where the time and the bytes go":         "where-the-time-and-the-bytes-go",
		"`kubectl krply`":                         "kubectl-krply",
		"Append vs. raw (batch 100)":              "append-vs-raw-batch-100",
		"What's new?":                             "whats-new",
		"C++ & Go":                                "c--go",
		"Schema v6: an object's versions":         "schema-v6-an-objects-versions",
		"**Bold** and _emphasis_ and snake_case":  "bold-and-emphasis-and-snake_case",
		"[A link](other.md) in a heading":         "a-link-in-a-heading",
		"Zürich — 1.0 → 2.0":                      "zürich--10--20",
		"krply_stream_events_total":               "krply_stream_events_total",
		"  Trailing spaces  ":                     "trailing-spaces",
		"PostgreSQL, and a fleet in one database": "postgresql-and-a-fleet-in-one-database",
	} {
		if got := Slug(text); got != want {
			t.Errorf("Slug(%q) = %q, want %q", text, got, want)
		}
	}
}

func TestAnchors(t *testing.T) {
	doc := "# Title\n\n## Usage\n\n```sh\n# not a heading\n```\n\n## Usage\n\nSetext\n------\n\n<a id=\"custom\"></a>\n\n## Usage ##\n"
	got := Anchors([]byte(doc))
	for _, want := range []string{"title", "usage", "usage-1", "usage-2", "setext", "custom"} {
		if !got[want] {
			t.Errorf("no anchor %q in %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Errorf("a comment in a code block made an anchor: %v", got)
	}
}

// Valid links pass, tricky ones included; each broken one is reported
// with its file, line and reason.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/guide.md", "# Guide\n\n## What's new? (v2)\n\n## `kubectl krply`\n")
	write("docs/img/a.png", "png")
	write("pkg/x.go", "package x\n")
	write("README.md", strings.Join([]string{
		"[ok](docs/guide.md) [ok](docs/guide.md#whats-new-v2) [ok](docs/guide.md#kubectl-krply)",
		"[folder](docs/) [folder](pkg) [file](pkg/x.go#L1) ![img](docs/img/a.png \"title\")",
		"[self](#links) [site](https://example.com/x#y) [mail](mailto:a@b.c) [abs](/docs/guide.md)",
		"`[not a link](missing.md)`",
		"```",
		"[not a link](missing.md)",
		"```",
		"## Links",
		"[ref]: docs/guide.md#guide",
		"[bad](docs/missing.md) [bad anchor](docs/guide.md#nope)",
		"[bad self](#nowhere) [out](../x.md)",
	}, "\n"))
	c := checker{root: dir, anchors: map[string]map[string]bool{}}
	got, err := c.check("README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"README.md:10: docs/missing.md: no such file or folder",
		"README.md:10: docs/guide.md#nope: docs/guide.md has no heading with the anchor #nope",
		"README.md:11: #nowhere: README.md has no heading with the anchor #nowhere",
		"README.md:11: ../x.md: outside the repository",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("broken links:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
