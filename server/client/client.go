package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/reread"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/replay/replayapi"
	"github.com/krply/krply/server/apiv1"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/why"
)

// ErrInvalidArgument is krply's one sentinel for an argument or an option
// that cannot be used.
var ErrInvalidArgument = storage.ErrInvalidArgument

var _ materialize.Querier = (*Client)(nil)

// Client asks one query API server. It answers as a journal does
// (materialize.Querier, krply.Querier). It is safe for concurrent use.
type Client struct {
	base      *url.URL
	http      *http.Client
	token     string
	tokenFile string
	// fileToken is the token of tokenFile, read again when it changes.
	fileToken *reread.Files[string]
	// plain: WithoutCompression.
	plain bool
}

// Option configures New.
type Option interface{ apply(*Client) }

type optionFunc func(*Client)

func (f optionFunc) apply(c *Client) { f(c) }

// WithToken sends token as the bearer token of every request.
func WithToken(token string) Option {
	return optionFunc(func(c *Client) { c.token = token })
}

// WithTokenFile sends the token in the file at path (surrounding space
// trimmed) as the bearer token of every request, read again whenever the
// file changes: a ServiceAccount token the kubelet rotates in a projected
// volume (/var/run/secrets/kubernetes.io/serviceaccount/token), as
// client-go's BearerTokenFile. New reads it once, and fails when it
// cannot; a request fails when it can no longer be read.
func WithTokenFile(path string) Option {
	return optionFunc(func(c *Client) { c.tokenFile = path })
}

// WithHTTPClient sets the HTTP client (for TLS settings, a proxy, a
// timeout). The default is http.DefaultClient.
func WithHTTPClient(hc *http.Client) Option {
	return optionFunc(func(c *Client) { c.http = hc })
}

// WithoutCompression asks the server for plain answers: by default the
// client, as Go's HTTP client does, accepts gzip, which the server uses
// for answers of 128 KiB or more. Compressing costs the server CPU that a
// client near it (in the cluster, on a fast network) gains nothing from,
// as client-go's DisableCompression and kubectl's --disable-compression
// say for the Kubernetes API.
func WithoutCompression() Option {
	return optionFunc(func(c *Client) { c.plain = true })
}

// New returns a client of the server at baseURL, the URL the handler is
// mounted at ("https://host:8443", or "https://portal/krply" for a handler
// mounted under a prefix).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: %w: base URL %q: want http(s)://host[:port][/prefix]", ErrInvalidArgument, baseURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	c := &Client{base: u, http: http.DefaultClient}
	for _, o := range opts {
		if o == nil {
			return nil, fmt.Errorf("client: %w: a nil Option", ErrInvalidArgument)
		}
		o.apply(c)
	}
	if c.http == nil {
		return nil, fmt.Errorf("client: %w: WithHTTPClient(nil): give a client, or leave the option out", ErrInvalidArgument)
	}
	if c.tokenFile != "" {
		if c.token != "" {
			return nil, fmt.Errorf("client: %w: WithToken and WithTokenFile: give one", ErrInvalidArgument)
		}
		path := c.tokenFile
		c.fileToken = reread.New(func() (string, error) { return readToken(path) }, path)
		if _, _, err := c.fileToken.Get(); err != nil {
			return nil, fmt.Errorf("client: %w: WithTokenFile(%q): %w", ErrInvalidArgument, path, err)
		}
	}
	return c, nil
}

// request makes a request of path with the query q and body (JSON when
// not nil).
func (c *Client) request(ctx context.Context, method, path string, q url.Values, body any, accept string) (*http.Response, error) {
	u := *c.base
	u.Path += path
	u.RawQuery = q.Encode()
	var rd io.Reader
	if body != nil {
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("client: encode the request: %w", err)
		}
		rd = bytes.NewReader(raw)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", accept)
	if c.plain {
		// Go's transport then neither asks for gzip nor decompresses.
		req.Header.Set("Accept-Encoding", "identity")
	}
	token := c.token
	if c.fileToken != nil {
		t, _, err := c.fileToken.Get()
		if err != nil {
			return nil, fmt.Errorf("client: token file: %w", err)
		}
		token = t
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("client: %s %s: %w", method, path, err)
	}
	if resp.StatusCode >= 300 {
		defer resp.Body.Close()
		return nil, decodeError(resp)
	}
	return resp, nil
}

// readToken reads a token file.
func readToken(path string) (string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(raw))
	if token == "" {
		return "", fmt.Errorf("%s holds no token", path)
	}
	return token, nil
}

// decodeError reads an error answer.
func decodeError(resp *http.Response) error {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	var e apiv1.Error
	if err := json.Unmarshal(raw, &e); err != nil || e.Code == "" {
		return &apiv1.Error{Status: resp.StatusCode, Code: "http_" + strconv.Itoa(resp.StatusCode), Message: strings.TrimSpace(string(raw))}
	}
	e.Status = resp.StatusCode
	return &e
}

// do makes a request and decodes the JSON answer into out.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body, out any) error {
	resp, err := c.request(ctx, method, path, q, body, "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("client: %s %s: decode the answer: %w", method, path, err)
	}
	return nil
}

// Healthy asks /healthz.
func (c *Client) Healthy(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/healthz", nil, nil, &apiv1.Health{})
}

// Ready asks /readyz: nil when the server's recorder is synced.
func (c *Client) Ready(ctx context.Context) error {
	return c.do(ctx, http.MethodGet, "/readyz", nil, nil, &apiv1.Health{})
}

// resourceParam writes a group/resource as the server reads it.
func resourceParam(gr schema.GroupResource) string {
	if gr.Group == "" {
		return gr.Resource + ".core"
	}
	return gr.Resource + "." + gr.Group
}

// timeParam writes a time as the server reads it.
func timeParam(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// setTime sets the parameter name to t, unless t is zero.
func setTime(v url.Values, name string, t time.Time) {
	if !t.IsZero() {
		v.Set(name, timeParam(t))
	}
}

// scopeQuery writes a scope's parameters.
func scopeQuery(scope materialize.Scope) url.Values {
	q := url.Values{}
	if scope.ClusterID != "" {
		q.Set("cluster", scope.ClusterID)
	}
	for _, ns := range scope.Namespaces {
		q.Add("namespace", ns)
	}
	for _, gr := range scope.Resources {
		q.Add("resource", resourceParam(gr))
	}
	return q
}

// objectQuery writes an object's parameters.
func objectQuery(obj storage.ObjectID) url.Values {
	q := url.Values{}
	if obj.ClusterID != "" {
		q.Set("cluster", obj.ClusterID)
	}
	q.Set("resource", resourceParam(schema.GroupResource{Group: obj.Group, Resource: obj.Resource}))
	if obj.Namespace != "" {
		q.Set("namespace", obj.Namespace)
	}
	q.Set("name", obj.Name)
	return q
}

// Clusters returns the clusters the journal records.
func (c *Client) Clusters(ctx context.Context) ([]apiv1.Cluster, error) {
	var out apiv1.ClusterList
	err := c.do(ctx, http.MethodGet, "/api/v1/clusters", nil, nil, &out)
	return out.Items, err
}

// Streams returns the streams of scope (its cluster, namespaces and
// resources) with their coverage at at, every page of them.
func (c *Client) Streams(ctx context.Context, scope materialize.Scope, at time.Time) ([]apiv1.StreamInfo, error) {
	q := scopeQuery(scope)
	q.Set("at", timeParam(at))
	return allPages[apiv1.StreamInfo](ctx, c, "/api/v1/streams", q)
}

// allPages returns the items of every page of a list route, asked with q
// and then the cursor of each page.
func allPages[T any](ctx context.Context, c *Client, path string, q url.Values) ([]T, error) {
	type list struct {
		Items []T    `json:"items"`
		Next  string `json:"next"`
	}
	var all []T
	err := followPages(ctx, c, path, q, func(page *list) string {
		all = append(all, page.Items...)
		return page.Next
	})
	return all, err
}

// followPages asks path with q for a page P, hands it to take, and asks
// again with the cursor take returns until it returns none.
func followPages[P any](ctx context.Context, c *Client, path string, q url.Values, take func(*P) string) error {
	if q == nil {
		q = url.Values{}
	}
	for {
		var page P
		if err := c.do(ctx, http.MethodGet, path, q, nil, &page); err != nil {
			return err
		}
		next := take(&page)
		if next == "" {
			return nil
		}
		q.Set("cursor", next)
	}
}

// objectsPageSize is the page of objects snapshots and diffs ask for:
// the server answers at most its own maximum page size.
const objectsPageSize = "1000"

// wholeSnapshot reads every page of the snapshot at path and puts them
// together: the first page's snapshot, every page's objects, Complete only
// when every page was, and every page's warnings.
func wholeSnapshot(ctx context.Context, c *Client, path string, q url.Values) (*materialize.Snapshot, error) {
	q.Set("limit", objectsPageSize)
	var whole *materialize.Snapshot
	err := followPages(ctx, c, path, q, func(page *apiv1.SnapshotPage) string {
		if whole == nil {
			whole = &page.Snapshot
		} else {
			addPage(whole, page)
		}
		return page.Next
	})
	return whole, err
}

// addPage adds a later page of a snapshot to whole: its objects, Complete
// only when every page was, and its warnings.
func addPage(whole *materialize.Snapshot, page *apiv1.SnapshotPage) {
	whole.Objects = append(whole.Objects, page.Objects...)
	whole.Complete = whole.Complete && page.Complete
	whole.Warnings = addWarnings(whole.Warnings, page.Warnings)
}

// addWarnings appends the warnings of more not already in ws.
func addWarnings(ws, more []string) []string {
	for _, w := range more {
		if !slices.Contains(ws, w) {
			ws = append(ws, w)
		}
	}
	return ws
}

// clusterQuery is the query of a cluster's list ("": the journal's only
// cluster).
func clusterQuery(clusterID string) url.Values {
	q := url.Values{}
	if clusterID != "" {
		q.Set("cluster", clusterID)
	}
	return q
}

// RecordQuery selects records (GET /api/v1/records). Zero fields do not
// restrict.
type RecordQuery struct {
	Scope         materialize.Scope
	Name          string
	Types         []event.RecordType
	Since, Until  time.Time
	Descending    bool
	WithoutBodies bool
	// Limit is the page size (0: the server's default).
	Limit int
	// Cursor continues a previous page (its Next).
	Cursor string
}

func (q RecordQuery) values() url.Values {
	v := scopeQuery(q.Scope)
	if q.Name != "" {
		v.Set("name", q.Name)
	}
	if len(q.Types) > 0 {
		types := make([]string, len(q.Types))
		for i, t := range q.Types {
			types[i] = string(t)
		}
		v.Set("types", strings.Join(types, ","))
	}
	setTime(v, "since", q.Since)
	setTime(v, "until", q.Until)
	if q.Descending {
		v.Set("order", "desc")
	}
	if q.WithoutBodies {
		v.Set("bodies", "false")
	}
	return v
}

// Records returns one page of records; ask for the next with
// q.Cursor = page.Next until it is empty.
func (c *Client) Records(ctx context.Context, q RecordQuery) (*apiv1.RecordList, error) {
	v := q.values()
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.Cursor != "" {
		v.Set("cursor", q.Cursor)
	}
	var out apiv1.RecordList
	if err := c.do(ctx, http.MethodGet, "/api/v1/records", v, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ObjectAt returns obj at at, as materialize.Materializer.ObjectAt does.
func (c *Client) ObjectAt(ctx context.Context, obj storage.ObjectID, at time.Time) (*materialize.ObjectState, error) {
	q := objectQuery(obj)
	q.Set("at", timeParam(at))
	var out materialize.ObjectState
	if err := c.do(ctx, http.MethodGet, "/api/v1/object", q, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// History returns obj's history, as materialize.Materializer.History
// does, with the same options: Since, Until, IncludeStatus, Limit, After
// and WithChangeFilter (a filter that says its expression, as CEL's do:
// the server compiles it again). Without Limit it reads every page the server answers and puts
// them together; with Limit, one page of at most that many records (at
// most the server's maximum page size), whose Next, given to After,
// continues it: pages read so hold every version once, even while the
// recorder appends. FromStream and the comparison options other than
// IncludeStatus are refused with ErrInvalidArgument: the query API does
// not carry them.
func (c *Client) History(ctx context.Context, obj storage.ObjectID, opts ...materialize.HistoryOption) (*materialize.History, error) {
	p, err := materialize.HistoryParams(opts...)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if err := carried("History", p); err != nil {
		return nil, err
	}
	q := objectQuery(obj)
	setTime(q, "since", p.Since)
	setTime(q, "until", p.Until)
	if p.IncludeStatus != nil {
		q.Set("includeStatus", strconv.FormatBool(*p.IncludeStatus))
	}
	if p.Limit > 0 {
		q.Set("limit", strconv.Itoa(p.Limit))
	}
	if p.After != "" {
		q.Set("cursor", p.After)
	}
	if p.ChangeFilter != nil {
		e, ok := p.ChangeFilter.(interface{ Expression() string })
		if !ok {
			return nil, fmt.Errorf("client: %w: WithChangeFilter of History: the query API takes a filter as its expression (a filter of github.com/krply/krply/cel); ask the journal itself (krply.Open) for this one", ErrInvalidArgument)
		}
		q.Set("filter", e.Expression())
	}
	var whole *materialize.History
	err = followPages(ctx, c, "/api/v1/history", q, func(page *materialize.History) string {
		if whole == nil {
			whole = page
		} else {
			whole.Entries = append(whole.Entries, page.Entries...)
			whole.Warnings = addWarnings(whole.Warnings, page.Warnings)
			whole.Next = page.Next
		}
		if p.Limit > 0 {
			return "" // one page, its Next for the caller
		}
		return page.Next
	})
	return whole, err
}

// carried refuses the options of a call that the query API does not
// carry, naming them.
func carried(call string, p materialize.Params) error {
	refused := slices.Clone(p.Custom)
	if p.StreamID != "" {
		refused = append([]string{"FromStream"}, refused...)
	}
	if len(refused) > 0 {
		return fmt.Errorf("client: %w: %s of %s: the query API does not take it; ask the journal itself (krply.Open) for it", ErrInvalidArgument, strings.Join(refused, ", "), call)
	}
	return nil
}

// Why returns what changed before q.Object broke, as why.Explainer.Explain
// does. The server never serves Secret values (q.SecretValues is not sent)
// and leaves out the cluster-scoped dependencies the caller may not read.
func (c *Client) Why(ctx context.Context, q why.Query) (*why.Answer, error) {
	v := objectQuery(q.Object)
	setTime(v, "at", q.At)
	setTime(v, "from", q.From)
	if q.Before != 0 {
		v.Set("before", q.Before.String())
	}
	if q.After != 0 {
		v.Set("after", q.After.String())
	}
	if q.MaxObjects != 0 {
		v.Set("maxObjects", strconv.Itoa(q.MaxObjects))
	}
	var out why.Answer
	if err := c.do(ctx, http.MethodGet, "/api/v1/why", v, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Snapshot computes the snapshot of scope at at (nothing is saved). The
// server answers it a page at a time; Snapshot reads every page, all at
// the time the first one resolved at to, and puts them together.
func (c *Client) Snapshot(ctx context.Context, scope materialize.Scope, at time.Time) (*materialize.Snapshot, error) {
	q := scopeQuery(scope)
	q.Set("at", timeParam(at))
	return wholeSnapshot(ctx, c, "/api/v1/snapshot", q)
}

// SaveSnapshot computes the snapshot of scope at at and saves it under
// name (the server must allow writes), and returns it whole: the server
// answers its first page, and the others are read from the saved
// snapshot.
func (c *Client) SaveSnapshot(ctx context.Context, scope materialize.Scope, at time.Time, name string) (*materialize.Snapshot, error) {
	var first apiv1.SnapshotPage
	req := apiv1.SnapshotRequest{Name: name, At: timeParam(at), Scope: scope}
	if err := c.do(ctx, http.MethodPost, "/api/v1/snapshots", url.Values{"limit": {objectsPageSize}}, req, &first); err != nil {
		return nil, err
	}
	whole := &first.Snapshot
	if first.Next == "" {
		return whole, nil
	}
	// The answer was the saved snapshot's first page: the others are
	// read where it was saved.
	q := url.Values{"limit": {objectsPageSize}, "cursor": {first.Next}}
	err := followPages(ctx, c, "/api/v1/snapshots/"+url.PathEscape(whole.ID), q, func(page *apiv1.SnapshotPage) string {
		addPage(whole, page)
		return page.Next
	})
	if err != nil {
		return nil, fmt.Errorf("snapshot %s saved; reading its pages after the first: %w", whole.ID, err)
	}
	return whole, nil
}

// ListSnapshots returns the saved snapshots of a cluster ("" for the
// journal's only one) without their objects, every page of them.
func (c *Client) ListSnapshots(ctx context.Context, clusterID string) ([]materialize.Snapshot, error) {
	return allPages[materialize.Snapshot](ctx, c, "/api/v1/snapshots", clusterQuery(clusterID))
}

// GetSnapshot returns a saved snapshot, every page of its objects.
func (c *Client) GetSnapshot(ctx context.Context, id string) (*materialize.Snapshot, error) {
	return wholeSnapshot(ctx, c, "/api/v1/snapshots/"+url.PathEscape(id), url.Values{})
}

// Diff compares scope at from with scope at to, as
// materialize.Materializer.Diff does, with the option IncludeStatus (the
// other comparison options are refused with ErrInvalidArgument: the query
// API does not carry them). As Snapshot, it reads every page of the
// answer.
func (c *Client) Diff(ctx context.Context, scope materialize.Scope, from, to time.Time, opts ...materialize.CompareOption) (*materialize.Diff, error) {
	p, err := materialize.CompareParams(opts...)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	if err := carried("Diff", p); err != nil {
		return nil, err
	}
	q := scopeQuery(scope)
	q.Set("from", timeParam(from))
	q.Set("to", timeParam(to))
	if p.IncludeStatus != nil {
		q.Set("includeStatus", strconv.FormatBool(*p.IncludeStatus))
	}
	q.Set("limit", objectsPageSize)
	var whole *materialize.Diff
	err = followPages(ctx, c, "/api/v1/diff", q, func(page *apiv1.DiffPage) string {
		if whole == nil {
			whole = &page.Diff
		} else {
			whole.Objects = append(whole.Objects, page.Objects...)
			whole.HasGaps = whole.HasGaps || page.HasGaps
			whole.Warnings = addWarnings(whole.Warnings, page.Warnings)
		}
		return page.Next
	})
	return whole, err
}

// Find asks when the condition expr (CEL over object, for a server
// started with server.WithConditions) held for the objects of q.Scope:
// the intervals, with their unknown ends (materialize.Found). The server
// leaves Secrets out (q.ExcludeResources is its own).
func (c *Client) Find(ctx context.Context, q materialize.FindQuery, expr string) (*materialize.Found, error) {
	v := scopeQuery(q.Scope)
	v.Set("expr", expr)
	if q.LabelSelector != "" {
		v.Set("labelSelector", q.LabelSelector)
	}
	setTime(v, "since", q.Since)
	setTime(v, "until", q.Until)
	if q.First {
		v.Set("first", "true")
	}
	if q.Now {
		v.Set("now", "true")
	}
	var out apiv1.Found
	if err := c.do(ctx, http.MethodGet, "/api/v1/find", v, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Plan plans a replay and saves the plan (the server must allow writes).
func (c *Client) Plan(ctx context.Context, req apiv1.PlanRequest) (*replayapi.Plan, error) {
	return c.plan(ctx, req, nil)
}

// PreviewPlan plans a replay without saving it.
func (c *Client) PreviewPlan(ctx context.Context, req apiv1.PlanRequest) (*replayapi.Plan, error) {
	return c.plan(ctx, req, url.Values{"preview": {"true"}})
}

func (c *Client) plan(ctx context.Context, req apiv1.PlanRequest, q url.Values) (*replayapi.Plan, error) {
	var out replayapi.Plan
	if err := c.do(ctx, http.MethodPost, "/api/v1/plans", q, req, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListPlans returns the saved plans of cluster ("": the journal's only
// cluster), in the order they were saved, without their objects: every
// page of GET /api/v1/plans.
func (c *Client) ListPlans(ctx context.Context, clusterID string) ([]apiv1.PlanSummary, error) {
	return allPages[apiv1.PlanSummary](ctx, c, "/api/v1/plans", clusterQuery(clusterID))
}

// LoadPlan returns a saved plan with its status and last dry run, as
// replay.Planner.LoadPlan does.
func (c *Client) LoadPlan(ctx context.Context, id string) (*replayapi.Plan, error) {
	var out replayapi.Plan
	if err := c.do(ctx, http.MethodGet, "/api/v1/plans/"+url.PathEscape(id), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// PlanYAML returns a saved plan as the multi-document YAML that kubectl
// apply --server-side takes.
func (c *Client) PlanYAML(ctx context.Context, id string) ([]byte, error) {
	resp, err := c.request(ctx, http.MethodGet, "/api/v1/plans/"+url.PathEscape(id), nil, nil, "application/yaml")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("client: read plan %s: %w", id, err)
	}
	return raw, nil
}

// DryRun dry-runs a saved plan against the server's target cluster (its
// WithDryRun), and the server saves the report. Unlike
// replay.Planner.DryRun it takes no cluster: the client never writes to a
// cluster itself, and does not link replay's apply path.
func (c *Client) DryRun(ctx context.Context, id string) (*replayapi.DryRunReport, error) {
	var out replayapi.DryRunReport
	if err := c.do(ctx, http.MethodPost, "/api/v1/plans/"+url.PathEscape(id)+"/dryrun", nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Apply applies the saved plan confirm names, with its hash confirmed.
func (c *Client) Apply(ctx context.Context, confirm replayapi.Confirmation) (*replayapi.ApplyReport, error) {
	var out replayapi.ApplyReport
	if err := c.do(ctx, http.MethodPost, "/api/v1/plans/"+url.PathEscape(confirm.PlanID)+"/apply", nil, confirm, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// WatchQuery selects the records of a change feed. Cursor resumes after
// the record with that ID (a FeedEvent's ID); empty starts with the
// records appended after the request, "0" at the journal's start.
// Filter, a change expression (see github.com/krply/krply/cel,
// CompileChange), keeps of the records of objects the versions whose
// change it matches (ExcludeStatus: change.paths leave out .status);
// records of no object, gaps among them, pass (docs/reference/query-api.md).
type WatchQuery struct {
	Scope         materialize.Scope
	Name          string
	Types         []event.RecordType
	WithoutBodies bool
	Cursor        string
	Filter        string
	ExcludeStatus bool
}

// Feed is an open change feed. It reconnects by itself: when the
// connection drops (the network, a proxy's timeout, the server restarting),
// Next opens the feed again after the last record it returned, so that
// every record is returned once, none twice, none lost.
type Feed struct {
	c   *Client
	ctx context.Context
	q   url.Values // the query, without the cursor

	mu     sync.Mutex
	body   io.ReadCloser // nil while disconnected
	closed bool

	sc *bufio.Scanner
	// cursor is the ID of the last record returned (or where the feed
	// started), reconnects the number of times the feed was opened again.
	cursor     string
	reconnects int
	// warnings are the feed's warning events (the last maxFeedWarnings).
	warnings []string
}

// Watch opens the change feed (GET /api/v1/watch) and returns it once the
// server answered; read it with Next until ctx ends or Close.
func (c *Client) Watch(ctx context.Context, wq WatchQuery) (*Feed, error) {
	q := RecordQuery{Scope: wq.Scope, Name: wq.Name, Types: wq.Types, WithoutBodies: wq.WithoutBodies}.values()
	if wq.Filter != "" {
		q.Set("filter", wq.Filter)
		if wq.ExcludeStatus {
			q.Set("includeStatus", "false")
		}
	} else if wq.ExcludeStatus {
		return nil, fmt.Errorf("client: %w: WatchQuery.ExcludeStatus says what a Filter sees: give Filter too", ErrInvalidArgument)
	}
	f := &Feed{c: c, ctx: ctx, q: q, cursor: wq.Cursor}
	if err := f.open(); err != nil {
		return nil, err
	}
	return f, nil
}

// open asks for the feed after the cursor.
func (f *Feed) open() error {
	q := maps.Clone(f.q)
	if f.cursor != "" {
		q.Set("cursor", f.cursor)
	}
	resp, err := f.c.request(f.ctx, http.MethodGet, "/api/v1/watch", q, nil, "text/event-stream")
	if err != nil {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		resp.Body.Close()
		return errFeedClosed
	}
	f.body = resp.Body
	f.sc = bufio.NewScanner(resp.Body)
	f.sc.Buffer(make([]byte, 64<<10), 64<<20)
	return nil
}

var errFeedClosed = errors.New("client: feed closed")

// Cursor is the ID of the last record Next returned (or where the feed
// started: the cursor it was opened with, or the journal's position the
// server named).
func (f *Feed) Cursor() string { return f.cursor }

// Reconnects is how many times the feed was opened again after its
// connection dropped.
func (f *Feed) Reconnects() int { return f.reconnects }

// Warnings returns the warnings the server sent so far (the most recent
// ones, up to 100), e.g. that a filter could not be evaluated on some
// versions. Call it from the goroutine that calls Next.
func (f *Feed) Warnings() []string { return slices.Clone(f.warnings) }

// maxFeedWarnings bounds the warnings a Feed keeps.
const maxFeedWarnings = 100

// Close ends the feed; a Next waiting in another goroutine returns.
func (f *Feed) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	if f.body == nil {
		return nil
	}
	return f.body.Close()
}

// reconnectBackoff bounds the waits between attempts to open a dropped
// feed again: the first attempt is at once, and the server's 5xx, 429 or
// an unreachable server double the wait up to the maximum.
const (
	reconnectFirstWait = 100 * time.Millisecond
	reconnectMaxWait   = 5 * time.Second
)

// Next returns the next record of the feed, waiting for one. A dropped
// connection is opened again after the last record returned, waiting
// between attempts while the server cannot be reached or answers a 5xx or
// 429; it returns an error when ctx ends, after Close, when the server
// answers another error (its *apiv1.Error: an expired token, a journal
// gone), and for an error event of the server (its *apiv1.Error).
func (f *Feed) Next() (event.Record, error) {
	wait := time.Duration(0)
	for {
		f.mu.Lock()
		closed, connected := f.closed, f.body != nil
		f.mu.Unlock()
		if closed {
			return event.Record{}, errFeedClosed
		}
		if !connected {
			err := f.open()
			if errors.Is(err, errFeedClosed) || f.ctx.Err() != nil || !transient(err) {
				return event.Record{}, err
			}
			if err != nil {
				wait = min(max(2*wait, reconnectFirstWait), reconnectMaxWait)
				select {
				case <-time.After(wait):
				case <-f.ctx.Done():
					return event.Record{}, fmt.Errorf("client: feed: %w", f.ctx.Err())
				}
				continue
			}
			f.reconnects++
			wait = 0
		}
		rec, dropped, err := f.read()
		if !dropped || f.ctx.Err() != nil {
			return rec, err
		}
		// The connection dropped: open the feed again after the cursor.
		f.mu.Lock()
		f.body.Close()
		f.body, closed = nil, f.closed
		f.mu.Unlock()
		if closed {
			return event.Record{}, errFeedClosed
		}
	}
}

// transient reports whether opening the feed failed for a reason that
// passes: no answer (the network, a server restarting), or a 5xx or 429.
func transient(err error) bool {
	var e *apiv1.Error
	if errors.As(err, &e) {
		return e.Status >= 500 || e.Status == http.StatusTooManyRequests
	}
	return true
}

// read reads the connection's next record. An error event of the server
// is returned as its *apiv1.Error; a lost connection as the read error
// (io.ErrUnexpectedEOF when the server ended the feed), dropped true.
func (f *Feed) read() (rec event.Record, dropped bool, err error) {
	var ev apiv1.FeedEvent
	var data []byte
	for f.sc.Scan() {
		line := f.sc.Text()
		switch {
		case line == "":
			if data == nil {
				// A block without data dispatches nothing, but its id
				// is where the feed resumes (the server's first block).
				if ev.ID != "" {
					f.cursor = ev.ID
				}
				ev = apiv1.FeedEvent{}
				continue
			}
			switch ev.Type {
			case "record":
				if err := json.Unmarshal(data, &rec); err != nil {
					return event.Record{}, false, fmt.Errorf("client: feed event %s: %w", ev.ID, err)
				}
				f.cursor = ev.ID
				return rec, false, nil
			case "error":
				var e apiv1.Error
				if err := json.Unmarshal(data, &e); err != nil {
					return event.Record{}, false, fmt.Errorf("client: feed error event: %w", err)
				}
				return event.Record{}, false, &e
			case "warning":
				var w struct {
					Warning string `json:"warning"`
				}
				if err := json.Unmarshal(data, &w); err != nil {
					return event.Record{}, false, fmt.Errorf("client: feed warning event: %w", err)
				}
				if len(f.warnings) == maxFeedWarnings {
					f.warnings = slices.Delete(f.warnings, 0, 1)
				}
				f.warnings = append(f.warnings, w.Warning)
			}
			ev, data = apiv1.FeedEvent{}, nil
		case strings.HasPrefix(line, ":"):
		case strings.HasPrefix(line, "id:"):
			ev.ID = strings.TrimSpace(strings.TrimPrefix(line, "id:"))
		case strings.HasPrefix(line, "event:"):
			ev.Type = strings.TrimSpace(strings.TrimPrefix(line, "event:"))
		case strings.HasPrefix(line, "data:"):
			d := strings.TrimPrefix(strings.TrimPrefix(line, "data:"), " ")
			if data != nil {
				data = append(data, '\n')
			}
			data = append(data, d...)
		}
	}
	if err := f.sc.Err(); err != nil {
		return event.Record{}, !errors.Is(err, bufio.ErrTooLong), fmt.Errorf("client: feed: %w", err)
	}
	return event.Record{}, true, fmt.Errorf("client: feed: %w", io.ErrUnexpectedEOF)
}
