package server

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"hash/fnv"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
)

// params reads the query parameters of one request.
type params struct {
	h   *handler
	q   url.Values
	now time.Time
}

func (h *handler) params(r *http.Request) *params {
	return &params{h: h, q: r.URL.Query(), now: h.cfg.clock.Now()}
}

// list returns a repeatable parameter's values, commas split, empties dropped.
func (p *params) list(name string) []string {
	var out []string
	for _, v := range p.q[name] {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// time reads a time parameter; def when absent.
func (p *params) time(name string, def time.Time) (time.Time, error) {
	s := p.q.Get(name)
	if s == "" {
		return def, nil
	}
	t, err := ParseTime(s, p.now)
	if err != nil {
		return time.Time{}, badParam(name, "%s: %v", name, err)
	}
	return t, nil
}

// limit reads limit: DefaultPageSize when absent, at most the maximum.
func (p *params) limit(def int) (int, error) {
	s := p.q.Get("limit")
	if s == "" {
		return min(def, p.h.cfg.maxPage), nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > p.h.cfg.maxPage {
		return 0, badParam("limit", "limit %q: want a number from 1 to %d", s, p.h.cfg.maxPage)
	}
	return n, nil
}

// boolean reads a true/false parameter.
func (p *params) boolean(name string, def bool) (bool, error) {
	s := p.q.Get(name)
	if s == "" {
		return def, nil
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		return false, badParam(name, "%s %q: want true or false", name, s)
	}
	return b, nil
}

// checkRange refuses a range longer than the handler allows.
func (p *params) checkRange(fromName string, from, to time.Time) error {
	if to.Before(from) {
		return badParam(fromName, "%s %s is after the end of the range %s", fromName, from.UTC().Format(time.RFC3339Nano), to.UTC().Format(time.RFC3339Nano))
	}
	if to.Sub(from) > p.h.cfg.maxRange {
		return newError(http.StatusBadRequest, CodeRangeTooLarge, fromName, "the range from %s to %s is longer than the server's limit of %s: ask for a shorter one",
			from.UTC().Format(time.RFC3339), to.UTC().Format(time.RFC3339), p.h.cfg.maxRange)
	}
	return nil
}

// cluster returns the cluster parameter, or the journal's only cluster.
func (p *params) cluster(ctx context.Context) (string, error) {
	if c := p.q.Get("cluster"); c != "" {
		return c, nil
	}
	return p.h.soleCluster(ctx)
}

// soleCluster returns the journal's cluster when it records exactly one.
func (h *handler) soleCluster(ctx context.Context) (string, error) {
	sts, err := h.allStreams(ctx)
	if err != nil {
		return "", err
	}
	ids := clusterIDs(sts)
	switch len(ids) {
	case 1:
		return ids[0], nil
	case 0:
		return "", badParam("cluster", "the journal records no cluster yet: give cluster")
	}
	return "", badParam("cluster", "the journal records several clusters (%s): give cluster", strings.Join(ids, ", "))
}

// clusterIDs returns the sorted cluster IDs of streams.
func clusterIDs(sts []storage.StreamStatus) []string {
	var ids []string
	for _, st := range sts {
		if !slices.Contains(ids, st.Stream.ClusterID) {
			ids = append(ids, st.Stream.ClusterID)
		}
	}
	sort.Strings(ids)
	return ids
}

// resources reads the resource parameter ("plural" or "plural.group") of
// cluster; a plural without a group that the journal records in exactly
// one group means that group, and "plural.core" is the core group.
func (p *params) resources(ctx context.Context, clusterID string) ([]schema.GroupResource, error) {
	specs := p.list("resource")
	if len(specs) == 0 {
		return nil, nil
	}
	sts, err := p.h.allStreams(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]schema.GroupResource, 0, len(specs))
	for _, spec := range specs {
		gr, err := resolveResource(sts, clusterID, spec)
		if err != nil {
			return nil, err
		}
		out = append(out, gr)
	}
	return out, nil
}

func resolveResource(sts []storage.StreamStatus, clusterID, spec string) (schema.GroupResource, error) {
	spec = strings.ToLower(spec)
	if resource, group, ok := strings.Cut(spec, "."); ok {
		if resource == "" || group == "" {
			return schema.GroupResource{}, badParam("resource", "resource %q: want plural or plural.group, e.g. deployments.apps", spec)
		}
		if group == "core" {
			group = ""
		}
		return schema.GroupResource{Group: group, Resource: resource}, nil
	}
	var groups []string
	for _, st := range sts {
		if st.Stream.ClusterID == clusterID && st.Stream.Resource == spec && !slices.Contains(groups, st.Stream.Group) {
			groups = append(groups, st.Stream.Group)
		}
	}
	switch len(groups) {
	case 0:
		return schema.GroupResource{Resource: spec}, nil
	case 1:
		return schema.GroupResource{Group: groups[0], Resource: spec}, nil
	}
	sort.Strings(groups)
	for i, g := range groups {
		groups[i] = spec + "." + g
		if g == "" {
			groups[i] = spec
		}
	}
	return schema.GroupResource{}, badParam("resource", "%q is recorded in several groups: write one of %s", spec, strings.Join(groups, ", "))
}

// scope reads cluster, namespace and resource.
func (p *params) scope(ctx context.Context) (materialize.Scope, error) {
	clusterID, err := p.cluster(ctx)
	if err != nil {
		return materialize.Scope{}, err
	}
	resources, err := p.resources(ctx, clusterID)
	if err != nil {
		return materialize.Scope{}, err
	}
	return materialize.Scope{ClusterID: clusterID, Namespaces: p.list("namespace"), Resources: resources}, nil
}

// object reads the parameters naming one object.
func (p *params) object(ctx context.Context) (storage.ObjectID, error) {
	scope, err := p.scope(ctx)
	if err != nil {
		return storage.ObjectID{}, err
	}
	switch {
	case len(scope.Resources) != 1:
		return storage.ObjectID{}, badParam("resource", "give one resource (plural or plural.group)")
	case len(scope.Namespaces) > 1:
		return storage.ObjectID{}, badParam("namespace", "give one namespace, or none for a cluster-scoped object")
	case p.q.Get("name") == "":
		return storage.ObjectID{}, badParam("name", "give the object's name")
	}
	obj := storage.ObjectID{ClusterID: scope.ClusterID, Group: scope.Resources[0].Group, Resource: scope.Resources[0].Resource, Name: p.q.Get("name")}
	if len(scope.Namespaces) == 1 {
		obj.Namespace = scope.Namespaces[0]
	}
	return obj, nil
}

// page reads limit and cursor.
func (p *params) page() (int, *cursor, error) {
	return p.pageOf(DefaultPageSize)
}

// pageOf is page with another default page size.
func (p *params) pageOf(def int) (int, *cursor, error) {
	limit, err := p.limit(def)
	if err != nil {
		return 0, nil, err
	}
	cur, err := p.cursor()
	return limit, cur, err
}

// objectsPage reads the page of a snapshot's or a diff's objects: limit,
// served as at most the handler's maximum page size whatever it asks,
// and cursor. whole reports a request for no page (neither limit nor
// cursor): it gets every object in one answer, or tooManyObjects — never
// a first page that a client written before pages would take for the
// whole.
func (p *params) objectsPage() (limit int, cur *cursor, whole bool, err error) {
	s := p.q.Get("limit")
	limit = p.h.cfg.maxPage
	if s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			return 0, nil, false, badParam("limit", "limit %q: want a number of objects, 1 or more (a page holds at most %d)", s, p.h.cfg.maxPage)
		}
		limit = min(n, limit)
	}
	cur, err = p.cursor()
	return limit, cur, s == "" && cur == nil, err
}

// tooManyObjects refuses a whole answer of more objects than a page.
func (p *params) tooManyObjects(what string) error {
	return badParam("limit", "the %s holds more than %d objects, the most one answer holds: ask for it in pages (limit, then cursor=<next> until next is absent; krply's client and web UI do), or narrow it (namespace, resource)", what, p.h.cfg.maxPage)
}

// clusterPage reads the cluster of a cluster's list, limit and cursor.
func (p *params) clusterPage(ctx context.Context) (clusterID string, limit int, cur *cursor, err error) {
	if clusterID, err = p.cluster(ctx); err != nil {
		return "", 0, nil, err
	}
	limit, cur, err = p.page()
	return clusterID, limit, cur, err
}

// scopeAt reads the scope and the time at (default now).
func (p *params) scopeAt(ctx context.Context) (materialize.Scope, time.Time, error) {
	scope, err := p.scope(ctx)
	if err != nil {
		return scope, time.Time{}, err
	}
	at, err := p.time("at", p.now)
	return scope, at, err
}

// cursor is the position a page continues from, bound to the parameters
// of the query it belongs to.
type cursor struct {
	// Seq is the last IngestSeq examined (records), or the offset or the
	// last key of the previous page (other lists).
	Seq int64  `json:"s,omitempty"`
	Key string `json:"k,omitempty"`
	// Obj is the last object of the previous page of a snapshot or a
	// diff, and At (and To, of a diff) the times the first page resolved
	// its time parameters to, so that "now" stays the same for every page.
	Obj *storage.ObjectID `json:"o,omitempty"`
	At  time.Time         `json:"a,omitzero"`
	To  time.Time         `json:"t,omitzero"`
	// Params is a hash of the query's other parameters.
	Params uint64 `json:"p"`
}

// paramsHash hashes the query's parameters but cursor and limit.
func (p *params) paramsHash() uint64 {
	keys := make([]string, 0, len(p.q))
	for k := range p.q {
		if k != "cursor" && k != "limit" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	f := fnv.New64a()
	for _, k := range keys {
		f.Write([]byte(k))
		for _, v := range p.q[k] {
			f.Write([]byte{0})
			f.Write([]byte(v))
		}
		f.Write([]byte{1})
	}
	return f.Sum64()
}

// cursor reads the cursor parameter; nil when absent.
func (p *params) cursor() (*cursor, error) {
	s := p.q.Get("cursor")
	if s == "" {
		return nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(s)
	var c cursor
	if err == nil {
		err = json.Unmarshal(raw, &c)
	}
	if err != nil {
		return nil, newError(http.StatusBadRequest, CodeInvalidCursor, "cursor", "cursor %q was not made by this server: give the next of a previous page", s)
	}
	if c.Params != p.paramsHash() {
		return nil, newError(http.StatusBadRequest, CodeInvalidCursor, "cursor", "the cursor belongs to a query with other parameters: repeat that query's parameters, or leave cursor out to start again")
	}
	return &c, nil
}

// next encodes the cursor of the next page.
func (p *params) next(c cursor) string {
	c.Params = p.paramsHash()
	raw, _ := json.Marshal(c) // a struct of numbers, strings and times
	return base64.RawURLEncoding.EncodeToString(raw)
}

// recordTypes reads types.
func (p *params) recordTypes() ([]event.RecordType, error) {
	var out []event.RecordType
	for _, s := range p.list("types") {
		t := event.RecordType(s)
		if !t.Valid() {
			return nil, badParam("types", "record type %q: want some of event, baseline, gap, coverage_change, audit_correlation, snapshot, checkpoint, %s", s, event.TypePlan)
		}
		out = append(out, t)
	}
	return out, nil
}

// isSecret reports whether a group/resource is core Secrets.
func isSecret(group, resource string) bool { return group == "" && resource == "secrets" }
