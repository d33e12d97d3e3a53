package replayapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
)

// Source says which recorded state a plan rebuilds: a cluster's namespaces
// at a time, or a saved snapshot.
type Source struct {
	// ClusterID is the journal's cluster ID of the source cluster.
	ClusterID string `json:"clusterID"`
	// Namespaces are the source namespaces. Empty means the whole cluster,
	// cluster-scoped objects included.
	Namespaces []string `json:"namespaces,omitempty"`
	// At is the time whose state is rebuilt.
	At time.Time `json:"at"`
	// SnapshotID, when set, names a saved snapshot to rebuild instead; the
	// other fields then come from the snapshot.
	SnapshotID string `json:"snapshotID,omitempty"`
}

// Target says where a plan writes.
type Target struct {
	// ClusterID, when set, is the identity the target cluster must have:
	// DryRun and Apply refuse a cluster whose identity (see
	// replay.Cluster.Identity) differs. Empty accepts any cluster but the source
	// (unless Policy.AllowSourceCluster).
	ClusterID string `json:"clusterID,omitempty"`
	// Namespaces maps source namespaces to target namespaces. A source
	// namespace that is not mapped keeps its name.
	Namespaces map[string]string `json:"namespaces,omitempty"`
	// Names renames objects: the key is "Kind/name" of the source object
	// (e.g. "ConfigMap/settings"), the value its name in the target.
	// References between objects (a Deployment's configMapRef, a
	// Service's selector) are not rewritten.
	Names map[string]string `json:"names,omitempty"`
}

// Coverage is how complete the history a plan was made from is.
type Coverage struct {
	// Complete is the snapshot's Complete: every contributing stream was
	// covered at the source time.
	Complete   bool                        `json:"complete"`
	Watermarks []materialize.Watermark     `json:"watermarks,omitempty"`
	Missing    []materialize.MissingStream `json:"missing,omitempty"`
}

// Object is one object a plan writes.
type Object struct {
	// Ref names the object in the target: group, version, kind, resource,
	// namespace and name (no UID, no resourceVersion).
	Ref event.ResourceRef `json:"ref"`
	// Source names the recorded version it comes from, with its UID and
	// resourceVersion, and SourceEventID the journal record.
	Source        event.ResourceRef `json:"source"`
	SourceEventID string            `json:"sourceEventID,omitempty"`
	// ObservedAt is when the collector saw that version (not when it was
	// made on the server).
	ObservedAt time.Time `json:"observedAt"`
	// Synthesized is true for a Namespace the plan creates although the
	// journal holds no record of it.
	Synthesized bool `json:"synthesized,omitempty"`
	// Removed lists, as JSON pointers into the recorded body, the fields
	// sanitizing removed.
	Removed []string `json:"removed,omitempty"`
	// Warnings are notes a reviewer should read, e.g. that the object's
	// stream was not covered at the source time.
	Warnings []string `json:"warnings,omitempty"`
	// Object is the body to apply: sanitized, mapped, and annotated with
	// the recorded version it comes from (krply.io/replay-source), never
	// with anything of the plan's own, so replaying state the target
	// already holds changes nothing.
	Object json.RawMessage `json:"object"`
}

// Exclusion is an object the plan leaves out, and why.
type Exclusion struct {
	// Ref names the recorded object.
	Ref    event.ResourceRef `json:"ref"`
	Rule   ExclusionRule     `json:"rule"`
	Reason string            `json:"reason"`
}

// ExclusionRule names the rule that left an object out of a plan.
type ExclusionRule string

// The exclusion rules. Rules with an opt-in (see replay.DefaultExclusions) apply
// unless the Policy sets it; the others always apply.
const (
	RuleSecrets         ExclusionRule = "secrets"
	RuleServiceAccounts ExclusionRule = "service-accounts"
	RuleRBAC            ExclusionRule = "rbac"
	RulePods            ExclusionRule = "pods"
	RuleJobs            ExclusionRule = "jobs"
	RuleStorage         ExclusionRule = "storage"
	RuleLoadBalancers   ExclusionRule = "load-balancers"
	RuleWebhooks        ExclusionRule = "webhooks"
	RuleCRDs            ExclusionRule = "crds"
	RuleEvents          ExclusionRule = "events"
	RuleLeases          ExclusionRule = "leases"
	RuleEndpoints       ExclusionRule = "endpoints"
	// RuleControllerOwned leaves out ReplicaSets, ControllerRevisions, Pods
	// and Jobs that a controller owns: their owner recreates them.
	RuleControllerOwned ExclusionRule = "controller-owned"
	// RuleClusterPublished leaves out objects the cluster itself publishes
	// into every namespace (the kube-root-ca.crt ConfigMap): the target
	// already has its own, owned by its controller, and replaying ours
	// would conflict with it.
	RuleClusterPublished ExclusionRule = "cluster-published"
	// RuleOutsideSource leaves out cluster-scoped objects when the source
	// names namespaces (except those Namespaces themselves).
	RuleOutsideSource ExclusionRule = "outside-source"
	// RuleNotSelected leaves out objects that Policy.Kinds or Policy.Names
	// do not select.
	RuleNotSelected ExclusionRule = "not-selected"
	// RuleUnknownKind leaves out bodies without apiVersion and kind.
	RuleUnknownKind ExclusionRule = "unknown-kind"
)

// Status is where a plan stands.
type Status string

// The statuses of a plan.
const (
	// StatusPlanned: made (and maybe saved), not dry-run yet.
	StatusPlanned Status = "planned"
	// StatusDryRunOK: the last dry run validated every object on the
	// server and found no conflict and no error.
	StatusDryRunOK Status = "dry-run-ok"
	// StatusDryRunNeedsNamespaces: the last dry run found no conflict and
	// no error, but some objects could not be validated because their
	// namespace does not exist yet; the plan creates those namespaces.
	// Apply creates them first and dry-runs the rest again before writing
	// anything else. This is not OK: those objects are unvalidated.
	StatusDryRunNeedsNamespaces Status = "dry-run-needs-namespaces"
	// StatusDryRunFailed: the last dry run found a conflict, an error or
	// an object it could not validate.
	StatusDryRunFailed Status = "dry-run-failed"
	// StatusApplied: the last Apply wrote every object.
	StatusApplied Status = "applied"
	// StatusApplyFailed: the last Apply stopped before writing every object.
	StatusApplyFailed Status = "apply-failed"
)

// Plan is a reviewed-before-applied replay: the sanitized objects that
// rebuild a recorded state, in apply order, with what was left out and why.
// A plan is immutable once made; its Hash covers everything but Status and
// LastDryRun. replay.Planner.Plan makes a preview; Planner.SavePlan saves it in
// the journal (see Planner.LoadPlan), so a plan reviewed today can be dry-run
// and applied by another process later. Only a saved plan is dry-run and
// applied.
//
// A saved plan is its JSON (docs/reference/wire-schema.md), and Hash covers that JSON:
// a new field of a type a plan holds must be omitted when zero, so that
// saved plans keep their hash, and no field is ever renamed.
type Plan struct {
	ID        string    `json:"id"`
	CreatedAt time.Time `json:"createdAt"`
	// Source is what the plan rebuilds, resolved: At is its time, and
	// SnapshotID names the saved snapshot it was made from, if it was made
	// from one (planning from a time saves no snapshot).
	Source Source `json:"source"`
	// SourceClusterUID is the UID of the source cluster's kube-system
	// namespace when the journal recorded it; Apply compares it with the
	// target's identity.
	SourceClusterUID string `json:"sourceClusterUID,omitempty"`
	Target           Target `json:"target"`
	Policy           Policy `json:"policy"`
	// Coverage is how complete the recorded history is at Source.At.
	Coverage Coverage `json:"coverage"`
	// Objects are in apply order (see replay.TierOf).
	Objects    []Object    `json:"objects"`
	Exclusions []Exclusion `json:"exclusions,omitempty"`
	Warnings   []string    `json:"warnings,omitempty"`
	// Hash is "sha256:<hex>" of the plan's content; Apply refuses a plan
	// whose content no longer matches it.
	Hash string `json:"hash"`

	// Status and LastDryRun are not part of the content: they change as
	// the plan is dry-run and applied.
	Status     Status        `json:"status"`
	LastDryRun *DryRunReport `json:"lastDryRun,omitempty"`
}

// hashedPlan is the content the hash covers: the plan without Hash, Status
// and LastDryRun, its Objects shadowed by hashedObjects.
type hashedPlan struct {
	Plan
	Objects []hashedObject `json:"objects"`
}

// hashedObject is an Object whose body is represented by its hash: hashing
// the bodies' bytes is much cheaper than re-encoding them.
type hashedObject struct {
	Object
	// BodyHash is event.ObjectHash of the compact body.
	BodyHash string `json:"bodyHash"`
}

// ComputeHash returns the hash of the plan's content as it is now. It equals
// Hash unless the plan was changed after it was made.
func (p *Plan) ComputeHash() (string, error) {
	h := hashedPlan{Plan: *p, Objects: make([]hashedObject, len(p.Objects))}
	h.Plan.Objects, h.Hash, h.Status, h.LastDryRun = nil, "", "", nil
	var buf bytes.Buffer
	for i, o := range p.Objects {
		body := []byte(o.Object)
		if !isCompact(body) {
			buf.Reset()
			if err := json.Compact(&buf, body); err != nil {
				return "", fmt.Errorf("%w: plan %s: object %s: %v", ErrInvalidPlan, p.ID, o.Ref, err)
			}
			body = buf.Bytes()
		}
		o.Object = nil
		h.Objects[i] = hashedObject{Object: o, BodyHash: event.ObjectHash(body)}
	}
	raw, err := json.Marshal(h)
	if err != nil {
		return "", fmt.Errorf("replay: hash plan %s: %w", p.ID, err)
	}
	sum := sha256.Sum256(raw)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// isCompact reports whether raw JSON has no whitespace outside strings, as
// json.Marshal writes it.
func isCompact(raw []byte) bool {
	inString, escaped := false, false
	for _, c := range raw {
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString && (c == ' ' || c == '\n' || c == '\t' || c == '\r'):
			return false
		}
	}
	return true
}

// JSON returns the plan as indented JSON, the form it is saved in.
func (p *Plan) JSON() ([]byte, error) {
	raw, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("replay: encode plan %s: %w", p.ID, err)
	}
	return raw, nil
}

// YAML returns the plan's objects as multi-document YAML, in apply order,
// which `kubectl apply --server-side -f` accepts. A comment header names the
// plan, its hash, source, target, warnings and exclusions.
func (p *Plan) YAML() ([]byte, error) {
	var b bytes.Buffer
	if err := p.WriteYAML(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// WriteYAML writes what YAML returns to w.
func (p *Plan) WriteYAML(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# krply replay plan %s\n# hash: %s\n", p.ID, p.Hash)
	fmt.Fprintf(&b, "# source: cluster %s, namespaces %s, at %s", p.Source.ClusterID, listOrAll(p.Source.Namespaces), p.Source.At.UTC().Format(time.RFC3339Nano))
	if !p.Coverage.Complete {
		b.WriteString(" (INCOMPLETE coverage)")
	}
	b.WriteString("\n")
	if len(p.Target.Namespaces) > 0 {
		fmt.Fprintf(&b, "# namespaces: %s\n", mapping(p.Target.Namespaces))
	}
	for _, w := range p.Warnings {
		fmt.Fprintf(&b, "# warning: %s\n", oneLine(w))
	}
	for _, e := range p.Exclusions {
		fmt.Fprintf(&b, "# excluded %s: %s\n", e.Ref.String(), oneLine(e.Reason))
	}
	for _, o := range p.Objects {
		for _, w := range o.Warnings {
			fmt.Fprintf(&b, "# warning on %s: %s\n", o.Ref.String(), oneLine(w))
		}
	}
	for _, o := range p.Objects {
		doc, err := yaml.JSONToYAML(o.Object)
		if err != nil {
			return fmt.Errorf("replay: plan %s: render %s as YAML: %w", p.ID, o.Ref, err)
		}
		b.WriteString("---\n")
		b.Write(doc)
	}
	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("replay: write plan %s: %w", p.ID, err)
	}
	return nil
}

func listOrAll(ns []string) string {
	if len(ns) == 0 {
		return "(all)"
	}
	return strings.Join(ns, ",")
}

func mapping(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "->" + m[k]
	}
	return strings.Join(parts, ", ")
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", " ") }
