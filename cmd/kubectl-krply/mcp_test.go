package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest/golden"
	"github.com/krply/krply/krplytest/recording"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/server"
	"github.com/krply/krply/storage"
)

// The tools' names, descriptions and JSON schemas are a promise to the
// agents that call them: testdata/mcp-tools.json pins them (go test -run
// TestMCPToolSchemas -update rewrites it), with every tool offered.
func TestMCPToolSchemas(t *testing.T) {
	ctx := context.Background()
	cs := connectInMemory(t, newMCPServer(&fileBackend{e: newEnv(streams(io.Discard, io.Discard))}, mcpOptions{allowDryRun: true, allowApply: true}))
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.MarshalIndent(tools.Tools, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "mcp-tools.json"), append(raw, '\n'), "the MCP tools' schemas changed: agents read them")
	for _, tool := range tools.Tools {
		out, _ := json.Marshal(tool.OutputSchema)
		if !strings.Contains(string(out), `"coverage"`) {
			t.Errorf("tool %s: its output schema has no coverage: %s", tool.Name, out)
		}
	}
}

// connectInMemory connects an SDK client to s in process.
func connectInMemory(t *testing.T, s *mcp.Server) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// outage is a journal recorded on the real control plane through an
// outage (krplytest/recording), and the times to ask about.
type outage struct {
	*recording.Recorded
	path string
	// inGap lies inside the gap of the ConfigMaps' stream, end after the
	// last write, covered; resumed is when that stream is continuous again
	// after the gap (the end of the relist that closed it).
	inGap, end, resumed time.Time
	gap                 event.Gap
}

func recordOutage(t *testing.T) *outage {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "outage.db")
	j, closeJournal, err := openStore(ctx, path, false)
	if err != nil {
		t.Fatal(err)
	}
	rec := recording.Record(t, j.Store())
	o := &outage{Recorded: rec, path: path}
	page, err := j.Store().Records(ctx, storage.Query{ClusterID: rec.ClusterID, Types: []event.RecordType{event.TypeGap}, WithoutBodies: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range page.Records {
		if strings.Contains(r.StreamID, "configmaps") {
			o.gap = *r.Gap
			tl, err := storage.StreamTimeline(ctx, j.Store(), r.StreamID)
			if err != nil {
				t.Fatal(err)
			}
			for _, at := range tl.ContinuityChanges() {
				if ok, _ := tl.ContinuousAt(at); ok && at.After(o.gap.From) && o.resumed.IsZero() {
					o.resumed = at
				}
			}
		}
	}
	if o.gap.To.IsZero() || o.resumed.IsZero() {
		t.Fatalf("the recorded journal has no gap of configmaps that ends: %+v", page.Records)
	}
	o.inGap = o.gap.From.Add(o.gap.To.Sub(o.gap.From) / 2)
	st, err := j.Store().Streams(ctx, rec.ClusterID)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range st {
		if o.end.IsZero() || s.CheckpointAt.Before(o.end) {
			o.end = s.CheckpointAt
		}
	}
	o.end = o.end.Add(-time.Millisecond)
	if err := closeJournal(); err != nil {
		t.Fatal(err)
	}
	return o
}

// TestMCP drives the MCP server with the SDK's client over stdio
// (kubectl krply mcp) and over Streamable HTTP (kubectl krply record
// --listen, with the cluster's TokenReview and SubjectAccessReview)
// against a journal recorded through an outage: every tool answers, an
// answer about a time in the gap says INCOMPLETE in its structured output
// and its text's first line, replay_plan saves a plan that cannot be
// applied without --allow-apply and its hash, and a namespace the user
// may not read is refused over HTTP.
func TestMCP(t *testing.T) {
	o := recordOutage(t)
	t.Run("stdio", func(t *testing.T) {
		var transcript bytes.Buffer
		cs := connectStdio(t, &transcript, "--journal", o.path)
		exercise(t, cs, o)
		// The recorder has stopped: now is after the journal's last
		// evidence, not yet observed (ask again later), not a gap.
		now := callTool(t, cs, "get", map[string]any{"resource": "cm", "name": "settings", "namespace": o.Namespace, "at": "now"})
		if now.coverage()["state"] != stateNotYetObserved || !strings.HasPrefix(now.text, "NOT YET OBSERVED: ") {
			t.Errorf("get at now, after the recorder stopped: %v\n%s", now.coverage(), now.text)
		}
		if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "replay_apply", Arguments: map[string]any{"planId": "x", "hash": "y"}}); err == nil || !strings.Contains(err.Error(), "replay_apply") {
			t.Errorf("replay_apply without --allow-apply: %v, want an unknown tool", err)
		}
		if path := os.Getenv("KRPLY_MCP_TRANSCRIPT"); path != "" {
			if err := os.WriteFile(path, transcript.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("stdio-allow-apply", func(t *testing.T) {
		cs := connectStdio(t, nil, "--journal", o.path, "--kubeconfig", o.Env.Kubeconfig(), "--allow-apply")
		ctx := context.Background()
		plan := callTool(t, cs, "replay_plan", map[string]any{"namespace": o.Namespace, "at": mcpTime(o.end), "toNamespace": o.Namespace + "-mcp"})
		id, hash := plan.out["planId"].(string), plan.out["hash"].(string)
		for _, args := range []map[string]any{{"planId": id}, {"planId": id, "hash": "sha256:0000"}} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "replay_apply", Arguments: args})
			if err == nil && !res.IsError {
				t.Fatalf("replay_apply %v: applied without the plan's hash: %+v", args, res)
			}
		}
		// With its hash, the plan still goes through replay's checks: this
		// one is refused for want of a clean dry run, and because its target
		// is the cluster it was recorded from.
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "replay_apply", Arguments: map[string]any{"planId": id, "hash": hash}})
		if err != nil || !res.IsError {
			t.Fatalf("replay_apply with the hash but no dry run: %v %+v, want refused", err, res)
		}
	})
	t.Run("http", func(t *testing.T) {
		ctx := context.Background()
		admin, err := kubernetes.NewForConfig(o.Env.Config())
		if err != nil {
			t.Fatal(err)
		}
		// alice may read the namespace's history and save plans; bob may not.
		if _, err := admin.RbacV1().Roles(o.Namespace).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "history-mcp"},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{server.AuthGroup}, Resources: []string{server.ResourceHistory}, Verbs: []string{"get", "create"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := admin.RbacV1().RoleBindings(o.Namespace).Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "alice-mcp"},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "history-mcp"},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: testenv.UserAlice}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		out, stop := startRecord(t, "--kubeconfig", o.Env.Kubeconfig(), "--journal", o.path, "-n", o.Namespace, "--resource", "cm,deploy",
			"--listen", "127.0.0.1:0", "--delegated-auth", "--listen-allow-writes", "--status-every", "0")
		serving := regexp.MustCompile(`serving the query API on (http://\S+) `)
		var base string
		waitFor(t, "query API", time.Minute, func() bool {
			if m := serving.FindStringSubmatch(out.String()); m != nil {
				base = m[1]
			}
			return base != ""
		})
		defer stop()
		as := func(user string) *mcp.ClientSession {
			cs, err := connectHTTP(base+mcpPath, o.Env.ConfigFor(user).BearerToken)
			if err != nil {
				t.Fatalf("connect as %s: %v", user, err)
			}
			t.Cleanup(func() { _ = cs.Close() })
			return cs
		}
		exercise(t, as(testenv.UserAlice), o)

		bob := as(testenv.UserBob)
		settings := map[string]any{"resource": "cm", "name": "settings", "namespace": o.Namespace}
		for tool, args := range map[string]map[string]any{"get": settings, "why": settings, "find": {"expression": "true", "namespace": o.Namespace}} {
			res, err := bob.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
			if err != nil || !res.IsError || !strings.Contains(text(res), "forbidden") || strings.Contains(text(res), `"v"`) {
				t.Errorf("%s as bob, who may not read %s: %v %s; want refused as forbidden", tool, o.Namespace, err, text(res))
			}
		}
		if _, err := connectHTTP(base+mcpPath, ""); err == nil || !strings.Contains(err.Error(), "Unauthorized") {
			t.Errorf("connect without a token: %v, want 401 Unauthorized", err)
		}
		if _, err := connectHTTP(base+mcpPath, "not-a-token"); err == nil {
			t.Errorf("connect with an unknown token: accepted")
		}
	})
}

// connectStdio runs kubectl krply mcp with args in process and connects
// the SDK's client to its stdin and stdout; transcript, if not nil,
// receives the exchange.
func connectStdio(t *testing.T, transcript io.Writer, args ...string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	var errOut testenv.Buffer
	done := make(chan int, 1)
	go func() {
		e := newEnv(streams(outW, &errOut))
		e.In = inR
		done <- e.execute(ctx, append([]string{"mcp"}, args...))
		_ = outW.Close()
	}()
	var transport mcp.Transport = &mcp.IOTransport{Reader: outR, Writer: inW}
	if transcript != nil {
		transport = &mcp.LoggingTransport{Transport: transport, Writer: transcript}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "krply-test", Version: "v1"}, nil).Connect(ctx, transport, nil)
	if err != nil {
		t.Fatalf("connect to kubectl krply mcp %s: %v\n%s", strings.Join(args, " "), err, errOut.String())
	}
	t.Cleanup(func() {
		_ = cs.Close()
		select {
		case code := <-done:
			if code != exitOK {
				t.Errorf("kubectl krply mcp exited %d:\n%s", code, errOut.String())
			}
		case <-time.After(30 * time.Second):
			t.Errorf("kubectl krply mcp did not end when its stdin closed")
		}
		cancel()
	})
	return cs
}

// connectHTTP connects the SDK's client to endpoint with a bearer token.
func connectHTTP(endpoint, token string) (*mcp.ClientSession, error) {
	hc := &http.Client{Transport: bearer{token: token}}
	return mcp.NewClient(&mcp.Implementation{Name: "krply-test", Version: "v1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
}

type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	if b.token != "" {
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer "+b.token)
	}
	return http.DefaultTransport.RoundTrip(r)
}

// answer is a tool's result: its structured output and its text.
type answer struct {
	out  map[string]any
	text string
}

func (a answer) coverage() map[string]any {
	c, _ := a.out["coverage"].(map[string]any)
	return c
}

// callTool calls a tool that must answer.
func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) answer {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s %v: %v", name, args, err)
	}
	if res.IsError {
		t.Fatalf("%s %v: tool error: %s", name, args, text(res))
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	a := answer{text: text(res)}
	if err := json.Unmarshal(raw, &a.out); err != nil {
		t.Fatalf("%s: structured output %s: %v", name, raw, err)
	}
	if a.coverage() == nil {
		t.Fatalf("%s %v: no coverage in %s", name, args, raw)
	}
	return a
}

func text(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// wantCoverage checks that an answer is complete or not, in its
// structured output and its text's first line.
func wantCoverage(t *testing.T, what string, a answer, complete bool) {
	t.Helper()
	first, _, _ := strings.Cut(a.text, "\n")
	got := a.coverage()["complete"] == true
	if got != complete || strings.HasPrefix(first, "COMPLETE") != complete || (!complete && !strings.HasPrefix(first, "INCOMPLETE")) {
		t.Errorf("%s: complete=%v, text's first line %q; want complete=%v\n%s", what, a.coverage()["complete"], first, complete, a.text)
	}
}

// exercise calls every tool, resource and prompt as one user of the
// journal of o.
func exercise(t *testing.T, cs *mcp.ClientSession, o *outage) {
	t.Helper()
	ctx := context.Background()
	ns := o.Namespace
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
	}
	sort.Strings(names)
	if want := []string{"blame", "diff", "find", "gaps", "get", "history", "replay_plan", "snapshot", "status", "why"}; !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v (no dry run or apply without their flags)", names, want)
	}

	status := callTool(t, cs, "status", map[string]any{"namespace": ns})
	if streams, _ := status.out["streams"].([]any); len(streams) != 2 {
		t.Errorf("status: %d streams, want configmaps and deployments:\n%s", len(streams), status.text)
	}
	settings := map[string]any{"resource": "cm", "name": "settings", "namespace": ns}
	// In the gap the journal cannot know settings: incomplete. After it,
	// covered: complete, and the value alice set last.
	wantCoverage(t, "get in the gap", callTool(t, cs, "get", with(settings, "at", mcpTime(o.inGap))), false)
	got := callTool(t, cs, "get", with(settings, "at", mcpTime(o.end)))
	wantCoverage(t, "get at the end", got, true)
	if !strings.Contains(got.text, `"v": "red"`) {
		t.Errorf("get at the end: want data.v red:\n%s", got.text)
	}
	// cache was deleted in the outage: gone at the end, its deletion
	// inferred by the relist.
	cache := callTool(t, cs, "get", with(map[string]any{"resource": "configmaps", "name": "cache", "namespace": ns}, "at", mcpTime(o.end)))
	if cache.out["exists"] != false || cache.out["origin"] != "inferred" {
		t.Errorf("get cache at the end: %v, want deleted (inferred)", cache.out)
	}

	history := callTool(t, cs, "history", map[string]any{"resource": "cm", "name": "settings", "namespace": ns, "limit": 2})
	wantCoverage(t, "history across the gap", history, false)
	if history.out["nextCursor"] == nil || history.out["total"].(float64) <= 2 {
		t.Errorf("history with limit 2: no next page: %v", history.out)
	}
	rest := callTool(t, cs, "history", map[string]any{"resource": "cm", "name": "settings", "namespace": ns, "limit": 2, "cursor": history.out["nextCursor"]})
	if rest.out["offset"].(float64) != 2 {
		t.Errorf("history's second page: %v", rest.out)
	}
	if !strings.Contains(history.text+rest.text, "alice") && !strings.Contains(history.text+rest.text, "bob") {
		t.Errorf("history names no user:\n%s%s", history.text, rest.text)
	}
	blame := callTool(t, cs, "blame", map[string]any{"resource": "cm", "name": "settings", "namespace": ns})
	if !strings.Contains(blame.text, "data.v = red") {
		t.Errorf("blame: want data.v = red:\n%s", blame.text)
	}

	snap := callTool(t, cs, "snapshot", map[string]any{"namespace": ns, "at": mcpTime(o.inGap), "limit": 1})
	wantCoverage(t, "snapshot in the gap", snap, false)
	if objs, _ := snap.out["objects"].([]any); len(objs) != 1 || snap.out["nextCursor"] == nil {
		t.Errorf("snapshot with limit 1: %d objects, next %v", len(objs), snap.out["nextCursor"])
	}
	wantCoverage(t, "snapshot at the end", callTool(t, cs, "snapshot", map[string]any{"namespace": ns, "at": mcpTime(o.end)}), true)

	diff := callTool(t, cs, "diff", map[string]any{"namespace": ns, "from": mcpTime(o.gap.From.Add(-time.Millisecond)), "to": mcpTime(o.end)})
	wantCoverage(t, "diff across the gap", diff, false)
	if !strings.Contains(diff.text, "cache") || !strings.Contains(diff.text, "removed") {
		t.Errorf("diff across the gap: want cache removed:\n%s", diff.text)
	}

	gaps := callTool(t, cs, "gaps", map[string]any{"namespace": ns})
	wantCoverage(t, "gaps", gaps, false)
	if losses, _ := gaps.out["losses"].([]any); len(losses) == 0 {
		t.Errorf("gaps: none:\n%s", gaps.text)
	}

	whyTest(t, cs, o)
	findTest(t, cs, o)

	// replay_plan saves a plan; in the gap it refuses without allowGaps.
	plan := callTool(t, cs, "replay_plan", map[string]any{"namespace": ns, "at": mcpTime(o.end), "toNamespace": ns + "-copy"})
	wantCoverage(t, "replay_plan at the end", plan, true)
	id, _ := plan.out["planId"].(string)
	if id == "" || !strings.HasPrefix(plan.out["hash"].(string), "sha256:") {
		t.Fatalf("replay_plan: %v", plan.out)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "replay_plan", Arguments: map[string]any{"namespace": ns, "at": mcpTime(o.inGap)}})
	if err != nil || !res.IsError {
		t.Errorf("replay_plan in the gap without allowGaps: %v %s, want refused", err, text(res))
	}
	saved, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "krply://plans/" + id})
	if err != nil || len(saved.Contents) != 1 || !strings.Contains(saved.Contents[0].Text, plan.out["hash"].(string)) {
		t.Errorf("resource of plan %s: %v %+v", id, err, saved)
	}
	streams, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "krply://namespaces/" + ns + "/streams"})
	if err != nil || len(streams.Contents) != 1 || !strings.Contains(streams.Contents[0].Text, `"coverage"`) {
		t.Errorf("resource of the namespace's streams: %v %+v", err, streams)
	}
	prompt, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "investigate_incident", Arguments: map[string]string{"namespace": ns, "since": "1h ago"}})
	if err != nil || len(prompt.Messages) != 1 || !strings.Contains(fmt.Sprint(prompt.Messages[0].Content), ns) {
		t.Errorf("prompt investigate_incident: %v %+v", err, prompt)
	}
}

// whyTest asks why about settings: at a time in the gap the answer is
// incomplete and names the gap; with its window after the gap it is
// complete but for the Events, which the journal does not record.
func whyTest(t *testing.T, cs *mcp.ClientSession, o *outage) {
	t.Helper()
	settings := map[string]any{"resource": "cm", "name": "settings", "namespace": o.Namespace}
	inGap := callTool(t, cs, "why", with(settings, "at", mcpTime(o.inGap)))
	wantCoverage(t, "why in the gap", inGap, false)
	if gaps, _ := inGap.coverage()["gaps"].([]any); len(gaps) == 0 || !strings.Contains(inGap.text, "410") {
		t.Errorf("why in the gap: the gap is not named:\n%s", inGap.text)
	}
	if inGap.out["atSource"] != "given" || inGap.out["at"] != mcpTime(o.inGap) {
		t.Errorf("why in the gap: at %v (%v), want %s given", inGap.out["at"], inGap.out["atSource"], mcpTime(o.inGap))
	}
	// The window before the end holds the gap and the writes after it:
	// candidates, paged.
	end := callTool(t, cs, "why", with(with(settings, "at", mcpTime(o.end)), "limit", 1))
	wantCoverage(t, "why at the end, window across the gap", end, false)
	cands, _ := end.out["candidates"].([]any)
	if len(cands) != 1 || end.out["total"].(float64) < 1 {
		t.Fatalf("why at the end with limit 1: %d candidates of %v:\n%s", len(cands), end.out["total"], end.text)
	}
	if c := cands[0].(map[string]any); c["rank"] != 1.0 || c["observedAt"] == "" || len(c["reasons"].([]any)) == 0 {
		t.Errorf("why's first candidate: %v", c)
	}
	after := callTool(t, cs, "why", with(with(settings, "at", mcpTime(o.end)), "from", mcpTime(o.resumed.Add(time.Millisecond))))
	if reasons, _ := after.coverage()["reasons"].([]any); len(reasons) != 1 || reasons[0] != "Events not recorded" {
		t.Errorf("why with its window after the gap: reasons %v, want only Events not recorded:\n%s", reasons, after.text)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "why", Arguments: with(settings, "window", "yesterday")})
	if err != nil || !res.IsError || !strings.Contains(text(res), "window") {
		t.Errorf("why with window yesterday: %v %s, want an error naming window", err, text(res))
	}
}

// findTest asks when settings said red: across the gap the answer is
// incomplete, after it complete; intervals are paged.
func findTest(t *testing.T, cs *mcp.ClientSession, o *outage) {
	t.Helper()
	red := map[string]any{"expression": `object.data.v == "red"`, "namespace": o.Namespace, "resources": []string{"cm"}}
	across := callTool(t, cs, "find", with(with(red, "since", mcpTime(o.gap.From.Add(-time.Millisecond))), "until", mcpTime(o.end)))
	wantCoverage(t, "find across the gap", across, false)
	if !strings.Contains(across.text, "410") {
		t.Errorf("find across the gap: the gap is not named:\n%s", across.text)
	}
	ivs, _ := across.out["intervals"].([]any)
	if len(ivs) == 0 || !strings.Contains(across.text, "settings") {
		t.Fatalf("find across the gap: no interval of settings:\n%s", across.text)
	}
	after := callTool(t, cs, "find", with(with(red, "since", mcpTime(o.resumed)), "until", mcpTime(o.end)))
	wantCoverage(t, "find after the gap", after, true)
	all := callTool(t, cs, "find", map[string]any{"expression": "true", "namespace": o.Namespace, "limit": 1})
	if all.out["nextCursor"] == nil || all.out["total"].(float64) < 2 {
		t.Errorf("find true with limit 1: no next page: %v", all.out)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "find", Arguments: map[string]any{"expression": "object.spec.(", "namespace": o.Namespace}})
	if err != nil || !res.IsError {
		t.Errorf("find with an expression that does not compile: %v %s, want a tool error", err, text(res))
	}
}

// with returns args and k set to v.
func with(args map[string]any, k string, v any) map[string]any {
	out := map[string]any{k: v}
	for k, v := range args {
		out[k] = v
	}
	return out
}
