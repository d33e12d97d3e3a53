package main

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/storage"
	"github.com/krply/krply/watch"
)

// clusterOf returns --cluster-id, or the only cluster the journal holds.
func (e *env) clusterOf(ctx context.Context, src source) (string, error) {
	if e.clusterID != "" {
		return e.clusterID, nil
	}
	ids, err := src.Clusters(ctx)
	if err != nil {
		return "", err
	}
	switch len(ids) {
	case 0:
		return "", fmt.Errorf("the journal has recorded no cluster yet (kubectl krply record writes one)")
	case 1:
		return ids[0], nil
	}
	sort.Strings(ids)
	return "", usagef("the journal holds several clusters (%s): choose one with --cluster-id", strings.Join(ids, ", "))
}

// namespace returns -n, or the namespace of the kubeconfig's context
// ("default" without one), as kubectl does.
func (e *env) namespace() string {
	if e.kube.Namespace != nil && *e.kube.Namespace != "" {
		return *e.kube.Namespace
	}
	if ns, _, err := e.kube.ToRawKubeConfigLoader().Namespace(); err == nil && ns != "" {
		return ns
	}
	return "default"
}

// clusterScoped lists the resources with no namespace among those a
// journal usually records, so that `history ns/shop` ignores -n as
// kubectl does.
var clusterScoped = map[schema.GroupResource]bool{
	{Resource: "namespaces"}:                                                             true,
	{Resource: "nodes"}:                                                                  true,
	{Resource: "persistentvolumes"}:                                                      true,
	{Resource: "componentstatuses"}:                                                      true,
	{Group: "node.k8s.io", Resource: "runtimeclasses"}:                                   true,
	{Group: "storage.k8s.io", Resource: "storageclasses"}:                                true,
	{Group: "storage.k8s.io", Resource: "csidrivers"}:                                    true,
	{Group: "storage.k8s.io", Resource: "csinodes"}:                                      true,
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}:               true,
	{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}:                       true,
	{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}:                true,
	{Group: "scheduling.k8s.io", Resource: "priorityclasses"}:                            true,
	{Group: "networking.k8s.io", Resource: "ingressclasses"}:                             true,
	{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}:               true,
	{Group: "apiregistration.k8s.io", Resource: "apiservices"}:                           true,
	{Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations"}:   true,
	{Group: "admissionregistration.k8s.io", Resource: "validatingwebhookconfigurations"}: true,
}

// objectRef resolves a TYPE/NAME argument against the journal's streams:
// TYPE is a plural ("deployments"), a singular ("deployment"), a short
// name the recorder accepts ("deploy"), or any of those with its group
// ("deployments.apps", "deployment.apps" as kubectl's -o name prints).
func (e *env) objectRef(ctx context.Context, src source, clusterID, arg string) (storage.ObjectID, error) {
	typ, name, ok := strings.Cut(arg, "/")
	if !ok || typ == "" || name == "" || strings.Contains(name, "/") {
		return storage.ObjectID{}, usagef("%q: want TYPE/NAME, e.g. deploy/web or configmaps/settings", arg)
	}
	ns := e.namespace()
	gr, err := resolveType(ctx, src, clusterID, ns, typ, e.now())
	if err != nil {
		return storage.ObjectID{}, err
	}
	if clusterScoped[gr] {
		ns = ""
	}
	return storage.ObjectID{ClusterID: clusterID, Group: gr.Group, Resource: gr.Resource, Namespace: ns, Name: name}, nil
}

// resolveType finds the recorded resource a TYPE names, among the
// streams of namespace (and the cluster-scoped ones; "": every stream).
func resolveType(ctx context.Context, src source, clusterID, namespace, typ string, now time.Time) (schema.GroupResource, error) {
	streams, err := src.Streams(ctx, clusterID, namespace, now)
	if err != nil {
		return schema.GroupResource{}, err
	}
	var recorded []schema.GroupResource
	for _, st := range streams {
		gr := schema.GroupResource{Group: st.Status.Stream.Group, Resource: st.Status.Stream.Resource}
		if !slices.Contains(recorded, gr) {
			recorded = append(recorded, gr)
		}
	}
	matches := matchType(recorded, typ)
	switch len(matches) {
	case 1:
		return matches[0], nil
	case 0:
		names := make([]string, 0, len(recorded))
		for _, gr := range recorded {
			names = append(names, gr.String())
		}
		sort.Strings(names)
		return schema.GroupResource{}, fmt.Errorf("the journal records no resource %q (it records: %s)", typ, strings.Join(names, ", "))
	}
	names := make([]string, 0, len(matches))
	for _, gr := range matches {
		names = append(names, gr.String())
	}
	sort.Strings(names)
	return schema.GroupResource{}, usagef("%q names several recorded resources (%s): write TYPE.GROUP", typ, strings.Join(names, ", "))
}

// matchType returns the recorded resources typ names.
func matchType(recorded []schema.GroupResource, typ string) []schema.GroupResource {
	typ = strings.ToLower(typ)
	var out []schema.GroupResource
	for _, gr := range recorded {
		if typeNames(gr, typ) {
			out = append(out, gr)
		}
	}
	return out
}

// typeNames reports whether typ names gr.
func typeNames(gr schema.GroupResource, typ string) bool {
	if alias, ok := watch.Alias(typ); ok {
		return alias == gr
	}
	base, group, qualified := strings.Cut(typ, ".")
	if qualified && group != gr.Group {
		return false
	}
	r := gr.Resource
	return base == r || base+"s" == r || base+"es" == r ||
		(strings.HasSuffix(base, "y") && strings.TrimSuffix(base, "y")+"ies" == r)
}
