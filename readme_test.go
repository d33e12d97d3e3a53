package krply_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"strings"
	"testing"
)

// The embedding example of README.md and of the embedding tutorial is
// quickstart's body in example_test.go, byte for byte (one tab less), so
// the example users copy is the one go test compiles.
func TestReadmeEmbeddingIsTheExample(t *testing.T) {
	body := quickstartBody(t)
	for _, doc := range []struct{ path, section string }{
		{"README.md", "## Embed it\n"},
		{"docs/tutorials/embedding.md", "## Record, then ask\n"},
	} {
		text, err := os.ReadFile(doc.path)
		if err != nil {
			t.Fatal(err)
		}
		_, after, ok := bytes.Cut(text, []byte(doc.section))
		if !ok {
			t.Fatalf("%s has no section %q", doc.path, doc.section)
		}
		_, code, ok := bytes.Cut(after, []byte("```go\n"))
		if !ok {
			t.Fatalf("%s: section %q has no go block", doc.path, doc.section)
		}
		code, _, _ = bytes.Cut(code, []byte("```\n"))
		if string(code) != body {
			t.Errorf("%s's embedding example is not quickstart's body in example_test.go; copy it from there:\n--- %s\n%s--- example_test.go\n%s", doc.path, doc.path, code, body)
		}
	}
}

// quickstartBody returns the statements of quickstart in example_test.go
// as they read there, one tab less.
func quickstartBody(t *testing.T) string {
	t.Helper()
	src, err := os.ReadFile("example_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "example_test.go", src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range f.Decls {
		if fn, ok := d.(*ast.FuncDecl); ok && fn.Name.Name == "quickstart" {
			open, end := fset.Position(fn.Body.Lbrace).Offset, fset.Position(fn.Body.Rbrace).Offset
			lines := strings.SplitAfter(string(src[open+2:end]), "\n")
			for i, l := range lines {
				lines[i] = strings.TrimPrefix(l, "\t")
			}
			return strings.Join(lines, "")
		}
	}
	t.Fatal("example_test.go has no func quickstart")
	return ""
}
