package server

import (
	"encoding"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/krply/krply/materialize"
	"github.com/krply/krply/replay/replayapi"
	"github.com/krply/krply/server/apiv1"
	"github.com/krply/krply/why"
)

// OpenAPIPath is where the handler serves the OpenAPI document of its
// routes (GET, behind the handler's authentication, as the other routes).
const OpenAPIPath = Prefix + "openapi.json"

// operation is one method of one route of /api/v1: the table OpenAPI
// describes, which TestOpenAPIRoutes holds equal to the routes the handler
// registers.
type operation struct {
	method, path, summary string
	// params are the query parameters it reads (see queryParams).
	params []string
	// body is a value of the request body's type, nil without one.
	body any
	// answer is a value of the 200 answer's type; nil for the change
	// feed (text/event-stream).
	answer any
}

var (
	scopeParams  = []string{"cluster", "namespace", "resource"}
	objectParams = []string{"cluster", "resource", "namespace", "name"}
	pageParams   = []string{"limit", "cursor"}
)

// operations are the routes of /api/v1, in the order they are registered.
var operations = []operation{
	{http.MethodGet, "clusters", "The clusters the journal records.", nil, nil, apiv1.ClusterList{}},
	{http.MethodGet, "streams", "The streams of a scope with their coverage at a time.", slices.Concat(scopeParams, []string{"at"}, pageParams), nil, apiv1.StreamList{}},
	{http.MethodGet, "records", "Records of a scope, a page at a time.", slices.Concat(scopeParams, []string{"name", "types", "since", "until", "order", "bodies"}, pageParams), nil, apiv1.RecordList{}},
	{http.MethodGet, "object", "An object as it was at a time, with its coverage.", slices.Concat(objectParams, []string{"at"}), nil, materialize.ObjectState{}},
	{http.MethodGet, "history", "An object's versions with field changes, gaps and provenance.", slices.Concat(objectParams, []string{"since", "until", "includeStatus", "filter"}, pageParams), nil, materialize.History{}},
	{http.MethodGet, "snapshot", "The state of a scope at a time (computed, not saved), a page of objects at a time.", slices.Concat(scopeParams, []string{"at"}, pageParams), nil, apiv1.SnapshotPage{}},
	{http.MethodGet, "snapshots", "The saved snapshots of a cluster, without their objects.", slices.Concat([]string{"cluster"}, pageParams), nil, apiv1.SnapshotList{}},
	{http.MethodPost, "snapshots", "Compute a snapshot and save it (writes must be allowed).", pageParams, apiv1.SnapshotRequest{}, apiv1.SnapshotPage{}},
	{http.MethodGet, "snapshots/{id}", "A saved snapshot, a page of objects at a time.", pageParams, nil, apiv1.SnapshotPage{}},
	{http.MethodGet, "diff", "What changed in a scope between two times, a page of objects at a time.", slices.Concat(scopeParams, []string{"from", "to", "includeStatus"}, pageParams), nil, apiv1.DiffPage{}},
	{http.MethodGet, "plans", "The saved replay plans of a cluster, without their objects.", slices.Concat([]string{"cluster"}, pageParams), nil, apiv1.PlanList{}},
	{http.MethodPost, "plans", "Plan a replay and save it (writes must be allowed), or preview it.", []string{"preview"}, apiv1.PlanRequest{}, replayapi.Plan{}},
	{http.MethodGet, "plans/{id}", "A saved plan with its status and last dry run (application/yaml: the objects as kubectl apply takes them).", nil, nil, replayapi.Plan{}},
	{http.MethodPost, "plans/{id}/dryrun", "Dry-run a saved plan against the server's target cluster.", nil, nil, replayapi.DryRunReport{}},
	{http.MethodPost, "plans/{id}/apply", "Apply a saved, dry-run plan, its hash confirmed.", nil, replayapi.Confirmation{}, replayapi.ApplyReport{}},
	{http.MethodPost, "audit", "Audit events of the kube-apiserver's webhook backend (audit.k8s.io/v1 EventList).", nil, map[string]any{}, map[string]any{}},
	{http.MethodGet, "watch", "The change feed: Server-Sent Events of the records appended to a scope.", slices.Concat(scopeParams, []string{"name", "types", "bodies", "cursor", "filter", "includeStatus"}), nil, nil},
	{http.MethodGet, "why", "What changed before an object broke: its dependencies at a time, the changes ranked as candidate causes, with coverage.", slices.Concat(objectParams, []string{"at", "from", "before", "after", "maxObjects"}), nil, why.Answer{}},
	{http.MethodGet, "find", "When a condition over the objects of a scope held: intervals bounded by the versions that opened and closed them, with unknown ends at gaps (a server started with conditions; Secrets are never searched); whole, or a page of objects at a time given limit.", slices.Concat(scopeParams, []string{"expr", "labelSelector", "since", "until", "first", "now"}, pageParams), nil, apiv1.FoundPage{}},
	{http.MethodGet, "openapi.json", "This document.", nil, nil, map[string]any{}},
}

// queryParams describe the query parameters (docs/reference/query-api.md).
var queryParams = map[string]struct {
	schema      map[string]any
	description string
	repeatable  bool
}{
	"cluster":       {str, "Cluster ID; may be left out when the journal records one cluster.", false},
	"namespace":     {str, "Namespace; empty or absent: every namespace and cluster-scoped objects.", true},
	"resource":      {str, "plural or plural.group (deployments.apps, configmaps, events.core).", true},
	"name":          {str, "Object name.", false},
	"at":            {str, "A time: RFC 3339, now, or a duration ago (10m, 2h ago); default now.", false},
	"since":         {str, "A time, as at.", false},
	"until":         {str, "A time, as at; default now.", false},
	"from":          {str, "A time, as at.", false},
	"to":            {str, "A time, as at; default now.", false},
	"types":         {str, "Record types, comma-separated (event,baseline,gap,coverage_change,audit_correlation,snapshot,checkpoint,plan).", false},
	"order":         {map[string]any{"type": "string", "enum": []string{"asc", "desc"}}, "Order of records; default asc.", false},
	"bodies":        {boolean, "false leaves the objects out of records.", false},
	"includeStatus": {boolean, "Whether field changes include .status (diff: default false; history and a filtered feed: default true).", false},
	"limit":         {map[string]any{"type": "integer", "minimum": 1}, "Page size, at most the server's maximum.", false},
	"cursor":        {str, "The next of the previous page (the change feed: the id of the last event read).", false},
	"preview":       {boolean, "true plans without saving.", false},
	"before":        {str, "A positive duration (30m, 2h): how far before at the window starts.", false},
	"after":         {str, "A positive duration: how far after at the window ends.", false},
	"maxObjects":    {map[string]any{"type": "integer", "minimum": 1}, "The most objects of the dependency graph read.", false},
	"expr":          {str, "find's condition: a CEL expression over object.", false},
	"filter":        {str, "A CEL expression over old, new, change and actor: the versions whose change it matches are kept; gaps stay (history keeps relists' confirmations too; the feed sends neither them nor audit correlations).", false},
	"labelSelector": {str, "find: only versions whose labels match (Kubernetes selector syntax).", false},
	"first":         {boolean, "find: each object's first interval only.", false},
	"now":           {boolean, "find: only the intervals still open.", false},
}

var (
	str     = map[string]any{"type": "string"}
	boolean = map[string]any{"type": "boolean"}
)

// OpenAPI returns the OpenAPI 3.0 document of the routes of /api/v1, their
// parameters and the JSON Schemas of their bodies and answers, generated
// from the wire types (the json tags of the library's and apiv1's types),
// so that it cannot disagree with what the handler serves. The handler
// serves it at OpenAPIPath; docs/reference/openapi.json is a copy.
func OpenAPI() ([]byte, error) {
	g := &schemas{components: map[string]any{}, names: map[reflect.Type]string{}}
	errorRef := g.of(reflect.TypeFor[apiv1.Error]())
	paths := map[string]map[string]any{}
	for _, op := range operations {
		path := Prefix + op.path
		if paths[path] == nil {
			paths[path] = map[string]any{}
		}
		o := map[string]any{
			"operationId": operationID(op.method, op.path),
			"summary":     op.summary,
			"responses": map[string]any{
				successStatus(op): g.answer(op),
				"default":         map[string]any{"description": "An error, with its stable code.", "content": jsonContent(errorRef)},
			},
		}
		if op.method == http.MethodPost && op.path == "plans" {
			o["responses"].(map[string]any)["200"] = g.answer(op) // ?preview=true
		}
		var ps []any
		if strings.Contains(op.path, "{id}") {
			ps = append(ps, map[string]any{"name": "id", "in": "path", "required": true, "schema": str})
		}
		for _, name := range op.params {
			p := queryParams[name]
			param := map[string]any{"name": name, "in": "query", "description": p.description, "schema": p.schema}
			if p.repeatable {
				param["schema"] = map[string]any{"type": "array", "items": p.schema}
				param["explode"] = true
			}
			ps = append(ps, param)
		}
		if len(ps) > 0 {
			o["parameters"] = ps
		}
		if op.body != nil {
			o["requestBody"] = map[string]any{"required": true, "content": jsonContent(g.of(reflect.TypeOf(op.body)))}
		}
		paths[path][strings.ToLower(op.method)] = o
	}
	doc := map[string]any{
		"openapi": "3.0.3",
		"info": map[string]any{
			"title":       "krply query API",
			"version":     "v1",
			"description": "The query API of a krply journal (docs/reference/query-api.md): every historical answer carries its coverage.",
		},
		"paths":      paths,
		"components": map[string]any{"schemas": g.components, "securitySchemes": map[string]any{"bearer": map[string]any{"type": "http", "scheme": "bearer"}}},
		"security":   []any{map[string]any{"bearer": []string{}}, map[string]any{}},
	}
	return json.MarshalIndent(doc, "", "  ")
}

// successStatus is the status of an operation's answer: 201 for what
// POST saves (a snapshot; a plan, which a preview answers 200 with).
func successStatus(op operation) string {
	if op.method == http.MethodPost && (op.path == "snapshots" || op.path == "plans") {
		return "201"
	}
	return "200"
}

// operationID names an operation for generated clients: getPlansId,
// postPlansIdDryrun.
func operationID(method, path string) string {
	var b strings.Builder
	b.WriteString(strings.ToLower(method))
	for _, part := range strings.FieldsFunc(path, func(r rune) bool { return r == '/' || r == '.' || r == '{' || r == '}' }) {
		b.WriteString(strings.ToUpper(part[:1]) + part[1:])
	}
	return b.String()
}

func jsonContent(schema any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

// answer describes an operation's 200 answer.
func (g *schemas) answer(op operation) map[string]any {
	if op.answer == nil {
		return map[string]any{"description": "Server-Sent Events: id (the cursor), event (record or error), data (the record's or the error's JSON).",
			"content": map[string]any{"text/event-stream": map[string]any{"schema": str}}}
	}
	out := map[string]any{"description": "OK", "content": jsonContent(g.of(reflect.TypeOf(op.answer)))}
	if op.method == http.MethodGet && op.path == "plans/{id}" {
		out["content"].(map[string]any)["application/yaml"] = map[string]any{"schema": str}
	}
	return out
}

// schemas makes the JSON Schemas of Go types as encoding/json writes
// them: a named struct once, in components, referred to by name.
type schemas struct {
	components map[string]any
	names      map[reflect.Type]string
}

var (
	timeType      = reflect.TypeFor[time.Time]()
	rawType       = reflect.TypeFor[json.RawMessage]()
	marshaler     = reflect.TypeFor[json.Marshaler]()
	textMarshaler = reflect.TypeFor[encoding.TextMarshaler]()
)

// of returns the schema of t.
func (g *schemas) of(t reflect.Type) map[string]any {
	switch {
	case t == timeType:
		return map[string]any{"type": "string", "format": "date-time"}
	case t == rawType:
		return map[string]any{} // any JSON: an object as the API server sent it
	case (t.Implements(marshaler) || reflect.PointerTo(t).Implements(marshaler)) && !strings.HasPrefix(t.PkgPath(), "github.com/krply/krply/"):
		// Another module's JSON form; krply's own MarshalJSON methods
		// (materialize.History's) write what encoding/json would.
		return map[string]any{}
	case t.Implements(textMarshaler) || reflect.PointerTo(t).Implements(textMarshaler):
		return str
	}
	switch t.Kind() {
	case reflect.Pointer:
		s := g.of(t.Elem())
		return nullable(s)
	case reflect.String:
		return str
	case reflect.Bool:
		return boolean
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice, reflect.Array:
		if t.Elem().Kind() == reflect.Uint8 {
			return map[string]any{"type": "string", "format": "byte"}
		}
		return map[string]any{"type": "array", "items": g.of(t.Elem()), "nullable": true}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.of(t.Elem()), "nullable": true}
	case reflect.Struct:
		if t.Name() == "" {
			return g.object(t)
		}
		name, ok := g.names[t]
		if !ok {
			name = g.name(t)
			g.names[t] = name
			g.components[name] = map[string]any{} // placeholder against recursion
			g.components[name] = g.object(t)
		}
		return map[string]any{"$ref": "#/components/schemas/" + name}
	}
	return map[string]any{}
}

// name is t's component name: its Go name, qualified by its package's
// when another package's type has the same name.
func (g *schemas) name(t reflect.Type) string {
	name := t.Name()
	for other, n := range g.names {
		if n == name && other != t {
			pkg := t.PkgPath()[strings.LastIndex(t.PkgPath(), "/")+1:]
			return pkg + "." + name
		}
	}
	return name
}

func nullable(s map[string]any) map[string]any {
	if _, ref := s["$ref"]; ref {
		return map[string]any{"allOf": []any{s}, "nullable": true}
	}
	out := map[string]any{"nullable": true}
	for k, v := range s {
		out[k] = v
	}
	return out
}

// object is the schema of a struct's JSON object: its exported fields by
// their json names, the embedded structs' fields in it. No property is
// required: the same types are request bodies, whose fields may be left
// out, and answers.
func (g *schemas) object(t reflect.Type) map[string]any {
	props := map[string]any{}
	g.fields(t, props)
	return map[string]any{"type": "object", "properties": props}
}

func (g *schemas) fields(t reflect.Type, props map[string]any) {
	for f := range t.Fields() {
		tag := f.Tag.Get("json")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		if f.Anonymous && name == "" {
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				g.fields(ft, props)
				continue
			}
		}
		if name == "" {
			name = f.Name
		}
		props[name] = g.of(f.Type)
	}
}

// openAPIDocument is the document, made once.
var openAPIDocument = sync.OnceValues(OpenAPI)

// openAPI answers GET /api/v1/openapi.json.
func (h *handler) openAPI(*http.Request, *user) (int, any, error) {
	doc, err := openAPIDocument()
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, json.RawMessage(doc), nil
}
