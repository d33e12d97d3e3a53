package main

import (
	"bufio"
	"fmt"
	"go/constant"
	"go/types"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// recordHeader opens the record; lines starting with # are not API.
const recordHeader = `# The exported API of github.com/krply/krply, one line per identifier, in the
# manner of Go's api/*.txt. make api-check compares it with the code; a
# deliberate change updates it in the same commit: make api
`

// apiLines returns the module's API, one sorted line per exported
// identifier, struct field, interface method and method.
func (m *module) apiLines() []string {
	var lines []string
	for _, pkg := range m.pkgs {
		w := &apiWriter{pkg: pkg}
		scope := pkg.Scope()
		for _, name := range scope.Names() {
			if obj := scope.Lookup(name); obj.Exported() {
				w.object(obj)
			}
		}
		lines = append(lines, w.lines...)
	}
	sort.Strings(lines)
	return lines
}

type apiWriter struct {
	pkg   *types.Package
	lines []string
}

func (w *apiWriter) emit(format string, args ...any) {
	w.lines = append(w.lines, "pkg "+w.pkg.Path()+", "+fmt.Sprintf(format, args...))
}

func (w *apiWriter) object(obj types.Object) {
	switch obj := obj.(type) {
	case *types.Const:
		typ := ""
		if b, ok := obj.Type().(*types.Basic); !ok || b.Info()&types.IsUntyped == 0 {
			typ = " " + w.typ(obj.Type())
		}
		w.emit("const %s%s = %s", obj.Name(), typ, constValue(obj.Val()))
	case *types.Var:
		w.emit("var %s %s", obj.Name(), w.typ(obj.Type()))
	case *types.Func:
		w.emit("func %s%s", obj.Name(), w.signature(obj.Type().(*types.Signature)))
	case *types.TypeName:
		w.typeName(obj)
	}
}

func (w *apiWriter) typeName(obj *types.TypeName) {
	if obj.IsAlias() {
		tparams := ""
		if a, ok := obj.Type().(*types.Alias); ok {
			tparams = w.typeParams(a.TypeParams())
		}
		w.emit("type %s%s = %s", obj.Name(), tparams, w.typ(types.Unalias(obj.Type())))
		return
	}
	named := obj.Type().(*types.Named)
	decl := "type " + obj.Name() + w.typeParams(named.TypeParams())
	switch u := named.Underlying().(type) {
	case *types.Struct:
		w.emit("%s struct", decl)
		for i := range u.NumFields() {
			f := u.Field(i)
			switch {
			case f.Embedded():
				w.emit("%s struct, embedded %s%s", decl, w.typ(f.Type()), tag(u.Tag(i)))
			case f.Exported():
				w.emit("%s struct, %s %s%s", decl, f.Name(), w.typ(f.Type()), tag(u.Tag(i)))
			}
		}
	case *types.Interface:
		var names []string
		unexported := false
		for i := range u.NumMethods() {
			if f := u.Method(i); f.Exported() {
				names = append(names, f.Name())
				w.emit("%s interface, %s%s", decl, f.Name(), w.signature(f.Type().(*types.Signature)))
			} else {
				unexported = true
			}
		}
		sort.Strings(names)
		if unexported {
			w.emit("%s interface, unexported methods", decl)
			names = append(names, "unexported methods")
		}
		for i := range u.NumEmbeddeds() {
			if _, ok := u.EmbeddedType(i).Underlying().(*types.Interface); !ok {
				w.emit("%s interface, constraint %s", decl, w.typ(u.EmbeddedType(i)))
			}
		}
		w.emit("%s interface { %s }", decl, strings.Join(names, ", "))
	default:
		w.emit("%s %s", decl, w.typ(u))
	}
	for i := range named.NumMethods() {
		f := named.Method(i)
		if !f.Exported() {
			continue
		}
		sig := f.Type().(*types.Signature)
		recv := obj.Name()
		if _, ptr := sig.Recv().Type().(*types.Pointer); ptr {
			recv = "*" + recv
		}
		w.emit("method (%s) %s%s", recv, f.Name(), w.signature(sig))
	}
}

// constValue renders a constant's value exactly, floats in decimal.
func constValue(v constant.Value) string {
	if v.Kind() == constant.Float {
		if f, exact := constant.Float64Val(v); exact || !math.IsInf(f, 0) {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
	}
	return v.ExactString()
}

// tag renders a struct tag as Go source writes it, or nothing.
func tag(t string) string {
	if t == "" {
		return ""
	}
	if strings.ContainsAny(t, "`\n") {
		return " " + strconv.Quote(t)
	}
	return " `" + t + "`"
}

// typ renders a type: the writer's own package unqualified, the standard
// library by package name (time.Time), every other package by import path.
func (w *apiWriter) typ(t types.Type) string {
	var b strings.Builder
	w.writeType(&b, t)
	return b.String()
}

func (w *apiWriter) qualified(obj types.Object) string {
	switch pkg := obj.Pkg(); {
	case pkg == nil || pkg == w.pkg:
		return obj.Name()
	case isStd(pkg.Path()):
		return pkg.Name() + "." + obj.Name()
	default:
		return pkg.Path() + "." + obj.Name()
	}
}

func (w *apiWriter) writeType(b *strings.Builder, t types.Type) {
	switch t := t.(type) {
	case *types.Basic:
		b.WriteString(t.Name())
	case *types.Pointer:
		b.WriteString("*")
		w.writeType(b, t.Elem())
	case *types.Slice:
		b.WriteString("[]")
		w.writeType(b, t.Elem())
	case *types.Array:
		fmt.Fprintf(b, "[%d]", t.Len())
		w.writeType(b, t.Elem())
	case *types.Map:
		b.WriteString("map[")
		w.writeType(b, t.Key())
		b.WriteString("]")
		w.writeType(b, t.Elem())
	case *types.Chan:
		switch t.Dir() {
		case types.SendRecv:
			b.WriteString("chan ")
		case types.SendOnly:
			b.WriteString("chan<- ")
		case types.RecvOnly:
			b.WriteString("<-chan ")
		}
		if c, ok := t.Elem().(*types.Chan); ok && c.Dir() == types.RecvOnly && t.Dir() != types.RecvOnly {
			b.WriteString("(")
			w.writeType(b, t.Elem())
			b.WriteString(")")
		} else {
			w.writeType(b, t.Elem())
		}
	case *types.Signature:
		b.WriteString("func")
		b.WriteString(w.signature(t))
	case *types.Struct:
		b.WriteString("struct{")
		for i := range t.NumFields() {
			if i > 0 {
				b.WriteString("; ")
			}
			f := t.Field(i)
			if !f.Embedded() {
				b.WriteString(f.Name() + " ")
			}
			w.writeType(b, f.Type())
			b.WriteString(tag(t.Tag(i)))
		}
		b.WriteString("}")
	case *types.Interface:
		if t.Empty() {
			b.WriteString("interface{}")
			return
		}
		var elems []string
		for i := range t.NumMethods() {
			f := t.Method(i)
			elems = append(elems, f.Name()+w.signature(f.Type().(*types.Signature)))
		}
		for i := range t.NumEmbeddeds() {
			if _, ok := t.EmbeddedType(i).Underlying().(*types.Interface); !ok {
				elems = append(elems, w.typ(t.EmbeddedType(i)))
			}
		}
		sort.Strings(elems)
		b.WriteString("interface{ " + strings.Join(elems, "; ") + " }")
	case *types.Union:
		for i := range t.Len() {
			if i > 0 {
				b.WriteString(" | ")
			}
			if t.Term(i).Tilde() {
				b.WriteString("~")
			}
			w.writeType(b, t.Term(i).Type())
		}
	case *types.Alias:
		b.WriteString(w.qualified(t.Obj()))
		w.typeArgs(b, t.TypeArgs())
	case *types.Named:
		b.WriteString(w.qualified(t.Obj()))
		w.typeArgs(b, t.TypeArgs())
	case *types.TypeParam:
		b.WriteString(t.Obj().Name())
	case *types.Tuple:
		b.WriteString(w.tuple(t, false))
	default:
		b.WriteString(t.String())
	}
}

func (w *apiWriter) typeArgs(b *strings.Builder, args *types.TypeList) {
	if args.Len() == 0 {
		return
	}
	b.WriteString("[")
	for i := range args.Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		w.writeType(b, args.At(i))
	}
	b.WriteString("]")
}

func (w *apiWriter) typeParams(tps *types.TypeParamList) string {
	if tps.Len() == 0 {
		return ""
	}
	parts := make([]string, tps.Len())
	for i := range tps.Len() {
		tp := tps.At(i)
		parts[i] = tp.Obj().Name() + " " + w.typ(tp.Constraint())
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// signature renders a function's parameter and result types, without
// names: renaming a parameter is no API change.
func (w *apiWriter) signature(sig *types.Signature) string {
	s := w.typeParams(sig.TypeParams()) + w.tuple(sig.Params(), sig.Variadic())
	switch res := sig.Results(); res.Len() {
	case 0:
	case 1:
		s += " " + w.typ(res.At(0).Type())
	default:
		s += " " + w.tuple(res, false)
	}
	return s
}

func (w *apiWriter) tuple(t *types.Tuple, variadic bool) string {
	parts := make([]string, t.Len())
	for i := range t.Len() {
		typ := t.At(i).Type()
		if variadic && i == t.Len()-1 {
			parts[i] = "..." + w.typ(typ.(*types.Slice).Elem())
		} else {
			parts[i] = w.typ(typ)
		}
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// writeRecord writes lines to the record file under the module root.
func writeRecord(dir, record string, lines []string) error {
	file := recordPath(dir, record)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, []byte(recordHeader+strings.Join(lines, "\n")+"\n"), 0o644)
}

// recordPath resolves the record's path against the module root.
func recordPath(dir, record string) string {
	if filepath.IsAbs(record) {
		return record
	}
	return filepath.Join(dir, record)
}

// readRecord reads the record's lines, comments and blank lines left out.
func readRecord(dir, record string) ([]string, error) {
	f, err := os.Open(recordPath(dir, record))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if l := sc.Text(); l != "" && !strings.HasPrefix(l, "#") {
			lines = append(lines, l)
		}
	}
	return lines, sc.Err()
}

// diff returns the lines only in want ("-") and only in got ("+"), in
// sorted order.
func diff(want, got []string) []string {
	in := func(lines []string) map[string]bool {
		m := make(map[string]bool, len(lines))
		for _, l := range lines {
			m[l] = true
		}
		return m
	}
	inWant, inGot := in(want), in(got)
	var d []string
	for l := range inWant {
		if !inGot[l] {
			d = append(d, "-"+l)
		}
	}
	for l := range inGot {
		if !inWant[l] {
			d = append(d, "+"+l)
		}
	}
	sort.Slice(d, func(i, j int) bool {
		if d[i][1:] != d[j][1:] {
			return d[i][1:] < d[j][1:]
		}
		return d[i] < d[j]
	})
	return d
}
