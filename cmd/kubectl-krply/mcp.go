package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/krply/krply/event"
	"github.com/krply/krply/recorder"
	"github.com/krply/krply/server"
	"github.com/krply/krply/storage"
)

// The MCP server: krply's history as tools, resources and prompts for AI
// assistants, over stdio (kubectl krply mcp) or Streamable HTTP at
// mcpPath of a recorder's --listen. Every tool answers over a source, as
// every command does, so both transports and both sources (a journal
// file, a query API) give the same answers; every answer carries its
// coverage, in its structured output and in its text's first line.

// mcpPath is where a recorder's --listen serves MCP.
const mcpPath = "/mcp"

// Bounds of an answer, so that an agent's context is never flooded.
const (
	mcpDefaultLimit = 50
	mcpMaxLimit     = 200
	// mcpMaxBody is the largest object body get returns whole.
	mcpMaxBody = 16 << 10
)

// mcpBackend opens the source a request is answered from: the journal
// file or --server of kubectl krply mcp, or the query API that a
// recorder's --listen serves, asked with the MCP request's own
// credentials.
type mcpBackend interface {
	// open returns the source of one request, writable when writes, and
	// the function that releases it. extra is the request's transport
	// data (its HTTP header), nil over stdio.
	open(ctx context.Context, extra *mcp.RequestExtra, writes bool) (source, func(), error)
	// cluster returns the cluster a request is about: given, or the
	// journal's only one.
	cluster(ctx context.Context, src source, given, namespace string) (string, error)
}

// mcpOptions are what the server was started with.
type mcpOptions struct {
	// allowDryRun and allowApply register the replay_dry_run and
	// replay_apply tools (--allow-dry-run, --allow-apply); without them
	// an agent can only save plans, for a person to review.
	allowDryRun, allowApply bool
	// target is the cluster dry runs and applies write to (a journal
	// file's; --server uses the query API's own).
	target targetConfig
	// now is "now" of relative times; tests pin it.
	now func() time.Time
}

// mcpInstructions tell the model what krply is and how to read its
// answers.
const mcpInstructions = `krply keeps a gap-aware history of Kubernetes objects: what an object
looked like at a time, what changed, when and by whom, and what a namespace
looked like. Every answer carries "coverage": complete is true only when
the journal saw every change the answer depends on. When complete is
false, changes may be missing (coverage.gaps say when and why): never
conclude that "nothing changed" or that an object did not exist from an
incomplete answer; say that the history is incomplete there. State
"not_yet_observed" means the time asked about is after the journal's last
evidence: ask again later. Times are RFC 3339, "now", or a duration ago
("10m ago"); observedAt is when krply saw a change, not when it was made.
Lists are paged: when nextCursor is set, call again with it for more.`

// coverageText is what every tool description says about coverage.
const coverageText = ` The answer's coverage says whether it is complete: when coverage.complete is false, changes may be missing (coverage.gaps, coverage.reasons say where and why), so do not read an absence of changes as fact. The text's first line starts with COMPLETE, INCOMPLETE or NOT YET OBSERVED.`

// newMCPServer returns the MCP server answering from b: its tools
// (mcpTools), resources and prompts.
func newMCPServer(b mcpBackend, o mcpOptions) *mcp.Server {
	if o.now == nil {
		o.now = time.Now
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "krply", Title: "krply: gap-aware Kubernetes history", Version: recorder.Version(version)},
		&mcp.ServerOptions{Instructions: mcpInstructions, Capabilities: &mcp.ServerCapabilities{}})
	k := &mcpKit{backend: b, opts: o}
	for _, t := range mcpTools {
		if t.enabled == nil || t.enabled(o) {
			t.add(s, k)
		}
	}
	k.addResources(s)
	addPrompts(s)
	return s
}

// mcpKit is what the tools share: the backend and the options.
type mcpKit struct {
	backend mcpBackend
	opts    mcpOptions
}

// mcpToolDef is one tool of the registry. Adding a tool is one entry in
// mcpTools: its input and output types, a description and a function from
// input to answer; addTool does the rest (the source, the coverage
// description, coverage in the text's first line, errors as tool errors).
type mcpToolDef struct {
	name string
	// enabled, when set, says whether the server's options offer the tool.
	enabled func(mcpOptions) bool
	add     func(s *mcp.Server, k *mcpKit)
}

// mcpAnswer is what every tool answers: structured output with coverage,
// and the body of its text rendering (the coverage line goes first).
type mcpAnswer interface {
	coverageOf() *mcpCoverage
	text() string
}

// mcpCall is one tool call: the source it is answered from and the time
// "now" is.
type mcpCall struct {
	*mcpKit
	src source
	now time.Time
}

// addTool registers a tool whose handler fn answers In with Out.
func addTool[In any, Out mcpAnswer](s *mcp.Server, k *mcpKit, t *mcp.Tool, writes bool, fn func(ctx context.Context, c *mcpCall, in In) (Out, error)) {
	t.Description += coverageText
	mcp.AddTool(s, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, Out, error) {
		var zero Out
		src, release, err := k.backend.open(ctx, req.Extra, writes)
		if err != nil {
			return nil, zero, mcpError(err)
		}
		defer release()
		out, err := fn(ctx, &mcpCall{mcpKit: k, src: src, now: k.opts.now()}, in)
		if err != nil {
			return nil, zero, mcpError(err)
		}
		text := out.coverageOf().headline() + "\n" + out.text()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}, out, nil
	})
}

// mcpError words an error for the model: the query API's refusals keep
// their code, so "forbidden" reads as such.
func mcpError(err error) error {
	var serr *server.Error
	if errors.As(err, &serr) {
		return fmt.Errorf("%s: %s", serr.Code, serr.Message)
	}
	if errors.Is(err, errNeverRecorded) {
		return fmt.Errorf("not_found: %w", err)
	}
	return err
}

// Coverage states of an answer.
const (
	stateComplete       = "complete"
	stateIncomplete     = "incomplete"
	stateNotYetObserved = "not_yet_observed"
)

// mcpCoverage is how complete an answer is. It is in every tool's output.
type mcpCoverage struct {
	Complete bool   `json:"complete" jsonschema:"true only when the journal saw every change this answer depends on; when false changes may be missing"`
	State    string `json:"state" jsonschema:"complete; incomplete (a gap, an unavailable stream, a state unknown: changes may be missing); not_yet_observed (the time is after the journal's last evidence: ask again later)"`
	// Reasons say why the answer is not complete.
	Reasons []string `json:"reasons,omitempty" jsonschema:"why the answer is not complete"`
	// Gaps are the losses of continuity the answer touches.
	Gaps []mcpGap `json:"gaps,omitempty" jsonschema:"the times changes may be missing from this answer"`
}

// mcpGap is a time the journal may miss changes: a gap or an unavailable
// stream.
type mcpGap struct {
	Kind      string `json:"kind" jsonschema:"gap (continuity lost: an outage, a 410 Gone), unavailable or available (a stream lost or regained, e.g. 403)"`
	Resource  string `json:"resource" jsonschema:"the resource of the stream (plural.group)"`
	Namespace string `json:"namespace,omitempty"`
	From      string `json:"from,omitempty" jsonschema:"start of the gap: the stream's last evidence before it"`
	To        string `json:"to,omitempty" jsonschema:"end of the gap: the end of the relist that closed it"`
	At        string `json:"at" jsonschema:"when krply observed the loss"`
	Reason    string `json:"reason"`
}

// complete is the coverage of an answer until a reason to doubt it is
// added.
func complete() *mcpCoverage { return &mcpCoverage{Complete: true, State: stateComplete} }

// add records a reason the answer is not complete.
func (c *mcpCoverage) add(reason string) {
	c.Complete = false
	if reason != "" && !contains(c.Reasons, reason) {
		c.Reasons = append(c.Reasons, reason)
	}
}

// incomplete marks the answer incomplete for reason.
func (c *mcpCoverage) incomplete(reason string) {
	c.add(reason)
	c.State = stateIncomplete
}

// notYetObserved marks the answer not yet observed, unless it is already
// incomplete for another reason.
func (c *mcpCoverage) notYetObserved(reason string) {
	c.add(reason)
	if c.State != stateIncomplete {
		c.State = stateNotYetObserved
	}
}

// addLosses adds gap and coverage-change records.
func (c *mcpCoverage) addLosses(recs []event.Record) {
	for _, r := range recs {
		g := lossOf(r)
		dup := false
		for _, have := range c.Gaps {
			dup = dup || have == g
		}
		if !dup {
			c.Gaps = append(c.Gaps, g)
		}
		if g.Kind != "available" {
			c.incomplete(g.describe())
		}
	}
}

func lossOf(r event.Record) mcpGap {
	st, _ := event.ParseStreamID(r.StreamID)
	g := mcpGap{Resource: groupResource(st.Group, st.Resource), Namespace: st.Namespace, At: mcpTime(r.ObservedAt)}
	switch {
	case r.Gap != nil:
		g.Kind, g.From, g.To, g.Reason = "gap", mcpTime(r.Gap.From), mcpTime(r.Gap.To), r.Gap.Reason
	case r.Coverage != nil && r.Coverage.Available:
		g.Kind, g.Reason = "available", r.Coverage.Reason
	case r.Coverage != nil:
		g.Kind, g.Reason = "unavailable", r.Coverage.Reason
	}
	return g
}

func (g mcpGap) describe() string {
	where := g.Resource
	if g.Namespace != "" {
		where += " in namespace " + g.Namespace
	}
	if g.Kind == "gap" {
		return fmt.Sprintf("changes of %s between %s and %s may be missing (%s)", where, g.From, g.To, g.Reason)
	}
	return fmt.Sprintf("%s became %s at %s (%s)", where, g.Kind, g.At, g.Reason)
}

// headline is the first line of a text rendering.
func (c *mcpCoverage) headline() string {
	switch c.State {
	case stateComplete:
		return "COMPLETE: the journal saw every change this answer depends on."
	case stateNotYetObserved:
		return "NOT YET OBSERVED: " + strings.Join(c.Reasons, "; ")
	}
	return "INCOMPLETE: changes may be missing: " + strings.Join(c.Reasons, "; ")
}

// mcpTime prints a time for an agent: RFC 3339 in UTC, full precision.
func mcpTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

func groupResource(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

// parseWhen reads a time argument ("" is def).
func (c *mcpCall) parseWhen(name, s, def string) (time.Time, error) {
	if s == "" {
		s = def
	}
	t, err := server.ParseTime(s, c.now)
	if err != nil {
		return time.Time{}, fmt.Errorf("%s: %v", name, err)
	}
	return t, nil
}

// clusterOf resolves the cluster argument.
func (c *mcpCall) clusterOf(ctx context.Context, given, namespace string) (string, error) {
	return c.backend.cluster(ctx, c.src, given, namespace)
}

// page is a position in a paged answer: the offset of its first item,
// bound to the query it belongs to and to the times its first page
// resolved "now" and relative times to.
type page struct {
	Offset int       `json:"o"`
	At     time.Time `json:"a,omitzero"`
	To     time.Time `json:"t,omitzero"`
	Query  uint64    `json:"q"`
}

// paging reads the cursor and limit of a list tool's query whose
// arguments are in.
func paging(args pageArgs, in any) (page, int, error) {
	cursor, limit := args.Cursor, args.Limit
	switch {
	case limit == 0:
		limit = mcpDefaultLimit
	case limit < 0 || limit > mcpMaxLimit:
		return page{}, 0, fmt.Errorf("limit %d: want 1 to %d", limit, mcpMaxLimit)
	}
	q := queryHash(in)
	if cursor == "" {
		return page{Query: q}, limit, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(cursor)
	var p page
	if err == nil {
		err = json.Unmarshal(raw, &p)
	}
	if err != nil || p.Offset < 0 {
		return page{}, 0, fmt.Errorf("cursor %q is not one this server gave: leave it out to start again", cursor)
	}
	if p.Query != q {
		return page{}, 0, errors.New("cursor belongs to a query with other arguments: give the same arguments as for the first page, or leave cursor out")
	}
	return p, limit, nil
}

// queryHash hashes a tool's arguments but its paging.
func queryHash(in any) uint64 {
	raw, _ := json.Marshal(in)
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	delete(m, "cursor")
	delete(m, "limit")
	raw, _ = json.Marshal(m)
	h := fnv.New64a()
	_, _ = h.Write(raw)
	return h.Sum64()
}

// window returns the bounds of the page of n items that p starts, and
// its paging part (the cursor of the next page, none after the last).
func window(p page, limit, n int) (from, to int, pg mcpPage) {
	from = min(p.Offset, n)
	to = min(from+limit, n)
	pg = mcpPage{Total: n, Offset: from}
	if to < n {
		p.Offset = to
		raw, _ := json.Marshal(p)
		pg.NextCursor = base64.RawURLEncoding.EncodeToString(raw)
	}
	return from, to, pg
}

// pageOf returns the page of items that p starts, each converted by
// conv, and its paging part: what every list tool answers.
func pageOf[T, U any](p page, limit int, items []T, conv func(T) U) ([]U, mcpPage) {
	from, to, pg := window(p, limit, len(items))
	out := make([]U, 0, to-from)
	for _, it := range items[from:to] {
		out = append(out, conv(it))
	}
	return out, pg
}

// mcpPage is the paging part of a list answer.
type mcpPage struct {
	Total      int    `json:"total" jsonschema:"how many items the whole answer has"`
	Offset     int    `json:"offset" jsonschema:"the index of this page's first item"`
	NextCursor string `json:"nextCursor,omitempty" jsonschema:"set when more items follow: call again with cursor set to it"`
}

func (p mcpPage) text(shown int, what string) string {
	if p.NextCursor == "" && p.Offset == 0 {
		return fmt.Sprintf("%d %s.", p.Total, what)
	}
	s := fmt.Sprintf("%s %d to %d of %d.", what, p.Offset+1, p.Offset+shown, p.Total)
	if p.NextCursor != "" {
		s += " More with cursor " + p.NextCursor + "."
	}
	return s
}

// streamCoverage adds the coverage of the streams an answer rests on.
func streamCoverage(cov *mcpCoverage, covs []storage.Coverage) {
	for _, sc := range covs {
		if sc.Covered {
			continue
		}
		reason := sc.StreamID + ": " + sc.Reason
		switch {
		case len(sc.Gaps) > 0:
			cov.addLosses(sc.Gaps) // they say why, with their bounds
		case sc.Continuous():
			cov.notYetObserved(reason)
		default:
			cov.incomplete(reason)
		}
	}
}
