package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
)

// failureOf describes err, and returns the server's Status when err
// carries one.
func failureOf(err error) (Failure, *metav1.Status) {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return Failure{Message: err.Error()}, nil
	}
	st := status.Status()
	return Failure{Code: st.Code, Reason: string(st.Reason), Message: st.Message}, &st
}

// DryRun sends every object of a saved plan to the cluster as a
// server-side apply with dryRun=All and force=false, and reports per object
// what the server would do. Nothing is written to the cluster, but DryRun
// is an act, not a query: it saves its report in the journal (Apply relies
// on it), so on a journal opened read-only it returns an error wrapping
// ErrReadOnly. The report becomes plan.LastDryRun; plan.Status follows it.
//
// Status is StatusDryRunOK only when every object was validated by the
// server and is clean. Objects whose namespace does not exist yet cannot be
// validated: when the plan itself creates those namespaces (and their dry
// run was clean) the status is StatusDryRunNeedsNamespaces, which Apply
// resolves by creating the namespaces first and dry-running again.
//
// DryRun refuses (see ErrRefused) a plan whose content no longer matches its
// hash (*StalePlanError), a plan the journal does not hold with that ID and
// hash (*UnsavedPlanError: save it with SavePlan first), a cluster other
// than Target.ClusterID, and the source cluster unless
// Policy.AllowSourceCluster. Failures of single objects are results,
// not errors.
func (p *Planner) DryRun(ctx context.Context, plan *Plan, c *Cluster) (*DryRunReport, error) {
	id, manager, err := p.checkTarget(ctx, plan, c, true)
	if err != nil {
		return nil, err
	}
	return p.dryRun(ctx, plan, c, id, manager, plan.Objects)
}

// checkTarget runs the refusals DryRun and Apply share (dryRun says which
// of the two asks) and returns the cluster's identity and the field manager
// to use.
func (p *Planner) checkTarget(ctx context.Context, plan *Plan, c *Cluster, dryRun bool) (Identity, string, error) {
	if plan == nil || c == nil {
		return Identity{}, "", fmt.Errorf("replay: %w: nil plan or cluster", ErrInvalidArgument)
	}
	if err := verifyHash(plan); err != nil {
		return Identity{}, "", err
	}
	if err := p.requireSaved(ctx, plan); err != nil {
		return Identity{}, "", err
	}
	if !plan.Coverage.Complete && !plan.Policy.AllowGaps {
		return Identity{}, "", &CoverageIncompleteError{ClusterID: plan.Source.ClusterID, Missing: plan.Coverage.Missing}
	}
	id, err := c.Identity(ctx)
	if err != nil {
		return Identity{}, "", err
	}
	if plan.Target.ClusterID != "" && !id.Is(plan.Target.ClusterID) {
		return id, "", &WrongTargetError{PlanID: plan.ID, Want: plan.Target.ClusterID, Got: id}
	}
	if (id.Is(plan.Source.ClusterID) || id.Is(plan.SourceClusterUID)) && !plan.Policy.AllowSourceCluster {
		return id, "", &SourceClusterError{PlanID: plan.ID, ClusterID: id.String(), DryRun: dryRun}
	}
	return id, c.FieldManagerFor(plan), nil
}

// dryRun dry-runs objs (a part of the plan, in order), saves the report and
// records it on the plan.
func (p *Planner) dryRun(ctx context.Context, plan *Plan, c *Cluster, id Identity, manager string, objs []Object) (*DryRunReport, error) {
	report := &DryRunReport{
		ID: p.newID(), PlanID: plan.ID, PlanHash: plan.Hash, Cluster: id, FieldManager: manager,
		At: p.clock.Now().UTC(),
	}
	for _, obj := range objs {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("replay: dry run of plan %s: %w", plan.ID, err)
		}
		report.Results = append(report.Results, c.dryRunObject(ctx, obj, manager))
	}
	report.Status = dryRunStatus(report.Results)
	if _, err := p.save(ctx, savedDoc{kind: recordKindDryRun, id: report.ID, planID: plan.ID, clusterID: id.UID,
		observedAt: report.At, doc: report,
		ref: event.SavedRef{ID: report.ID, Name: "dry run of replay plan " + plan.ID, At: report.At, Complete: report.Status == StatusDryRunOK}}); err != nil {
		return nil, err
	}
	plan.LastDryRun, plan.Status = report, report.Status
	p.log.Info("replay dry run", "plan", plan.ID, "cluster", id.String(), "fieldManager", manager, "status", report.Status, "summary", report.Summary())
	return report, nil
}

// dryRunStatus decides a report's status: OK only when every object is
// validated and clean; NeedsNamespaces when, besides clean objects, only
// objects waiting for a namespace that this dry run validated remain.
func dryRunStatus(results []ObjectResult) Status {
	creatable := map[string]bool{}
	for _, r := range results {
		if r.Ref.Group == "" && r.Ref.Resource == "namespaces" && r.Clean() {
			creatable[r.Ref.Name] = true
		}
	}
	status := StatusDryRunOK
	for _, r := range results {
		switch {
		case r.Clean():
		case r.Action == ActionNotValidated && creatable[r.MissingNamespace]:
			status = StatusDryRunNeedsNamespaces
		default:
			return StatusDryRunFailed
		}
	}
	return status
}

func (c *Cluster) resource(ref event.ResourceRef) dynamic.ResourceInterface {
	ri := c.dyn.Resource(ref.GVR())
	if ref.Namespace != "" {
		return ri.Namespace(ref.Namespace)
	}
	return ri
}

// dryRunObject dry-runs one object: it reads the live object, sends the
// apply with dryRun=All, and compares.
func (c *Cluster) dryRunObject(ctx context.Context, obj Object, manager string) ObjectResult {
	res := ObjectResult{Ref: obj.Ref}
	ri := c.resource(obj.Ref)
	live, err := ri.Get(ctx, obj.Ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return failed(res, err)
	}
	out, err := ri.Patch(ctx, obj.Ref.Name, types.ApplyPatchType, obj.Object, metav1.PatchOptions{
		FieldManager: manager, DryRun: []string{metav1.DryRunAll}, Force: new(false),
	})
	if err != nil {
		return failed(res, err)
	}
	res.Validated = true
	if live == nil {
		res.Action = ActionCreate
		return res
	}
	changes, err := fieldChanges(obj.Ref, live, out)
	if err != nil {
		res.Action, res.Message = ActionError, fmt.Sprintf("compare with the live object: %v", err)
		return res
	}
	res.Changes = changes
	res.Action = ActionUnchanged
	if len(changes) > 0 {
		res.Action = ActionChange
	}
	return res
}

// failed classifies a failed request: a field manager conflict, a missing
// namespace, or another error.
func failed(res ObjectResult, err error) ObjectResult {
	res.Action = ActionError
	failure, st := failureOf(err)
	res.Failure = failure
	if st == nil {
		return res
	}
	switch {
	case apierrors.IsConflict(err):
		if conflicts := conflictsOf(*st); len(conflicts) > 0 {
			res.Action, res.Conflicts = ActionConflict, conflicts
		}
	case apierrors.IsNotFound(err) && st.Details != nil && st.Details.Kind == "namespaces" &&
		res.Ref.Namespace != "" && st.Details.Name == res.Ref.Namespace:
		res.Action, res.MissingNamespace = ActionNotValidated, res.Ref.Namespace
	}
	return res
}

// conflictsOf reads the field manager conflicts of a 409: one cause per
// field, with a message `conflict with "<manager>"[ with subresource …][ using <apiVersion>[ at <time>]]`.
func conflictsOf(st metav1.Status) []Conflict {
	if st.Details == nil {
		return nil
	}
	var out []Conflict
	for _, cause := range st.Details.Causes {
		if cause.Type != metav1.CauseTypeFieldManagerConflict {
			continue
		}
		out = append(out, Conflict{Manager: conflictManager(cause.Message), Field: cause.Field, Message: cause.Message})
	}
	return out
}

func conflictManager(msg string) string {
	rest, ok := strings.CutPrefix(msg, "conflict with ")
	if !ok {
		return ""
	}
	quoted, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return ""
	}
	manager, err := strconv.Unquote(quoted)
	if err != nil {
		return ""
	}
	return manager
}

// fieldChanges compares the live object with the dry-run result.
func fieldChanges(ref event.ResourceRef, live, out *unstructured.Unstructured) ([]materialize.FieldChange, error) {
	before, err := json.Marshal(live.Object)
	if err != nil {
		return nil, err
	}
	after, err := json.Marshal(out.Object)
	if err != nil {
		return nil, err
	}
	return materialize.CompareObjects(ref, before, after)
}
