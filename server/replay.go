package server

import (
	"context"
	"mime"
	"net/http"
	"strings"

	"github.com/krply/krply/event"
	"github.com/krply/krply/replay"
	"github.com/krply/krply/storage"
)

// planner returns a Planner with the handler's options and policy.
func (h *handler) planner(policy *replay.Policy) (*replay.Planner, error) {
	opts := append([]replay.Option{replay.WithClock(h.cfg.clock)}, h.cfg.plannerOptions...)
	if policy != nil {
		opts = append(opts, replay.WithPolicy(*policy))
	}
	return replay.NewPlanner(h.j, opts...)
}

// planHasSecret reports whether a plan writes a Secret.
func planHasSecret(plan *replay.Plan) bool {
	for _, o := range plan.Objects {
		if isSecret(o.Ref.Group, o.Ref.Resource) || isSecret(o.Source.Group, o.Source.Resource) {
			return true
		}
	}
	return false
}

// targetNamespaces returns the namespaces a plan writes to.
func targetNamespaces(plan *replay.Plan) []string {
	seen := map[string]bool{}
	var out []string
	for _, o := range plan.Objects {
		ns := o.Ref.Namespace
		if o.Ref.Group == "" && o.Ref.Resource == "namespaces" {
			ns = o.Ref.Name
		}
		if ns != "" && !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	return out
}

func (h *handler) createPlan(r *http.Request, u *user) (int, any, error) {
	ctx := r.Context()
	p := h.params(r)
	preview, err := p.boolean("preview", false)
	if err != nil {
		return 0, nil, err
	}
	if !preview && !h.cfg.writes {
		return 0, nil, readOnly("this server does not save plans: it is read-only (enable writes with WithWrites), or ask for an unsaved plan with ?preview=true")
	}
	var req PlanRequest
	if err := h.decodeBody(r, &req); err != nil {
		return 0, nil, err
	}
	if req.Policy != nil && req.Policy.AllowSecrets {
		return 0, nil, newError(http.StatusBadRequest, CodeInvalidBody, "policy.allowSecrets", "the query API never serves Secrets, so it makes no plan that holds them: leave allowSecrets out")
	}
	if req.At != "" {
		if req.Source.At, err = ParseTime(req.At, p.now); err != nil {
			return 0, nil, newError(http.StatusBadRequest, CodeInvalidBody, "at", "at: %v", err)
		}
	}
	if req.Source.ClusterID == "" {
		if req.Source.ClusterID, err = h.soleCluster(ctx); err != nil {
			return 0, nil, err
		}
	}
	verb := "create"
	if preview {
		verb = "get"
	}
	if err := h.auth.authorize(ctx, u, verb, ResourceHistory, req.Source.Namespaces...); err != nil {
		return 0, nil, err
	}
	pl, err := h.planner(req.Policy)
	if err != nil {
		return 0, nil, err
	}
	plan, err := pl.Plan(ctx, req.Source, req.Target)
	if err != nil {
		return 0, nil, err
	}
	if preview {
		return http.StatusOK, plan, nil
	}
	if err := pl.SavePlan(ctx, plan); err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, plan, nil
}

// listPlans answers the saved plans of a cluster, oldest first, paged by
// the IngestSeq of their records (so a plan saved while paging comes on a
// later page, never twice). A page examines at most a few pages of plan
// records; it may hold fewer than limit plans and still have a next.
// Plans the caller may not read, and plans holding Secrets, are left out.
func (h *handler) listPlans(r *http.Request, u *user) (int, any, error) {
	ctx := r.Context()
	p := h.params(r)
	clusterID, limit, cur, err := p.clusterPage(ctx)
	if err != nil {
		return 0, nil, err
	}
	pl, err := h.planner(nil)
	if err != nil {
		return 0, nil, err
	}
	q := storage.Query{ClusterID: clusterID, Types: []event.RecordType{event.TypePlan}, Limit: h.cfg.maxPage, WithoutBodies: true}
	if cur != nil {
		q.AfterSeq = cur.Seq
	}
	out := PlanList{Items: []PlanSummary{}}
	last := q.AfterSeq // the last record examined
	const maxReads = 4
	for reads := 0; ; reads++ {
		page, err := h.j.Records(ctx, q)
		if err != nil {
			return 0, nil, err
		}
		for _, rec := range page.Records {
			if replay.IsPlanRecord(rec) {
				if len(out.Items) == limit {
					out.Next = p.next(cursor{Seq: last})
					return http.StatusOK, out, nil
				}
				item, ok, err := h.planSummary(ctx, pl, u, rec.EventID)
				if err != nil {
					return 0, nil, err
				}
				if ok {
					out.Items = append(out.Items, item)
				}
			}
			last = rec.IngestSeq
		}
		if page.Next == "" {
			return http.StatusOK, out, nil
		}
		if reads+1 == maxReads {
			// Bounded work per request: the next page goes on from the
			// last record examined.
			out.Next = p.next(cursor{Seq: last})
			return http.StatusOK, out, nil
		}
		q.Cursor = page.Next
	}
}

// planSummary loads a saved plan and summarizes it; false for a plan the
// caller may not read or one holding Secrets.
func (h *handler) planSummary(ctx context.Context, pl *replay.Planner, u *user, id string) (PlanSummary, bool, error) {
	plan, err := pl.LoadPlan(ctx, id)
	if err != nil {
		return PlanSummary{}, false, err
	}
	if planHasSecret(plan) {
		return PlanSummary{}, false, nil
	}
	if err := h.authorizeRead(ctx, u, plan.Source.Namespaces); err != nil {
		if e := asError(err); e.Code == CodeForbidden {
			return PlanSummary{}, false, nil
		}
		return PlanSummary{}, false, err
	}
	return PlanSummary{ID: plan.ID, CreatedAt: plan.CreatedAt, Source: plan.Source, Target: plan.Target, Coverage: plan.Coverage,
		Objects: len(plan.Objects), Exclusions: len(plan.Exclusions), Hash: plan.Hash, Status: plan.Status}, true, nil
}

// loadPlan loads the plan of the path and checks the caller may read it.
func (h *handler) loadPlan(ctx context.Context, r *http.Request, u *user, verb string) (*replay.Planner, *replay.Plan, error) {
	pl, err := h.planner(nil)
	if err != nil {
		return nil, nil, err
	}
	plan, err := pl.LoadPlan(ctx, r.PathValue("id"))
	if err != nil {
		return nil, nil, err
	}
	if err := h.auth.authorize(ctx, u, verb, ResourceHistory, plan.Source.Namespaces...); err != nil {
		return nil, nil, err
	}
	if planHasSecret(plan) {
		return nil, nil, newError(http.StatusForbidden, CodeSecret, "", "plan %s holds Secrets, which the query API never serves", plan.ID)
	}
	return pl, plan, nil
}

// wantsYAML reports whether the request asks for YAML.
func wantsYAML(r *http.Request) (bool, error) {
	switch f := r.URL.Query().Get("format"); f {
	case "yaml":
		return true, nil
	case "json":
		return false, nil
	case "":
	default:
		return false, badParam("format", "format %q: want json or yaml", f)
	}
	for _, part := range strings.Split(r.Header.Get("Accept"), ",") {
		mt, _, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		switch mt {
		case "application/json", "*/*", "application/*":
			return false, nil
		case "application/yaml", "application/x-yaml", "text/yaml":
			return true, nil
		}
	}
	return false, nil
}

func (h *handler) getPlan(w http.ResponseWriter, r *http.Request, u *user) {
	yaml, err := wantsYAML(r)
	if err != nil {
		h.fail(w, r, err)
		return
	}
	_, plan, err := h.loadPlan(r.Context(), r, u, "get")
	if err != nil {
		h.fail(w, r, err)
		return
	}
	if !yaml {
		h.answer(w, r, http.StatusOK, plan)
		return
	}
	raw, err := plan.YAML()
	if err != nil {
		h.fail(w, r, err)
		return
	}
	turnOf(r).release()
	w.Header().Set("Content-Type", "application/yaml")
	w.Header().Set("Cache-Control", "no-store")
	send(w, http.StatusOK, raw, h.cfg.timeout)
}

func (h *handler) dryRun(r *http.Request, u *user) (int, any, error) {
	if h.cfg.dryRun == nil {
		return 0, nil, readOnly("this server dry-runs no plan: it was built without a target cluster (WithDryRun or WithApply)")
	}
	pl, plan, err := h.loadPlan(r.Context(), r, u, "create")
	if err != nil {
		return 0, nil, err
	}
	report, err := pl.DryRun(r.Context(), plan, h.cfg.dryRun)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, report, nil
}

func (h *handler) applyPlan(r *http.Request, u *user) (int, any, error) {
	ctx := r.Context()
	if h.cfg.apply == nil {
		return 0, nil, readOnly("this server applies no plan: it was built without WithApply")
	}
	var confirm replay.Confirmation
	if err := h.decodeBody(r, &confirm); err != nil {
		if err == errEmptyBody { // the one value, not any invalid_body
			return 0, nil, newError(http.StatusBadRequest, CodeConfirmationRequired, "", `confirm the plan reviewed: send {"planID": "<id>", "planHash": "<hash>"}`)
		}
		return 0, nil, err
	}
	id := r.PathValue("id")
	switch {
	case confirm.PlanID == "" || confirm.PlanHash == "":
		return 0, nil, newError(http.StatusBadRequest, CodeConfirmationRequired, "", `confirm the plan reviewed: send {"planID": "<id>", "planHash": "<hash>"}`)
	case confirm.PlanID != id:
		return 0, nil, badParam("planID", "planID %q is not the plan of the path (%s)", confirm.PlanID, id)
	}
	pl, plan, err := h.loadPlan(ctx, r, u, "create")
	if err != nil {
		return 0, nil, err
	}
	if plan.Hash != confirm.PlanHash {
		return 0, nil, newError(http.StatusConflict, CodeConflict, "planHash", "plan %s is saved with hash %s, not %s: review the saved plan again", plan.ID, plan.Hash, confirm.PlanHash)
	}
	if err := h.auth.authorize(ctx, u, "create", ResourceReplays, targetNamespaces(plan)...); err != nil {
		return 0, nil, err
	}
	report, err := pl.Apply(ctx, plan, h.cfg.apply, confirm)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, report, nil
}

func (h *handler) auditWebhook(w http.ResponseWriter, r *http.Request, u *user) {
	if h.webhook == nil {
		h.fail(w, r, readOnly("this server takes no audit events: it was built without WithAuditWebhook"))
		return
	}
	if err := h.auth.authorize(r.Context(), u, "create", ResourceAuditEvents); err != nil {
		h.fail(w, r, err)
		return
	}
	defer readBy(w, r)()
	h.webhook.ServeHTTP(w, r)
}
