package why

import (
	"strings"

	"github.com/krply/krply/storage"
)

// resource is a group and a resource name.
type resource struct{ group, name string }

// kinds maps the kinds the graph walk follows to their resources. A kind
// not here (an owner of a custom resource) is guessed as its lower-case
// plural, in the group of its apiVersion.
var kinds = map[string]resource{
	"Pod":                     {"", "pods"},
	"ReplicaSet":              {"apps", "replicasets"},
	"Deployment":              {"apps", "deployments"},
	"StatefulSet":             {"apps", "statefulsets"},
	"DaemonSet":               {"apps", "daemonsets"},
	"ControllerRevision":      {"apps", "controllerrevisions"},
	"Job":                     {"batch", "jobs"},
	"CronJob":                 {"batch", "cronjobs"},
	"ReplicationController":   {"", "replicationcontrollers"},
	"ConfigMap":               {"", "configmaps"},
	"Secret":                  {"", "secrets"},
	"ServiceAccount":          {"", "serviceaccounts"},
	"PersistentVolumeClaim":   {"", "persistentvolumeclaims"},
	"PersistentVolume":        {"", "persistentvolumes"},
	"StorageClass":            {"storage.k8s.io", "storageclasses"},
	"Node":                    {"", "nodes"},
	"PriorityClass":           {"scheduling.k8s.io", "priorityclasses"},
	"RuntimeClass":            {"node.k8s.io", "runtimeclasses"},
	"Service":                 {"", "services"},
	"NetworkPolicy":           {"networking.k8s.io", "networkpolicies"},
	"PodDisruptionBudget":     {"policy", "poddisruptionbudgets"},
	"HorizontalPodAutoscaler": {"autoscaling", "horizontalpodautoscalers"},
	"Namespace":               {"", "namespaces"},
}

// clusterScoped are the resources of kinds without a namespace.
var clusterScoped = map[resource]bool{
	{"", "persistentvolumes"}: true, {"storage.k8s.io", "storageclasses"}: true, {"", "nodes"}: true,
	{"scheduling.k8s.io", "priorityclasses"}: true, {"node.k8s.io", "runtimeclasses"}: true, {"", "namespaces"}: true,
}

// resourceOf returns the resource of a kind in an apiVersion.
func resourceOf(apiVersion, kind string) resource {
	if r, ok := kinds[kind]; ok {
		return r
	}
	group := ""
	if i := strings.Index(apiVersion, "/"); i >= 0 {
		group = apiVersion[:i]
	}
	return resource{group, strings.ToLower(kind) + "s"}
}

// kindOf returns the kind of a resource, "" when the table does not know it.
func kindOf(group, name string) string {
	for k, r := range kinds {
		if r.group == group && r.name == name {
			return k
		}
	}
	return ""
}

// idOf names an object of a kind in a namespace of the cluster.
func idOf(cluster, apiVersion, kind, namespace, name string) storage.ObjectID {
	r := resourceOf(apiVersion, kind)
	if clusterScoped[r] {
		namespace = ""
	}
	return storage.ObjectID{ClusterID: cluster, Group: r.group, Resource: r.name, Namespace: namespace, Name: name}
}

// describe names an object for people: "configmaps shop/settings".
func describe(id storage.ObjectID) string {
	res := id.Resource
	if id.Group != "" {
		res += "." + id.Group
	}
	if id.Namespace == "" {
		return res + " " + id.Name
	}
	return res + " " + id.Namespace + "/" + id.Name
}

// resourceName is "resource.group", or "resource" in the core group.
func resourceName(group, name string) string {
	if group == "" {
		return name
	}
	return name + "." + group
}
