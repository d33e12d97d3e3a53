package krply_test

import (
	"bufio"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/krply/krply"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/replay"
)

// notForwarded lists the exported methods of Materializer and Planner that
// Journal deliberately does not forward, each with the reason. It is empty:
// Journal forwards them all.
var notForwarded = map[string]string{}

// Journal forwards every exported method of its Materializer and Planner
// with the same signature, unless notForwarded says why not: a method added
// to either fails this test until it is forwarded or excluded.
func TestJournalForwardsEveryMethod(t *testing.T) {
	journal := reflect.TypeFor[*krply.Journal]()
	owner := map[string]string{} // method name -> the type that has it
	for _, typ := range []reflect.Type{reflect.TypeFor[*materialize.Materializer](), reflect.TypeFor[*replay.Planner]()} {
		for m := range typ.Methods() {
			if prev, ok := owner[m.Name]; ok {
				t.Errorf("%s and %s both have %s: decide which one Journal forwards and record the other in notForwarded", prev, typ, m.Name)
				continue
			}
			owner[m.Name] = typ.String()
			if reason, ok := notForwarded[m.Name]; ok {
				if _, has := journal.MethodByName(m.Name); has {
					t.Errorf("Journal has %s, which notForwarded excludes (%s): remove the exclusion", m.Name, reason)
				}
				continue
			}
			fwd, ok := journal.MethodByName(m.Name)
			if !ok {
				t.Errorf("Journal does not forward %s.%s: forward it, or add it to notForwarded with the reason", typ, m.Name)
				continue
			}
			if got, want := signature(fwd.Type), signature(m.Type); got != want {
				t.Errorf("Journal.%s is %s, want %s's %s", m.Name, got, typ, want)
			}
		}
	}
	for name := range notForwarded {
		if _, ok := owner[name]; !ok {
			t.Errorf("notForwarded names %s, which neither Materializer nor Planner has: remove it", name)
		}
	}
}

// signature renders a method's type without its receiver.
func signature(fn reflect.Type) string {
	in := make([]string, 0, fn.NumIn())
	for i := 1; i < fn.NumIn(); i++ {
		in = append(in, fn.In(i).String())
	}
	out := make([]string, 0, fn.NumOut())
	for i := range fn.NumOut() {
		out = append(out, fn.Out(i).String())
	}
	return "func(" + strings.Join(in, ", ") + ") (" + strings.Join(out, ", ") + ")"
}

// The exported API of this package names every type of the module's other
// packages through an alias of its own, so that a program using only this
// package can spell every type it meets (DryRun's *Cluster, Apply's
// Confirmation, History's options, …). It reads api/krply.txt, the checked
// record of the exported API that make api-check keeps up to date: a
// signature naming github.com/krply/krply/<pkg>.<Type> where the root has
// an alias for it (or should have one) fails.
func TestRootSignaturesUseAliases(t *testing.T) {
	f, err := os.Open("api/krply.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const prefix = "pkg github.com/krply/krply, "
	qualified := regexp.MustCompile(`github\.com/krply/krply/[a-z/]+\.[A-Z]\w*`)
	alias := regexp.MustCompile(`^type (\w+) = (github\.com/krply/krply/[a-z/]+\.[A-Z]\w*)$`)
	aliases := map[string]string{} // qualified type -> alias
	var uses [][2]string           // line, qualified type
	lines := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		decl, ok := strings.CutPrefix(sc.Text(), prefix)
		if !ok {
			continue
		}
		lines++
		if m := alias.FindStringSubmatch(decl); m != nil {
			aliases[m[2]] = m[1]
			continue
		}
		for _, q := range qualified.FindAllString(decl, -1) {
			uses = append(uses, [2]string{decl, q})
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if lines == 0 {
		t.Fatal("api/krply.txt has no line of package krply")
	}
	for _, u := range uses {
		if a, ok := aliases[u[1]]; ok {
			t.Errorf("%s: spell %s as its alias %s", u[0], u[1], a)
		} else {
			t.Errorf("%s: %s has no alias in package krply: add one", u[0], u[1])
		}
	}
	// The aliases a newcomer needs for DryRun and Apply, checked by name.
	var have []string
	for _, a := range aliases {
		have = append(have, a)
	}
	for _, want := range []string{"Cluster", "ClusterOption", "Confirmation", "DryRunReport", "ApplyReport", "ObjectState", "Collector", "CollectorOption"} {
		if !slices.Contains(have, want) {
			t.Errorf("no alias %s in api/krply.txt", want)
		}
	}
}
