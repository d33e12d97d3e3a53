package replay_test

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/testing/wiretest"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/replay"
)

var (
	wireTarget = replay.Identity{UID: "0f1e2d3c-kube-system", ClusterID: "sandbox"}
	wireRef    = event.ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: "shop-copy", Name: "web"}
	wireCM     = event.ResourceRef{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "shop-copy", Name: "settings"}
)

// wireDryRun is a dry-run report that sets every field of its types.
func wireDryRun() *replay.DryRunReport {
	return &replay.DryRunReport{ID: "dry-1", PlanID: "plan-1", PlanHash: "sha256:0000", Cluster: wireTarget,
		FieldManager: "krply-replay", At: wiretest.At(20), Status: replay.StatusDryRunFailed,
		Results: []replay.ObjectResult{
			{Ref: wireRef, Action: replay.ActionChange, Validated: true,
				Changes: []materialize.FieldChange{{Path: "spec.replicas", Op: materialize.OpReplace, Before: json.Number("2"), After: json.Number("3")}}},
			{Ref: wireCM, Action: replay.ActionConflict, Validated: true,
				Conflicts: []replay.Conflict{{Manager: "helm", Field: ".data.color", Message: `conflict with "helm" using v1: .data.color`}},
				Failure:   replay.Failure{Code: 409, Reason: "Conflict", Message: "Apply failed with 1 conflict"}},
			{Ref: event.ResourceRef{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "new", Name: "x"},
				Action: replay.ActionNotValidated, MissingNamespace: "new",
				Failure: replay.Failure{Code: 404, Reason: "NotFound", Message: `namespaces "new" not found`}},
		}}
}

// TestWirePlan pins the JSON form of a replay plan (testdata/wire/plan.json)
// and its hash. The plan's JSON is also the document a saved plan keeps in
// the journal, and the hash covers that form: a changed hash here means
// every saved plan fails its check (StalePlanError) after an upgrade.
func TestWirePlan(t *testing.T) {
	plan := &replay.Plan{
		ID: "plan-1", CreatedAt: wiretest.At(12),
		Source:           replay.Source{ClusterID: "c1", Namespaces: []string{"shop"}, At: wiretest.At(10), SnapshotID: "snap-1"},
		SourceClusterUID: "9a8b7c6d-kube-system",
		Target: replay.Target{ClusterID: "sandbox", Namespaces: map[string]string{"shop": "shop-copy"},
			Names: map[string]string{"ConfigMap/settings": "settings-copy"}},
		Policy: replay.Policy{AllowSecrets: true, AllowServiceAccounts: true, AllowRBAC: true, AllowPods: true, AllowJobs: true,
			AllowStorage: true, AllowLoadBalancers: true, AllowWebhooks: true, AllowCRDs: true,
			AllowFinalizers: []string{"example.com/cleanup"}, KeepOwnerReferences: true, KeepClusterIPs: true, KeepNodePorts: true,
			AllowGaps: true, AllowSourceCluster: true, Kinds: []string{"Deployment", "configmaps"}, Names: []string{"web*"},
			StripPaths: []string{"/spec/replicas", "Deployment:/metadata/annotations/deployment.kubernetes.io~1revision"}},
		Coverage: replay.Coverage{Complete: true,
			Watermarks: []materialize.Watermark{{StreamID: "c1/apps/v1/deployments/shop", ResourceVersion: "45", ObservedAt: wiretest.At(9), Covered: true}},
			Missing: []materialize.MissingStream{{StreamID: "c1/core/v1/configmaps/shop", Reason: "gap from 2025-01-02T03:04:10.123456789Z: 410 Gone",
				Resource: schema.GroupResource{Resource: "configmaps"}, Namespace: "shop"}}},
		Objects: []replay.Object{{Ref: wireRef,
			Source:        event.ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: "shop", Name: "web", UID: "u-web", ResourceVersion: "42"},
			SourceEventID: "0a1b2c3d4e5f60718293a4b5c6d7e8f9", ObservedAt: wiretest.At(2), Synthesized: true,
			Removed:  []string{"/metadata/uid", "/status"},
			Warnings: []string{"recorded by stream c1/apps/v1/deployments/shop, which was not covered at the source time"},
			Object:   json.RawMessage(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"annotations":{"krply.io/plan-id":"plan-1"},"name":"web","namespace":"shop-copy"},"spec":{"replicas":3}}`)}},
		Exclusions: []replay.Exclusion{{Ref: event.ResourceRef{Version: "v1", Kind: "Secret", Resource: "secrets", Namespace: "shop", Name: "token"},
			Rule: replay.RuleSecrets, Reason: "Secrets hold credentials"}},
		Warnings: []string{"objects are renamed (Target.Names); references between objects are not rewritten"},
		Status:   replay.StatusDryRunFailed, LastDryRun: wireDryRun(),
	}
	hash, err := plan.ComputeHash()
	if err != nil {
		t.Fatal(err)
	}
	plan.Hash = hash
	wiretest.Check(t, "plan", map[string]any{
		"plan":         plan,
		"confirmation": replay.Confirmation{PlanID: plan.ID, PlanHash: plan.Hash},
		"exclusion info": replay.ExclusionInfo{Rule: replay.RuleSecrets, What: "Secrets",
			Reason: "Secrets hold credentials; replaying them copies credentials into the target", OptIn: "AllowSecrets"},
		"enums": wiretest.Enums(t, replay.Status(""), replay.ExclusionRule("")),
	})
}

// TestWireDryRun pins the JSON form of a dry-run report
// (testdata/wire/dryrun.json), which is also how it is saved.
func TestWireDryRun(t *testing.T) {
	wiretest.Check(t, "dryrun", map[string]any{
		"dry run report": wireDryRun(),
		"enums":          wiretest.Enums(t, replay.Action("")),
	})
}

// TestWireApply pins the JSON form of an apply report
// (testdata/wire/apply.json), which is also how it is saved.
func TestWireApply(t *testing.T) {
	wiretest.Check(t, "apply", map[string]any{
		"apply report": replay.ApplyReport{ID: "apply-1", PlanID: "plan-1", PlanHash: "sha256:0000", Cluster: wireTarget,
			FieldManager: "krply-replay", StartedAt: wiretest.At(21), FinishedAt: wiretest.At(22), Status: replay.StatusApplyFailed,
			DryRuns: []string{"dry-2"},
			Results: []replay.ApplyResult{
				{Ref: wireRef, Outcome: replay.OutcomeUpdated, ResourceVersion: "77"},
				{Ref: wireCM, Outcome: replay.OutcomeFailed, Failure: replay.Failure{Code: 422, Reason: "Invalid", Message: "data: Invalid value"}},
			}},
		"enums": wiretest.Enums(t, replay.Outcome("")),
	})
}

// TestWirePersisted decodes the plan and reports a journal of schema v1
// keeps (testdata/wire/persisted/v1): every field survives, and the plan's
// hash still verifies, so plans saved by that version can be dry-run and
// applied.
func TestWirePersisted(t *testing.T) {
	plan, data := wiretest.Persisted[replay.Plan](t, "v1", "plan")
	parsed, err := replay.ParsePlan(data)
	if err != nil {
		t.Fatalf("ParsePlan of the persisted v1 plan: %v", err)
	}
	if parsed.Hash != plan.Hash || len(parsed.Objects) != 1 || parsed.LastDryRun == nil {
		t.Errorf("ParsePlan: hash %s, %d objects, last dry run %v; want hash %s, 1 object, a dry run",
			parsed.Hash, len(parsed.Objects), parsed.LastDryRun, plan.Hash)
	}
	wiretest.Persisted[replay.DryRunReport](t, "v1", "dryrun")
	wiretest.Persisted[replay.ApplyReport](t, "v1", "apply")
}
