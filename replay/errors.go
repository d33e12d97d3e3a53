package replay

import (
	"errors"
	"fmt"
	"strings"

	"github.com/krply/krply/materialize"
	"github.com/krply/krply/replay/replayapi"
	"github.com/krply/krply/storage"
)

// Sentinel errors of this package. Check them with errors.Is.
var (
	// ErrInvalidArgument: a constructor or call argument or option is
	// unusable. It is storage.ErrInvalidArgument, the sentinel of every
	// krply package.
	ErrInvalidArgument = storage.ErrInvalidArgument
	// ErrInvalidPolicy: a Policy field is malformed (a bad pattern or
	// path). It is an ErrInvalidArgument too.
	ErrInvalidPolicy = fmt.Errorf("replay: invalid policy: %w", ErrInvalidArgument)
	// ErrInvalidPlan: a saved plan cannot be decoded. It is
	// replayapi.ErrInvalidPlan.
	ErrInvalidPlan = replayapi.ErrInvalidPlan
	// ErrNotFound: no saved plan with that ID. It is storage.ErrNotFound.
	ErrNotFound = storage.ErrNotFound
	// ErrReadOnly: the store refuses writes (it was opened read-only), so
	// SavePlan, DryRun and Apply, which save plans and reports, fail. It
	// is storage.ErrReadOnly.
	ErrReadOnly = storage.ErrReadOnly
	// ErrIdentity: the target cluster's identity could not be read, so it
	// cannot be told apart from the source.
	ErrIdentity = errors.New("replay: cannot identify target cluster")
	// ErrRefused: every refusal error below matches it with errors.Is.
	ErrRefused = errors.New("replay: refused")
)

// ConfirmationRequiredError: Apply was called without a Confirmation naming
// this plan and its hash.
type ConfirmationRequiredError struct {
	PlanID, PlanHash string
	Reason           string
}

func (e *ConfirmationRequiredError) Error() string {
	return fmt.Sprintf("replay: plan %s needs explicit confirmation: %s (confirm with plan ID %s and hash %s)", e.PlanID, e.Reason, e.PlanID, e.PlanHash)
}

// Unwrap returns ErrRefused.
func (e *ConfirmationRequiredError) Unwrap() error { return ErrRefused }

// CoverageIncompleteError: the source history is not complete at the
// source time and the Policy does not allow gaps.
type CoverageIncompleteError struct {
	ClusterID string
	Missing   []materialize.MissingStream
}

func (e *CoverageIncompleteError) Error() string {
	reasons := make([]string, 0, len(e.Missing))
	for _, m := range e.Missing {
		what := m.StreamID
		if what == "" {
			what = m.Resource.String()
			if m.Namespace != "" {
				what += " in " + m.Namespace
			}
		}
		reasons = append(reasons, what+": "+m.Reason)
	}
	return fmt.Sprintf("replay: coverage of cluster %s is incomplete at the source time (set Policy.AllowGaps to plan anyway): %s", e.ClusterID, strings.Join(reasons, "; "))
}

// Unwrap returns ErrRefused.
func (e *CoverageIncompleteError) Unwrap() error { return ErrRefused }

// DryRunNotCleanError: Apply found no clean dry run of this plan (same
// hash, same target cluster, same field manager), or the dry run Apply runs
// before writing was not clean. Report, when set, holds the dry run that
// decided, per object.
type DryRunNotCleanError struct {
	PlanID    string
	ClusterID string
	Reason    string
	Report    *DryRunReport
}

func (e *DryRunNotCleanError) Error() string {
	msg := fmt.Sprintf("replay: plan %s has no clean dry run against cluster %s: %s", e.PlanID, e.ClusterID, e.Reason)
	if e.Report != nil {
		if s := e.Report.Summary(); s != "" {
			msg += " (" + s + ")"
		}
	}
	return msg
}

// Unwrap returns ErrRefused.
func (e *DryRunNotCleanError) Unwrap() error { return ErrRefused }

// SourceClusterError: the target is the cluster the plan's history was
// recorded from, and the Policy does not allow writing there.
type SourceClusterError struct {
	PlanID    string
	ClusterID string
	// DryRun is true when the refused act was a dry run (DryRun), false
	// when it was an apply (Apply).
	DryRun bool
}

func (e *SourceClusterError) Error() string {
	act := "apply"
	if e.DryRun {
		act = "dry run"
	}
	return fmt.Sprintf("replay: plan %s: %s refused: target cluster %s is the plan's source cluster (set Policy.AllowSourceCluster to dry-run and apply there)", e.PlanID, act, e.ClusterID)
}

// Unwrap returns ErrRefused.
func (e *SourceClusterError) Unwrap() error { return ErrRefused }

// StalePlanError: the plan's content no longer matches its hash, or its
// last clean dry run is too old to vouch for the target's current state.
type StalePlanError struct {
	PlanID string
	Reason string
}

func (e *StalePlanError) Error() string {
	return fmt.Sprintf("replay: plan %s is stale: %s", e.PlanID, e.Reason)
}

// Unwrap returns ErrRefused.
func (e *StalePlanError) Unwrap() error { return ErrRefused }

// UnsavedPlanError: DryRun, Apply or SavePlan was given a plan the journal
// does not hold as it is: a preview that was never saved (see
// Planner.SavePlan), or a plan whose ID the journal holds with another
// hash. Only the saved, reviewed plan is dry-run and applied.
type UnsavedPlanError struct {
	PlanID, PlanHash string
	Reason           string
}

func (e *UnsavedPlanError) Error() string {
	return fmt.Sprintf("replay: plan %s with hash %s is not a saved plan: %s (save the plan you reviewed with SavePlan, then dry-run it)", e.PlanID, e.PlanHash, e.Reason)
}

// Unwrap returns ErrRefused.
func (e *UnsavedPlanError) Unwrap() error { return ErrRefused }

// WrongTargetError: the cluster is not the one the plan's Target names.
type WrongTargetError struct {
	PlanID string
	Want   string
	Got    Identity
}

func (e *WrongTargetError) Error() string {
	return fmt.Sprintf("replay: plan %s targets cluster %s, but the client reaches cluster %s", e.PlanID, e.Want, e.Got)
}

// Unwrap returns ErrRefused.
func (e *WrongTargetError) Unwrap() error { return ErrRefused }

// ApplyError: Apply stopped after writing part of a plan. Report says,
// per object, what was written, what failed and what was not attempted.
// Applying the same plan again is safe: server-side apply is idempotent.
type ApplyError struct {
	PlanID string
	Report *ApplyReport
	// Failed names the object whose write failed, and Err the failure.
	Failed Object
	Err    error
}

func (e *ApplyError) Error() string {
	applied, notAttempted := 0, 0
	if e.Report != nil {
		for _, r := range e.Report.Results {
			switch r.Outcome {
			case OutcomeCreated, OutcomeUpdated, OutcomeUnchanged:
				applied++
			case OutcomeNotAttempted:
				notAttempted++
			}
		}
	}
	return fmt.Sprintf("replay: apply of plan %s stopped at %s after %d objects (%d not attempted; safe to retry): %v", e.PlanID, e.Failed.Ref, applied, notAttempted, e.Err)
}

// Unwrap returns the failure, so apierrors.IsConflict and friends work.
func (e *ApplyError) Unwrap() error { return e.Err }
