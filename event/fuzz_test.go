package event

import "testing"

// FuzzStreamIDRoundTrip proves that ParseStreamID(s.ID()) returns s for
// every Stream, whatever its fields contain.
func FuzzStreamIDRoundTrip(f *testing.F) {
	seeds := []Stream{
		{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"},
		{ClusterID: "c1", Version: "v1", Resource: "namespaces"},
		{ClusterID: "c1", Group: "core", Version: "v1", Resource: "things"},
		{ClusterID: "c1", Group: "%63ore", Version: "v1", Resource: "things"},
		{ClusterID: "c1", Group: "apps", Version: "v1", Resource: "deployments", Selector: "labels:app=web,tier!=db;fields:a/b=c?d%e"},
		{},
		{Namespace: "/", Selector: "?"},
		{ClusterID: "%", Group: "?", Version: "/", Resource: "=", Namespace: "!", Selector: ","},
		{ClusterID: "\x00\xff", Group: "é", Selector: "%2F"},
	}
	for _, s := range seeds {
		f.Add(s.ClusterID, s.Group, s.Version, s.Resource, s.Namespace, s.Selector)
	}
	f.Fuzz(func(t *testing.T, cluster, group, version, resource, namespace, selector string) {
		s := Stream{ClusterID: cluster, Group: group, Version: version, Resource: resource, Namespace: namespace, Selector: selector}
		id := s.ID()
		back, err := ParseStreamID(id)
		if err != nil {
			t.Fatalf("ParseStreamID(%q) of %+v: %v", id, s, err)
		}
		if back != s {
			t.Fatalf("round trip of %+v through %q gave %+v", s, id, back)
		}
	})
}

// FuzzParseStreamID proves that every ID ParseStreamID accepts is
// canonical: it re-encodes to itself.
func FuzzParseStreamID(f *testing.F) {
	for _, id := range []string{
		"c1/core/v1/configmaps/shop", "c1/core/v1/namespaces", "c1/%63ore/v1/things",
		"c1/apps/v1/deployments?labels%3Aapp%3Dweb", "///", "/core//", "a/b/c/d/e?f",
		"c1/%61pps/v1/x", "c1/core/v1/pods?a%3db", "c1/core/v1/pods/", "%ZZ/core/v1/x",
	} {
		f.Add(id)
	}
	f.Fuzz(func(t *testing.T, id string) {
		s, err := ParseStreamID(id)
		if err != nil {
			return
		}
		if got := s.ID(); got != id {
			t.Fatalf("ParseStreamID(%q) accepted %+v, which encodes as %q", id, s, got)
		}
	})
}
