package replay

import (
	"encoding/json"
	"fmt"

	"github.com/krply/krply/replay/replayapi"
)

// The data types of a plan and its reports live in replay/replayapi, which
// a program that only reads them (the server's Go client) imports without
// this package's dry-run and apply path; these names keep them reachable
// as replay's own. See the replayapi package for their documentation.
type (
	// Plan is replayapi.Plan: a reviewed-before-applied replay.
	Plan = replayapi.Plan
	// Source is replayapi.Source: which recorded state a plan rebuilds.
	Source = replayapi.Source
	// Target is replayapi.Target: where a plan writes.
	Target = replayapi.Target
	// Policy is replayapi.Policy: what a plan may contain and how its
	// objects are sanitized.
	Policy = replayapi.Policy
	// Coverage is replayapi.Coverage: how complete a plan's history is.
	Coverage = replayapi.Coverage
	// Object is replayapi.Object: one object a plan writes.
	Object = replayapi.Object
	// Exclusion is replayapi.Exclusion: an object a plan leaves out, and why.
	Exclusion = replayapi.Exclusion
	// ExclusionRule is replayapi.ExclusionRule: the rule that left an
	// object out of a plan.
	ExclusionRule = replayapi.ExclusionRule
	// Status is replayapi.Status: where a plan stands.
	Status = replayapi.Status
	// Identity is replayapi.Identity: who a cluster is.
	Identity = replayapi.Identity
	// Action is replayapi.Action: what a dry run found the server would do
	// with one object.
	Action = replayapi.Action
	// Conflict is replayapi.Conflict: one field another manager owns.
	Conflict = replayapi.Conflict
	// ObjectResult is replayapi.ObjectResult: what a dry run found for one
	// object.
	ObjectResult = replayapi.ObjectResult
	// Failure is replayapi.Failure: a request that failed.
	Failure = replayapi.Failure
	// DryRunReport is replayapi.DryRunReport: the result of a dry run of a
	// plan against one cluster.
	DryRunReport = replayapi.DryRunReport
	// Confirmation is replayapi.Confirmation: the caller's consent to write
	// one plan.
	Confirmation = replayapi.Confirmation
	// Outcome is replayapi.Outcome: what Apply did with one object.
	Outcome = replayapi.Outcome
	// ApplyResult is replayapi.ApplyResult: what Apply did with one object.
	ApplyResult = replayapi.ApplyResult
	// ApplyReport is replayapi.ApplyReport: what Apply wrote.
	ApplyReport = replayapi.ApplyReport
)

// The statuses of a plan (see replayapi.Status).
const (
	StatusPlanned               = replayapi.StatusPlanned
	StatusDryRunOK              = replayapi.StatusDryRunOK
	StatusDryRunNeedsNamespaces = replayapi.StatusDryRunNeedsNamespaces
	StatusDryRunFailed          = replayapi.StatusDryRunFailed
	StatusApplied               = replayapi.StatusApplied
	StatusApplyFailed           = replayapi.StatusApplyFailed
)

// The exclusion rules (see replayapi.ExclusionRule and DefaultExclusions).
const (
	RuleSecrets          = replayapi.RuleSecrets
	RuleServiceAccounts  = replayapi.RuleServiceAccounts
	RuleRBAC             = replayapi.RuleRBAC
	RulePods             = replayapi.RulePods
	RuleJobs             = replayapi.RuleJobs
	RuleStorage          = replayapi.RuleStorage
	RuleLoadBalancers    = replayapi.RuleLoadBalancers
	RuleWebhooks         = replayapi.RuleWebhooks
	RuleCRDs             = replayapi.RuleCRDs
	RuleEvents           = replayapi.RuleEvents
	RuleLeases           = replayapi.RuleLeases
	RuleEndpoints        = replayapi.RuleEndpoints
	RuleControllerOwned  = replayapi.RuleControllerOwned
	RuleClusterPublished = replayapi.RuleClusterPublished
	RuleOutsideSource    = replayapi.RuleOutsideSource
	RuleNotSelected      = replayapi.RuleNotSelected
	RuleUnknownKind      = replayapi.RuleUnknownKind
)

// The actions of a dry run (see replayapi.Action).
const (
	ActionCreate       = replayapi.ActionCreate
	ActionChange       = replayapi.ActionChange
	ActionUnchanged    = replayapi.ActionUnchanged
	ActionConflict     = replayapi.ActionConflict
	ActionError        = replayapi.ActionError
	ActionNotValidated = replayapi.ActionNotValidated
)

// The outcomes of Apply (see replayapi.Outcome).
const (
	OutcomeCreated      = replayapi.OutcomeCreated
	OutcomeUpdated      = replayapi.OutcomeUpdated
	OutcomeUnchanged    = replayapi.OutcomeUnchanged
	OutcomeFailed       = replayapi.OutcomeFailed
	OutcomeNotAttempted = replayapi.OutcomeNotAttempted
)

// targetNamespace returns where objects of a source namespace go.
func targetNamespace(t Target, ns string) string {
	if to, ok := t.Namespaces[ns]; ok && to != "" {
		return to
	}
	return ns
}

// verifyHash returns a *StalePlanError when the content no longer matches
// the plan's Hash.
func verifyHash(p *Plan) error {
	h, err := p.ComputeHash()
	if err != nil {
		return err
	}
	if h != p.Hash {
		return &StalePlanError{PlanID: p.ID, Reason: fmt.Sprintf("content hash is %s but the plan says %s: the plan was changed after it was made", h, p.Hash)}
	}
	return nil
}

// ParsePlan decodes a plan written by JSON and checks its hash.
func ParsePlan(data []byte) (*Plan, error) {
	var p Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, fmt.Errorf("%w: decode plan: %v", ErrInvalidPlan, err)
	}
	if p.ID == "" || p.Hash == "" {
		return nil, fmt.Errorf("%w: plan without ID or hash", ErrInvalidPlan)
	}
	if err := verifyHash(&p); err != nil {
		return nil, err
	}
	return &p, nil
}
