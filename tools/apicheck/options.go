package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"go/types"
	"io/fs"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// optionConstructors returns, per public package, the names of its option
// constructors: exported functions named With*, exported functions whose
// result is an option type (a type of the package named *Option, or one that
// implements an option interface), and exported types that are options by
// conversion, such as a FieldManager string type with an apply method. Option types named *Option
// themselves are the kinds of option, not constructors.
func (m *module) optionConstructors() map[*types.Package][]string {
	out := map[*types.Package][]string{}
	for _, pkg := range m.pkgs {
		scope := pkg.Scope()
		var ifaces []*types.Interface
		for _, name := range scope.Names() {
			if tn, ok := scope.Lookup(name).(*types.TypeName); ok && tn.Exported() && strings.HasSuffix(name, "Option") {
				if it, ok := tn.Type().Underlying().(*types.Interface); ok {
					ifaces = append(ifaces, it)
				}
			}
		}
		isOption := func(t types.Type) bool {
			if ptr, ok := t.(*types.Pointer); ok {
				t = ptr.Elem()
			}
			n, ok := types.Unalias(t).(*types.Named)
			if !ok || n.Obj().Pkg() != pkg {
				return false
			}
			if strings.HasSuffix(n.Obj().Name(), "Option") {
				return true
			}
			for _, it := range ifaces {
				if types.Implements(n, it) || types.Implements(types.NewPointer(n), it) {
					return true
				}
			}
			return false
		}
		for _, name := range scope.Names() {
			obj := scope.Lookup(name)
			if !obj.Exported() {
				continue
			}
			switch obj := obj.(type) {
			case *types.Func:
				res := obj.Type().(*types.Signature).Results()
				if strings.HasPrefix(name, "With") || (res.Len() == 1 && isOption(res.At(0).Type())) {
					out[pkg] = append(out[pkg], name)
				}
			case *types.TypeName:
				if _, iface := obj.Type().Underlying().(*types.Interface); !iface && !obj.IsAlias() &&
					!strings.HasSuffix(name, "Option") && isOption(obj.Type()) {
					out[pkg] = append(out[pkg], name)
				}
			}
		}
	}
	return out
}

// unexercisedOptions returns the option constructors (as "pkg/path.Name")
// that no _test.go file of the module tree and no file under examples/
// references.
func (m *module) unexercisedOptions() ([]string, error) {
	used, err := m.testReferences()
	if err != nil {
		return nil, err
	}
	var missing []string
	for pkg, names := range m.optionConstructors() {
		for _, name := range names {
			if !used[pkg.Path()][name] {
				missing = append(missing, pkg.Path()+"."+name)
			}
		}
	}
	sort.Strings(missing)
	return missing, nil
}

// testReferences parses every _test.go file under the module root (nested
// modules included) and every Go file under examples/, and returns the
// identifiers they reference, by import path: pkg.Name selectors through an
// import of a public package, and any identifier in a test file of the
// package itself (package p, not p_test).
func (m *module) testReferences() (map[string]map[string]bool, error) {
	names := map[string]string{} // import path -> package name
	for _, pkg := range m.pkgs {
		names[pkg.Path()] = pkg.Name()
	}
	used := map[string]map[string]bool{}
	mark := func(path, name string) {
		if used[path] == nil {
			used[path] = map[string]bool{}
		}
		used[path][name] = true
	}
	fset := token.NewFileSet()
	err := filepath.WalkDir(m.dir, func(file string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); file != m.dir && (n == "testdata" || n == "vendor" || strings.HasPrefix(n, ".") || strings.HasPrefix(n, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(m.dir, file)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !strings.HasSuffix(rel, ".go") || (!strings.HasSuffix(rel, "_test.go") && !strings.HasPrefix(rel, "examples/")) {
			return nil
		}
		f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		imports := map[string]string{} // local name -> import path
		for _, spec := range f.Imports {
			path, _ := strconv.Unquote(spec.Path.Value)
			name, public := names[path]
			switch {
			case spec.Name != nil && spec.Name.Name != "_" && spec.Name.Name != ".":
				imports[spec.Name.Name] = path
			case public:
				imports[name] = path
			}
		}
		self := ""
		if dir := path2dir(m.path, rel); names[dir] == f.Name.Name {
			self = dir
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if x, ok := n.X.(*ast.Ident); ok {
					if path, ok := imports[x.Name]; ok {
						mark(path, n.Sel.Name)
						return false
					}
				}
			case *ast.Ident:
				if self != "" {
					mark(self, n.Name)
				}
			}
			return true
		})
		return nil
	})
	return used, err
}

// path2dir returns the import path of the directory holding a file, given
// by its slash path relative to the module root.
func path2dir(modPath, rel string) string {
	if dir := filepath.ToSlash(filepath.Dir(rel)); dir != "." {
		return modPath + "/" + dir
	}
	return modPath
}
