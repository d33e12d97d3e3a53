package server

import (
	"errors"
	"net/http"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/materialize"
)

// WithConditions lets clients ask GET /api/v1/find with expressions that
// c compiles (github.com/krply/krply/cel's Conditions, for CEL). Without
// it the route answers 501 not_implemented, naming the option.
func WithConditions(c materialize.Conditions) Option {
	return optionFunc(func(cfg *config) { cfg.conditions = c })
}

// secrets is the group/resource the query API never serves.
var secrets = schema.GroupResource{Resource: "secrets"}

// find answers GET /api/v1/find: the intervals during which the condition
// expr held for each object of the scope. Secrets are left out of the
// scope: a condition over one would reveal its data.
func (h *handler) find(r *http.Request, u *user) (int, any, error) {
	ctx := r.Context()
	if h.cfg.conditions == nil {
		return 0, nil, newError(http.StatusNotImplemented, CodeNotImplemented, "expr",
			"this server compiles no conditions: start it with server.WithConditions(cel.Conditions()) (the recorder and kubectl krply serve do)")
	}
	p := h.params(r)
	expr := p.q.Get("expr")
	if expr == "" {
		return 0, nil, badParam("expr", `give expr, a condition over object, e.g. object.spec.replicas < 2`)
	}
	scope, err := p.scope(ctx)
	if err != nil {
		return 0, nil, err
	}
	if slices.Contains(scope.Resources, secrets) {
		return 0, nil, newError(http.StatusForbidden, CodeSecret, "resource", "Secrets are never served by the query API, nor searched")
	}
	q := materialize.FindQuery{Scope: scope, ExcludeResources: []schema.GroupResource{secrets}, LabelSelector: p.q.Get("labelSelector")}
	if p.q.Has("since") {
		if q.Since, err = p.time("since", p.now); err != nil {
			return 0, nil, err
		}
	}
	if p.q.Has("until") {
		if q.Until, err = p.time("until", p.now); err != nil {
			return 0, nil, err
		}
	}
	if q.First, err = p.boolean("first", false); err != nil {
		return 0, nil, err
	}
	if q.Now, err = p.boolean("now", false); err != nil {
		return 0, nil, err
	}
	cond, err := h.cfg.conditions.Compile(expr)
	if err != nil {
		return 0, nil, badParam("expr", "%v", err)
	}
	if err := h.authorizeRead(ctx, u, scope.Namespaces); err != nil {
		return 0, nil, err
	}
	found, err := h.m.Find(ctx, q, cond)
	if errors.Is(err, materialize.ErrInvalidArgument) {
		return 0, nil, badParam("", "%v", err)
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, found, nil
}

// changeFilter compiles the history route's filter with the handler's
// Conditions, when they compile change filters too
// (materialize.ChangeConditions).
func (h *handler) changeFilter(expr string) (materialize.ChangeFilter, error) {
	cc, ok := h.cfg.conditions.(materialize.ChangeConditions)
	if !ok {
		return nil, newError(http.StatusNotImplemented, CodeNotImplemented, "filter",
			"this server compiles no change filters: start it with server.WithConditions(cel.Conditions()) (the recorder and kubectl krply serve do)")
	}
	f, err := cc.CompileChange(expr)
	if err != nil {
		return nil, badParam("filter", "%v", err)
	}
	return f, nil
}
