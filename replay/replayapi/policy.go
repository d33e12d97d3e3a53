package replayapi

// Policy decides what a plan may contain and how its objects are sanitized.
//
// The zero Policy is the safe default: every kind listed in replay.DefaultExclusions
// is left out, finalizers and ownerReferences are dropped, Services get new
// cluster IPs and node ports, a plan over incomplete coverage is refused, and
// a plan is never applied into the cluster it was recorded from. Each field
// opts in to one thing; none widens another.
type Policy struct {
	// AllowSecrets includes Secrets (their data is copied as recorded).
	// Service account token Secrets also need AllowServiceAccounts.
	AllowSecrets bool `json:"allowSecrets,omitempty"`
	// AllowServiceAccounts includes ServiceAccounts (and, with AllowSecrets,
	// their token Secrets).
	AllowServiceAccounts bool `json:"allowServiceAccounts,omitempty"`
	// AllowRBAC includes Roles, ClusterRoles and their bindings.
	AllowRBAC bool `json:"allowRBAC,omitempty"`
	// AllowPods includes Pods that no controller owns. Pods owned by a
	// controller are always left to their owner.
	AllowPods bool `json:"allowPods,omitempty"`
	// AllowJobs includes Jobs and CronJobs. Jobs owned by a CronJob are
	// always left to their owner.
	AllowJobs bool `json:"allowJobs,omitempty"`
	// AllowStorage includes PersistentVolumes, PersistentVolumeClaims and
	// the storage.k8s.io kinds (StorageClasses, …).
	AllowStorage bool `json:"allowStorage,omitempty"`
	// AllowLoadBalancers includes Services of type LoadBalancer.
	AllowLoadBalancers bool `json:"allowLoadBalancers,omitempty"`
	// AllowWebhooks includes the admissionregistration.k8s.io kinds: webhook
	// configurations and admission policies. They are ordered last, so they
	// never intercept the plan's own writes.
	AllowWebhooks bool `json:"allowWebhooks,omitempty"`
	// AllowCRDs includes CustomResourceDefinitions.
	AllowCRDs bool `json:"allowCRDs,omitempty"`

	// AllowFinalizers lists the finalizers kept in metadata.finalizers; every
	// other finalizer is removed. Empty removes all of them.
	AllowFinalizers []string `json:"allowFinalizers,omitempty"`
	// KeepOwnerReferences keeps metadata.ownerReferences. They name owners
	// by UID, which rarely exists in the target.
	KeepOwnerReferences bool `json:"keepOwnerReferences,omitempty"`
	// KeepClusterIPs keeps a Service's spec.clusterIP and spec.clusterIPs.
	// A headless Service's clusterIP "None" is always kept.
	KeepClusterIPs bool `json:"keepClusterIPs,omitempty"`
	// KeepNodePorts keeps a Service's spec.ports[*].nodePort and
	// spec.healthCheckNodePort.
	KeepNodePorts bool `json:"keepNodePorts,omitempty"`

	// AllowGaps lets a plan be made from a snapshot that is not Complete.
	// Every object from a stream that was not covered carries a warning.
	AllowGaps bool `json:"allowGaps,omitempty"`
	// AllowSourceCluster lets Apply write into the cluster the plan's
	// history was recorded from.
	AllowSourceCluster bool `json:"allowSourceCluster,omitempty"`

	// Kinds, when not empty, keeps only objects of these kinds. An entry
	// matches a Kind ("Deployment"), a resource ("deployments") or a
	// resource with its group ("deployments.apps"), case-insensitively.
	Kinds []string `json:"kinds,omitempty"`
	// Names, when not empty, keeps only objects whose (source) name matches
	// one of these path.Match patterns, e.g. "web-*". Namespaces the plan
	// writes to are always kept.
	Names []string `json:"names,omitempty"`
	// StripPaths lists more fields to remove, as JSON pointers (RFC 6901),
	// optionally restricted to a kind: "/spec/replicas" or
	// "Deployment:/metadata/annotations/deployment.kubernetes.io~1revision".
	StripPaths []string `json:"stripPaths,omitempty"`
}
