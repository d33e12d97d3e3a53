package main

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/krply/krply/materialize"
	"github.com/krply/krply/replay"
	"github.com/krply/krply/storage"
)

// mcpTools is the registry of the MCP server's tools, in the order they
// are listed. A new tool (why, find) is one more entry: a name, and an
// add that calls addTool with its input and output types and its handler.
var mcpTools = []mcpToolDef{
	{name: "status", add: func(s *mcp.Server, k *mcpKit) {
		addTool(s, k, &mcp.Tool{Name: "status", Title: "Streams and their coverage",
			Description: "Lists the streams the journal records (one per resource and namespace): whether each is available, covered since when, how far its evidence of continuity reaches, how many gaps it had. Start an investigation here.",
			Annotations: readOnly}, false, statusTool)
	}},
	{name: "get", add: func(s *mcp.Server, k *mcpKit) {
		addTool(s, k, &mcp.Tool{Name: "get", Title: "An object at a time",
			Description: "Returns one object as the journal knows it at a time: the last version observed at or before it, or that it did not exist then (deleted, or not created yet).",
			Annotations: readOnly}, false, getTool)
	}},
	{name: "history", add: func(s *mcp.Server, k *mcpKit) {
		addTool(s, k, &mcp.Tool{Name: "history", Title: "Every version of an object",
			Description: "Lists every version of one object in order, paged: when krply observed it, the event, its resourceVersion, where it came from (watch: a real change; list: the object was like this by then; inferred: a deletion found after a gap), who made it (the audit log's user, else the field managers) and the fields that changed, with the gaps of its stream where they fall.",
			Annotations: readOnly}, false, historyTool)
	}},
	{name: "blame", add: func(s *mcp.Server, k *mcpKit) {
		addTool(s, k, &mcp.Tool{Name: "blame", Title: "Who last changed each field",
			Description: `For each field of an object that a recorded change touched: its last value, when krply observed the change, and who made it. The row "(object)" stands for every other field, as first observed.`,
			Annotations: readOnly}, false, blameTool)
	}},
	{name: "snapshot", add: func(s *mcp.Server, k *mcpKit) {
		addTool(s, k, &mcp.Tool{Name: "snapshot", Title: "A namespace at a time",
			Description: "Lists the objects alive in a namespace (or, without one, the whole cluster) at a time, paged and without their bodies (get returns one). The snapshot is complete only when every stream of the scope is covered at that time.",
			Annotations: readOnly}, false, snapshotTool)
	}},
	{name: "diff", add: func(s *mcp.Server, k *mcpKit) {
		addTool(s, k, &mcp.Tool{Name: "diff", Title: "What changed between two times",
			Description: `Lists the objects of a namespace (or the whole cluster) added, removed and changed between two times, with field paths and values, paged. An object whose state the journal does not know at an end of the window is "unknown", never called added or removed.`,
			Annotations: readOnly}, false, diffTool)
	}},
	{name: "gaps", add: func(s *mcp.Server, k *mcpKit) {
		addTool(s, k, &mcp.Tool{Name: "gaps", Title: "When the journal may miss changes",
			Description: "Lists every loss of continuity in a time window: gaps (an outage, a 410 Gone; from the stream's last evidence to the end of the relist that closed it) and streams that became unavailable or available again. Changes inside a gap may be missing from every answer.",
			Annotations: readOnly}, false, gapsTool)
	}},
	{name: "replay_plan", add: func(s *mcp.Server, k *mcpKit) {
		addTool(s, k, &mcp.Tool{Name: "replay_plan", Title: "Save a replay plan for review",
			Description: "Plans rebuilding a namespace as it was at a time into a target namespace and saves the plan in the journal for a person to review: it changes no cluster. It returns the plan's ID and hash; dry-running and applying it are a person's decision (kubectl krply replay dry-run, replay apply --confirm HASH). A time the journal does not cover is refused unless allowGaps.",
			Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), IdempotentHint: false, OpenWorldHint: ptr(false)}}, true, replayPlanTool)
	}},
	{name: "replay_dry_run", enabled: func(o mcpOptions) bool { return o.allowDryRun || o.allowApply }, add: func(s *mcp.Server, k *mcpKit) {
		addTool(s, k, &mcp.Tool{Name: "replay_dry_run", Title: "Dry-run a saved replay plan",
			Description: "Runs a saved replay plan against the target cluster with a server-side dry run (dryRun=All): nothing is written to the cluster; the report is saved in the journal. Offered only when the server was started with --allow-dry-run.",
			Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false), OpenWorldHint: ptr(true)}}, true, replayDryRunTool)
	}},
	{name: "replay_apply", enabled: func(o mcpOptions) bool { return o.allowApply }, add: func(s *mcp.Server, k *mcpKit) {
		addTool(s, k, &mcp.Tool{Name: "replay_apply", Title: "Apply a reviewed replay plan",
			Description: "Applies a saved replay plan to the target cluster with server-side apply, only with the plan's hash (the plan applied is the plan reviewed) and after its clean dry run; never deletes, never forces. Offered only when the server was started with --allow-apply.",
			Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), OpenWorldHint: ptr(true)}}, true, replayApplyTool)
	}},
}

var readOnly = &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}

func ptr[T any](v T) *T { return &v }

// ---- status

type statusArgs struct {
	Namespace string `json:"namespace,omitempty" jsonschema:"only the streams of this namespace (and the cluster-scoped ones); leave out for every stream"`
	clusterArg
	pageArgs
}

type mcpStream struct {
	Stream        string `json:"stream" jsonschema:"the stream's ID"`
	Resource      string `json:"resource"`
	Namespace     string `json:"namespace,omitempty" jsonschema:"empty for a cluster-wide stream"`
	Available     bool   `json:"available" jsonschema:"false while the recorder may not read the resource (e.g. 403)"`
	Covered       bool   `json:"covered" jsonschema:"covered from coveredSince to evidenceUntil; later times are not yet observed"`
	CoveredSince  string `json:"coveredSince,omitempty"`
	EvidenceUntil string `json:"evidenceUntil,omitempty" jsonschema:"the stream's last evidence of continuity"`
	Lag           string `json:"lag" jsonschema:"how long before now the last evidence was observed"`
	Gaps          int    `json:"gaps" jsonschema:"gaps the stream ever had"`
	LastGapAt     string `json:"lastGapAt,omitempty"`
	Reason        string `json:"reason,omitempty" jsonschema:"why the stream is unavailable or not covered"`
}

type statusAnswer struct {
	Cluster  string      `json:"cluster"`
	Coverage mcpCoverage `json:"coverage"`
	Streams  []mcpStream `json:"streams"`
	mcpPage
}

func (a *statusAnswer) coverageOf() *mcpCoverage { return &a.Coverage }

func (a *statusAnswer) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster %s: %s\n", a.Cluster, a.mcpPage.text(len(a.Streams), "streams"))
	for _, s := range a.Streams {
		fmt.Fprintf(&b, "- %s %s: available=%v covered=%v since %s, evidence until %s (lag %s), %d gaps", s.Resource, orNone(s.Namespace), s.Available, s.Covered, orNone(s.CoveredSince), orNone(s.EvidenceUntil), s.Lag, s.Gaps)
		if s.Reason != "" {
			fmt.Fprintf(&b, " (%s)", s.Reason)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func statusTool(ctx context.Context, c *mcpCall, in statusArgs) (*statusAnswer, error) {
	p, limit, err := paging(in.pageArgs, in)
	if err != nil {
		return nil, err
	}
	cluster, err := c.clusterOf(ctx, in.Cluster, in.Namespace)
	if err != nil {
		return nil, err
	}
	streams, err := c.src.Streams(ctx, cluster, in.Namespace, c.now)
	if err != nil {
		return nil, err
	}
	sort.Slice(streams, func(i, j int) bool { return streams[i].Status.StreamID < streams[j].Status.StreamID })
	a := &statusAnswer{Cluster: cluster, Coverage: *complete(), Streams: []mcpStream{}}
	for _, info := range streams {
		st, cov := info.Status, info.Coverage
		switch {
		case !st.Available:
			a.Coverage.incomplete(fmt.Sprintf("stream %s is unavailable: %s", st.StreamID, st.AvailabilityReason))
		case !cov.Continuous():
			a.Coverage.incomplete(fmt.Sprintf("stream %s is not covered: %s", st.StreamID, cov.Reason))
		}
	}
	from, to, pg := window(p, limit, len(streams))
	for _, info := range streams[from:to] {
		st, cov := info.Status, info.Coverage
		s := mcpStream{Stream: st.StreamID, Resource: groupResource(st.Stream.Group, st.Stream.Resource), Namespace: st.Stream.Namespace,
			Available: st.Available, Covered: st.Available && cov.Continuous(), CoveredSince: mcpTime(cov.BaselineEndAt),
			EvidenceUntil: mcpTime(st.LastObservedAt), Lag: since(st.LastObservedAt, c.now), Gaps: st.Gaps, LastGapAt: mcpTime(st.LastGapAt)}
		if !st.Available {
			s.Reason = st.AvailabilityReason
		} else if !s.Covered {
			s.Reason = cov.Reason
		}
		a.Streams = append(a.Streams, s)
	}
	a.mcpPage = pg
	return a, nil
}

// ---- get

// clusterArg names the cluster of a journal that records several.
type clusterArg struct {
	Cluster string `json:"cluster,omitempty" jsonschema:"the journal's cluster ID, when it records several"`
}

// pageArgs are the paging arguments of every list tool.
type pageArgs struct {
	Cursor string `json:"cursor,omitempty" jsonschema:"nextCursor of the previous page, to continue; leave out for the first page"`
	Limit  int    `json:"limit,omitempty" jsonschema:"items per page (default 50, at most 200)"`
}

// objectArgs name one object.
type objectArgs struct {
	Resource  string `json:"resource" jsonschema:"the object's type: plural, singular or short name (deploy, cm, svc), optionally with its group (deployments.apps)"`
	Name      string `json:"name" jsonschema:"the object's name"`
	Namespace string `json:"namespace,omitempty" jsonschema:"the object's namespace; leave out for a cluster-scoped object"`
	clusterArg
}

// object resolves the object an argument names.
func (c *mcpCall) object(ctx context.Context, in objectArgs) (storage.ObjectID, error) {
	if in.Resource == "" || in.Name == "" {
		return storage.ObjectID{}, fmt.Errorf("give resource and name (e.g. resource deploy, name web)")
	}
	cluster, err := c.clusterOf(ctx, in.Cluster, in.Namespace)
	if err != nil {
		return storage.ObjectID{}, err
	}
	gr, err := resolveType(ctx, c.src, cluster, in.Namespace, in.Resource, c.now)
	if err != nil {
		return storage.ObjectID{}, err
	}
	ns := in.Namespace
	if clusterScoped[gr] {
		ns = ""
	}
	return storage.ObjectID{ClusterID: cluster, Group: gr.Group, Resource: gr.Resource, Namespace: ns, Name: in.Name}, nil
}

type mcpObject struct {
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

func objectOf(id storage.ObjectID) mcpObject {
	return mcpObject{Resource: groupResource(id.Group, id.Resource), Namespace: id.Namespace, Name: id.Name}
}

func (o mcpObject) String() string {
	if o.Namespace == "" {
		return o.Resource + "/" + o.Name
	}
	return o.Resource + "/" + o.Name + " in namespace " + o.Namespace
}

type getArgs struct {
	objectArgs
	At string `json:"at,omitempty" jsonschema:"the time: RFC 3339, now or a duration ago (10m ago); default now"`
}

type getAnswer struct {
	Object          mcpObject   `json:"object"`
	At              string      `json:"at"`
	Coverage        mcpCoverage `json:"coverage"`
	Exists          bool        `json:"exists" jsonschema:"whether the object existed at the time; read it with coverage: an incomplete answer may miss its creation or deletion"`
	ResourceVersion string      `json:"resourceVersion,omitempty" jsonschema:"of the version in effect at the time (or of its deletion)"`
	ObservedAt      string      `json:"observedAt,omitempty" jsonschema:"when krply observed that version, not when it was made"`
	Origin          string      `json:"origin,omitempty" jsonschema:"watch (a real change), list (the object was like this by then) or inferred (a deletion found after a gap)"`
	Body            any         `json:"body,omitempty" jsonschema:"the object then, without metadata.managedFields"`
	BodyOmitted     string      `json:"bodyOmitted,omitempty" jsonschema:"why body is left out"`
}

func (a *getAnswer) coverageOf() *mcpCoverage { return &a.Coverage }

func (a *getAnswer) text() string {
	var b strings.Builder
	if !a.Exists {
		fmt.Fprintf(&b, "%s did not exist at %s", a.Object, a.At)
		if a.ObservedAt != "" {
			fmt.Fprintf(&b, " (deleted, observed %s)", a.ObservedAt)
		}
		b.WriteString(".\n")
		return b.String()
	}
	fmt.Fprintf(&b, "%s at %s: resourceVersion %s, observed %s (%s).\n", a.Object, a.At, a.ResourceVersion, a.ObservedAt, a.Origin)
	if a.BodyOmitted != "" {
		b.WriteString(a.BodyOmitted + "\n")
	} else if raw, err := json.MarshalIndent(a.Body, "", "  "); err == nil {
		b.Write(raw)
		b.WriteString("\n")
	}
	return b.String()
}

func getTool(ctx context.Context, c *mcpCall, in getArgs) (*getAnswer, error) {
	at, err := c.parseWhen("at", in.At, "now")
	if err != nil {
		return nil, err
	}
	obj, err := c.object(ctx, in.objectArgs)
	if err != nil {
		return nil, err
	}
	st, err := c.src.ObjectAt(ctx, obj, at)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", objectOf(obj), err)
	}
	a := &getAnswer{Object: objectOf(obj), At: mcpTime(at), Coverage: *complete(), Exists: st.Exists && st.Record != nil}
	streamCoverage(&a.Coverage, st.Coverage)
	if !st.Covered && a.Coverage.Complete {
		a.Coverage.incomplete(coverageReasons(st.Coverage, st.Warnings))
	}
	for _, w := range st.Warnings {
		a.Coverage.incomplete(w)
	}
	if r := st.Record; r != nil {
		a.ResourceVersion, a.ObservedAt, a.Origin = r.Resource.ResourceVersion, mcpTime(r.ObservedAt), origin(r)
	}
	if a.Exists {
		var body map[string]any
		if err := json.Unmarshal(st.Object, &body); err != nil {
			return nil, fmt.Errorf("%s: the recorded body is not an object: %w", a.Object, err)
		}
		if meta, ok := body["metadata"].(map[string]any); ok {
			delete(meta, "managedFields")
		}
		if raw, _ := json.Marshal(body); len(raw) > mcpMaxBody {
			a.BodyOmitted = fmt.Sprintf("the body is %d bytes, more than the %d an answer carries: read it with kubectl krply get %s/%s -n %s --at %s -o yaml",
				len(raw), mcpMaxBody, obj.Resource, obj.Name, orNone(obj.Namespace), a.At)
		} else {
			a.Body = body
		}
	}
	return a, nil
}

// ---- history

type historyArgs struct {
	objectArgs
	pageArgs
}

type mcpChange struct {
	Path   string `json:"path"`
	Op     string `json:"op" jsonschema:"add, remove or replace"`
	Before any    `json:"before,omitempty"`
	After  any    `json:"after,omitempty"`
}

func changesOf(cs []materialize.FieldChange) []mcpChange {
	out := make([]mcpChange, 0, len(cs))
	for _, ch := range cs {
		out = append(out, mcpChange{Path: ch.Path, Op: string(ch.Op), Before: ch.Before, After: ch.After})
	}
	return out
}

type mcpEntry struct {
	Kind            string      `json:"kind" jsonschema:"version, gap, unavailable or available"`
	ObservedAt      string      `json:"observedAt" jsonschema:"when krply observed it, not when the change was made"`
	Event           string      `json:"event,omitempty" jsonschema:"ADDED, MODIFIED or DELETED"`
	ResourceVersion string      `json:"resourceVersion,omitempty"`
	Origin          string      `json:"origin,omitempty" jsonschema:"watch (a real change), list (the object was like this by then) or inferred (a deletion found after a gap)"`
	Who             string      `json:"who,omitempty" jsonschema:"the audit log's user (with the verb), else the field managers of the changed fields (they name clients, not users)"`
	Changes         []mcpChange `json:"changes,omitempty"`
	Note            string      `json:"note,omitempty" jsonschema:"a gap's bounds and reason, an inferred deletion's window, a re-creation"`
}

type historyAnswer struct {
	Object   mcpObject   `json:"object"`
	Coverage mcpCoverage `json:"coverage"`
	Entries  []mcpEntry  `json:"entries"`
	mcpPage
}

func (a *historyAnswer) coverageOf() *mcpCoverage { return &a.Coverage }

func (a *historyAnswer) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", a.Object, a.mcpPage.text(len(a.Entries), "entries"))
	for _, e := range a.Entries {
		if e.Kind != "version" {
			fmt.Fprintf(&b, "- %s %s: %s\n", e.ObservedAt, strings.ToUpper(e.Kind), e.Note)
			continue
		}
		fmt.Fprintf(&b, "- %s %s rv %s (%s) by %s", e.ObservedAt, e.Event, e.ResourceVersion, e.Origin, orNone(e.Who))
		if len(e.Changes) > 0 {
			parts := make([]string, 0, len(e.Changes))
			for _, ch := range e.Changes {
				parts = append(parts, ch.Path)
			}
			fmt.Fprintf(&b, ": %s", strings.Join(parts, ", "))
		}
		if e.Note != "" {
			fmt.Fprintf(&b, " (%s)", e.Note)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// historyOf returns the object's history and the coverage of all of it.
func (c *mcpCall) historyOf(ctx context.Context, in objectArgs) (*materialize.History, *mcpCoverage, error) {
	obj, err := c.object(ctx, in)
	if err != nil {
		return nil, nil, err
	}
	h, err := c.src.History(ctx, obj)
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", objectOf(obj), err)
	}
	cov := complete()
	for _, w := range h.Warnings {
		cov.incomplete(w)
	}
	for _, en := range h.Entries {
		switch {
		case en.Gap != nil:
			g := mcpGap{Kind: "gap", From: mcpTime(en.Gap.From), To: mcpTime(en.Gap.To), At: mcpTime(en.ObservedAt), Reason: en.Gap.Reason, Resource: objectOf(obj).Resource, Namespace: obj.Namespace}
			cov.Gaps = append(cov.Gaps, g)
			cov.incomplete(g.describe())
		case en.Kind == materialize.EntryUnavailable && en.Coverage != nil:
			g := mcpGap{Kind: "unavailable", At: mcpTime(en.ObservedAt), Reason: en.Coverage.Reason, Resource: objectOf(obj).Resource, Namespace: obj.Namespace}
			cov.Gaps = append(cov.Gaps, g)
			cov.incomplete(g.describe())
		}
	}
	return h, cov, nil
}

func historyTool(ctx context.Context, c *mcpCall, in historyArgs) (*historyAnswer, error) {
	p, limit, err := paging(in.pageArgs, in)
	if err != nil {
		return nil, err
	}
	h, cov, err := c.historyOf(ctx, in.objectArgs)
	if err != nil {
		return nil, err
	}
	a := &historyAnswer{Object: objectOf(h.Object), Coverage: *cov, Entries: []mcpEntry{}}
	from, to, pg := window(p, limit, len(h.Entries))
	for _, en := range h.Entries[from:to] {
		e := mcpEntry{Kind: string(en.Kind), ObservedAt: mcpTime(en.ObservedAt)}
		switch {
		case en.Gap != nil:
			e.Kind, e.Note = "gap", fmt.Sprintf("changes from %s to %s may be missing: %s", mcpTime(en.Gap.From), mcpTime(en.Gap.To), en.Gap.Reason)
		case en.Coverage != nil:
			e.Note = en.Coverage.Reason
		case en.Version != nil:
			v := en.Version
			e.Kind, e.Event, e.ResourceVersion, e.Origin, e.Who = "version", string(v.WatchType), v.ResourceVersion, versionOrigin(v), strings.TrimPrefix(who(v, nil), "-")
			e.Changes = changesOf(v.Changes)
			switch {
			case v.Inferred != nil:
				e.Note = fmt.Sprintf("deleted between %s and %s (%s)", mcpTime(v.Inferred.From), mcpTime(v.Inferred.To), v.Inferred.Reason)
			case v.Recreated:
				e.Note = "recreated"
			}
		}
		a.Entries = append(a.Entries, e)
	}
	a.mcpPage = pg
	return a, nil
}

// ---- blame

type blameArgs = historyArgs

type mcpBlameLine struct {
	Path            string `json:"path" jsonschema:"the field; (object) stands for the fields no recorded change touched, (deleted) for the deletion"`
	Op              string `json:"op,omitempty"`
	Value           any    `json:"value,omitempty"`
	ObservedAt      string `json:"observedAt"`
	ResourceVersion string `json:"resourceVersion"`
	Event           string `json:"event"`
	Who             string `json:"who,omitempty"`
}

type blameAnswer struct {
	Object   mcpObject      `json:"object"`
	Coverage mcpCoverage    `json:"coverage"`
	Fields   []mcpBlameLine `json:"fields"`
	mcpPage
}

func (a *blameAnswer) coverageOf() *mcpCoverage { return &a.Coverage }

func (a *blameAnswer) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %s\n", a.Object, a.mcpPage.text(len(a.Fields), "fields"))
	for _, l := range a.Fields {
		fmt.Fprintf(&b, "- %s = %s: %s rv %s %s by %s\n", l.Path, value(l.Value), l.ObservedAt, l.ResourceVersion, l.Event, orNone(l.Who))
	}
	return b.String()
}

func blameTool(ctx context.Context, c *mcpCall, in blameArgs) (*blameAnswer, error) {
	p, limit, err := paging(in.pageArgs, in)
	if err != nil {
		return nil, err
	}
	h, cov, err := c.historyOf(ctx, in.objectArgs)
	if err != nil {
		return nil, err
	}
	bl := blameOf(h)
	a := &blameAnswer{Object: objectOf(h.Object), Coverage: *cov, Fields: []mcpBlameLine{}}
	from, to, pg := window(p, limit, len(bl.Fields))
	for _, l := range bl.Fields[from:to] {
		a.Fields = append(a.Fields, mcpBlameLine{Path: l.Path, Op: string(l.Op), Value: l.Value, ObservedAt: mcpTime(l.ObservedAt),
			ResourceVersion: l.ResourceVersion, Event: string(l.WatchType), Who: strings.TrimPrefix(l.who, "-")})
	}
	a.mcpPage = pg
	return a, nil
}

// ---- snapshot

type snapshotArgs struct {
	Namespace string `json:"namespace,omitempty" jsonschema:"the namespace; leave out for the whole cluster"`
	At        string `json:"at,omitempty" jsonschema:"the time: RFC 3339, now or a duration ago (10m ago); default now"`
	clusterArg
	pageArgs
}

type mcpSnapshotObject struct {
	Resource        string `json:"resource"`
	Kind            string `json:"kind,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name"`
	ResourceVersion string `json:"resourceVersion"`
	ObservedAt      string `json:"observedAt" jsonschema:"when krply observed this version"`
	Origin          string `json:"origin" jsonschema:"watch or list"`
}

type snapshotAnswer struct {
	Scope    string              `json:"scope"`
	At       string              `json:"at"`
	Coverage mcpCoverage         `json:"coverage"`
	Objects  []mcpSnapshotObject `json:"objects"`
	mcpPage
}

func (a *snapshotAnswer) coverageOf() *mcpCoverage { return &a.Coverage }

func (a *snapshotAnswer) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s at %s: %s\n", a.Scope, a.At, a.mcpPage.text(len(a.Objects), "objects"))
	for _, o := range a.Objects {
		fmt.Fprintf(&b, "- %s/%s %s rv %s observed %s (%s)\n", o.Resource, o.Name, orNone(o.Namespace), o.ResourceVersion, o.ObservedAt, o.Origin)
	}
	return b.String()
}

// scope returns the scope of a namespace argument.
func (c *mcpCall) scope(ctx context.Context, cluster, namespace string) (materialize.Scope, error) {
	id, err := c.clusterOf(ctx, cluster, namespace)
	if err != nil {
		return materialize.Scope{}, err
	}
	s := materialize.Scope{ClusterID: id}
	if namespace != "" {
		s.Namespaces = []string{namespace}
	}
	return s, nil
}

// missingCoverage adds the streams an answer lacks and its warnings.
func missingCoverage(cov *mcpCoverage, missing []materialize.MissingStream, warnings []string, gaps bool) {
	for _, m := range missing {
		cov.incomplete(missingName(m) + ": " + m.Reason)
	}
	if gaps {
		for _, w := range warnings {
			cov.incomplete(w)
		}
	}
}

func snapshotTool(ctx context.Context, c *mcpCall, in snapshotArgs) (*snapshotAnswer, error) {
	p, limit, err := paging(in.pageArgs, in)
	if err != nil {
		return nil, err
	}
	if p.At.IsZero() {
		if p.At, err = c.parseWhen("at", in.At, "now"); err != nil {
			return nil, err
		}
	}
	scope, err := c.scope(ctx, in.Cluster, in.Namespace)
	if err != nil {
		return nil, err
	}
	snap, err := c.src.Snapshot(ctx, scope, p.At)
	if err != nil {
		return nil, err
	}
	a := &snapshotAnswer{Scope: scopeName(scope), At: mcpTime(p.At), Coverage: *complete(), Objects: []mcpSnapshotObject{}}
	missingCoverage(&a.Coverage, snap.Missing, snap.Warnings, !snap.Complete)
	if !snap.Complete && a.Coverage.Complete {
		a.Coverage.incomplete("not every stream of the scope is covered at that time")
	}
	from, to, pg := window(p, limit, len(snap.Objects))
	for _, o := range snap.Objects[from:to] {
		origin := "watch"
		if o.Synthetic {
			origin = "list"
		}
		a.Objects = append(a.Objects, mcpSnapshotObject{Resource: groupResource(o.Ref.Group, o.Ref.Resource), Kind: o.Ref.Kind, Namespace: o.Ref.Namespace,
			Name: o.Ref.Name, ResourceVersion: o.Ref.ResourceVersion, ObservedAt: mcpTime(o.ObservedAt), Origin: origin})
	}
	a.mcpPage = pg
	return a, nil
}

// ---- diff

type diffArgs struct {
	Namespace     string `json:"namespace,omitempty" jsonschema:"the namespace; leave out for the whole cluster"`
	From          string `json:"from" jsonschema:"start of the window: RFC 3339, now or a duration ago (1h ago)"`
	To            string `json:"to,omitempty" jsonschema:"end of the window; default now"`
	IncludeStatus bool   `json:"includeStatus,omitempty" jsonschema:"compare status too"`
	clusterArg
	pageArgs
}

type mcpObjectDiff struct {
	Resource  string      `json:"resource"`
	Kind      string      `json:"kind,omitempty"`
	Namespace string      `json:"namespace,omitempty"`
	Name      string      `json:"name"`
	Change    string      `json:"change" jsonschema:"added, removed, changed or unknown (the journal does not know its state at an end of the window: not an addition or removal)"`
	Recreated bool        `json:"recreated,omitempty"`
	Changes   []mcpChange `json:"changes,omitempty"`
	Reason    string      `json:"reason,omitempty" jsonschema:"why the state is unknown, and at which end"`
}

type diffAnswer struct {
	Scope    string          `json:"scope"`
	From     string          `json:"from"`
	To       string          `json:"to"`
	Coverage mcpCoverage     `json:"coverage"`
	Objects  []mcpObjectDiff `json:"objects"`
	mcpPage
}

func (a *diffAnswer) coverageOf() *mcpCoverage { return &a.Coverage }

func (a *diffAnswer) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s from %s to %s: %s\n", a.Scope, a.From, a.To, a.mcpPage.text(len(a.Objects), "objects changed"))
	for _, o := range a.Objects {
		fmt.Fprintf(&b, "- %s/%s %s: %s", o.Resource, o.Name, orNone(o.Namespace), o.Change)
		for _, ch := range o.Changes {
			fmt.Fprintf(&b, "; %s: %s → %s", ch.Path, value(ch.Before), value(ch.After))
		}
		if o.Reason != "" {
			fmt.Fprintf(&b, " (%s)", o.Reason)
		}
		b.WriteString("\n")
	}
	return b.String()
}

func diffTool(ctx context.Context, c *mcpCall, in diffArgs) (*diffAnswer, error) {
	p, limit, err := paging(in.pageArgs, in)
	if err != nil {
		return nil, err
	}
	if p.At.IsZero() {
		if p.At, err = c.parseWhen("from", in.From, ""); err != nil {
			return nil, err
		}
		if p.To, err = c.parseWhen("to", in.To, "now"); err != nil {
			return nil, err
		}
	}
	if p.To.Before(p.At) {
		return nil, fmt.Errorf("to %s is before from %s", mcpTime(p.To), mcpTime(p.At))
	}
	scope, err := c.scope(ctx, in.Cluster, in.Namespace)
	if err != nil {
		return nil, err
	}
	d, err := c.src.Diff(ctx, scope, p.At, p.To, materialize.IncludeStatus(in.IncludeStatus))
	if err != nil {
		return nil, err
	}
	a := &diffAnswer{Scope: scopeName(scope), From: mcpTime(p.At), To: mcpTime(p.To), Coverage: *complete(), Objects: []mcpObjectDiff{}}
	a.Coverage.addLosses(d.Gaps)
	missingCoverage(&a.Coverage, d.Missing, d.Warnings, d.HasGaps)
	for _, od := range d.Objects {
		if od.Type == materialize.ObjectUnknown {
			a.Coverage.incomplete(fmt.Sprintf("%s %s: %s: %s", od.Kind, od.ID.Name, unknownAt(od.UnknownAt), od.Reason))
		}
	}
	from, to, pg := window(p, limit, len(d.Objects))
	for _, od := range d.Objects[from:to] {
		o := mcpObjectDiff{Resource: groupResource(od.ID.Group, od.ID.Resource), Kind: od.Kind, Namespace: od.ID.Namespace, Name: od.ID.Name,
			Change: string(od.Type), Recreated: od.Recreated, Changes: changesOf(od.Changes)}
		if od.Type == materialize.ObjectUnknown {
			o.Reason = strings.ReplaceAll(unknownAt(od.UnknownAt), "--", "") + ": " + od.Reason
		}
		a.Objects = append(a.Objects, o)
	}
	a.mcpPage = pg
	return a, nil
}

// ---- gaps

type gapsArgs struct {
	Namespace string `json:"namespace,omitempty" jsonschema:"only the losses of this namespace's streams (and the cluster-scoped ones)"`
	Since     string `json:"since,omitempty" jsonschema:"only losses observed at or after this time: RFC 3339, now or a duration ago"`
	Until     string `json:"until,omitempty" jsonschema:"only losses observed at or before this time"`
	clusterArg
	pageArgs
}

type gapsAnswer struct {
	Since    string      `json:"since,omitempty"`
	Until    string      `json:"until,omitempty"`
	Coverage mcpCoverage `json:"coverage"`
	Losses   []mcpGap    `json:"losses"`
	mcpPage
}

func (a *gapsAnswer) coverageOf() *mcpCoverage { return &a.Coverage }

func (a *gapsAnswer) text() string {
	var b strings.Builder
	b.WriteString(a.mcpPage.text(len(a.Losses), "losses of continuity") + "\n")
	for _, g := range a.Losses {
		fmt.Fprintf(&b, "- %s\n", g.describe())
	}
	return b.String()
}

func gapsTool(ctx context.Context, c *mcpCall, in gapsArgs) (*gapsAnswer, error) {
	p, limit, err := paging(in.pageArgs, in)
	if err != nil {
		return nil, err
	}
	var since, until = p.At, p.To
	if in.Since != "" && since.IsZero() {
		if since, err = c.parseWhen("since", in.Since, ""); err != nil {
			return nil, err
		}
	}
	if in.Until != "" && until.IsZero() {
		if until, err = c.parseWhen("until", in.Until, ""); err != nil {
			return nil, err
		}
	}
	p.At, p.To = since, until
	cluster, err := c.clusterOf(ctx, in.Cluster, in.Namespace)
	if err != nil {
		return nil, err
	}
	losses, err := c.src.Losses(ctx, cluster, in.Namespace, since, until)
	if err != nil {
		return nil, err
	}
	a := &gapsAnswer{Since: mcpTime(since), Until: mcpTime(until), Coverage: *complete(), Losses: []mcpGap{}}
	// The coverage of the window: every loss in it, not only this page's.
	a.Coverage.addLosses(losses)
	a.Coverage.Gaps = nil
	from, to, pg := window(p, limit, len(losses))
	for _, r := range losses[from:to] {
		a.Losses = append(a.Losses, lossOf(r))
	}
	a.mcpPage = pg
	return a, nil
}

// ---- replay

type replayPlanArgs struct {
	Namespace   string `json:"namespace" jsonschema:"the namespace to rebuild"`
	At          string `json:"at,omitempty" jsonschema:"the time whose state to rebuild: RFC 3339, now or a duration ago; default now"`
	ToNamespace string `json:"toNamespace,omitempty" jsonschema:"the target namespace (default the same name)"`
	AllowGaps   bool   `json:"allowGaps,omitempty" jsonschema:"plan even when the journal is not complete at that time; objects changed or deleted in a gap may then be missing or stale"`
	clusterArg
}

type mcpPlanObject struct {
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
}

type replayPlanAnswer struct {
	PlanID     string          `json:"planId"`
	Hash       string          `json:"hash" jsonschema:"the plan's hash: applying it needs exactly this hash, from the person who reviewed it"`
	At         string          `json:"at"`
	Coverage   mcpCoverage     `json:"coverage"`
	Objects    []mcpPlanObject `json:"objects" jsonschema:"the objects the plan writes, at most 50; see total"`
	Total      int             `json:"total"`
	Exclusions []string        `json:"exclusions,omitempty" jsonschema:"what the plan leaves out, with the reason"`
	Warnings   []string        `json:"warnings,omitempty"`
	Next       string          `json:"next" jsonschema:"what a person does next"`
}

func (a *replayPlanAnswer) coverageOf() *mcpCoverage { return &a.Coverage }

func (a *replayPlanAnswer) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "saved plan %s with hash %s (state at %s): %d objects.\n", a.PlanID, a.Hash, a.At, a.Total)
	for _, o := range a.Objects {
		fmt.Fprintf(&b, "- %s/%s %s\n", o.Resource, o.Name, orNone(o.Namespace))
	}
	for _, x := range a.Exclusions {
		fmt.Fprintf(&b, "excluded: %s\n", x)
	}
	b.WriteString(a.Next + "\n")
	return b.String()
}

func replayPlanTool(ctx context.Context, c *mcpCall, in replayPlanArgs) (*replayPlanAnswer, error) {
	if in.Namespace == "" {
		return nil, fmt.Errorf("give namespace: the namespace to rebuild")
	}
	at, err := c.parseWhen("at", in.At, "now")
	if err != nil {
		return nil, err
	}
	cluster, err := c.clusterOf(ctx, in.Cluster, in.Namespace)
	if err != nil {
		return nil, err
	}
	source := replay.Source{ClusterID: cluster, Namespaces: []string{in.Namespace}, At: at}
	var target replay.Target
	if in.ToNamespace != "" {
		target.Namespaces = map[string]string{in.Namespace: in.ToNamespace}
	}
	plan, err := c.src.Plan(ctx, source, target, replay.Policy{AllowGaps: in.AllowGaps})
	if err != nil {
		return nil, err
	}
	a := planAnswer(plan)
	return a, nil
}

// planAnswer describes a saved plan.
func planAnswer(plan *replay.Plan) *replayPlanAnswer {
	a := &replayPlanAnswer{PlanID: plan.ID, Hash: plan.Hash, At: mcpTime(plan.Source.At), Coverage: *complete(), Objects: []mcpPlanObject{}, Total: len(plan.Objects), Warnings: plan.Warnings,
		Next: fmt.Sprintf("a person reviews it (kubectl krply replay plan output, or the resource krply://plans/%s), dry-runs it (kubectl krply replay dry-run %s) and applies it with its hash (kubectl krply replay apply %s --confirm %s)", plan.ID, plan.ID, plan.ID, plan.Hash)}
	if !plan.Coverage.Complete {
		a.Coverage.incomplete(fmt.Sprintf("the journal is not complete at %s (planned with allowGaps): objects changed or deleted in a gap may be missing or stale", a.At))
		missingCoverage(&a.Coverage, plan.Coverage.Missing, nil, false)
	}
	for i, o := range plan.Objects {
		if i == mcpDefaultLimit {
			break
		}
		a.Objects = append(a.Objects, mcpPlanObject{Resource: groupResource(o.Ref.Group, o.Ref.Resource), Namespace: o.Ref.Namespace, Name: o.Ref.Name})
	}
	for _, x := range plan.Exclusions {
		a.Exclusions = append(a.Exclusions, fmt.Sprintf("%s/%s: %s", x.Ref.Resource, x.Ref.Name, x.Reason))
	}
	return a
}

type planIDArgs struct {
	PlanID string `json:"planId" jsonschema:"the saved plan's ID"`
}

type replayRunAnswer struct {
	PlanID   string      `json:"planId"`
	Coverage mcpCoverage `json:"coverage" jsonschema:"the plan's coverage"`
	Status   string      `json:"status" jsonschema:"the plan's status after the run"`
	OK       bool        `json:"ok" jsonschema:"every object passed the dry run clean, or was applied"`
	Objects  int         `json:"objects"`
	Failed   []string    `json:"failed,omitempty" jsonschema:"the objects that did not pass, with the reason"`
}

func (a *replayRunAnswer) coverageOf() *mcpCoverage { return &a.Coverage }

func (a *replayRunAnswer) text() string {
	s := fmt.Sprintf("plan %s: %s, ok=%v, %d objects", a.PlanID, a.Status, a.OK, a.Objects)
	for _, f := range a.Failed {
		s += "\n- " + f
	}
	return s + "\n"
}

func replayDryRunTool(ctx context.Context, c *mcpCall, in planIDArgs) (*replayRunAnswer, error) {
	plan, err := c.src.LoadPlan(ctx, in.PlanID)
	if err != nil {
		return nil, err
	}
	rep, err := c.src.DryRun(ctx, plan, c.opts.target)
	if err != nil {
		return nil, err
	}
	a := &replayRunAnswer{PlanID: plan.ID, Coverage: planAnswer(plan).Coverage, OK: true, Objects: len(rep.Results), Status: string(rep.Status)}
	for _, o := range rep.Results {
		if !o.Clean() {
			a.OK = false
			a.Failed = append(a.Failed, fmt.Sprintf("%s/%s: %s %s", o.Ref.Resource, o.Ref.Name, o.Action, o.Message))
		}
	}
	return a, nil
}

type applyArgs struct {
	PlanID string `json:"planId" jsonschema:"the saved plan's ID"`
	Hash   string `json:"hash" jsonschema:"the plan's hash, as the person who reviewed the plan confirmed it"`
}

func replayApplyTool(ctx context.Context, c *mcpCall, in applyArgs) (*replayRunAnswer, error) {
	if in.Hash == "" {
		return nil, fmt.Errorf("give hash: the hash of the plan as reviewed")
	}
	plan, err := c.src.LoadPlan(ctx, in.PlanID)
	if err != nil {
		return nil, err
	}
	rep, err := c.src.Apply(ctx, plan, c.opts.target, replay.Confirmation{PlanID: in.PlanID, PlanHash: in.Hash})
	if err != nil {
		return nil, err
	}
	a := &replayRunAnswer{PlanID: plan.ID, Coverage: planAnswer(plan).Coverage, OK: true, Objects: len(rep.Results), Status: string(rep.Status)}
	for _, o := range rep.Results {
		if o.Outcome == replay.OutcomeFailed || o.Outcome == replay.OutcomeNotAttempted {
			a.OK = false
			a.Failed = append(a.Failed, fmt.Sprintf("%s/%s: %s %s", o.Ref.Resource, o.Ref.Name, o.Outcome, o.Message))
		}
	}
	return a, nil
}
