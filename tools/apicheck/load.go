package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/importer"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// module is the type-checked public packages of a module.
type module struct {
	dir  string // the module's root directory
	path string // the module path
	pkgs []*types.Package
}

// listedPackage is what apicheck reads of go list -json.
type listedPackage struct {
	ImportPath string
	Name       string
	Export     string
	GoFiles    []string
	Error      *struct{ Err string }
}

// load lists the module in dir with go list -export and imports its public
// packages from their export data.
func load(dir, overlay string) (*module, error) {
	modPath, err := goCmd(dir, "list", "-m")
	if err != nil {
		return nil, err
	}
	m := &module{dir: dir, path: strings.TrimSpace(modPath)}

	// First the public packages, then export data for them and their
	// dependencies only: examples and internal tools are not compiled.
	var overlayFlag []string
	if overlay != "" {
		overlayFlag = []string{"-overlay", overlay}
	}
	var public []string
	if err := goList(dir, append(overlayFlag, "./..."), func(p listedPackage) {
		if m.isPublic(p.ImportPath) && p.Name != "main" && len(p.GoFiles) > 0 {
			public = append(public, p.ImportPath)
		}
	}); err != nil {
		return nil, err
	}
	if len(public) == 0 {
		return nil, fmt.Errorf("no public packages in module %s", m.path)
	}
	exports := map[string]string{}
	if err := goList(dir, append(append([]string{"-export", "-deps"}, overlayFlag...), public...), func(p listedPackage) {
		exports[p.ImportPath] = p.Export
	}); err != nil {
		return nil, err
	}
	sort.Strings(public)

	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f := exports[path]
		if f == "" {
			return nil, fmt.Errorf("go list gave no export data for %s", path)
		}
		return os.Open(f)
	})
	for _, p := range public {
		pkg, err := imp.Import(p)
		if err != nil {
			return nil, fmt.Errorf("importing %s: %w", p, err)
		}
		m.pkgs = append(m.pkgs, pkg)
	}
	return m, nil
}

// goList runs go list -json with args in dir and calls fn for each package.
func goList(dir string, args []string, fn func(listedPackage)) error {
	out, err := goCmd(dir, append([]string{"list", "-json=ImportPath,Name,Export,GoFiles,Error"}, args...)...)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		var p listedPackage
		if err := dec.Decode(&p); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("reading go list: %w", err)
		}
		if p.Error != nil {
			return fmt.Errorf("package %s: %s", p.ImportPath, p.Error.Err)
		}
		fn(p)
	}
}

// isPublic reports whether a package of the module is part of its API:
// neither under internal/ nor under examples/.
func (m *module) isPublic(importPath string) bool {
	rel, ok := strings.CutPrefix(importPath, m.path)
	if !ok || (rel != "" && rel[0] != '/') {
		return false
	}
	elems := strings.Split(strings.TrimPrefix(rel, "/"), "/")
	if elems[0] == "examples" {
		return false
	}
	for _, e := range elems {
		if e == "internal" {
			return false
		}
	}
	return true
}

// pkgDir returns the directory of a package of the module.
func (m *module) pkgDir(importPath string) string {
	rel := strings.TrimPrefix(strings.TrimPrefix(importPath, m.path), "/")
	return filepath.Join(m.dir, filepath.FromSlash(rel))
}

// isStd reports whether an import path belongs to the standard library (its
// first element has no dot), whose packages the record names by their name.
func isStd(importPath string) bool {
	first, _, _ := strings.Cut(importPath, "/")
	return !strings.Contains(first, ".") && path.Clean(importPath) == importPath
}

// goCmd runs the go command in dir and returns its standard output.
func goCmd(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return "", fmt.Errorf("go %s: %s", strings.Join(args, " "), strings.TrimSpace(stderr.String()))
		}
		return "", fmt.Errorf("go %s: %w (is the go command on PATH?)", strings.Join(args, " "), err)
	}
	return stdout.String(), nil
}
