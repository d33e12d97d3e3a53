package main

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/krply/krply/replay"
)

// TestDemo runs the quickstart end to end on the local control plane and
// checks what it found, not only that it ran.
func TestDemo(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var out bytes.Buffer
	res, err := run(ctx, t, &out, testr.New(t), "")
	if testing.Verbose() || t.Failed() || err != nil {
		_, _ = os.Stdout.Write(out.Bytes())
	}
	if err != nil {
		t.Fatalf("demo: %v", err)
	}

	if res.Gaps == 0 {
		t.Error("the outage left no gap in the journal")
	}
	if !slices.Equal(res.InferredDeletions, []string{"ConfigMap/cache"}) {
		t.Errorf("inferred deletions %q, want the ConfigMap deleted in the outage", res.InferredDeletions)
	}
	if res.OutageComplete || res.OutageMissing == 0 {
		t.Errorf("snapshot during the outage: complete=%v with %d missing streams, want incomplete", res.OutageComplete, res.OutageMissing)
	}
	if !res.FinalComplete {
		t.Error("snapshot after the relist is not complete")
	}
	if !res.PlanRefused {
		t.Error("a plan over the outage was not refused")
	}
	for _, want := range []string{"Namespace/" + sandbox, "ConfigMap/settings", "Deployment/web", "Service/web"} {
		if !slices.Contains(res.Planned, want) {
			t.Errorf("plan lacks %s: %q", want, res.Planned)
		}
	}
	for _, gone := range []string{"ConfigMap/cache", "ConfigMap/legacy"} {
		if slices.Contains(res.Planned, gone) {
			t.Errorf("plan replays the deleted %s", gone)
		}
	}
	for _, want := range []string{"Pod/debug", "ServiceAccount/deployer"} {
		if !slices.ContainsFunc(res.Excluded, func(e string) bool { return strings.HasPrefix(e, want+":") }) {
			t.Errorf("%s is not excluded: %q", want, res.Excluded)
		}
	}
	if res.DryRun != replay.StatusDryRunNeedsNamespaces && res.DryRun != replay.StatusDryRunOK {
		t.Errorf("dry run status %s", res.DryRun)
	}
	if got := res.Applied["Deployment/web"]; got != replay.OutcomeCreated {
		t.Errorf("apply of Deployment/web: %s, want created", got)
	}
	if want := []string{"ConfigMap/settings", "Deployment/web", "Service/web"}; !slices.Equal(res.SandboxObjects, want) {
		t.Errorf("sandbox holds %q, want %q", res.SandboxObjects, want)
	}
	// web: created by alice, image by alice, scaled by bob, then the relist.
	if len(res.WebAuthors) < 4 || !slices.Equal(res.WebAuthors[:3], []string{"alice", "alice", "bob"}) {
		t.Errorf("authors of web's versions = %q, want alice, alice, bob, then the relist", res.WebAuthors)
	}
	for _, want := range []string{"ConfigMap/cache removed", "ConfigMap/legacy removed", "ConfigMap/settings changed", "Deployment/web changed"} {
		if !slices.Contains(res.DiffObjects, want) {
			t.Errorf("diff lacks %q: %q", want, res.DiffObjects)
		}
	}
	if !strings.Contains(out.String(), "410") {
		t.Error("the output never mentions the 410 that made the gap")
	}
	// What the demo prints reads as a user's words, not Go identifiers of
	// the library (WithReadOnly, Policy.AllowGaps, sqlite.Open).
	goIdentifier := regexp.MustCompile(`\bWith[A-Z]\w*|\bPolicy\.\w+|\b(Allow|Keep)[A-Z]\w+|\b[a-z]+\.[A-Z]\w+\b|\b[A-Z]\w+\(\)`)
	if ids := goIdentifier.FindAllString(out.String(), -1); len(ids) > 0 {
		t.Errorf("the demo's output names Go identifiers %q", ids)
	}

	// The demo ends by serving the web UI and the API on its journal.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sctx, stop := context.WithCancel(ctx)
	served := make(chan error, 1)
	go func() { served <- serveUI(sctx, res, ln) }()
	// The timeline's condition box asks find with CEL: the server compiles it.
	find := "/api/v1/find?" + url.Values{"namespace": {shop}, "resource": {"deployments"}, "expr": {"object.spec.replicas >= 1"}}.Encode()
	for path, want := range map[string]string{"/": `src="app.js"`, "/api/v1/clusters": res.ClusterID, find: `"name":"web"`} {
		resp, err := http.Get("http://" + ln.Addr().String() + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Errorf("GET %s: %s %.200s, want %q", path, resp.Status, body, want)
		}
	}
	stop()
	if err := <-served; err != nil {
		t.Errorf("serving ended with %v", err)
	}
}
