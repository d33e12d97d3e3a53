package replay

import (
	"cmp"
	"slices"
)

// Tier is the position of a kind in a plan's dependency order: every object
// of a lower tier is applied before any object of a higher one.
type Tier int

// The tiers, in apply order.
const (
	// TierNamespace: Namespaces, which everything namespaced needs.
	TierNamespace Tier = iota
	// TierDefinition: CustomResourceDefinitions (when allowed), which
	// custom objects need.
	TierDefinition
	// TierPolicy: ResourceQuotas and LimitRanges, which admission applies
	// to every object created after them.
	TierPolicy
	// TierConfig: ConfigMaps and (when allowed) Secrets.
	TierConfig
	// TierIdentity: ServiceAccounts, RBAC and storage (when allowed), which
	// Pods reference.
	TierIdentity
	// TierService: Services.
	TierService
	// TierWorkload: Deployments, StatefulSets, DaemonSets, ReplicaSets,
	// ReplicationControllers, Jobs, CronJobs and Pods.
	TierWorkload
	// TierOther: everything else, custom objects included.
	TierOther
	// TierAdmission: admission webhooks and policies (when allowed), last so
	// they never intercept the plan's own writes.
	TierAdmission
)

// TierOf returns the tier of a group and resource.
func TierOf(group, resource string) Tier {
	switch group {
	case "":
		switch resource {
		case "namespaces":
			return TierNamespace
		case "resourcequotas", "limitranges":
			return TierPolicy
		case "configmaps", "secrets":
			return TierConfig
		case "serviceaccounts", "persistentvolumes", "persistentvolumeclaims":
			return TierIdentity
		case "services":
			return TierService
		case "pods", "replicationcontrollers":
			return TierWorkload
		}
	case "apiextensions.k8s.io":
		if resource == "customresourcedefinitions" {
			return TierDefinition
		}
	case "rbac.authorization.k8s.io", "storage.k8s.io":
		return TierIdentity
	case "apps":
		switch resource {
		case "deployments", "statefulsets", "daemonsets", "replicasets":
			return TierWorkload
		}
	case "batch":
		switch resource {
		case "jobs", "cronjobs":
			return TierWorkload
		}
	case "admissionregistration.k8s.io":
		return TierAdmission
	}
	return TierOther
}

// sortObjects orders a plan's objects by tier, then group, resource,
// namespace and name, so the same content always yields the same order.
func sortObjects(objs []Object) {
	slices.SortStableFunc(objs, func(a, b Object) int {
		return cmp.Or(
			cmp.Compare(TierOf(a.Ref.Group, a.Ref.Resource), TierOf(b.Ref.Group, b.Ref.Resource)),
			cmp.Compare(a.Ref.Group, b.Ref.Group),
			cmp.Compare(a.Ref.Resource, b.Ref.Resource),
			cmp.Compare(a.Ref.Namespace, b.Ref.Namespace),
			cmp.Compare(a.Ref.Name, b.Ref.Name),
		)
	})
}
