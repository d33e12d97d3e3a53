// Package shop builds the objects of the small shop workload that the demo
// (examples/demo) and the web UI's browser tests (server/ui/browsertest)
// record: a namespace "shop" with ConfigMaps, a Deployment, a Service, a
// ServiceAccount, a Pod and Kubernetes Events, as unstructured objects for a
// dynamic client.
package shop

import (
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Namespace is the workload's namespace.
const Namespace = "shop"

// The resources of the workload.
var (
	NamespacesGVR  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	ConfigMapsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	ServicesGVR    = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	PodsGVR        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	AccountsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}
	EventsGVR      = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	DeploymentsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

// GVR returns the resource of an object the package builds.
func GVR(u *unstructured.Unstructured) schema.GroupVersionResource {
	switch u.GetKind() {
	case "Namespace":
		return NamespacesGVR
	case "ConfigMap":
		return ConfigMapsGVR
	case "Service":
		return ServicesGVR
	case "Pod":
		return PodsGVR
	case "ServiceAccount":
		return AccountsGVR
	case "Event":
		return EventsGVR
	}
	return DeploymentsGVR
}

// object is an object of the shop (a Namespace is cluster-scoped).
func object(apiVersion, kind, name string, fields map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: fields}
	if u.Object == nil {
		u.Object = map[string]any{}
	}
	u.SetAPIVersion(apiVersion)
	u.SetKind(kind)
	u.SetName(name)
	if kind != "Namespace" {
		u.SetNamespace(Namespace)
	}
	return u
}

// NamespaceObject is a Namespace.
func NamespaceObject(name string) *unstructured.Unstructured {
	return object("v1", "Namespace", name, nil)
}

// ConfigMap is a ConfigMap of the shop.
func ConfigMap(name string, data map[string]any) *unstructured.Unstructured {
	return object("v1", "ConfigMap", name, map[string]any{"data": data})
}

// ServiceAccount is a ServiceAccount of the shop.
func ServiceAccount(name string) *unstructured.Unstructured {
	return object("v1", "ServiceAccount", name, nil)
}

// Deployment is a Deployment of the shop whose one container reads the
// ConfigMap "settings".
func Deployment(name, image string, replicas int64) *unstructured.Unstructured {
	labels := map[string]any{"app": name}
	return object("apps/v1", "Deployment", name, map[string]any{"spec": map[string]any{
		"replicas": replicas,
		"selector": map[string]any{"matchLabels": labels},
		"template": map[string]any{
			"metadata": map[string]any{"labels": labels},
			"spec": map[string]any{"containers": []any{map[string]any{
				"name": "app", "image": image,
				"envFrom": []any{map[string]any{"configMapRef": map[string]any{"name": "settings"}}},
			}}},
		},
	}})
}

// SetImage sets the image of a Deployment's first container.
func SetImage(u *unstructured.Unstructured, image string) {
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if len(containers) > 0 {
		containers[0].(map[string]any)["image"] = image
		_ = unstructured.SetNestedSlice(u.Object, containers, "spec", "template", "spec", "containers")
	}
}

// Service is a Service of the shop in front of the Deployment of the same name.
func Service(name string) *unstructured.Unstructured {
	return object("v1", "Service", name, map[string]any{"spec": map[string]any{
		"selector": map[string]any{"app": name},
		"ports":    []any{map[string]any{"port": int64(80), "targetPort": int64(8080)}},
	}})
}

// Pod is a Pod of the shop running as the given ServiceAccount.
func Pod(name, account string) *unstructured.Unstructured {
	return object("v1", "Pod", name, map[string]any{"spec": map[string]any{
		"serviceAccountName":           account,
		"automountServiceAccountToken": false,
		"containers":                   []any{map[string]any{"name": "debug", "image": "busybox:1.37", "command": []any{"sleep", "3600"}}},
	}})
}

// Event is a Kubernetes Event about an object of the shop, as a controller
// writes one (no controller runs on the test control plane).
func Event(name, kind, apiVersion, about, reason, message string, at time.Time) *unstructured.Unstructured {
	ts := at.UTC().Format(time.RFC3339)
	return object("v1", "Event", name, map[string]any{
		"involvedObject": map[string]any{"apiVersion": apiVersion, "kind": kind, "namespace": Namespace, "name": about},
		"reason":         reason,
		"message":        message,
		"type":           "Normal",
		"count":          int64(1),
		"firstTimestamp": ts,
		"lastTimestamp":  ts,
		"source":         map[string]any{"component": "deployment-controller"},
	})
}
