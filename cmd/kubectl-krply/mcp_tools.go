package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/krply/krply/materialize"
	"github.com/krply/krply/replay"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/why"
)

// mcpTools is the registry of the MCP server's tools, in the order they
// are listed. A new tool is one more entry: a name, and an
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
	{name: "why", add: func(s *mcp.Server, k *mcpKit) {
		addTool(s, k, &mcp.Tool{Name: "why", Title: "What changed before an object broke",
			Description: "Explains what changed before an object broke: T is the given time, or else the object's first bad transition in the journal (CrashLoopBackOff, ImagePullBackOff, OOMKilled, Unschedulable, a condition leaving True, ProgressDeadlineExceeded). It walks the object's dependencies as they were at T (owners, what it owns, the ConfigMaps, Secrets, ServiceAccount, PVCs and Node it references, the Services, NetworkPolicies, PDBs and HPAs that select it) and ranks every change to them in the window before T as a candidate cause, best first, with its reasons and who made it (paged), with the latest Kubernetes Events about them. When a stream has a gap in the window, a resource of the graph is not recorded or Events are not recorded, a better cause may be missing: no candidate is certain. history shows any object's changes in full.",
			Annotations: readOnly}, false, whyTool)
	}},
	{name: "find", add: func(s *mcp.Server, k *mcpKit) {
		addTool(s, k, &mcp.Tool{Name: "find", Title: "When a condition held",
			Description: `Evaluates a CEL expression over object, each recorded version of each object of a namespace (or the whole cluster), and lists the intervals during which it was true, one per line, paged: from the version that made it true to the one that made it false, with who made them. An end the journal cannot tell (before the stream's first complete list, or at a gap) is marked unknown with the reason, never extended or cut silently. Secrets are never searched. Example expressions: object.spec.replicas < 2; object.data.debug == "true"; object.spec.template.spec.containers.exists(c, c.image == "x:1.2").`,
			Annotations: readOnly}, false, findTool)
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
	a := &statusAnswer{Cluster: cluster, Coverage: *complete()}
	for _, info := range streams {
		st, cov := info.Status, info.Coverage
		switch {
		case !st.Available:
			a.Coverage.incomplete(fmt.Sprintf("stream %s is unavailable: %s", st.StreamID, st.AvailabilityReason))
		case !cov.Continuous():
			a.Coverage.incomplete(fmt.Sprintf("stream %s is not covered: %s", st.StreamID, cov.Reason))
		}
	}
	a.Streams, a.mcpPage = pageOf(p, limit, streams, func(info streamInfo) mcpStream {
		st, cov := info.Status, info.Coverage
		s := mcpStream{Stream: st.StreamID, Resource: groupResource(st.Stream.Group, st.Stream.Resource), Namespace: st.Stream.Namespace,
			Available: st.Available, Covered: st.Available && cov.Continuous(), CoveredSince: mcpTime(cov.BaselineEndAt),
			EvidenceUntil: mcpTime(st.LastObservedAt), Lag: since(st.LastObservedAt, c.now), Gaps: st.Gaps, LastGapAt: mcpTime(st.LastGapAt)}
		if !st.Available {
			s.Reason = st.AvailabilityReason
		} else if !s.Covered {
			s.Reason = cov.Reason
		}
		return s
	})
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
	a := &historyAnswer{Object: objectOf(h.Object), Coverage: *cov}
	a.Entries, a.mcpPage = pageOf(p, limit, h.Entries, func(en materialize.Entry) mcpEntry {
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
		return e
	})
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
	a := &blameAnswer{Object: objectOf(h.Object), Coverage: *cov}
	a.Fields, a.mcpPage = pageOf(p, limit, bl.Fields, func(l blameLine) mcpBlameLine {
		return mcpBlameLine{Path: l.Path, Op: string(l.Op), Value: l.Value, ObservedAt: mcpTime(l.ObservedAt),
			ResourceVersion: l.ResourceVersion, Event: string(l.WatchType), Who: strings.TrimPrefix(l.who, "-")}
	})
	return a, nil
}

// ---- snapshot

// scopeArgs name a namespace, or the whole cluster.
type scopeArgs struct {
	Namespace string `json:"namespace,omitempty" jsonschema:"the namespace; leave out for the whole cluster"`
	clusterArg
}

type snapshotArgs struct {
	At string `json:"at,omitempty" jsonschema:"the time: RFC 3339, now or a duration ago (10m ago); default now"`
	scopeArgs
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
func (c *mcpCall) scope(ctx context.Context, in scopeArgs) (materialize.Scope, error) {
	id, err := c.clusterOf(ctx, in.Cluster, in.Namespace)
	if err != nil {
		return materialize.Scope{}, err
	}
	s := materialize.Scope{ClusterID: id}
	if in.Namespace != "" {
		s.Namespaces = []string{in.Namespace}
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
	scope, err := c.scope(ctx, in.scopeArgs)
	if err != nil {
		return nil, err
	}
	snap, err := c.src.Snapshot(ctx, scope, p.At)
	if err != nil {
		return nil, err
	}
	a := &snapshotAnswer{Scope: scopeName(scope), At: mcpTime(p.At), Coverage: *complete()}
	missingCoverage(&a.Coverage, snap.Missing, snap.Warnings, !snap.Complete)
	if !snap.Complete && a.Coverage.Complete {
		a.Coverage.incomplete("not every stream of the scope is covered at that time")
	}
	a.Objects, a.mcpPage = pageOf(p, limit, snap.Objects, func(o materialize.SnapshotObject) mcpSnapshotObject {
		origin := "watch"
		if o.Synthetic {
			origin = "list"
		}
		return mcpSnapshotObject{Resource: groupResource(o.Ref.Group, o.Ref.Resource), Kind: o.Ref.Kind, Namespace: o.Ref.Namespace,
			Name: o.Ref.Name, ResourceVersion: o.Ref.ResourceVersion, ObservedAt: mcpTime(o.ObservedAt), Origin: origin}
	})
	return a, nil
}

// ---- diff

type diffArgs struct {
	From          string `json:"from" jsonschema:"start of the window: RFC 3339, now or a duration ago (1h ago)"`
	To            string `json:"to,omitempty" jsonschema:"end of the window; default now"`
	IncludeStatus bool   `json:"includeStatus,omitempty" jsonschema:"compare status too"`
	scopeArgs
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
	scope, err := c.scope(ctx, in.scopeArgs)
	if err != nil {
		return nil, err
	}
	d, err := c.src.Diff(ctx, scope, p.At, p.To, materialize.IncludeStatus(in.IncludeStatus))
	if err != nil {
		return nil, err
	}
	a := &diffAnswer{Scope: scopeName(scope), From: mcpTime(p.At), To: mcpTime(p.To), Coverage: *complete()}
	a.Coverage.addLosses(d.Gaps)
	missingCoverage(&a.Coverage, d.Missing, d.Warnings, d.HasGaps)
	for _, od := range d.Objects {
		if od.Type == materialize.ObjectUnknown {
			a.Coverage.incomplete(fmt.Sprintf("%s %s: %s: %s", od.Kind, od.ID.Name, unknownAt(od.UnknownAt), od.Reason))
		}
	}
	a.Objects, a.mcpPage = pageOf(p, limit, d.Objects, func(od materialize.ObjectDiff) mcpObjectDiff {
		o := mcpObjectDiff{Resource: groupResource(od.ID.Group, od.ID.Resource), Kind: od.Kind, Namespace: od.ID.Namespace, Name: od.ID.Name,
			Change: string(od.Type), Recreated: od.Recreated, Changes: changesOf(od.Changes)}
		if od.Type == materialize.ObjectUnknown {
			o.Reason = strings.ReplaceAll(unknownAt(od.UnknownAt), "--", "") + ": " + od.Reason
		}
		return o
	})
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
	a := &gapsAnswer{Since: mcpTime(since), Until: mcpTime(until), Coverage: *complete()}
	// The coverage of the window: every loss in it, not only this page's.
	a.Coverage.addLosses(losses)
	a.Coverage.Gaps = nil
	a.Losses, a.mcpPage = pageOf(p, limit, losses, lossOf)
	return a, nil
}

// ---- why

type whyArgs struct {
	objectArgs
	At     string `json:"at,omitempty" jsonschema:"T, when the object broke: RFC 3339, now or a duration ago (10m ago); default the object's first bad transition in the journal"`
	From   string `json:"from,omitempty" jsonschema:"the window's start instead of window: a time as at"`
	Window string `json:"window,omitempty" jsonschema:"how far before T to look, a Go duration (30m, 2h); default 1h"`
	After  string `json:"after,omitempty" jsonschema:"how far after T to look for Events and changes, a Go duration; default 5m"`
	pageArgs
}

type mcpCandidate struct {
	Rank       int       `json:"rank" jsonschema:"1 is the most likely cause"`
	Score      int       `json:"score"`
	Summary    string    `json:"summary" jsonschema:"what changed, in one line"`
	Object     mcpObject `json:"object"`
	ObservedAt string    `json:"observedAt" jsonschema:"when krply observed the change, not when it was made"`
	Origin     string    `json:"origin" jsonschema:"watch (a real change), list or inferred (seen by a relist: made somewhere in between)"`
	Between    string    `json:"between,omitempty" jsonschema:"for a change seen by a relist: the times between which it was made"`
	Who        string    `json:"who,omitempty" jsonschema:"the audit log's user, else the field manager (a client, not a user)"`
	Fields     []string  `json:"fields,omitempty" jsonschema:"the paths of the fields that changed"`
	Reasons    []string  `json:"reasons" jsonschema:"why it ranks where it does"`
	Caveats    []string  `json:"caveats,omitempty" jsonschema:"why it is not certain: a gap that may hide a better cause, a time known only within a gap"`
}

type mcpKubeEvent struct {
	Regarding mcpObject `json:"regarding"`
	Type      string    `json:"type,omitempty"`
	Reason    string    `json:"reason,omitempty"`
	Message   string    `json:"message,omitempty"`
	Count     int64     `json:"count,omitempty"`
	LastSeen  string    `json:"lastSeen,omitempty"`
}

// whyMaxEvents bounds the Events a why answer carries: the latest.
const whyMaxEvents = 20

type whyAnswer struct {
	Object      mcpObject      `json:"object"`
	Kind        string         `json:"kind,omitempty"`
	At          string         `json:"at" jsonschema:"T"`
	AtSource    string         `json:"atSource" jsonschema:"given, first-bad-transition or latest-change (no bad transition found: T is the object's latest change)"`
	Headline    string         `json:"headline" jsonschema:"what broke at T, in one line"`
	From        string         `json:"from" jsonschema:"the window's start"`
	To          string         `json:"to" jsonschema:"the window's end (after T)"`
	Coverage    mcpCoverage    `json:"coverage"`
	Candidates  []mcpCandidate `json:"candidates" jsonschema:"changes before T ranked as possible causes, best first (this page)"`
	Changes     int            `json:"changes" jsonschema:"how many changes the window holds for the graph's objects, candidates or not"`
	Events      []mcpKubeEvent `json:"events,omitempty" jsonschema:"the latest Kubernetes Events about the graph's objects in the window, at most 20"`
	EventsTotal int            `json:"eventsTotal" jsonschema:"how many Events the window holds"`
	GraphSize   int            `json:"graphSize" jsonschema:"objects in the dependency graph at T"`
	NotRecorded []string       `json:"notRecorded,omitempty" jsonschema:"resources the graph would have read but the journal does not record"`
	Cut         []string       `json:"cut,omitempty" jsonschema:"what the graph walk left out at its size bound"`
	mcpPage
}

func (a *whyAnswer) coverageOf() *mcpCoverage { return &a.Coverage }

func (a *whyAnswer) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s\nwindow %s to %s, %d objects in the graph, %d changes: %s\n", a.Headline, a.From, a.To, a.GraphSize, a.Changes, a.mcpPage.text(len(a.Candidates), "candidate causes"))
	for _, c := range a.Candidates {
		fmt.Fprintf(&b, "%d. [score %d] %s %s: %s, by %s", c.Rank, c.Score, c.ObservedAt, c.Object, c.Summary, orNone(c.Who))
		if c.Between != "" {
			fmt.Fprintf(&b, " (%s)", c.Between)
		}
		fmt.Fprintf(&b, "\n   because: %s\n", strings.Join(c.Reasons, "; "))
		for _, cv := range c.Caveats {
			fmt.Fprintf(&b, "   caveat: %s\n", cv)
		}
	}
	if a.EventsTotal > 0 {
		fmt.Fprintf(&b, "Events (the latest %d of %d):\n", len(a.Events), a.EventsTotal)
		for _, ev := range a.Events {
			fmt.Fprintf(&b, "- %s %s %s %s: %s (x%d)\n", ev.LastSeen, ev.Regarding, ev.Type, ev.Reason, ev.Message, max(ev.Count, 1))
		}
	}
	for _, c := range a.Cut {
		fmt.Fprintf(&b, "graph cut: %s\n", c)
	}
	return b.String()
}

// duration reads a duration argument ("" is 0: the default).
func duration(name, s string) (time.Duration, error) {
	if s == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%s %q: give a positive duration, such as 30m or 2h", name, s)
	}
	return d, nil
}

func whyTool(ctx context.Context, c *mcpCall, in whyArgs) (*whyAnswer, error) {
	p, limit, err := paging(in.pageArgs, in)
	if err != nil {
		return nil, err
	}
	if in.From != "" && in.Window != "" {
		return nil, errors.New("from and window both given: give one of them")
	}
	var q why.Query
	if q.Before, err = duration("window", in.Window); err != nil {
		return nil, err
	}
	if q.After, err = duration("after", in.After); err != nil {
		return nil, err
	}
	// Relative times resolve once, on the first page.
	if in.At != "" && p.At.IsZero() {
		if p.At, err = c.parseWhen("at", in.At, ""); err != nil {
			return nil, err
		}
	}
	if in.From != "" && p.To.IsZero() {
		if p.To, err = c.parseWhen("from", in.From, ""); err != nil {
			return nil, err
		}
	}
	q.At, q.From = p.At, p.To
	if q.Object, err = c.object(ctx, in.objectArgs); err != nil {
		return nil, err
	}
	w, err := c.src.Why(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", objectOf(q.Object), err)
	}
	a := &whyAnswer{Object: objectOf(w.Object), Kind: w.Kind, At: mcpTime(w.At), AtSource: w.AtSource, Headline: whyHeadline(w, mcpTime),
		From: mcpTime(w.From), To: mcpTime(w.To), Coverage: *complete(), Changes: len(w.Changes), EventsTotal: len(w.Events),
		GraphSize: len(w.Nodes), NotRecorded: w.NotRecorded, Cut: w.Cut}
	if !w.Complete {
		for _, sc := range w.Coverage {
			for _, g := range sc.Gaps {
				a.Coverage.Gaps = append(a.Coverage.Gaps, mcpGap{Kind: "gap", Resource: sc.Resource, Namespace: sc.Namespace, From: mcpTime(g.From), To: mcpTime(g.To), At: mcpTime(g.To), Reason: g.Reason})
			}
		}
		for _, r := range whyIncomplete(w) {
			a.Coverage.incomplete(r)
		}
		if a.Coverage.Complete {
			a.Coverage.incomplete("the journal is not complete over the window")
		}
	}
	a.Candidates, a.mcpPage = pageOf(p, limit, w.Candidates, func(cand why.Candidate) mcpCandidate {
		ch := w.Changes[cand.Change]
		mc := mcpCandidate{Score: cand.Score, Summary: cand.Summary, Object: objectOf(ch.Object), ObservedAt: mcpTime(ch.ObservedAt),
			Origin: string(ch.Origin), Who: strings.TrimPrefix(changeWho(ch), "-"), Reasons: cand.Reasons, Caveats: cand.Caveats}
		if ch.Between != nil {
			mc.Between = fmt.Sprintf("made between %s and %s", mcpTime(ch.Between.From), mcpTime(ch.Between.To))
		}
		for _, f := range ch.Fields {
			mc.Fields = append(mc.Fields, f.Path)
		}
		return mc
	})
	for i := range a.Candidates {
		a.Candidates[i].Rank = a.Offset + i + 1
	}
	for _, ev := range w.Events[max(0, len(w.Events)-whyMaxEvents):] {
		a.Events = append(a.Events, mcpKubeEvent{Regarding: objectOf(ev.Regarding), Type: ev.Type, Reason: ev.Reason, Message: ev.Message, Count: ev.Count, LastSeen: mcpTime(ev.LastSeen)})
	}
	return a, nil
}

// ---- find

type findArgs struct {
	Expression string   `json:"expression" jsonschema:"a CEL expression over object, one version of an object (its JSON as recorded), e.g. object.spec.replicas < 2"`
	Resources  []string `json:"resources,omitempty" jsonschema:"look only at these resource types (deploy, cm, deployments.apps); default every recorded one but Secrets"`
	Selector   string   `json:"labelSelector,omitempty" jsonschema:"look only at versions whose labels matched this selector (app=web)"`
	Since      string   `json:"since,omitempty" jsonschema:"keep the intervals that end after this time: RFC 3339, now or a duration ago; default all recorded time"`
	Until      string   `json:"until,omitempty" jsonschema:"keep the intervals that begin before this time; default up to the journal's last evidence"`
	First      bool     `json:"first,omitempty" jsonschema:"only each object's first interval: the first moment the condition became true"`
	Now        bool     `json:"now,omitempty" jsonschema:"only the intervals still open: true at the stream's last evidence"`
	scopeArgs
	pageArgs
}

type mcpInterval struct {
	Object       mcpObject `json:"object"`
	From         string    `json:"from" jsonschema:"when krply observed the version that made the condition true (or, with startUnknown, when it began to show it true)"`
	To           string    `json:"to,omitempty" jsonschema:"when krply observed the version that made it false (or, with endUnknown, since when the journal cannot tell); empty while still true"`
	StillTrue    bool      `json:"stillTrue,omitempty" jsonschema:"true at the stream's last evidence"`
	Who          string    `json:"who,omitempty" jsonschema:"who made the version that opened the interval, and the one that closed it (opened → closed)"`
	StartUnknown string    `json:"startUnknown,omitempty" jsonschema:"why the condition may have been true before from"`
	EndUnknown   string    `json:"endUnknown,omitempty" jsonschema:"why the condition may have stayed true after to"`
}

type findAnswer struct {
	Expression string        `json:"expression"`
	Scope      string        `json:"scope"`
	Since      string        `json:"since,omitempty"`
	Until      string        `json:"until,omitempty"`
	Coverage   mcpCoverage   `json:"coverage"`
	Intervals  []mcpInterval `json:"intervals" jsonschema:"the intervals during which the condition held, by object (this page)"`
	Objects    int           `json:"objects" jsonschema:"how many objects have an interval"`
	Versions   int           `json:"versions" jsonschema:"how many versions were read"`
	Warnings   []string      `json:"warnings,omitempty"`
	mcpPage
}

func (a *findAnswer) coverageOf() *mcpCoverage { return &a.Coverage }

func (a *findAnswer) text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s in %s (%d objects, %d versions read): %s\n", a.Expression, a.Scope, a.Objects, a.Versions, a.mcpPage.text(len(a.Intervals), "intervals"))
	for _, iv := range a.Intervals {
		to := "still true"
		if !iv.StillTrue {
			to = "to " + iv.To
		}
		fmt.Fprintf(&b, "- %s: from %s %s, by %s", iv.Object, iv.From, to, orNone(iv.Who))
		if iv.StartUnknown != "" {
			fmt.Fprintf(&b, "; unknown before: %s", iv.StartUnknown)
		}
		if iv.EndUnknown != "" {
			fmt.Fprintf(&b, "; unknown after: %s", iv.EndUnknown)
		}
		b.WriteString("\n")
	}
	for _, w := range a.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	return b.String()
}

func findTool(ctx context.Context, c *mcpCall, in findArgs) (*findAnswer, error) {
	p, limit, err := paging(in.pageArgs, in)
	if err != nil {
		return nil, err
	}
	if in.Expression == "" {
		return nil, errors.New("give expression: a CEL expression over object, e.g. object.spec.replicas < 2")
	}
	if in.Since != "" && p.At.IsZero() {
		if p.At, err = c.parseWhen("since", in.Since, ""); err != nil {
			return nil, err
		}
	}
	if in.Until != "" && p.To.IsZero() {
		if p.To, err = c.parseWhen("until", in.Until, ""); err != nil {
			return nil, err
		}
	}
	scope, err := c.scope(ctx, in.scopeArgs)
	if err != nil {
		return nil, err
	}
	if scope.Resources, err = resolveTypes(ctx, c.src, scope.ClusterID, in.Namespace, in.Resources, c.now); err != nil {
		return nil, err
	}
	q := materialize.FindQuery{Scope: scope, LabelSelector: in.Selector, Since: p.At, Until: p.To, First: in.First, Now: in.Now}
	found, err := c.src.Find(ctx, q, in.Expression)
	if err != nil {
		return nil, err
	}
	a := &findAnswer{Expression: in.Expression, Scope: scopeName(scope), Since: mcpTime(p.At), Until: mcpTime(p.To), Coverage: *complete(),
		Objects: len(found.Objects), Versions: found.Versions, Warnings: found.Warnings}
	findCoverage(&a.Coverage, found, p.At, p.To)
	type objectInterval struct {
		obj storage.ObjectID
		iv  materialize.Interval
	}
	var all []objectInterval
	for _, o := range found.Objects {
		for _, iv := range o.Intervals {
			all = append(all, objectInterval{o.Object, iv})
		}
	}
	a.Intervals, a.mcpPage = pageOf(p, limit, all, func(oi objectInterval) mcpInterval {
		iv := oi.iv
		return mcpInterval{Object: objectOf(oi.obj), From: mcpTime(iv.From), To: mcpTime(iv.To), StillTrue: iv.Open(),
			Who: intervalWho(iv), StartUnknown: iv.StartUnknown, EndUnknown: iv.EndUnknown}
	})
	return a, nil
}

// findCoverage adds the coverage of a find over [since, until]: the
// streams no journal records, and every span a stream cannot tell about
// that overlaps the window (a gap, a loss of availability; before the
// stream's first complete list only when since reaches before it: with
// no since, the answer is about the time the journal recorded). An until
// after a stream's last evidence reaches time not yet observed.
func findCoverage(cov *mcpCoverage, found *materialize.Found, since, until time.Time) {
	missingCoverage(cov, found.Missing, nil, false)
	for _, st := range found.Streams {
		for i, sp := range st.Unknown {
			if i == 0 && since.IsZero() {
				continue
			}
			overlaps := (sp.To.IsZero() || sp.To.After(since)) && (sp.From.IsZero() || until.IsZero() || sp.From.Before(until))
			if !overlaps {
				continue
			}
			switch {
			case i == 0 && !sp.To.IsZero():
				cov.incomplete(fmt.Sprintf("%s: nothing is known before %s: %s", st.StreamID, mcpTime(sp.To), sp.Reason))
			case sp.To.IsZero():
				cov.incomplete(fmt.Sprintf("%s: nothing is known since %s: %s", st.StreamID, mcpTime(sp.From), sp.Reason))
			default:
				cov.incomplete(fmt.Sprintf("%s: changes between %s and %s may be missing: %s", st.StreamID, mcpTime(sp.From), mcpTime(sp.To), sp.Reason))
			}
		}
		if !st.EvidenceUntil.IsZero() && until.After(st.EvidenceUntil) {
			cov.notYetObserved(fmt.Sprintf("%s: the journal's last evidence is at %s", st.StreamID, mcpTime(st.EvidenceUntil)))
		}
	}
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
