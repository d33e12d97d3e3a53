package replayapi

import (
	"fmt"
	"strings"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
)

// Identity is who a cluster is.
type Identity struct {
	// UID is the UID of the cluster's kube-system namespace, which the
	// Collector also uses as its default cluster ID. It changes only when
	// the cluster is rebuilt.
	UID string `json:"uid"`
	// ClusterID is the name given with replay.WithClusterID, if any.
	ClusterID string `json:"clusterID,omitempty"`
}

// String returns the UID, with the configured name when there is one.
func (i Identity) String() string {
	if i.ClusterID != "" && i.ClusterID != i.UID {
		return i.ClusterID + " (kube-system " + i.UID + ")"
	}
	return i.UID
}

// Is reports whether id names this cluster, by UID or configured name.
func (i Identity) Is(id string) bool {
	return id != "" && (id == i.UID || id == i.ClusterID)
}

// Action is what a dry run found the server would do with one object.
type Action string

// The actions of a dry run. Only create, change and unchanged are clean, and
// only when Validated.
const (
	// ActionCreate: the object does not exist; the server accepted it.
	ActionCreate Action = "create"
	// ActionChange: the object exists; the server accepted the apply and
	// Changes lists what it would change.
	ActionChange Action = "change"
	// ActionUnchanged: the object exists and the apply would change nothing.
	ActionUnchanged Action = "unchanged"
	// ActionConflict: another field manager owns fields the plan sets to
	// other values; Conflicts names them. Apply never forces.
	ActionConflict Action = "conflict"
	// ActionError: the server rejected the object (invalid, forbidden, an
	// unknown kind, …) or could not be reached.
	ActionError Action = "error"
	// ActionNotValidated: the server could not validate the object because
	// its namespace does not exist (MissingNamespace). It is never clean.
	ActionNotValidated Action = "not-validated"
)

// Conflict is one field another manager owns, from the server's 409.
type Conflict struct {
	// Manager is the field manager that owns the field.
	Manager string `json:"manager"`
	// Field is the field's path in the server's notation, e.g. ".data.key".
	Field string `json:"field"`
	// Message is the server's text, e.g. `conflict with "helm" using v1`.
	Message string `json:"message"`
}

// ObjectResult is what the dry run found for one object.
type ObjectResult struct {
	Ref    event.ResourceRef `json:"ref"`
	Action Action            `json:"action"`
	// Validated is true when the server ran the object through validation
	// and admission (it answered the dry-run apply with an object).
	Validated bool `json:"validated"`
	// Changes lists what an existing object would change (ActionChange),
	// ignoring server-owned metadata and status.
	Changes []materialize.FieldChange `json:"changes,omitempty"`
	// Conflicts lists the conflicting fields (ActionConflict).
	Conflicts []Conflict `json:"conflicts,omitempty"`
	// MissingNamespace is the namespace that does not exist
	// (ActionNotValidated).
	MissingNamespace string `json:"missingNamespace,omitempty"`
	// Failure describes a failed request.
	Failure
}

// Failure describes a request that failed: the API server's status code,
// reason and message, or only a message when the server was not reached.
type Failure struct {
	Code    int32  `json:"code,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Clean reports whether the server validated the object and found nothing
// in the way.
func (r ObjectResult) Clean() bool {
	return r.Validated && (r.Action == ActionCreate || r.Action == ActionChange || r.Action == ActionUnchanged)
}

// DryRunReport is the result of a server-side dry run of a plan against one
// cluster. Reports are saved in the journal; Apply relies on them.
// A report is saved as its JSON (docs/reference/wire-schema.md): a field is added,
// omitted when zero, and never renamed.
type DryRunReport struct {
	ID       string `json:"id"`
	PlanID   string `json:"planID"`
	PlanHash string `json:"planHash"`
	// Cluster is the target's identity, FieldManager the manager used.
	Cluster      Identity  `json:"cluster"`
	FieldManager string    `json:"fieldManager"`
	At           time.Time `json:"at"`
	// Status is StatusDryRunOK, StatusDryRunNeedsNamespaces or
	// StatusDryRunFailed.
	Status Status `json:"status"`
	// Results has one entry per object, in the plan's order.
	Results []ObjectResult `json:"results"`
}

// Summary counts the results by action, e.g. "2 create, 1 conflict".
func (r *DryRunReport) Summary() string {
	if r == nil {
		return ""
	}
	order := []Action{ActionCreate, ActionChange, ActionUnchanged, ActionConflict, ActionError, ActionNotValidated}
	counts := map[Action]int{}
	for _, res := range r.Results {
		counts[res.Action]++
	}
	var parts []string
	for _, a := range order {
		if counts[a] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[a], a))
		}
	}
	return strings.Join(parts, ", ")
}

// Confirmation is the caller's explicit consent to write one plan: its ID
// and its hash, as shown to whoever reviewed it. Apply refuses any other.
type Confirmation struct {
	PlanID   string `json:"planID"`
	PlanHash string `json:"planHash"`
}

// Outcome is what Apply did with one object.
type Outcome string

// The outcomes of Apply.
const (
	// OutcomeCreated: the object did not exist and was created.
	OutcomeCreated Outcome = "created"
	// OutcomeUpdated: the object existed and the apply changed it.
	OutcomeUpdated Outcome = "updated"
	// OutcomeUnchanged: the object existed and the apply changed nothing.
	OutcomeUnchanged Outcome = "unchanged"
	// OutcomeFailed: the server refused the write; Apply stopped there.
	OutcomeFailed Outcome = "failed"
	// OutcomeNotAttempted: Apply stopped before this object.
	OutcomeNotAttempted Outcome = "not-attempted"
)

// ApplyResult is what Apply did with one object.
type ApplyResult struct {
	Ref     event.ResourceRef `json:"ref"`
	Outcome Outcome           `json:"outcome"`
	// ResourceVersion is the object's resourceVersion after the write.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Failure describes a failed write.
	Failure
}

// ApplyReport says what Apply wrote. It does not say the target converged:
// controllers in the target act on the objects afterwards.
// A report is saved as its JSON (docs/reference/wire-schema.md): a field is added,
// omitted when zero, and never renamed.
type ApplyReport struct {
	ID           string    `json:"id"`
	PlanID       string    `json:"planID"`
	PlanHash     string    `json:"planHash"`
	Cluster      Identity  `json:"cluster"`
	FieldManager string    `json:"fieldManager"`
	StartedAt    time.Time `json:"startedAt"`
	FinishedAt   time.Time `json:"finishedAt"`
	// Status is StatusApplied or StatusApplyFailed.
	Status Status `json:"status"`
	// DryRuns are the IDs of the dry runs Apply made before writing.
	DryRuns []string `json:"dryRuns"`
	// Results has one entry per object, in the plan's order.
	Results []ApplyResult `json:"results"`
}
