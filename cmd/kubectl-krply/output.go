package main

import (
	"encoding/json"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"

	"github.com/krply/krply/event"
)

// printFlags is -o: table (the default) and wide are krply's own; json,
// yaml, name, jsonpath= and go-template= are kubectl's printers
// (cli-runtime), given the library's own types as JSON, so that
// `-o jsonpath='{.entries[*].version.resourceVersion}'` reads the names of
// docs/wire-schema.md.
type printFlags struct {
	kube   *genericclioptions.PrintFlags
	output string
	own    []string // the formats the command prints itself: table, wide, …
}

// addPrintFlags adds -o; own lists the formats the command prints itself
// besides table (wide, unified), handed to its view's table function.
func addPrintFlags(cmd *cobra.Command, own ...string) *printFlags {
	p := &printFlags{kube: genericclioptions.NewPrintFlags(""), own: append([]string{"table"}, own...)}
	p.kube.OutputFormat = &p.output
	p.kube.AddFlags(cmd)
	cmd.Flags().Lookup("output").Usage = "output format: " + p.formats()
	// -o is checked before the command does any work.
	cmd.PreRunE = func(*cobra.Command, []string) error { return p.validate() }
	return p
}

func (p *printFlags) formats() string {
	return strings.Join(p.own, ", ") + ", json, yaml, name, jsonpath=TEMPLATE, go-template=TEMPLATE"
}

// validate checks -o before any work is done.
func (p *printFlags) validate() error {
	if p.output == "" || slices.Contains(p.own, p.output) {
		return nil
	}
	if _, err := p.kube.ToPrinter(); err != nil {
		return usagef("-o %q: want one of %s", p.output, p.formats())
	}
	return nil
}

// view is one answer, ready for each output format.
type view struct {
	value any                 // the library's type, for json, yaml and templates
	names []event.ResourceRef // the objects it is about, for -o name
	// table prints the command's own formats: "table", "wide", …
	table func(w io.Writer, format string) error
}

func (p *printFlags) print(out io.Writer, v view) error {
	if p.output == "" || slices.Contains(p.own, p.output) {
		format := p.output
		if format == "" {
			format = "table"
		}
		return v.table(out, format)
	}
	printer, err := p.kube.ToPrinter()
	if err != nil {
		return usagef("-o %q: %v", p.output, err)
	}
	if p.output == "name" {
		return printer.PrintObj(nameList(v.names), out)
	}
	if obj, ok := v.value.(*unstructured.Unstructured); ok {
		// A Kubernetes object prints as kubectl get prints it
		// (managedFields left out unless --show-managed-fields).
		return printer.PrintObj(obj, out)
	}
	raw, err := json.Marshal(v.value)
	if err != nil {
		return err
	}
	return printer.PrintObj(&runtime.Unknown{Raw: raw, ContentType: runtime.ContentTypeJSON}, out)
}

// nameList is an object list kubectl's name printer takes: one item per
// object, printed as kind.group/name.
func nameList(refs []event.ResourceRef) *unstructured.UnstructuredList {
	list := &unstructured.UnstructuredList{Object: map[string]any{"apiVersion": "v1", "kind": "List"}}
	for _, ref := range refs {
		u := unstructured.Unstructured{Object: map[string]any{}}
		u.SetGroupVersionKind(schema.GroupVersionKind{Group: ref.Group, Version: ref.Version, Kind: kindOf(ref)})
		u.SetName(ref.Name)
		u.SetNamespace(ref.Namespace)
		list.Items = append(list.Items, u)
	}
	return list
}

// kindOf returns the kind of ref, or its resource when the kind is not
// known.
func kindOf(ref event.ResourceRef) string {
	if ref.Kind != "" {
		return ref.Kind
	}
	return ref.Resource
}

// ts prints a time in RFC 3339 with its zone and full precision, so that it
// can be given back to --at, --from or --to; "-" for none.
func ts(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return t.Local().Format(time.RFC3339Nano)
}

// newTable returns a writer of aligned columns.
func newTable(w io.Writer) *tabwriter.Writer {
	return tabwriter.NewWriter(w, 0, 4, 3, ' ', 0)
}

// orNone returns s, or "<none>" as kubectl prints empty cells.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// refString names an object as kubectl's -o name does: kind.group/name.
func refString(ref event.ResourceRef) string {
	gk := strings.ToLower(kindOf(ref))
	if ref.Group != "" {
		gk += "." + ref.Group
	}
	return gk + "/" + ref.Name
}
