package main

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"

	"github.com/krply/krply/krplytest/golden"
)

// TestCLIReference keeps docs/reference/cli/ the reference of every
// command, generated from the command tree by cobra's doc generator:
//
//	go test -run TestCLIReference -update .
func TestCLIReference(t *testing.T) {
	// Defaults that name the user's home show it as ~.
	t.Setenv("HOME", "~")
	var stdout, stderr bytes.Buffer
	root := newEnv(streams(&stdout, &stderr)).rootCommand()
	root.InitDefaultCompletionCmd() // added when the command runs; documented here
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		c.DisableAutoGenTag = true // no date: the pages change only with the commands
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	dir := t.TempDir()
	if err := doc.GenMarkdownTree(root, dir); err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(golden.ModuleRoot(t), "..", "..", "docs", "reference", "cli")
	gen, err := filepath.Glob(filepath.Join(dir, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, p := range gen {
		name := filepath.Base(p)
		names[name] = true
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		golden.Check(t, filepath.Join(want, name), data,
			"docs/reference/cli is generated from the command tree: rewrite it with go test -run TestCLIReference -update . in cmd/kubectl-krply")
	}
	// A page of a command that no longer exists is stale too.
	old, err := filepath.Glob(filepath.Join(want, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	var stale []string
	for _, p := range old {
		if !names[filepath.Base(p)] {
			if golden.Update() {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				continue
			}
			stale = append(stale, filepath.Base(p))
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("docs/reference/cli has pages of no command: %s (go test -run TestCLIReference -update . removes them)", strings.Join(stale, ", "))
	}
}
