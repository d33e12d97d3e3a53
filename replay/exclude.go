package replay

import (
	"fmt"
	"path"
	"strings"

	"github.com/krply/krply/event"
)

// ExclusionInfo describes one default exclusion rule.
type ExclusionInfo struct {
	Rule ExclusionRule `json:"rule"`
	// What says which objects the rule matches.
	What string `json:"what"`
	// Reason is why they are left out; it is copied into each Exclusion.
	Reason string `json:"reason"`
	// OptIn names the Policy field that includes them, "" when none does.
	OptIn string `json:"optIn,omitempty"`
}

var defaultExclusions = []ExclusionInfo{
	{RuleSecrets, "Secrets", "Secrets hold credentials; replaying them copies credentials into the target", "AllowSecrets"},
	{RuleServiceAccounts, "ServiceAccounts and service account token Secrets", "ServiceAccounts carry identity and mint tokens; the target issues its own", "AllowServiceAccounts"},
	{RuleRBAC, "Roles, ClusterRoles, RoleBindings, ClusterRoleBindings", "RBAC grants permissions; replaying it widens access in the target", "AllowRBAC"},
	{RulePods, "Pods", "Pods are run by their controllers; a bare Pod copy runs the workload outside any controller", "AllowPods"},
	{RuleJobs, "Jobs and CronJobs", "Jobs and CronJobs run work with side effects when created", "AllowJobs"},
	{RuleStorage, "PersistentVolumes, PersistentVolumeClaims, storage.k8s.io kinds", "storage binds to disks and provisioners of the source cluster", "AllowStorage"},
	{RuleLoadBalancers, "Services of type LoadBalancer", "a LoadBalancer Service provisions external infrastructure", "AllowLoadBalancers"},
	{RuleWebhooks, "admissionregistration.k8s.io kinds (webhooks, admission policies)", "admission webhooks and policies intercept every write to the target", "AllowWebhooks"},
	{RuleCRDs, "CustomResourceDefinitions", "CRDs change the target's API for every user of the cluster", "AllowCRDs"},
	{RuleEvents, "Events (core and events.k8s.io)", "Events are history, not declarative state", ""},
	{RuleLeases, "coordination.k8s.io Leases", "Leases are live coordination state of running processes", ""},
	{RuleEndpoints, "Endpoints and EndpointSlices", "endpoints are maintained by the target's controllers from its Services and Pods", ""},
	{RuleControllerOwned, "ReplicaSets, ControllerRevisions, Pods and Jobs owned by a controller", "their owning controller recreates them", ""},
	{RuleClusterPublished, "the kube-root-ca.crt ConfigMap", "the target cluster publishes its own into every namespace", ""},
}

// DefaultExclusions returns the rules that leave objects out of a plan by
// default, with their reasons and the Policy field that opts in, if any.
func DefaultExclusions() []ExclusionInfo {
	return append([]ExclusionInfo(nil), defaultExclusions...)
}

func exclusionInfo(rule ExclusionRule) ExclusionInfo {
	for _, e := range defaultExclusions {
		if e.Rule == rule {
			return e
		}
	}
	return ExclusionInfo{Rule: rule}
}

// objectKind is what the exclusion and ordering rules look at.
type objectKind struct {
	Group, Version, Kind, Resource string
	Namespace, Name                string
}

func kindOf(ref event.ResourceRef) objectKind {
	return objectKind{Group: ref.Group, Version: ref.Version, Kind: ref.Kind, Resource: ref.Resource, Namespace: ref.Namespace, Name: ref.Name}
}

func (k objectKind) is(group, resource string) bool {
	return k.Group == group && k.Resource == resource
}

// excludedBy decides whether an object is left out, and why. body is the
// object as recorded.
func excludedBy(p Policy, k objectKind, body map[string]any) (ExclusionRule, string, bool) {
	rule, detail, ok := excludedRuleOf(p, k, body)
	if !ok {
		return "", "", false
	}
	info := exclusionInfo(rule)
	reason := info.Reason
	if detail != "" {
		reason = detail + ": " + reason
	}
	if info.OptIn != "" {
		reason += " (opt in with Policy." + info.OptIn + ")"
	}
	return rule, reason, true
}

func excludedRuleOf(p Policy, k objectKind, body map[string]any) (ExclusionRule, string, bool) {
	// Rules that always apply come first, so an opt-in never lets them by.
	switch {
	case k.is("", "events") || k.is("events.k8s.io", "events"):
		return RuleEvents, "", true
	case k.is("coordination.k8s.io", "leases"):
		return RuleLeases, "", true
	case k.is("", "endpoints") || k.is("discovery.k8s.io", "endpointslices"):
		return RuleEndpoints, "", true
	case k.is("", "configmaps") && k.Name == "kube-root-ca.crt":
		return RuleClusterPublished, "", true
	}
	if k.is("apps", "replicasets") || k.is("apps", "controllerrevisions") || k.is("", "pods") || k.is("batch", "jobs") {
		if owner, ok := controllerOwner(body); ok {
			return RuleControllerOwned, "owned by " + owner, true
		}
	}

	switch {
	case k.is("", "secrets"):
		if t, _ := nestedString(body, "type"); t == "kubernetes.io/service-account-token" && !p.AllowServiceAccounts {
			return RuleServiceAccounts, "service account token", true
		}
		if !p.AllowSecrets {
			return RuleSecrets, "", true
		}
	case k.is("", "serviceaccounts"):
		if !p.AllowServiceAccounts {
			return RuleServiceAccounts, "", true
		}
	case k.Group == "rbac.authorization.k8s.io":
		if !p.AllowRBAC {
			return RuleRBAC, "", true
		}
	case k.is("", "pods"):
		if !p.AllowPods {
			return RulePods, "", true
		}
	case k.is("batch", "jobs") || k.is("batch", "cronjobs"):
		if !p.AllowJobs {
			return RuleJobs, "", true
		}
	case k.is("", "persistentvolumes") || k.is("", "persistentvolumeclaims") || k.Group == "storage.k8s.io":
		if !p.AllowStorage {
			return RuleStorage, "", true
		}
	case k.is("", "services"):
		if t, _ := nestedString(body, "spec", "type"); t == "LoadBalancer" && !p.AllowLoadBalancers {
			return RuleLoadBalancers, "", true
		}
	case k.Group == "admissionregistration.k8s.io":
		if !p.AllowWebhooks {
			return RuleWebhooks, "", true
		}
	case k.is("apiextensions.k8s.io", "customresourcedefinitions"):
		if !p.AllowCRDs {
			return RuleCRDs, "", true
		}
	}
	return "", "", false
}

// selectedBy reports whether Policy.Kinds and Policy.Names select an object.
func selectedBy(p Policy, k objectKind) (bool, string) {
	if len(p.Kinds) > 0 {
		found := false
		for _, want := range p.Kinds {
			want = strings.ToLower(strings.TrimSpace(want))
			if want == strings.ToLower(k.Kind) || want == k.Resource || (k.Group != "" && want == k.Resource+"."+k.Group) {
				found = true
				break
			}
		}
		if !found {
			return false, fmt.Sprintf("kind %s is not in Policy.Kinds", k.Kind)
		}
	}
	if len(p.Names) > 0 {
		for _, pat := range p.Names {
			if ok, _ := path.Match(pat, k.Name); ok {
				return true, ""
			}
		}
		return false, fmt.Sprintf("name %q matches no pattern of Policy.Names", k.Name)
	}
	return true, ""
}

// controllerOwner returns "Kind/name" of the ownerReference with
// controller: true, if there is one.
func controllerOwner(body map[string]any) (string, bool) {
	refs, _ := nested(body, "metadata", "ownerReferences").([]any)
	for _, r := range refs {
		ref, _ := r.(map[string]any)
		if c, _ := ref["controller"].(bool); c {
			kind, _ := ref["kind"].(string)
			name, _ := ref["name"].(string)
			return kind + "/" + name, true
		}
	}
	return "", false
}

// nested returns the value at a path of map keys, nil when absent.
func nested(obj map[string]any, fields ...string) any {
	var cur any = obj
	for _, f := range fields {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[f]
	}
	return cur
}

func nestedString(obj map[string]any, fields ...string) (string, bool) {
	s, ok := nested(obj, fields...).(string)
	return s, ok
}
