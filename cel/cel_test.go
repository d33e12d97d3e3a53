package cel_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/krply/krply/cel"
	"github.com/krply/krply/materialize"
)

const deployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","namespace":"shop","labels":{"app":"web"}},
"spec":{"replicas":1,"template":{"spec":{"containers":[{"name":"app","image":"x:1.2"},{"name":"log","image":"fluent:3"}]}}},
"status":{"availableReplicas":0.5}}`

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want bool
	}{
		{`object.spec.replicas < 2`, true},
		{`object.spec.replicas + 1 == 2`, true}, // an int, not a double
		{`object.status.availableReplicas < 1`, true},
		{`object.spec.template.spec.containers.exists(c, c.image == "x:1.2")`, true},
		{`object.spec.template.spec.containers.all(c, c.image.startsWith("x:"))`, false},
		{`object.metadata.labels.app == "web" && object.metadata.name.matches("^w")`, true},
		{`has(object.spec.paused) && object.spec.paused`, false},
		{`object.?spec.?paused.orValue(false)`, false},
		{`object.spec.template.spec.containers.map(c, c.name).join(",") == "app,log"`, true},
	} {
		e, err := cel.Compile(tc.expr)
		if err != nil {
			t.Errorf("%s: %v", tc.expr, err)
			continue
		}
		got, err := e.Predicate().Match(context.Background(), json.RawMessage(deployment))
		if err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.expr, got, err, tc.want)
		}
	}
}

// A field the version lacks is an evaluation error, which Find counts as
// not true; the request goes on.
func TestMatchMissingField(t *testing.T) {
	e, err := cel.Compile(`object.spec.paused`)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Predicate().Match(context.Background(), json.RawMessage(deployment))
	if !errors.Is(err, materialize.ErrEvaluation) || !strings.Contains(err.Error(), "no such key: paused") {
		t.Errorf("got %v, want ErrEvaluation naming the key", err)
	}
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		expr         string
		line, column int
		reason, hint string
	}{
		{`obj.spec.replicas < 2`, 1, 1, "undeclared reference to 'obj'", "the variables are object"},
		{`object.spec.replicas <`, 1, 23, "Syntax error", "check the brackets"},
		{`object.metadata.name == 1 + "a"`, 1, 27, "found no matching overload for '_+_'", "different types"},
		{`object.metadata.name`, 0, 0, "", ""}, // dyn: a condition at run time
		{`1 + 2`, 0, 0, "the expression is of type int, not a condition", "compare the value"},
		{`  `, 0, 0, "empty expression", "object.spec.replicas < 2"},
	} {
		_, err := cel.Compile(tc.expr)
		if tc.reason == "" {
			if err != nil {
				t.Errorf("%q: %v", tc.expr, err)
			}
			continue
		}
		var ce *cel.CompileError
		if !errors.As(err, &ce) || !errors.Is(err, materialize.ErrInvalidArgument) {
			t.Errorf("%q: %v, want a CompileError wrapping ErrInvalidArgument", tc.expr, err)
			continue
		}
		if ce.Line != tc.line || ce.Column != tc.column || !strings.Contains(ce.Reason, tc.reason) || !strings.Contains(ce.Hint, tc.hint) {
			t.Errorf("%q: line %d column %d reason %q hint %q; want %d, %d, %q, %q", tc.expr, ce.Line, ce.Column, ce.Reason, ce.Hint, tc.line, tc.column, tc.reason, tc.hint)
		}
	}
}

func TestCostLimits(t *testing.T) {
	// Nested comprehensions over an object's lists have an estimate out
	// of bounds: refused at compile time.
	nested := `object.spec.template.spec.containers.exists(a, object.spec.template.spec.containers.exists(b, a.image.contains(b.name)))`
	_, err := cel.Compile(nested)
	var ce *cel.CompileError
	if !errors.As(err, &ce) || !strings.Contains(ce.Reason, "estimated worst-case cost") {
		t.Fatalf("nested comprehension: %v, want refused for its estimated cost", err)
	}
	simple := `object.spec.template.spec.containers.exists(c, c.image == "x:1.2")`
	e, err := cel.Compile(simple)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cel.Compile(simple, cel.WithMaxEstimatedCost(e.EstimatedCost()-1)); err == nil {
		t.Errorf("a bound below the estimate %d allowed %s", e.EstimatedCost(), simple)
	}
	e, err = cel.Compile(`object.spec.replicas < 2`, cel.WithBudget(10))
	if err != nil {
		t.Fatal(err)
	}
	// Versions of other replicas each: a version whose projection was
	// evaluated before gets its answer again without an evaluation.
	replicas := func(n int64) json.RawMessage {
		return json.RawMessage(strings.Replace(deployment, `"replicas":1`, fmt.Sprintf(`"replicas":%d`, n), 1))
	}
	p := e.Predicate()
	var n int
	for ; n < 100; n++ {
		if _, err = p.Match(context.Background(), replicas(int64(n))); err != nil {
			break
		}
	}
	if !errors.Is(err, cel.ErrBudgetExceeded) || n == 0 || n >= 10 {
		t.Errorf("after %d evaluations: %v; want the budget of 10 spent after a few", n, err)
	}
	// A fresh Predicate has a fresh budget.
	if _, err := e.Predicate().Match(context.Background(), json.RawMessage(deployment)); err != nil {
		t.Errorf("a new request: %v", err)
	}
	// Called concurrently (Find does), the evaluations share the budget:
	// as many as when called in turn, and at most one more per goroutine
	// under way when it runs out.
	e, err = cel.Compile(`object.spec.replicas < 2`, cel.WithBudget(1000))
	if err != nil {
		t.Fatal(err)
	}
	serial, p := 0, e.Predicate()
	for ; serial < 10000; serial++ {
		if _, err := p.Match(context.Background(), replicas(int64(serial))); err != nil {
			break
		}
	}
	if serial == 0 || serial == 10000 {
		t.Fatalf("the budget of 1,000 allowed %d evaluations", serial)
	}
	p = e.Predicate()
	if !p.Concurrent() {
		t.Error("a Predicate says it may not be called concurrently")
	}
	const goroutines = 8
	var ok, next atomic.Int64
	var wg sync.WaitGroup
	for range goroutines {
		wg.Go(func() {
			for {
				if _, err := p.Match(context.Background(), replicas(next.Add(1))); err != nil {
					if !errors.Is(err, cel.ErrBudgetExceeded) {
						t.Errorf("concurrent evaluation: %v", err)
					}
					return
				}
				ok.Add(1)
			}
		})
	}
	wg.Wait()
	if n := int(ok.Load()); n < serial || n > serial+goroutines {
		t.Errorf("the budget of 1,000 allowed %d evaluations concurrently, %d in turn", n, serial)
	}
	// One evaluation over the limit ends the request.
	e, err = cel.Compile(`object.spec.template.spec.containers.map(c, c.image).join("").size() > 0`, cel.WithCostLimit(3))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Predicate().Match(context.Background(), json.RawMessage(deployment)); !errors.Is(err, cel.ErrBudgetExceeded) || !strings.Contains(err.Error(), "limit of 3") {
		t.Errorf("over the per-version limit: %v", err)
	}
	if _, err := cel.Compile(`true`, cel.WithCostLimit(0)); !errors.Is(err, materialize.ErrInvalidArgument) {
		t.Errorf("a zero cost limit: %v", err)
	}
}

// Conditions is the compiler the server and the plugin take: each
// Compile gives a Predicate with a fresh budget, and compile errors as
// CompileErrors.
func TestConditions(t *testing.T) {
	c := cel.Conditions(cel.WithBudget(10))
	for range 2 {
		p, err := c.Compile(`object.spec.replicas < 2`)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := p.Match(context.Background(), json.RawMessage(deployment)); !ok || err != nil {
			t.Errorf("Match: %v, %v", ok, err)
		}
	}
	var ce *cel.CompileError
	if _, err := c.Compile(`object.spec.replicas <`); !errors.As(err, &ce) || ce.Column != 23 {
		t.Errorf("a syntax error: %v", err)
	}
}
