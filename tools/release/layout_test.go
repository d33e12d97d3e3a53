package main

import (
	"fmt"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// layers is the layer stack of krply's packages, lowest first: a package
// (its non-test files) imports only packages of its own layer or below. A
// package's layer is that of the longest entry its path (relative to the
// core module) starts with; a package no entry names fails the test, to be
// placed here.
var layers = [][]string{
	// Utilities that import nothing of krply's.
	{"internal/broadcast", "internal/buildinfo", "internal/cputime", "internal/diskspace", "internal/jsonscan", "internal/reread", "server/ui"},
	{"event"},
	{"storage", "storage/journal", "storage/compaction"},
	// The backends and the conformance suite.
	{"storage/memory", "storage/sqlite", "storage/transfer", "storage/storagetest", "storage/postgres"},
	{"internal/readonly"},
	{"watch/status", "materialize", "replay/replayapi", "audit", "retention"},
	// why reads what materialize answers; the query API's client links it.
	{"why"},
	{"watch", "replay", "metrics", "cel"},
	{"server/apiv1"},
	{"server", "server/client"},
	{"", "recorder", "crutil"},
	// Test harnesses, tests, tools, examples and commands: nothing imports
	// them but their own kind.
	{"krplytest", "internal/testing", "storage/transfer/transfertest", "storage/postgres/internal", "tools",
		"examples", "deploy", "cmd", "recorder/recordertest", "server/ui/browsertest", "server/openapitest"},
}

// layerOf is the layer of a package path relative to the core module, or
// -1 when no entry names it.
func layerOf(rel string) int {
	best, layer := -1, -1
	for i, entries := range layers {
		for _, e := range entries {
			if (rel == e || e != "" && strings.HasPrefix(rel, e+"/")) && len(e) > best {
				best, layer = len(e), i
			}
		}
	}
	return layer
}

// goFile is one Go file of the repository: its package's import path, its
// module's path, whether it is a test, and its krply imports.
type goFile struct {
	name, pkg, module string
	test              bool
	imports           []string
}

// TestLayoutImports: no module imports another module's internal/ package
// (what modules share is a public package of the one that owns it), and no
// package imports one above it in the layer stack.
func TestLayoutImports(t *testing.T) {
	modules, files := readRepo(t)
	for _, problem := range checkImports(modules, files) {
		t.Error(problem)
	}
	if len(files) < 100 {
		t.Fatalf("read %d Go files, want the whole repository's", len(files))
	}
}

// TestLayoutModules: no module's go.mod has a replace directive to a
// folder (go install module@version refuses them, and they tie a module
// to one checkout), and no published module has one at all; the
// development inside the repository is the go.work's.
func TestLayoutModules(t *testing.T) {
	root := repoRoot(t)
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.Name() != "go.mod" {
			return nil
		}
		n++
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		f, err := modfile.Parse(p, raw, nil)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(p))
		for _, problem := range checkReplaces(filepath.ToSlash(rel), f) {
			t.Error(problem)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 5 {
		t.Fatalf("read %d go.mod files, want every module's", n)
	}
}

// checkReplaces returns what is wrong with the replace directives of the
// module in dir (relative to the repository, "." for the core).
func checkReplaces(dir string, f *modfile.File) []string {
	var problems []string
	isPublished := slices.Contains(published, strings.TrimPrefix(dir, "."))
	for _, r := range f.Replace {
		switch {
		case r.New.Version == "":
			problems = append(problems, fmt.Sprintf("%s/go.mod: replace %s => %s: a folder replacement; the repository's go.work resolves krply's modules, and strangers' builds refuse it", dir, r.Old.Path, r.New.Path))
		case isPublished:
			problems = append(problems, fmt.Sprintf("%s/go.mod: replace %s => %s %s: a published module has no replace directives (go install module@version refuses them)", dir, r.Old.Path, r.New.Path, r.New.Version))
		}
	}
	return problems
}

// checkImports returns the imports that cross a module's internal/
// boundary or point up the layer stack. modules maps each module's path to
// its folder relative to the core module's ("" for the core).
func checkImports(modules map[string]string, files []goFile) []string {
	moduleOf := func(pkg string) string {
		best := ""
		for m := range modules {
			if (pkg == m || strings.HasPrefix(pkg, m+"/")) && len(m) > len(best) {
				best = m
			}
		}
		return best
	}
	var problems []string
	for _, f := range files {
		for _, imp := range f.imports {
			if i := strings.Index(imp+"/", "/internal/"); i >= 0 {
				owner := imp[:i]
				if moduleOf(imp) != f.module || !(f.pkg == owner || strings.HasPrefix(f.pkg, owner+"/")) {
					problems = append(problems, fmt.Sprintf("%s: imports %s, an internal package of module %s: make what modules share a public package", f.name, imp, moduleOf(imp)))
				}
			}
			if f.test {
				continue
			}
			rel := func(p string) string { return strings.TrimPrefix(strings.TrimPrefix(p, modulePath), "/") }
			from, to := layerOf(rel(f.pkg)), layerOf(rel(imp))
			switch {
			case from < 0:
				problems = append(problems, fmt.Sprintf("%s: package %s has no layer: place it in layers (tools/release/layout_test.go)", f.name, f.pkg))
			case to < 0:
				problems = append(problems, fmt.Sprintf("%s: imports %s, which has no layer: place it in layers (tools/release/layout_test.go)", f.name, imp))
			case to > from:
				problems = append(problems, fmt.Sprintf("%s: %s (layer %d) imports %s (layer %d), above it", f.name, f.pkg, from, imp, to))
			}
		}
	}
	slices.Sort(problems)
	return slices.Compact(problems)
}

// repoRoot is the repository's root folder.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// readRepo reads the modules and the Go files of the repository.
func readRepo(t *testing.T) (map[string]string, []goFile) {
	t.Helper()
	root := repoRoot(t)
	modules := map[string]string{} // path -> folder
	dirs := map[string]string{}    // folder -> path
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.Name() == "go.mod" {
			raw, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, filepath.Dir(p))
			rel = filepath.ToSlash(rel)
			path := modfile.ModulePath(raw)
			modules[path], dirs[rel] = rel, path
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var files []goFile
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), "_")) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		dir := filepath.ToSlash(filepath.Dir(rel))
		modDir := dir
		for {
			if _, ok := dirs[modDir]; ok {
				break
			}
			if modDir == "." {
				return fmt.Errorf("%s is in no module", rel)
			}
			modDir = filepath.ToSlash(filepath.Dir(modDir))
		}
		mod := dirs[modDir]
		sub := dir
		if modDir != "." {
			sub = strings.TrimPrefix(strings.TrimPrefix(dir, modDir), "/")
		}
		pkg := mod
		if sub != "" && sub != "." {
			pkg = mod + "/" + sub
		}
		parsed, err := parser.ParseFile(fset, p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		f := goFile{name: rel, pkg: pkg, module: mod, test: strings.HasSuffix(p, "_test.go")}
		for _, imp := range parsed.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if isKrply(path) {
				f.imports = append(f.imports, path)
			}
		}
		files = append(files, f)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return modules, files
}

// The checks find what they are for.
func TestLayoutChecksFail(t *testing.T) {
	modules := map[string]string{modulePath: "", modulePath + "/storage/postgres": "storage/postgres"}
	files := []goFile{
		{name: "storage/postgres/a.go", pkg: modulePath + "/storage/postgres", module: modulePath + "/storage/postgres",
			imports: []string{modulePath + "/storage/journal"}},
		{name: "storage/postgres/b_test.go", pkg: modulePath + "/storage/postgres", module: modulePath + "/storage/postgres", test: true,
			imports: []string{modulePath + "/internal/testing/golden"}},
		{name: "event/a.go", pkg: modulePath + "/event", module: modulePath, imports: []string{modulePath + "/storage"}},
		{name: "watch/a.go", pkg: modulePath + "/watch", module: modulePath, imports: []string{modulePath + "/internal/broadcast", modulePath + "/nowhere"}},
		{name: "storage/sqlite/a.go", pkg: modulePath + "/storage/sqlite", module: modulePath, imports: []string{modulePath + "/storage/sqlite/internal/x"}},
	}
	got := strings.Join(checkImports(modules, files), "\n")
	for _, want := range []string{
		"b_test.go: imports github.com/krply/krply/internal/testing/golden, an internal package of module github.com/krply/krply",
		"event/a.go: github.com/krply/krply/event (layer 1) imports github.com/krply/krply/storage (layer 2), above it",
		"watch/a.go: imports github.com/krply/krply/nowhere, which has no layer",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("problems lack %q:\n%s", want, got)
		}
	}
	if strings.Count(got, "\n")+1 != 3 {
		t.Errorf("want exactly 3 problems:\n%s", got)
	}
	f, err := modfile.Parse("go.mod", []byte("module x\nreplace a => ../a\nreplace b v1.0.0 => b v1.0.1\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if p := checkReplaces("examples/x", f); len(p) != 1 || !strings.Contains(p[0], "a folder replacement") {
		t.Errorf("an example module's replaces: %q, want the folder one", p)
	}
	if p := checkReplaces("storage/postgres", f); len(p) != 2 {
		t.Errorf("a published module's replaces: %q, want both", p)
	}
}
