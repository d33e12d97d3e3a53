package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/krply/krply/event"
)

// Apply writes a saved plan into a cluster with server-side apply, never
// forcing and never deleting anything. Before writing it refuses (errors
// matching ErrRefused, of the types in errors.go):
//
//   - without a Confirmation naming the plan's ID and hash
//     (*ConfirmationRequiredError);
//   - when the plan's content no longer matches its hash, or its last
//     clean dry run is older than the Planner's max dry-run age
//     (*StalePlanError);
//   - when the journal does not hold the plan with that ID and hash
//     (*UnsavedPlanError): only the saved plan that was reviewed is
//     applied;
//   - over incomplete coverage without Policy.AllowGaps
//     (*CoverageIncompleteError);
//   - into a cluster other than Target.ClusterID (*WrongTargetError), or
//     into the source cluster without Policy.AllowSourceCluster
//     (*SourceClusterError);
//   - unless the newest dry run of this plan (same hash) against this
//     cluster with this field manager is StatusDryRunOK or
//     StatusDryRunNeedsNamespaces (*DryRunNotCleanError).
//
// Then it dry-runs the whole plan again, so a target that changed since the
// review stops it (*DryRunNotCleanError, nothing written). When that dry run
// is StatusDryRunNeedsNamespaces, Apply first creates the plan's Namespaces,
// dry-runs every other object again, and stops (*DryRunNotCleanError, only
// the namespaces written) unless that second dry run is StatusDryRunOK.
// Finally it applies the objects in order and stops at the first failure
// (*ApplyError). Every dry run and the apply report are saved in the
// journal: like DryRun, Apply is an act that writes, not a query, and needs
// a writable journal: on one opened read-only, saving the dry run before
// the first write fails, and Apply returns an error wrapping ErrReadOnly
// with nothing written to the cluster.
//
// On an error after the first write the returned report says precisely what
// was written; applying the same plan again is safe.
func (p *Planner) Apply(ctx context.Context, plan *Plan, c *Cluster, confirm Confirmation) (*ApplyReport, error) {
	if plan == nil || c == nil {
		return nil, fmt.Errorf("replay: %w: nil plan or cluster", ErrInvalidArgument)
	}
	if err := verifyHash(plan); err != nil {
		return nil, err
	}
	switch {
	case confirm == Confirmation{}:
		return nil, &ConfirmationRequiredError{PlanID: plan.ID, PlanHash: plan.Hash, Reason: "no confirmation given"}
	case confirm.PlanID != plan.ID || confirm.PlanHash != plan.Hash:
		return nil, &ConfirmationRequiredError{PlanID: plan.ID, PlanHash: plan.Hash,
			Reason: fmt.Sprintf("the confirmation names plan %s with hash %s", confirm.PlanID, confirm.PlanHash)}
	}
	id, manager, err := p.checkTarget(ctx, plan, c, false)
	if err != nil {
		return nil, err
	}
	if err := p.requireCleanDryRun(ctx, plan, id, manager); err != nil {
		return nil, err
	}

	report := &ApplyReport{ID: p.newID(), PlanID: plan.ID, PlanHash: plan.Hash, Cluster: id, FieldManager: manager,
		StartedAt: p.clock.Now().UTC()}
	report.Results = make([]ApplyResult, len(plan.Objects))
	for i, o := range plan.Objects {
		report.Results[i] = ApplyResult{Ref: o.Ref, Outcome: OutcomeNotAttempted}
	}

	pre, err := p.dryRun(ctx, plan, c, id, manager, plan.Objects)
	if err != nil {
		return nil, err
	}
	report.DryRuns = append(report.DryRuns, pre.ID)
	applied := make([]bool, len(plan.Objects))
	switch pre.Status {
	case StatusDryRunOK:
	case StatusDryRunNeedsNamespaces:
		// The namespaces come first: their objects cannot be validated
		// before they exist.
		var rest []Object
		for i, o := range plan.Objects {
			if !isNamespace(o.Ref) {
				rest = append(rest, o)
				continue
			}
			if err := p.applyObject(ctx, plan, c, manager, report, i); err != nil {
				return report, p.finishApply(ctx, plan, report, err)
			}
			applied[i] = true
		}
		second, err := p.dryRun(ctx, plan, c, id, manager, rest)
		if err != nil {
			return report, p.finishApply(ctx, plan, report, err)
		}
		report.DryRuns = append(report.DryRuns, second.ID)
		if second.Status != StatusDryRunOK {
			return report, p.finishApply(ctx, plan, report, &DryRunNotCleanError{PlanID: plan.ID, ClusterID: id.String(), Report: second,
				Reason: "after creating the plan's namespaces, the dry run of the other objects is " + string(second.Status)})
		}
	default:
		return nil, &DryRunNotCleanError{PlanID: plan.ID, ClusterID: id.String(), Report: pre,
			Reason: "the dry run just before applying is " + string(pre.Status) + "; nothing was written"}
	}
	for i := range plan.Objects {
		if applied[i] {
			continue
		}
		if err := p.applyObject(ctx, plan, c, manager, report, i); err != nil {
			return report, p.finishApply(ctx, plan, report, err)
		}
	}
	return report, p.finishApply(ctx, plan, report, nil)
}

func isNamespace(ref event.ResourceRef) bool { return ref.Group == "" && ref.Resource == "namespaces" }

// requireCleanDryRun finds the newest dry run of the plan against the
// cluster and refuses unless it is clean (or needs only the plan's
// namespaces), recent, and for the same field manager.
func (p *Planner) requireCleanDryRun(ctx context.Context, plan *Plan, id Identity, manager string) error {
	now := p.clock.Now()
	since := now.Add(-p.maxDryRunAge)
	var newest, newestAnyAge *DryRunReport
	find := func(from time.Time, into **DryRunReport) error {
		return p.planRecords(ctx, plan, id.UID, from, func(rec event.Record) (bool, error) {
			if rec.Resource.Kind != recordKindDryRun {
				return false, nil
			}
			r, err := decodeDryRun(rec)
			if err != nil {
				return false, err
			}
			if r.PlanHash != plan.Hash || r.FieldManager != manager {
				return false, nil
			}
			*into = r
			return true, nil
		})
	}
	if err := find(since, &newest); err != nil {
		return err
	}
	if newest == nil {
		if err := find(plan.CreatedAt, &newestAnyAge); err != nil {
			return err
		}
		if newestAnyAge != nil {
			return &StalePlanError{PlanID: plan.ID, Reason: fmt.Sprintf("its last dry run against %s is from %s, older than %s; dry-run it again",
				id, newestAnyAge.At.Format(time.RFC3339), p.maxDryRunAge)}
		}
		return &DryRunNotCleanError{PlanID: plan.ID, ClusterID: id.String(),
			Reason: fmt.Sprintf("no dry run of this plan (hash %s) with field manager %q is recorded; call DryRun first", plan.Hash, manager)}
	}
	switch newest.Status {
	case StatusDryRunOK, StatusDryRunNeedsNamespaces:
		return nil
	}
	return &DryRunNotCleanError{PlanID: plan.ID, ClusterID: id.String(), Report: newest,
		Reason: "the newest dry run " + newest.ID + " is " + string(newest.Status)}
}

// applyObject writes plan.Objects[i] and records the result; it returns
// an *ApplyError when the write failed.
func (p *Planner) applyObject(ctx context.Context, plan *Plan, c *Cluster, manager string, report *ApplyReport, i int) error {
	obj := plan.Objects[i]
	res := &report.Results[i]
	fail := func(err error) error {
		res.Outcome = OutcomeFailed
		res.Failure, _ = failureOf(err)
		return &ApplyError{PlanID: plan.ID, Report: report, Failed: obj, Err: err}
	}
	ri := c.resource(obj.Ref)
	live, err := ri.Get(ctx, obj.Ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return fail(err)
	}
	out, err := ri.Patch(ctx, obj.Ref.Name, types.ApplyPatchType, obj.Object, metav1.PatchOptions{
		FieldManager: manager, Force: new(false),
	})
	if err != nil {
		return fail(err)
	}
	res.ResourceVersion = out.GetResourceVersion()
	switch {
	case live == nil:
		res.Outcome = OutcomeCreated
	case live.GetResourceVersion() == out.GetResourceVersion():
		res.Outcome = OutcomeUnchanged
	default:
		res.Outcome = OutcomeUpdated
	}
	c.log.V(1).Info("replay applied", "plan", plan.ID, "object", obj.Ref.String(), "outcome", res.Outcome)
	return nil
}

// finishApply stamps and saves the report and records the outcome on the
// plan. It returns cause, or the save error when there is no cause.
func (p *Planner) finishApply(ctx context.Context, plan *Plan, report *ApplyReport, cause error) error {
	report.FinishedAt = p.clock.Now().UTC()
	report.Status = StatusApplied
	if cause != nil {
		report.Status = StatusApplyFailed
	}
	_, err := p.save(ctx, savedDoc{kind: recordKindApply, id: report.ID, planID: report.PlanID, clusterID: report.Cluster.UID,
		observedAt: report.FinishedAt, doc: report,
		ref: event.SavedRef{ID: report.ID, Name: "apply of replay plan " + report.PlanID, At: report.FinishedAt, Complete: cause == nil}})
	plan.Status = report.Status
	p.log.Info("replay apply", "plan", report.PlanID, "cluster", report.Cluster.String(), "status", report.Status, "error", cause)
	if cause != nil && err != nil {
		// Both matter: the cause decides what the caller does next, the
		// failed save means the journal lacks this report.
		return errors.Join(cause, err)
	}
	if cause != nil {
		return cause
	}
	return err
}

func decodeDryRun(rec event.Record) (*DryRunReport, error) {
	var r DryRunReport
	if err := json.Unmarshal(rec.Object, &r); err != nil {
		return nil, fmt.Errorf("replay: decode dry run record %s: %w", rec.EventID, err)
	}
	return &r, nil
}
