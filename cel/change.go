package cel

import (
	"context"
	"fmt"

	celgo "cel.dev/cel-go/cel"

	"github.com/krply/krply/materialize"
)

// changeVariables names the variables of change filters, for hints.
const changeVariables = "old, new, change and actor"

// changeEnv is the environment of change filters: old and new (the object
// before and after), change (type, origin, paths, resourceVersion,
// observedAt) and actor (user, groups, userAgent, managers).
func changeEnv() (*celgo.Env, error) {
	return celgo.NewEnv(append(libraries(),
		celgo.Variable("old", celgo.DynType),
		celgo.Variable("new", celgo.DynType),
		celgo.Variable("change", celgo.MapType(celgo.StringType, celgo.DynType)),
		celgo.Variable("actor", celgo.MapType(celgo.StringType, celgo.DynType)),
	)...)
}

// ChangeExpression is a compiled change filter. It is safe for
// concurrent use.
type ChangeExpression struct{ e *Expression }

// CompileChange compiles a condition over a change of an object (see
// docs/reference/expressions.md): old and new are the object before and
// after (null for the first version, and new for a deletion), change has
// type (ADDED, MODIFIED, DELETED), origin (watch, baseline, inferred),
// paths (the changed fields, as history names them), resourceVersion and
// observedAt, and actor has user, groups and userAgent (from audit
// correlations, "" and [] without) and managers (the field managers),
// e.g. `change.paths.exists(p, p.startsWith("spec.template"))` or
// `actor.user == "bob"`.
func CompileChange(expression string, opts ...Option) (*ChangeExpression, error) {
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	env, err := changeEnv()
	if err != nil {
		return nil, fmt.Errorf("cel: environment: %w", err)
	}
	e, err := compileIn(env, changeVariables, expression, cfg)
	if err != nil {
		return nil, err
	}
	return &ChangeExpression{e: e}, nil
}

// String returns the expression as given.
func (c *ChangeExpression) String() string { return c.e.source }

// Filter returns the change filter of one request, with its own budget.
func (c *ChangeExpression) Filter() *ChangeFilter {
	return &ChangeFilter{p: c.e.Predicate(), text: c.e.source}
}

// ChangeFilter is a ChangeExpression's filter for one request: a
// materialize.ChangeFilter with the request's budget. It is not safe for
// concurrent use.
type ChangeFilter struct {
	p    *Predicate
	text string
}

// Expression is the filter's expression as it was compiled: what a Go
// client of the query API sends for it.
func (f *ChangeFilter) Expression() string { return f.text }

var _ materialize.ChangeFilter = (*ChangeFilter)(nil)

// MatchChange evaluates the expression on one change.
func (f *ChangeFilter) MatchChange(ctx context.Context, c materialize.Change) (bool, error) {
	vars := map[string]any{"old": nil, "new": nil}
	for name, raw := range map[string][]byte{"old": c.Old, "new": c.New} {
		if raw != nil {
			v, err := decode(raw)
			if err != nil {
				return false, fmt.Errorf("cel: decode %s: %w", name, err)
			}
			vars[name] = v
		}
	}
	v := c.Version
	change := map[string]any{"type": "", "origin": "", "paths": []string{}, "resourceVersion": "", "observedAt": ""}
	actor := map[string]any{"user": "", "groups": []string{}, "userAgent": "", "managers": []string{}}
	if v != nil {
		paths := make([]string, len(v.Changes))
		for i, fc := range v.Changes {
			paths[i] = fc.Path
		}
		change = map[string]any{"type": string(v.WatchType), "origin": string(v.Origin), "paths": paths,
			"resourceVersion": v.ResourceVersion, "observedAt": v.ObservedAt}
		managers := make([]string, len(v.FieldManagers))
		for i, m := range v.FieldManagers {
			managers[i] = m.Manager
		}
		actor["managers"] = managers
		if len(v.Provenance) > 0 {
			p := v.Provenance[0]
			actor["user"], actor["userAgent"] = p.User, p.UserAgent
			if p.Groups != nil {
				actor["groups"] = p.Groups
			}
		}
	}
	vars["change"], vars["actor"] = change, actor
	return f.p.eval(ctx, vars)
}
