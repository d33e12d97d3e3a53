package faultproxy

import (
	"net/http/httptest"
	"testing"
)

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		method, target string
		want           Request
	}{
		{"GET", "/api/v1/namespaces/ns1/configmaps?watch=true&resourceVersion=5",
			Request{Verb: "watch", Version: "v1", Resource: "configmaps", Namespace: "ns1"}},
		{"GET", "/api/v1/namespaces/ns1/configmaps?watch=1",
			Request{Verb: "watch", Version: "v1", Resource: "configmaps", Namespace: "ns1"}},
		{"GET", "/api/v1/namespaces/ns1/configmaps?limit=500",
			Request{Verb: "list", Version: "v1", Resource: "configmaps", Namespace: "ns1"}},
		{"GET", "/api/v1/configmaps",
			Request{Verb: "list", Version: "v1", Resource: "configmaps"}},
		{"GET", "/api/v1/namespaces/ns1/configmaps/cm1",
			Request{Verb: "get", Version: "v1", Resource: "configmaps", Namespace: "ns1", Name: "cm1"}},
		{"GET", "/api/v1/watch/namespaces/ns1/configmaps",
			Request{Verb: "watch", Version: "v1", Resource: "configmaps", Namespace: "ns1"}},
		{"POST", "/apis/apps/v1/namespaces/ns1/deployments",
			Request{Verb: "create", Group: "apps", Version: "v1", Resource: "deployments", Namespace: "ns1"}},
		{"PATCH", "/apis/apps/v1/namespaces/ns1/deployments/d1/scale",
			Request{Verb: "patch", Group: "apps", Version: "v1", Resource: "deployments", Subresource: "scale", Namespace: "ns1", Name: "d1"}},
		{"PUT", "/api/v1/namespaces/ns1/pods/p1/status",
			Request{Verb: "update", Version: "v1", Resource: "pods", Subresource: "status", Namespace: "ns1", Name: "p1"}},
		{"DELETE", "/api/v1/namespaces/ns1/configmaps",
			Request{Verb: "deletecollection", Version: "v1", Resource: "configmaps", Namespace: "ns1"}},
		{"DELETE", "/api/v1/namespaces/ns1/configmaps/cm1",
			Request{Verb: "delete", Version: "v1", Resource: "configmaps", Namespace: "ns1", Name: "cm1"}},
		{"GET", "/api/v1/namespaces",
			Request{Verb: "list", Version: "v1", Resource: "namespaces"}},
		{"GET", "/api/v1/namespaces/ns1",
			Request{Verb: "get", Version: "v1", Resource: "namespaces", Namespace: "ns1", Name: "ns1"}},
		{"PUT", "/api/v1/namespaces/ns1/finalize",
			Request{Verb: "update", Version: "v1", Resource: "namespaces", Subresource: "finalize", Namespace: "ns1", Name: "ns1"}},
		{"GET", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/b1",
			Request{Verb: "get", Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings", Name: "b1"}},
		{"GET", "/api", Request{Verb: "get"}},
		{"GET", "/apis/apps/v1", Request{Verb: "get"}},
		{"GET", "/version", Request{Verb: "get"}},
	} {
		r := httptest.NewRequest(tc.method, tc.target, nil)
		got := parseRequest(r)
		tc.want.Path = r.URL.Path
		if !sameRequest(got, tc.want) {
			t.Errorf("%s %s: got %+v, want %+v", tc.method, tc.target, got, tc.want)
		}
	}
}

func sameRequest(a, b Request) bool {
	return a.Verb == b.Verb && a.Group == b.Group && a.Version == b.Version && a.Resource == b.Resource &&
		a.Subresource == b.Subresource && a.Namespace == b.Namespace && a.Name == b.Name && a.Path == b.Path
}

func TestMatch(t *testing.T) {
	watchCMs := Request{Verb: "watch", Version: "v1", Resource: "configmaps", Namespace: "ns1"}
	scale := Request{Verb: "patch", Group: "apps", Version: "v1", Resource: "deployments", Subresource: "scale", Namespace: "ns1", Name: "d"}
	deploy := Request{Verb: "get", Group: "apps", Version: "v1", Resource: "deployments", Namespace: "ns1", Name: "d"}
	discovery := Request{Verb: "get", Path: "/api"}
	for _, tc := range []struct {
		m    Match
		r    Request
		want bool
	}{
		{Match{}, watchCMs, true},
		{Match{}, discovery, true},
		{Match{Verb: "watch"}, watchCMs, true},
		{Match{Verb: "list"}, watchCMs, false},
		{Match{Resource: "configmaps"}, watchCMs, true},
		{Match{Resource: "configmaps", Namespace: "ns2"}, watchCMs, false},
		{Match{Resource: "configmaps"}, discovery, false},
		{Match{Resource: "deployments"}, deploy, true},
		{Match{Resource: "deployments.apps"}, deploy, true},
		{Match{Resource: "deployments.extensions"}, deploy, false},
		{Match{Resource: "deployments"}, scale, false},
		{Match{Resource: "deployments.apps/scale"}, scale, true},
		{Match{Resource: "deployments/scale", Verb: "patch"}, scale, true},
	} {
		if got := tc.m.Matches(tc.r); got != tc.want {
			t.Errorf("%v matches %v = %v, want %v", tc.m, tc.r, got, tc.want)
		}
	}
}
