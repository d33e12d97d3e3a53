package replay_test

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"

	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/krplytest/testenv/faultproxy"
	"github.com/krply/krply/replay"
)

// Tests of the options no other test exercises, each asserting its effect.

// captureLog returns a logger (verbosity 1) and the messages it got.
func captureLog() (logr.Logger, func() []string) {
	var mu sync.Mutex
	var lines []string
	l := funcr.New(func(_, args string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, args)
	}, funcr.Options{Verbosity: 1})
	return l, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(lines)
	}
}

func countContaining(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// FieldManager is the manager of every dry-run and apply request, of the
// reports, and of the fields the replay owns on the server; WithLogger, as
// a planner and as a cluster option, gets the planner's and the cluster's
// messages.
func TestFieldManagerAndWithLogger(t *testing.T) {
	env := testenv.Shared(t)
	ctx := testCtx(t)
	j, dyn, ns := sourceJournal(t, ctx, env)
	target := env.CreateNamespace(t)
	planLog, planLines := captureLog()
	clusterLog, clusterLines := captureLog()
	p, err := replay.NewPlanner(j.store, replay.WithPolicy(replay.Policy{AllowSourceCluster: true}), replay.WithLogger(planLog))
	if err != nil {
		t.Fatal(err)
	}
	plan := planNow(t, ctx, p, j, ns, target)
	proxy := faultproxy.Start(t, env.Config())
	c := clusterOf(t, proxy.Config(), replay.WithFieldManager("sandbox-restore"), replay.WithLogger(clusterLog))
	if got := c.FieldManagerFor(plan); got != "sandbox-restore" {
		t.Errorf("FieldManagerFor = %q, want sandbox-restore", got)
	}

	report, err := p.DryRun(ctx, plan, c)
	if err != nil {
		t.Fatal(err)
	}
	if report.Status != replay.StatusDryRunOK || report.FieldManager != "sandbox-restore" {
		t.Fatalf("dry run: status %s, field manager %q; want OK as sandbox-restore (%s)", report.Status, report.FieldManager, report.Summary())
	}
	dryRuns := proxy.Requests(faultproxy.Match{Verb: "patch"})
	proxy.ResetCounts()
	applied, err := p.Apply(ctx, plan, c, replay.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash})
	if err != nil {
		t.Fatal(err)
	}
	if applied.FieldManager != "sandbox-restore" {
		t.Errorf("apply report: field manager %q, want sandbox-restore", applied.FieldManager)
	}
	applies := proxy.Requests(faultproxy.Match{Verb: "patch"})

	// Apply validates again before it writes: a dry run, then the writes.
	var writes int
	for _, r := range applies {
		if !r.Query.Has("dryRun") {
			writes++
		}
	}
	if len(dryRuns) != len(plan.Objects) || writes != len(plan.Objects) {
		t.Fatalf("%d dry-run patches, then %d patches of which %d writes, for %d objects", len(dryRuns), len(applies), writes, len(plan.Objects))
	}
	for _, r := range append(dryRuns, applies...) {
		if r.Query.Get("fieldManager") != "sandbox-restore" || r.Query.Has("force") && r.Query.Get("force") != "false" {
			t.Errorf("%s: query %v, want fieldManager=sandbox-restore and no force", r, r.Query)
		}
	}
	for _, r := range dryRuns {
		if r.Query.Get("dryRun") != "All" {
			t.Errorf("dry run %s: query %v, want dryRun=All", r, r.Query)
		}
	}
	if got := managers(get(t, ctx, dyn, cmKind, target, "settings")); !slices.Equal(got, []string{"sandbox-restore/Apply"}) {
		t.Errorf("the replayed ConfigMap's managers are %q, want only sandbox-restore/Apply", got)
	}

	pl := planLines()
	for _, msg := range []string{`"msg"="replay plan saved"`, `"msg"="replay apply"`} {
		if countContaining(pl, msg) != 1 {
			t.Errorf("the planner's logger got %q; want one %s", pl, msg)
		}
	}
	// The dry run, and Apply's own validation.
	if n := countContaining(pl, `"msg"="replay dry run"`); n == 0 || n != countContaining(pl, `"fieldManager"="sandbox-restore"`) {
		t.Errorf("the planner's logger got %q; want the dry runs, naming the field manager", pl)
	}
	if got := countContaining(clusterLines(), `"msg"="replay applied"`); got != len(plan.Objects) {
		t.Errorf("the cluster's logger got %d replay applied messages, want one per object (%d): %q", got, len(plan.Objects), clusterLines())
	}
}
