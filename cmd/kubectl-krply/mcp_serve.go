package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"

	"github.com/krply/krply/server"
	"github.com/krply/krply/server/client"
)

// ---- stdio: kubectl krply mcp

func (e *env) mcpCommand() *cobra.Command {
	var o mcpOptions
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the journal to an AI assistant over the Model Context Protocol (stdio)",
		Long: `mcp serves krply's history to an AI assistant (an MCP client such as Claude
Desktop, Claude Code, VS Code or an SRE agent) over the Model Context
Protocol on stdin and stdout, answering from --journal or --server as every
command does. It offers the tools status, get, history, blame, snapshot,
diff, gaps, why, find and replay_plan; every answer says in its structured
output and its text's first line whether it is complete, and lists are
paged.

replay_plan saves a plan for a person to review and changes no cluster.
--allow-dry-run adds the tool replay_dry_run and --allow-apply the tool
replay_apply (which needs the plan's hash), against the cluster
--kubeconfig and --context select (with --server, the query API's own).

A recorder's --listen serves the same over Streamable HTTP at /mcp, behind
its authentication and per-namespace authorization.`,
		Example: `  kubectl krply mcp --journal krply.db
  kubectl krply mcp --server https://krply.example:8443 --token-file token`,
		Args: noArgs,
	}
	cmd.Flags().BoolVar(&o.allowDryRun, "allow-dry-run", false, "offer the replay_dry_run tool: server-side dry runs of saved plans against the target cluster")
	cmd.Flags().BoolVar(&o.allowApply, "allow-apply", false, "offer the replay_apply tool (and replay_dry_run): apply a saved plan given its hash, after its clean dry run")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		b := &fileBackend{e: e}
		defer b.close()
		// Errors of the first open name the wrong flag before the client
		// is told of any tool.
		_, release, err := b.open(cmd.Context(), nil, false)
		if err != nil {
			return err
		}
		release()
		o.target = func() (*rest.Config, error) { return e.kube.ToRESTConfig() }
		o.now = e.now
		s := newMCPServer(b, o)
		err = s.Run(cmd.Context(), &mcp.IOTransport{Reader: io.NopCloser(e.In), Writer: nopWriteCloser{e.Out}})
		if errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	return cmd
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// fileBackend answers from the plugin's --journal or --server: one
// read-only source for the session, a writable one opened for each call
// that saves.
type fileBackend struct {
	e    *env
	mu   sync.Mutex
	read source
}

func (b *fileBackend) open(ctx context.Context, _ *mcp.RequestExtra, writes bool) (source, func(), error) {
	if writes {
		src, err := b.e.open(ctx, true)
		if err != nil {
			return nil, nil, err
		}
		return src, func() { _ = src.Close() }, nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.read == nil {
		src, err := b.e.open(ctx, false)
		if err != nil {
			return nil, nil, err
		}
		b.read = src
	}
	return b.read, func() {}, nil
}

func (b *fileBackend) close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.read != nil {
		_ = b.read.Close()
	}
}

func (b *fileBackend) cluster(ctx context.Context, src source, given, _ string) (string, error) {
	if given != "" {
		return given, nil
	}
	return b.e.clusterOf(ctx, src)
}

// ---- Streamable HTTP: a recorder's --listen

// mcpHandler serves MCP at mcpPath beside the query API api, which
// answers every tool call: each call asks api in process with the HTTP
// request's own Authorization header, so that it is authenticated and
// authorized exactly as the same question to the query API (a tool call
// about namespace N needs get on history.krply.io in N). A request api
// does not authenticate is refused 401 before MCP sees it.
func mcpHandler(api http.Handler, o mcpOptions) http.Handler {
	b := apiBackend{api: api}
	s := newMCPServer(b, o)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
	mux := http.NewServeMux()
	mux.Handle(mcpPath, b.authenticated(h))
	mux.Handle("/", api)
	return mux
}

// apiBackend answers from the query API in process.
type apiBackend struct{ api http.Handler }

// apiBase is the base URL of in-process requests to the query API.
const apiBase = "http://krply-api.invalid"

func (b apiBackend) open(_ context.Context, extra *mcp.RequestExtra, _ bool) (source, func(), error) {
	var header http.Header
	if extra != nil {
		header = extra.Header
	}
	c, err := client.New(apiBase, client.WithHTTPClient(&http.Client{Transport: inProcess{api: b.api, header: header}}))
	if err != nil {
		return nil, nil, err
	}
	return &serverSource{url: mcpPath, c: c}, func() {}, nil
}

// cluster returns the cluster given, or the journal's only one among the
// streams the caller may read (the query API answers the journal's
// cluster list only to those who may read every namespace).
func (b apiBackend) cluster(ctx context.Context, src source, given, namespace string) (string, error) {
	if given != "" {
		return given, nil
	}
	streams, err := src.Streams(ctx, "", namespace, time.Now())
	if err != nil {
		return "", err
	}
	var ids []string
	for _, st := range streams {
		if !contains(ids, st.Status.Stream.ClusterID) {
			ids = append(ids, st.Status.Stream.ClusterID)
		}
	}
	sort.Strings(ids)
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("the journal records no stream of namespace %q", namespace)
	case 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("the journal holds several clusters (%s): give cluster", strings.Join(ids, ", "))
}

// authenticated refuses a request the query API does not authenticate,
// with the API's own answer, by asking it the cheapest authenticated
// question (the cluster list: 403 means authenticated but not allowed
// cluster scope, which tool calls about a namespace do not need).
func (b apiBackend) authenticated(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		probe, err := http.NewRequestWithContext(r.Context(), http.MethodGet, server.Prefix+"clusters", nil)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		probe.Header.Set("Authorization", r.Header.Get("Authorization"))
		rec := httptest.NewRecorder()
		b.api.ServeHTTP(rec, probe)
		if rec.Code == http.StatusUnauthorized || rec.Code >= 500 {
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			w.WriteHeader(rec.Code)
			_, _ = w.Write(rec.Body.Bytes())
			return
		}
		next.ServeHTTP(w, r)
	})
}

// inProcess sends a client's requests to a handler in process, with the
// Authorization header of the MCP request they answer.
type inProcess struct {
	api    http.Handler
	header http.Header
}

func (t inProcess) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Del("Authorization")
	if a := t.header.Get("Authorization"); a != "" {
		r.Header.Set("Authorization", a)
	}
	rec := httptest.NewRecorder()
	t.api.ServeHTTP(rec, r)
	return rec.Result(), nil
}

// ---- resources

// addResources registers the streams (krply://streams) and saved plans
// (krply://plans/{id}).
func (k *mcpKit) addResources(s *mcp.Server) {
	s.AddResource(&mcp.Resource{URI: "krply://streams", Name: "streams", Title: "The journal's streams and their coverage now",
		Description: "The journal's streams with their coverage now: the status tool's first page of at most 200 streams (the tool pages on and takes a namespace).", MIMEType: "application/json"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return k.readJSON(ctx, req, func(ctx context.Context, c *mcpCall) (any, error) {
				return statusTool(ctx, c, statusArgs{pageArgs: pageArgs{Limit: mcpMaxLimit}})
			})
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "krply://namespaces/{namespace}/streams", Name: "namespace-streams", Title: "A namespace's streams and their coverage now",
		Description: "The streams of one namespace (and the cluster-scoped ones) with their coverage now: what a reader of only that namespace may see.", MIMEType: "application/json"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			ns := strings.TrimSuffix(strings.TrimPrefix(req.Params.URI, "krply://namespaces/"), "/streams")
			return k.readJSON(ctx, req, func(ctx context.Context, c *mcpCall) (any, error) {
				return statusTool(ctx, c, statusArgs{Namespace: ns, pageArgs: pageArgs{Limit: mcpMaxLimit}})
			})
		})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "krply://plans/{id}", Name: "plan", Title: "A saved replay plan",
		Description: "A replay plan saved in the journal (replay_plan saves one): its objects, exclusions, coverage and hash, for review.", MIMEType: "application/json"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			id := strings.TrimPrefix(req.Params.URI, "krply://plans/")
			return k.readJSON(ctx, req, func(ctx context.Context, c *mcpCall) (any, error) {
				return c.src.LoadPlan(ctx, id)
			})
		})
}

// readJSON answers a resource read with the JSON of what fn returns.
func (k *mcpKit) readJSON(ctx context.Context, req *mcp.ReadResourceRequest, fn func(context.Context, *mcpCall) (any, error)) (*mcp.ReadResourceResult, error) {
	src, release, err := k.backend.open(ctx, req.Extra, false)
	if err != nil {
		return nil, mcpError(err)
	}
	defer release()
	v, err := fn(ctx, &mcpCall{mcpKit: k, src: src, now: k.opts.now()})
	if err != nil {
		return nil, mcpError(err)
	}
	raw, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "application/json", Text: string(raw)}}}, nil
}

// ---- prompts

func addPrompts(s *mcp.Server) {
	s.AddPrompt(&mcp.Prompt{Name: "investigate_incident", Title: "Investigate an incident in a namespace",
		Description: "Steers an investigation of what changed in a namespace since a time (status and gaps, diff, why and find, history), reading coverage at every step.",
		Arguments: []*mcp.PromptArgument{
			{Name: "namespace", Description: "the namespace of the incident", Required: true},
			{Name: "since", Description: `when to look from: RFC 3339 or a duration ago ("2h ago")`, Required: true},
		}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		ns, since := req.Params.Arguments["namespace"], req.Params.Arguments["since"]
		if ns == "" || since == "" {
			return nil, errors.New("give the arguments namespace and since")
		}
		return &mcp.GetPromptResult{Description: "Investigate namespace " + ns + " since " + since, Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf(
			`Investigate what changed in Kubernetes namespace %[1]s since %[2]s, using krply's tools.
1. Call status with namespace %[1]s and gaps with namespace %[1]s and since %[2]q: note every stream that is not covered and every gap.
2. Call diff with namespace %[1]s, from %[2]q, to "now": list what was added, removed and changed.
3. For an object that broke, call why with its resource, name and namespace %[1]s: its dependencies' changes ranked as causes. To learn when a condition held (replicas below 2, an image), call find with a CEL expression over object.
4. For each changed object that matters, call history (and blame for a field) to see when and by whom.
Read coverage in every answer: where it is incomplete, say that changes may be missing in that window and never conclude that nothing changed there.
Report a timeline of the changes with who made them, the gaps, and what remains unknown.`, ns, since)}}}}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "restore_namespace", Title: "Plan a restore of a namespace for review",
		Description: "Steers saving a replay plan of a namespace as it was at a time, for a person to review.",
		Arguments: []*mcp.PromptArgument{
			{Name: "namespace", Description: "the namespace to restore", Required: true},
			{Name: "at", Description: "the time whose state to restore", Required: true},
			{Name: "toNamespace", Description: "the sandbox namespace to restore into"},
		}}, func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		a := req.Params.Arguments
		if a["namespace"] == "" || a["at"] == "" {
			return nil, errors.New("give the arguments namespace and at")
		}
		return &mcp.GetPromptResult{Description: "Plan a restore of " + a["namespace"], Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: fmt.Sprintf(
			`Plan restoring Kubernetes namespace %[1]s as it was at %[2]s into namespace %[3]q (empty: the same name), using krply's tools.
1. Call snapshot with namespace %[1]s and at %[2]q and check its coverage: if incomplete, tell me what may be missing before planning.
2. Call replay_plan with the same namespace, at and toNamespace; do not set allowGaps unless I agree.
3. Show me the plan's ID, hash, objects and exclusions. Do not dry-run or apply it: I review it first.`, a["namespace"], a["at"], a["toNamespace"])}}}}, nil
	})
}
