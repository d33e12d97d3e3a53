package server_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/replay"
	"github.com/krply/krply/server"
)

func TestSavedSnapshots(t *testing.T) {
	j := newRecorded(t)
	c, base := j.serve()
	scope := materialize.Scope{ClusterID: "c1", Namespaces: []string{"shop"}}

	// Read-only by default.
	var e *server.Error
	if _, err := c.SaveSnapshot(ctx, scope, at(5), "x"); !errors.As(err, &e) || e.Status != http.StatusForbidden || e.Code != server.CodeReadOnly || !strings.Contains(e.Message, "WithWrites") {
		t.Fatalf("saving on a read-only handler: %v; want 403 read_only naming WithWrites", err)
	}
	// With writes, on a journal opened read-only: refused by the journal.
	c, _ = j.serve(server.WithWrites())
	if _, err := c.SaveSnapshot(ctx, scope, at(5), "x"); !errors.As(err, &e) || e.Status != http.StatusForbidden || e.Code != server.CodeReadOnly {
		t.Fatalf("saving into a read-only journal: %v; want 403 read_only", err)
	}

	// With writes, on the writable journal.
	writable := &recorded{t: t, ro: j.w}
	c, base = writable.serve(server.WithWrites())
	saved, err := c.SaveSnapshot(ctx, scope, at(5), "before-red")
	if err != nil || saved.ID == "" || saved.Name != "before-red" || !saved.Complete || len(saved.Objects) != 2 {
		t.Fatalf("save: %+v, %v; want a complete snapshot with an ID, without the Secret", saved, err)
	}
	if _, err := c.SaveSnapshot(ctx, materialize.Scope{Namespaces: []string{"other"}}, at(5), ""); err != nil {
		t.Fatalf("save with the sole cluster: %v", err)
	}
	list, err := c.ListSnapshots(ctx, "")
	if err != nil || len(list) != 2 || list[0].ID != saved.ID || len(list[0].Objects) != 0 {
		t.Fatalf("list: %+v, %v; want both, without objects", list, err)
	}
	var page server.SnapshotList
	getJSON(t, base+"/api/v1/snapshots?limit=1", &page)
	if len(page.Items) != 1 || page.Next == "" {
		t.Fatalf("first page of one: %+v", page)
	}
	var second server.SnapshotList
	getJSON(t, base+"/api/v1/snapshots?limit=1&cursor="+page.Next, &second)
	if len(second.Items) != 1 || second.Items[0].ID != list[1].ID || second.Next != "" {
		t.Fatalf("second page of one: %+v", second)
	}
	got, err := c.GetSnapshot(ctx, saved.ID)
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, "saved snapshot", got, saved)
	if _, err := c.GetSnapshot(ctx, "no-such-id"); !errors.As(err, &e) || e.Status != http.StatusNotFound {
		t.Errorf("unknown snapshot: %v; want 404", err)
	}
	wantError(t, http.MethodPost, base+"/api/v1/snapshots", `{"at":"tomorrow"}`, http.StatusBadRequest, server.CodeInvalidBody, "at")
	wantError(t, http.MethodPost, base+"/api/v1/snapshots", `{"scope":{"clusterID":"c1"},"colour":"red"}`, http.StatusBadRequest, server.CodeInvalidBody, "")
	wantError(t, http.MethodPost, base+"/api/v1/snapshots", ``, http.StatusBadRequest, server.CodeInvalidBody, "")
	_, small := writable.serve(server.WithWrites(), server.WithMaxBodyBytes(16))
	wantError(t, http.MethodPost, small+"/api/v1/snapshots", `{"name":"a long name for a small limit"}`, http.StatusRequestEntityTooLarge, server.CodeBodyTooLarge, "")
}

func TestPlans(t *testing.T) {
	j := newRecorded(t)
	writable := &recorded{t: t, ro: j.w}
	req := server.PlanRequest{At: "2026-03-01T12:05:00Z", Source: replay.Source{Namespaces: []string{"shop"}},
		Target: replay.Target{ClusterID: "sandbox", Namespaces: map[string]string{"shop": "shop-copy"}}}

	// A preview is a read: served by a read-only handler on a read-only journal.
	c, base := j.serve()
	preview, err := c.PreviewPlan(ctx, req)
	if err != nil || preview.ID == "" || preview.Hash == "" || !preview.Coverage.Complete || len(preview.Objects) == 0 {
		t.Fatalf("preview: %+v, %v", preview, err)
	}
	for _, o := range preview.Objects {
		if o.Ref.Resource == "secrets" {
			t.Fatalf("the plan holds a Secret: %+v", o)
		}
	}
	var e *server.Error
	if _, err := c.Plan(ctx, req); !errors.As(err, &e) || e.Status != http.StatusForbidden || e.Code != server.CodeReadOnly {
		t.Fatalf("saving a plan on a read-only handler: %v; want 403 read_only", err)
	}
	if _, err := c.DryRun(ctx, preview.ID); !errors.As(err, &e) || e.Code != server.CodeReadOnly || !strings.Contains(e.Message, "WithDryRun") {
		t.Fatalf("dry run without a target: %v; want 403 read_only naming WithDryRun", err)
	}
	if _, err := c.Apply(ctx, replay.Confirmation{PlanID: preview.ID, PlanHash: preview.Hash}); !errors.As(err, &e) || e.Code != server.CodeReadOnly || !strings.Contains(e.Message, "WithApply") {
		t.Fatalf("apply without WithApply: %v; want 403 read_only naming WithApply", err)
	}
	// Inside other's gap the plan is refused.
	gap := req
	gap.At, gap.Source.Namespaces = "2026-03-01T12:05:00Z", []string{"other"}
	if _, err := c.PreviewPlan(ctx, gap); !errors.As(err, &e) || e.Status != http.StatusConflict || e.Code != server.CodeCoverageIncomplete {
		t.Fatalf("a plan inside a gap: %v; want 409 coverage_incomplete", err)
	}
	secrets := req
	secrets.Policy = &replay.Policy{AllowSecrets: true}
	if _, err := c.PreviewPlan(ctx, secrets); !errors.As(err, &e) || e.Status != http.StatusBadRequest || e.Param != "policy.allowSecrets" {
		t.Fatalf("a plan allowing Secrets: %v; want 400 naming policy.allowSecrets", err)
	}
	wantError(t, http.MethodPost, base+"/api/v1/plans?preview=true", `{"at":"whenever"}`, http.StatusBadRequest, server.CodeInvalidBody, "at")
	wantError(t, http.MethodPost, base+"/api/v1/plans?preview=yes", `{}`, http.StatusBadRequest, server.CodeInvalidParameter, "preview")

	// Saved through a writable handler, read back as JSON and YAML.
	c, base = writable.serve(server.WithWrites(), server.WithPlannerOptions(replay.WithIDGenerator(func() string { return "plan-1" })))
	plan, err := c.Plan(ctx, req)
	if err != nil || plan.ID != "plan-1" {
		t.Fatalf("save: %+v, %v", plan, err)
	}
	got, err := c.LoadPlan(ctx, plan.ID)
	if err != nil || got.Hash != plan.Hash || len(got.Objects) != len(plan.Objects) {
		t.Fatalf("get: %+v, %v", got, err)
	}
	yaml, err := c.PlanYAML(ctx, plan.ID)
	if err != nil || !strings.HasPrefix(string(yaml), "# krply replay plan plan-1\n# hash: "+plan.Hash) || !strings.Contains(string(yaml), "namespace: shop-copy") {
		t.Fatalf("YAML: %s, %v", yaml, err)
	}
	resp, err := http.Get(base + "/api/v1/plans/plan-1?format=yaml")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Header.Get("Content-Type") != "application/yaml" || string(raw) != string(yaml) {
		t.Errorf("?format=yaml: %s %q; want the same YAML", resp.Header.Get("Content-Type"), raw)
	}
	wantError(t, http.MethodGet, base+"/api/v1/plans/plan-1?format=toml", "", http.StatusBadRequest, server.CodeInvalidParameter, "format")
	wantError(t, http.MethodGet, base+"/api/v1/plans/plan-2", "", http.StatusNotFound, server.CodeNotFound, "")

	// Apply: only with WithApply, only the saved plan with its ID and hash.
	target := newTargetCluster(t)
	c, base = writable.serve(server.WithApply(target))
	wantError(t, http.MethodPost, base+"/api/v1/plans/plan-1/apply", "", http.StatusBadRequest, server.CodeConfirmationRequired, "")
	wantError(t, http.MethodPost, base+"/api/v1/plans/plan-1/apply", `{"planID":"plan-1"}`, http.StatusBadRequest, server.CodeConfirmationRequired, "")
	wantError(t, http.MethodPost, base+"/api/v1/plans/plan-1/apply", `{"planID":"plan-2","planHash":"`+plan.Hash+`"}`, http.StatusBadRequest, server.CodeInvalidParameter, "planID")
	wantError(t, http.MethodPost, base+"/api/v1/plans/plan-1/apply", `{"planID":"plan-1","planHash":"sha256:0000"}`, http.StatusConflict, server.CodeConflict, "planHash")
	wantError(t, http.MethodPost, base+"/api/v1/plans/plan-9/apply", `{"planID":"plan-9","planHash":"x"}`, http.StatusNotFound, server.CodeNotFound, "")
	// The right confirmation without a dry run: replay refuses.
	if _, err := c.Apply(ctx, replay.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash}); !errors.As(err, &e) || e.Status != http.StatusConflict {
		t.Fatalf("apply without a dry run: %v; want 409", err)
	}
}

// newTargetCluster returns the real test control plane as the replay
// target "sandbox".
func newTargetCluster(t *testing.T) *replay.Cluster {
	t.Helper()
	env := testenv.Shared(t)
	c, err := replay.NewClusterForConfig(env.Config(), replay.WithClusterID("sandbox"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A saved plan is dry-run and applied through the API against the real
// control plane, with its ID and hash confirmed.
func TestDryRunAndApply(t *testing.T) {
	j := newRecorded(t)
	writable := &recorded{t: t, ro: j.w}
	target := newTargetCluster(t)
	c, _ := writable.serve(server.WithWrites(), server.WithApply(target))
	plan, err := c.Plan(ctx, server.PlanRequest{At: "2026-03-01T12:05:00Z", Source: replay.Source{Namespaces: []string{"shop"}},
		Target: replay.Target{ClusterID: "sandbox", Namespaces: map[string]string{"shop": "shop-applied"}}})
	if err != nil {
		t.Fatal(err)
	}
	report, err := c.DryRun(ctx, plan.ID)
	if err != nil || report.PlanID != plan.ID || len(report.Results) == 0 {
		t.Fatalf("dry run: %+v, %v", report, err)
	}
	applied, err := c.Apply(ctx, replay.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
	if applied.PlanID != plan.ID || len(applied.Results) != len(plan.Objects) {
		t.Fatalf("apply report: %+v; want every object of the plan", applied)
	}
	got, err := c.LoadPlan(ctx, plan.ID)
	if err != nil || got.Status != replay.StatusApplied {
		t.Errorf("the plan after apply: %+v, %v; want status applied", got, err)
	}
	// Only the dry-run option: the dry run works, apply is refused.
	c, _ = writable.serve(server.WithDryRun(target))
	if _, err := c.DryRun(ctx, plan.ID); err != nil {
		t.Errorf("dry run with WithDryRun: %v", err)
	}
	var e *server.Error
	if _, err := c.Apply(ctx, replay.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash}); !errors.As(err, &e) || e.Code != server.CodeReadOnly {
		t.Errorf("apply with WithDryRun only: %v; want 403 read_only", err)
	}
}

// TestListPlans: GET /api/v1/plans pages the saved plans in the order they
// were saved, each exactly once while more are saved between pages, as
// summaries of what GET /api/v1/plans/{id} answers; the client's ListPlans
// reads every page.
func TestListPlans(t *testing.T) {
	j := newRecorded(t)
	writable := &recorded{t: t, ro: j.w}
	n := 0
	c, base := writable.serve(server.WithWrites(), server.WithPlannerOptions(replay.WithIDGenerator(func() string { n++; return fmt.Sprintf("plan-%d", n) })))
	var empty server.PlanList
	getJSON(t, base+"/api/v1/plans", &empty)
	if len(empty.Items) != 0 || empty.Next != "" {
		t.Fatalf("plans of a journal without any: %+v", empty)
	}
	save := func() *replay.Plan {
		t.Helper()
		plan, err := c.Plan(ctx, server.PlanRequest{At: fmt.Sprintf("2026-03-01T12:0%d:00Z", 1+n%5), Source: replay.Source{Namespaces: []string{"shop"}},
			Target: replay.Target{ClusterID: "sandbox", Namespaces: map[string]string{"shop": "shop-copy"}}})
		if err != nil {
			t.Fatal(err)
		}
		return plan
	}
	var saved []string
	for range 5 {
		saved = append(saved, save().ID)
	}
	var listed []string
	cursor, pages := "", 0
	for ; pages == 0 || cursor != ""; pages++ {
		var page server.PlanList
		u := base + "/api/v1/plans?limit=2"
		if cursor != "" {
			u += "&cursor=" + cursor
		}
		getJSON(t, u, &page)
		for _, p := range page.Items {
			listed = append(listed, p.ID)
		}
		cursor = page.Next
		if pages < 2 {
			saved = append(saved, save().ID)
		}
		if pages > 20 {
			t.Fatal("paging does not end")
		}
	}
	if !slices.Equal(listed, saved) {
		t.Fatalf("the pages list %v, want the plans saved %v", listed, saved)
	}
	all, err := c.ListPlans(ctx, "")
	if err != nil || len(all) != len(saved) {
		t.Fatalf("ListPlans: %d plans, %v; want %d", len(all), err, len(saved))
	}
	full, err := c.LoadPlan(ctx, all[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	want := server.PlanSummary{ID: full.ID, CreatedAt: full.CreatedAt, Source: full.Source, Target: full.Target, Coverage: full.Coverage,
		Objects: len(full.Objects), Exclusions: len(full.Exclusions), Hash: full.Hash, Status: full.Status}
	sameJSON(t, "the first plan's summary", all[0], want)
	if all[0].Objects == 0 || all[0].Status != replay.StatusPlanned {
		t.Errorf("the first plan's summary: %+v", all[0])
	}
	wantError(t, http.MethodGet, base+"/api/v1/plans?limit=0", "", http.StatusBadRequest, server.CodeInvalidParameter, "limit")
	wantError(t, http.MethodGet, base+"/api/v1/plans?cursor=bm9wZQ", "", http.StatusBadRequest, server.CodeInvalidCursor, "cursor")
}
