package cel

import (
	"context"
	"encoding/json"

	"github.com/krply/krply/watch"
)

// Rule is a compiled recording rule: a condition over `object`, the
// object as the Collector records it, that decides whether it is recorded
// (watch.WithRecordRule; kubectl krply record --rule). It is safe for
// concurrent use. Each evaluation is bounded by the cost limit
// (WithCostLimit); there is no budget across evaluations, since a rule
// runs for as long as the recorder does.
type Rule struct{ e *Expression }

var _ watch.RecordRule = (*Rule)(nil)

// CompileRule compiles a recording rule, e.g.
// `!has(object.metadata.labels.scratch)` or
// `object.kind != "ConfigMap" || object.metadata.namespace != "ci"`. An
// expression that does not compile is a *CompileError.
func CompileRule(expression string, opts ...Option) (*Rule, error) {
	e, err := Compile(expression, opts...)
	if err != nil {
		return nil, err
	}
	return &Rule{e: e}, nil
}

// Expression returns the rule as given; it names the rule in the
// journal's stream IDs.
func (r *Rule) Expression() string { return r.e.source }

// Match evaluates the rule on an object. An object it cannot be evaluated
// on (a field it reads is missing) is an error wrapping
// materialize.ErrEvaluation, which the Collector counts as not matching.
func (r *Rule) Match(ctx context.Context, object json.RawMessage) (bool, error) {
	// A Predicate of its own, with no budget across evaluations, and
	// keeping no answer: it answers one version.
	p := r.e.Predicate()
	p.off.Store(true)
	return p.Match(ctx, object)
}
