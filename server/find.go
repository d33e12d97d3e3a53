package server

import (
	"errors"
	"net/http"
	"slices"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
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
	limit, cur, whole, err := p.objectsPage()
	if err != nil {
		return 0, nil, err
	}
	var after *storage.ObjectID
	switch {
	case cur != nil:
		if cur.Obj == nil || cur.To.IsZero() {
			return 0, nil, notCursorOf("find")
		}
		// The window of the first page, its relative times resolved then.
		q.Since, q.Until, after = cur.At, cur.To, cur.Obj
	case !whole && q.Until.IsZero():
		// Pages agree on the window: an interval that begins after the
		// first page is in none.
		q.Until = p.now
	}
	cond, err := h.cfg.conditions.Compile(expr)
	if err != nil {
		return 0, nil, badParam("expr", "%v", err)
	}
	if err := h.authorizeRead(ctx, u, scope.Namespaces); err != nil {
		return 0, nil, err
	}
	key := foundKey{params: p.paramsHash(), since: q.Since.UnixNano(), until: q.Until.UnixNano()}
	var found *materialize.Found
	if cur != nil {
		found = h.found.get(key, p.now)
	}
	if found == nil {
		found, err = h.m.Find(ctx, q, cond)
		if errors.Is(err, materialize.ErrInvalidArgument) {
			return 0, nil, badParam("", "%v", err)
		}
		if err != nil {
			return 0, nil, err
		}
	}
	if whole {
		return http.StatusOK, FoundPage{Found: *found}, nil
	}
	page, err := found.Page(materialize.Page{After: after, Limit: limit})
	if err != nil {
		return 0, nil, err
	}
	out := FoundPage{Found: *page}
	if page.Next != nil {
		h.found.put(key, found, p.now)
		out.Next = p.next(cursor{Obj: page.Next, At: q.Since, To: q.Until})
	}
	return http.StatusOK, out, nil
}

// The answers of paged finds the handler remembers for the pages after
// the first (foundCache): how long, how many, and how many objects in all.
const (
	foundTTL           = time.Minute
	maxFound           = 4
	maxRememberedFound = 100_000
)

// foundKey names a paged find's answer: its parameters and its window.
type foundKey struct {
	params       uint64
	since, until int64
}

// foundCache remembers the answers of paged finds, so that the pages
// after the first are cut from the answer the first was, instead of each
// reading the whole scope again: the last few, for a minute. A page whose
// answer was forgotten finds again, in the first page's window.
type foundCache struct {
	mu      sync.Mutex
	answers map[foundKey]foundEntry
}

type foundEntry struct {
	found   *materialize.Found
	expires time.Time
}

func (c *foundCache) get(key foundKey, now time.Time) *materialize.Found {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.answers[key]; ok && now.Before(e.expires) {
		return e.found
	}
	return nil
}

// put remembers found under key, forgetting the expired answers and the
// ones that expire first beyond maxFound or maxRememberedFound objects.
func (c *foundCache) put(key foundKey, found *materialize.Found, now time.Time) {
	if len(found.Objects) > maxRememberedFound {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.answers == nil {
		c.answers = map[foundKey]foundEntry{}
	}
	c.answers[key] = foundEntry{found: found, expires: now.Add(foundTTL)}
	for {
		objects, oldest := 0, foundKey{}
		var first time.Time
		for k, e := range c.answers {
			if !now.Before(e.expires) {
				delete(c.answers, k)
				continue
			}
			objects += len(e.found.Objects)
			if first.IsZero() || e.expires.Before(first) {
				first, oldest = e.expires, k
			}
		}
		if len(c.answers) <= maxFound && objects <= maxRememberedFound {
			return
		}
		delete(c.answers, oldest)
	}
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
