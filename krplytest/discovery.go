package krplytest

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// verbs are the verbs every fake resource serves.
var verbs = metav1.Verbs{"get", "list", "watch", "create", "update", "patch", "delete"}

// BuiltinResources returns the resources a Cluster serves unless
// WithAPIResources adds more: the core, apps, batch, networking, RBAC and
// node kinds a typical workload uses, at their usual versions.
func BuiltinResources() []*metav1.APIResourceList {
	res := func(name, singular, kind string, namespaced bool, short ...string) metav1.APIResource {
		return metav1.APIResource{Name: name, SingularName: singular, Kind: kind, Namespaced: namespaced, Verbs: verbs, ShortNames: short}
	}
	return []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			res("namespaces", "namespace", "Namespace", false, "ns"),
			res("configmaps", "configmap", "ConfigMap", true, "cm"),
			res("secrets", "secret", "Secret", true),
			res("services", "service", "Service", true, "svc"),
			res("serviceaccounts", "serviceaccount", "ServiceAccount", true, "sa"),
			res("pods", "pod", "Pod", true, "po"),
			res("persistentvolumeclaims", "persistentvolumeclaim", "PersistentVolumeClaim", true, "pvc"),
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			res("deployments", "deployment", "Deployment", true, "deploy"),
			res("statefulsets", "statefulset", "StatefulSet", true, "sts"),
			res("daemonsets", "daemonset", "DaemonSet", true, "ds"),
			res("replicasets", "replicaset", "ReplicaSet", true, "rs"),
		}},
		{GroupVersion: "batch/v1", APIResources: []metav1.APIResource{
			res("jobs", "job", "Job", true),
			res("cronjobs", "cronjob", "CronJob", true, "cj"),
		}},
		{GroupVersion: "networking.k8s.io/v1", APIResources: []metav1.APIResource{
			res("ingresses", "ingress", "Ingress", true, "ing"),
			res("networkpolicies", "networkpolicy", "NetworkPolicy", true, "netpol"),
		}},
		{GroupVersion: "rbac.authorization.k8s.io/v1", APIResources: []metav1.APIResource{
			res("roles", "role", "Role", true),
			res("rolebindings", "rolebinding", "RoleBinding", true),
			res("clusterroles", "clusterrole", "ClusterRole", false),
			res("clusterrolebindings", "clusterrolebinding", "ClusterRoleBinding", false),
		}},
		{GroupVersion: "node.k8s.io/v1", APIResources: []metav1.APIResource{
			res("runtimeclasses", "runtimeclass", "RuntimeClass", false),
		}},
	}
}

// listKinds maps every served resource to its list kind, which the
// dynamic fake needs to answer List.
func listKinds(lists []*metav1.APIResourceList) map[schema.GroupVersionResource]string {
	out := map[schema.GroupVersionResource]string{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			out[gv.WithResource(r.Name)] = r.Kind + "List"
		}
	}
	return out
}

// resourceFor returns the resource serving a group/version/kind.
func resourceFor(lists []*metav1.APIResourceList, gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, bool) {
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil || gv != gvk.GroupVersion() {
			continue
		}
		for _, r := range l.APIResources {
			if r.Kind == gvk.Kind {
				return gv.WithResource(r.Name), r.Namespaced, true
			}
		}
	}
	return schema.GroupVersionResource{}, false, false
}
