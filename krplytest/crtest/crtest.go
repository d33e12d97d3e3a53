package crtest

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/krply/krply/krplytest"
)

// Cluster is a controller-runtime fake client whose every change a real
// krply Collector records into an in-memory journal. Hand Client to the
// reconciler under test, then ask the journal what happened with the
// methods of the embedded krplytest.Recording (History, Diff, Mark,
// EventuallyHistory, …).
type Cluster struct {
	*krplytest.Recording
	// Client is the fake client the builder built. Write through it (or
	// give it to the code under test); the Recording sees every write.
	Client client.WithWatch
	// Discovery serves every kind of the client's scheme that has a list
	// kind, at every version, under the resource name the fake client uses.
	Discovery *fakediscovery.FakeDiscovery
}

// New builds the fake client b describes — its scheme, objects, status
// subresources, interceptors — and starts recording it; everything stops
// when the test ends. The builder's objects are the first baseline. It
// returns once every stream has its baseline and an open watch, so every
// write the test or the reconciler makes afterwards is recorded.
//
// It records every kind of the scheme that has a list kind, at its
// preferred version, except Secrets; krplytest.WithResources names fewer
// ("deploy", "configmaps", "widgets.example.com", "apps/v1/deployments"),
// which makes it start faster. krplytest.WithClusterID, WithTimeout and
// WithCollectorOptions apply; WithObjects and WithAPIResources are for
// krplytest.NewCluster's fake and fail the test: give objects to the
// builder and kinds to its scheme.
func New(t krplytest.TestingT, b *fake.ClientBuilder, opts ...krplytest.Option) *Cluster {
	t.Helper()
	if b == nil {
		t.Fatalf("crtest: New: nil *fake.ClientBuilder (use fake.NewClientBuilder())")
		return nil
	}
	c := &Cluster{Client: b.Build()}
	apis, specs := discoveryFor(c.Client.Scheme(), c.Client.RESTMapper())
	c.Discovery = &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: apis}}
	dyn := newDynamic(c.Client, apis)
	// The default resources go first: a WithResources of the caller
	// overrides them.
	c.Recording = krplytest.RecordClient(t, dyn, c.Discovery, append([]krplytest.Option{krplytest.WithResources(specs...)}, opts...)...)
	if c.Recording == nil {
		return nil
	}
	return c
}

// clusterScoped are the built-in kinds without a namespace, for a fake
// client whose RESTMapper does not know them (the default one is empty).
var clusterScoped = map[schema.GroupKind]bool{
	{Kind: "Namespace"}: true, {Kind: "Node"}: true, {Kind: "PersistentVolume"}: true, {Kind: "ComponentStatus"}: true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:                         true,
	{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}:                  true,
	{Group: "storage.k8s.io", Kind: "StorageClass"}:                                   true,
	{Group: "storage.k8s.io", Kind: "CSIDriver"}:                                      true,
	{Group: "storage.k8s.io", Kind: "CSINode"}:                                        true,
	{Group: "storage.k8s.io", Kind: "VolumeAttachment"}:                               true,
	{Group: "storage.k8s.io", Kind: "VolumeAttributesClass"}:                          true,
	{Group: "scheduling.k8s.io", Kind: "PriorityClass"}:                               true,
	{Group: "node.k8s.io", Kind: "RuntimeClass"}:                                      true,
	{Group: "networking.k8s.io", Kind: "IngressClass"}:                                true,
	{Group: "networking.k8s.io", Kind: "IPAddress"}:                                   true,
	{Group: "networking.k8s.io", Kind: "ServiceCIDR"}:                                 true,
	{Group: "certificates.k8s.io", Kind: "CertificateSigningRequest"}:                 true,
	{Group: "admissionregistration.k8s.io", Kind: "MutatingWebhookConfiguration"}:     true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingWebhookConfiguration"}:   true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicy"}:        true,
	{Group: "admissionregistration.k8s.io", Kind: "ValidatingAdmissionPolicyBinding"}: true,
	{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:                 true,
	{Group: "apiregistration.k8s.io", Kind: "APIService"}:                             true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "FlowSchema"}:                       true,
	{Group: "flowcontrol.apiserver.k8s.io", Kind: "PriorityLevelConfiguration"}:       true,
}

// discoveryFor returns what a fake discovery serves for a scheme: every
// kind with a list kind, at every version (the group's preferred version
// first), named as the fake client names it, and the specs of the default
// resources: each group's preferred version of each resource, Secrets
// left out.
func discoveryFor(scheme *runtime.Scheme, mapper meta.RESTMapper) ([]*metav1.APIResourceList, []string) {
	byGV := map[schema.GroupVersion][]metav1.APIResource{}
	for gvk := range scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal || strings.HasSuffix(gvk.Kind, "List") || !scheme.Recognizes(gvk.GroupVersion().WithKind(gvk.Kind+"List")) {
			continue
		}
		obj, err := scheme.New(gvk)
		if err != nil {
			continue
		}
		if _, ok := obj.(metav1.Object); !ok {
			continue
		}
		plural, singular := meta.UnsafeGuessKindToResource(gvk)
		namespaced := !clusterScoped[gvk.GroupKind()]
		if m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			namespaced = m.Scope.Name() == meta.RESTScopeNameNamespace
		}
		byGV[gvk.GroupVersion()] = append(byGV[gvk.GroupVersion()], metav1.APIResource{
			Name: plural.Resource, SingularName: singular.Resource, Kind: gvk.Kind, Namespaced: namespaced,
			Verbs: metav1.Verbs{"get", "list", "watch", "create", "update", "patch", "delete"},
		})
	}
	// Groups in name order, each group's versions in the scheme's order of
	// priority: discovery takes a group's first version as preferred.
	groups := map[string][]schema.GroupVersion{}
	for gv := range byGV {
		groups[gv.Group] = append(groups[gv.Group], gv)
	}
	names := make([]string, 0, len(groups))
	for g := range groups {
		names = append(names, g)
	}
	sort.Strings(names)
	var apis []*metav1.APIResourceList
	var specs []string
	for _, g := range names {
		gvs := groups[g]
		// As an API server orders them: GA before beta before alpha,
		// newer first.
		sort.Slice(gvs, func(i, j int) bool {
			return version.CompareKubeAwareVersionStrings(gvs[i].Version, gvs[j].Version) > 0
		})
		seen := map[string]bool{}
		for _, gv := range gvs {
			rs := byGV[gv]
			sort.Slice(rs, func(i, j int) bool { return rs[i].Name < rs[j].Name })
			apis = append(apis, &metav1.APIResourceList{GroupVersion: gv.String(), APIResources: rs})
			for _, r := range rs {
				if seen[r.Name] || (g == "" && r.Name == "secrets") {
					continue
				}
				seen[r.Name] = true
				specs = append(specs, fmt.Sprintf("%s/%s", gv.String(), r.Name))
			}
		}
	}
	return apis, specs
}
