package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/krply/krply/why"
)

// why answers GET /api/v1/why: what changed before an object broke
// (package why). Secrets are never the object asked about and their values
// are never served (hashes only); the dependencies the caller may not read
// at cluster scope (Nodes, PersistentVolumes, …) are left out, with a
// warning.
func (h *handler) why(r *http.Request, u *user) (int, any, error) {
	ctx := r.Context()
	p := h.params(r)
	q := why.Query{}
	var err error
	if p.q.Has("at") {
		if q.At, err = p.time("at", p.now); err != nil {
			return 0, nil, err
		}
	}
	if p.q.Has("from") {
		if q.From, err = p.time("from", p.now); err != nil {
			return 0, nil, err
		}
	}
	for _, d := range []struct {
		name string
		to   *time.Duration
	}{{"before", &q.Before}, {"after", &q.After}} {
		if s := p.q.Get(d.name); s != "" {
			v, err := time.ParseDuration(s)
			if err != nil || v <= 0 {
				return 0, nil, badParam(d.name, "%s: %q is not a positive duration (such as 30m or 2h)", d.name, s)
			}
			*d.to = v
		}
	}
	if s := p.q.Get("maxObjects"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n <= 0 {
			return 0, nil, badParam("maxObjects", "maxObjects: %q is not a positive number", s)
		}
		q.MaxObjects = n
	}
	if q.Object, err = h.readObject(ctx, p, u); err != nil {
		return 0, nil, err
	}
	ex, err := why.New(h.j)
	if err != nil {
		return 0, nil, err
	}
	a, err := ex.Explain(ctx, q)
	switch {
	case errors.Is(err, why.ErrOutOfRange):
		param := "at"
		return 0, nil, newError(http.StatusBadRequest, CodeInvalidParameter, param, "%v", err)
	case err != nil:
		return 0, nil, err
	}
	if h.authorizeRead(ctx, u, nil) != nil {
		leaveOutClusterScoped(a)
	}
	return http.StatusOK, a, nil
}

// leaveOutClusterScoped removes from an answer what lies outside the
// object's namespace, for a caller who may not read cluster scope.
func leaveOutClusterScoped(a *why.Answer) {
	var left []string
	keep := func(ns string) bool { return ns != "" }
	nodes := a.Nodes[:0]
	for _, n := range a.Nodes {
		if keep(n.ID.Namespace) {
			nodes = append(nodes, n)
		} else {
			left = append(left, n.ID.Resource+" "+n.ID.Name)
		}
	}
	if len(left) == 0 {
		return
	}
	a.Nodes = nodes
	edges := a.Edges[:0]
	for _, e := range a.Edges {
		if keep(e.From.Namespace) && keep(e.To.Namespace) {
			edges = append(edges, e)
		}
	}
	a.Edges = edges
	index := map[int]int{}
	changes := a.Changes[:0]
	for i, c := range a.Changes {
		if keep(c.Object.Namespace) {
			index[i] = len(changes)
			changes = append(changes, c)
		}
	}
	a.Changes = changes
	candidates := a.Candidates[:0]
	for _, c := range a.Candidates {
		if j, ok := index[c.Change]; ok {
			c.Change = j
			candidates = append(candidates, c)
		}
	}
	a.Candidates = candidates
	coverage := a.Coverage[:0]
	for _, sc := range a.Coverage {
		if sc.Namespace != "" {
			coverage = append(coverage, sc)
		}
	}
	a.Coverage = coverage
	a.Complete = false
	a.Warnings = append(a.Warnings, fmt.Sprintf("left out the cluster-scoped dependencies you may not read (%s): a change in them is not shown", strings.Join(left, ", ")))
}
