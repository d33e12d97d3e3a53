package event

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestStreamID(t *testing.T) {
	cases := []struct {
		name   string
		stream Stream
		id     string
	}{
		{"core namespaced", Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}, "c1/core/v1/configmaps/shop"},
		{"core all namespaces", Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps"}, "c1/core/v1/configmaps"},
		{"cluster scope", Stream{ClusterID: "prod-eu", Version: "v1", Resource: "namespaces"}, "prod-eu/core/v1/namespaces"},
		{"named group", Stream{ClusterID: "c1", Group: "apps", Version: "v1", Resource: "deployments", Namespace: "shop"}, "c1/apps/v1/deployments/shop"},
		{"dotted group", Stream{ClusterID: "c1", Group: "networking.k8s.io", Version: "v1", Resource: "ingresses"}, "c1/networking.k8s.io/v1/ingresses"},
		{"group literally named core", Stream{ClusterID: "c1", Group: "core", Version: "v1", Resource: "things"}, "c1/%63ore/v1/things"},
		{"group named %63ore", Stream{ClusterID: "c1", Group: "%63ore", Version: "v1", Resource: "things"}, "c1/%2563ore/v1/things"},
		{"label selector", Stream{ClusterID: "c1", Version: "v1", Resource: "pods", Namespace: "shop", Selector: "labels:app=web,tier!=db;fields:"},
			"c1/core/v1/pods/shop?labels:app%3Dweb%2Ctier%21%3Ddb%3Bfields:"},
		{"selector with slash question mark percent", Stream{ClusterID: "c1", Version: "v1", Resource: "pods", Selector: "labels:example.com/team=a?b%c"},
			"c1/core/v1/pods?labels:example.com%2Fteam%3Da%3Fb%25c"},
		{"selector without namespace", Stream{ClusterID: "c1", Version: "v1", Resource: "pods", Selector: "fields:spec.nodeName=n1"},
			"c1/core/v1/pods?fields:spec.nodeName%3Dn1"},
		{"cluster with slash and space", Stream{ClusterID: "arn:aws/eks x", Version: "v1", Resource: "pods"}, "arn:aws%2Feks%20x/core/v1/pods"},
		{"non-ascii", Stream{ClusterID: "ç", Version: "v1", Resource: "pods"}, "%C3%A7/core/v1/pods"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.stream.ID(); got != tc.id {
				t.Fatalf("ID() = %q, want %q", got, tc.id)
			}
			if got := tc.stream.String(); got != tc.id {
				t.Fatalf("String() = %q, want %q", got, tc.id)
			}
			back, err := ParseStreamID(tc.id)
			if err != nil {
				t.Fatalf("ParseStreamID(%q): %v", tc.id, err)
			}
			if back != tc.stream {
				t.Fatalf("ParseStreamID(%q) = %+v, want %+v", tc.id, back, tc.stream)
			}
		})
	}
}

func TestParseStreamIDRejects(t *testing.T) {
	cases := map[string]string{
		"empty":                   "",
		"three segments":          "c1/core/v1",
		"six segments":            "c1/core/v1/pods/ns/extra",
		"empty group":             "c1//v1/pods",
		"empty namespace segment": "c1/core/v1/pods/",
		"empty selector":          "c1/core/v1/pods?",
		"lower-case hex":          "c1/core/v1/pods?a%3db",
		"truncated escape":        "c1/core/v1/pods?a%3",
		"bad escape":              "c1/core/v1/pods?a%ZZ",
		"raw space":               "c1/core/v1/pods?a b",
		"raw equals":              "c1/core/v1/pods?a=b",
		"second question mark":    "c1/core/v1/pods?a?b",
		"escaped unreserved":      "c1/%61pps/v1/deployments",
		"raw percent at end":      "c1/core/v1/pods/ns%",
	}
	for name, id := range cases {
		t.Run(name, func(t *testing.T) {
			s, err := ParseStreamID(id)
			if err == nil {
				t.Fatalf("ParseStreamID(%q) accepted %+v", id, s)
			}
			if !errors.Is(err, ErrInvalidStreamID) {
				t.Fatalf("ParseStreamID(%q): err %v does not wrap ErrInvalidStreamID", id, err)
			}
			if !strings.Contains(err.Error(), "event: invalid stream ID") {
				t.Fatalf("error %q lacks the package prefix", err)
			}
		})
	}
}

func TestStreamGVR(t *testing.T) {
	s := Stream{ClusterID: "c1", Group: "apps", Version: "v1", Resource: "deployments"}
	if got := s.GVR(); got != (schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}) {
		t.Fatalf("GVR() = %v", got)
	}
}

func TestResourceRef(t *testing.T) {
	cases := []struct {
		ref      ResourceRef
		key, str string
	}{
		{ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: "shop", Name: "web"}, "shop/web", "apps/deployments shop/web"},
		{ResourceRef{Version: "v1", Kind: "Namespace", Resource: "namespaces", Name: "shop"}, "shop", "namespaces shop"},
		{ResourceRef{Version: "v1", Kind: "ConfigMap", Resource: "configmaps", Namespace: "kube-system", Name: "x"}, "kube-system/x", "configmaps kube-system/x"},
	}
	for _, tc := range cases {
		if got := tc.ref.ObjectKey(); got != tc.key {
			t.Errorf("%+v ObjectKey() = %q, want %q", tc.ref, got, tc.key)
		}
		if got := tc.ref.String(); got != tc.str {
			t.Errorf("%+v String() = %q, want %q", tc.ref, got, tc.str)
		}
		if got := tc.ref.GVK(); got != (schema.GroupVersionKind{Group: tc.ref.Group, Version: tc.ref.Version, Kind: tc.ref.Kind}) {
			t.Errorf("GVK() = %v", got)
		}
		if got := tc.ref.GVR(); got != (schema.GroupVersionResource{Group: tc.ref.Group, Version: tc.ref.Version, Resource: tc.ref.Resource}) {
			t.Errorf("GVR() = %v", got)
		}
		if got := tc.ref.GroupResource(); got != (schema.GroupResource{Group: tc.ref.Group, Resource: tc.ref.Resource}) {
			t.Errorf("GroupResource() = %v", got)
		}
	}
}

func TestEventIDDeterministic(t *testing.T) {
	stream := Stream{ClusterID: "c1", Group: "apps", Version: "v1", Resource: "deployments", Namespace: "shop"}.ID()
	ref := ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: "shop", Name: "web", UID: "u-1", ResourceVersion: "42"}
	id := EventID(stream, TypeEvent, ref, Modified)
	if len(id) != 32 || strings.Trim(id, "0123456789abcdef") != "" {
		t.Fatalf("EventID = %q, want 32 lower-case hex digits", id)
	}
	for i := 0; i < 3; i++ {
		copyRef := ref
		if again := EventID(stream, TypeEvent, copyRef, Modified); again != id {
			t.Fatalf("EventID not deterministic: %q then %q", id, again)
		}
	}
	// The API version and kind do not name the event: the same change of
	// the same object in the same stream is one event.
	other := ref
	other.Version, other.Kind = "v1beta1", "Deploy"
	if EventID(stream, TypeEvent, other, Modified) != id {
		t.Fatal("EventID depends on the API version or kind")
	}
}

func TestEventIDSensitive(t *testing.T) {
	stream := "c1/apps/v1/deployments/shop"
	ref := ResourceRef{Group: "apps", Version: "v1", Resource: "deployments", Namespace: "shop", Name: "web", UID: "u-1", ResourceVersion: "42"}
	base := EventID(stream, TypeEvent, ref, Modified, "b1")
	variants := map[string]string{
		"stream":       EventID("c1/apps/v1/deployments", TypeEvent, ref, Modified, "b1"),
		"record type":  EventID(stream, TypeBaseline, ref, Modified, "b1"),
		"watch type":   EventID(stream, TypeEvent, ref, Added, "b1"),
		"no extra":     EventID(stream, TypeEvent, ref, Modified),
		"other extra":  EventID(stream, TypeEvent, ref, Modified, "b2"),
		"extra added":  EventID(stream, TypeEvent, ref, Modified, "b1", ""),
		"extra split":  EventID(stream, TypeEvent, ref, Modified, "b", "1"),
		"group":        EventID(stream, TypeEvent, with(ref, func(r *ResourceRef) { r.Group = "extensions" }), Modified, "b1"),
		"resource":     EventID(stream, TypeEvent, with(ref, func(r *ResourceRef) { r.Resource = "replicasets" }), Modified, "b1"),
		"namespace":    EventID(stream, TypeEvent, with(ref, func(r *ResourceRef) { r.Namespace = "web" }), Modified, "b1"),
		"name":         EventID(stream, TypeEvent, with(ref, func(r *ResourceRef) { r.Name = "api" }), Modified, "b1"),
		"uid":          EventID(stream, TypeEvent, with(ref, func(r *ResourceRef) { r.UID = "u-2" }), Modified, "b1"),
		"rv":           EventID(stream, TypeEvent, with(ref, func(r *ResourceRef) { r.ResourceVersion = "43" }), Modified, "b1"),
		"ns/name swap": EventID(stream, TypeEvent, with(ref, func(r *ResourceRef) { r.Namespace, r.Name = "shopw", "eb" }), Modified, "b1"),
	}
	seen := map[string]string{base: "base"}
	for _, name := range []string{"stream", "record type", "watch type", "no extra", "other extra", "extra added", "extra split",
		"group", "resource", "namespace", "name", "uid", "rv", "ns/name swap"} {
		id := variants[name]
		if prev, ok := seen[id]; ok {
			t.Errorf("changing %s gives the same EventID as %s", name, prev)
		}
		seen[id] = name
	}
}

func with(r ResourceRef, f func(*ResourceRef)) ResourceRef {
	f(&r)
	return r
}

func TestObjectHash(t *testing.T) {
	cases := map[string]string{
		"":   "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
		"{}": "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
	}
	for in, want := range cases {
		if got := ObjectHash([]byte(in)); got != want {
			t.Errorf("ObjectHash(%q) = %s, want %s", in, got, want)
		}
	}
	if ObjectHash([]byte(`{"a":1}`)) == ObjectHash([]byte(`{"a": 1}`)) {
		t.Error("ObjectHash must hash bytes as received, not a normalized form")
	}
}

// Event IDs are stored in journals and de-duplicate what is ingested again
// (an audit log read twice, a baseline recorded again), so the hash never
// changes: these are the IDs of journals written so far. StreamRecordID and
// RecordID are EventID without the parts their records do not have (the
// values were computed independently of this package: SHA-256 over
// "len:part|" for each part, first 16 bytes in hex).
func TestRecordIDsArePinned(t *testing.T) {
	stream := "c1/apps/v1/deployments/shop"
	ref := ResourceRef{Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web", UID: "u-1", ResourceVersion: "42"}
	plan := ResourceRef{Group: "krply.io", Kind: "ReplayDryRun", Name: "plan-1"}
	for name, tc := range map[string]struct{ got, old, want string }{
		"EventID": {EventID(stream, TypeEvent, ref, Modified, "b1"), EventID(stream, TypeEvent, ref, Modified, "b1"), "d919b2ac422900c861d26ea293b1e5cf"},
		"StreamRecordID": {StreamRecordID(stream, TypeBaseline, ResourceRef{ResourceVersion: "42"}, "b1", string(BaselineEnd)),
			EventID(stream, TypeBaseline, ResourceRef{ResourceVersion: "42"}, "", "b1", string(BaselineEnd)), "bb26f2b202b6e354cd3511b09bd14d8e"},
		"RecordID": {RecordID(TypePlan, plan, "report-1"), RecordID(TypePlan, plan, "report-1"), "cad7ec19afea71f549ecb0dcd1ddc37c"},
	} {
		if tc.got != tc.old {
			t.Errorf("%s = %s, but the same parts as EventID give %s", name, tc.got, tc.old)
		}
		if tc.got != tc.want {
			t.Errorf("%s = %s, want %s: the hash of stored IDs changed", name, tc.got, tc.want)
		}
	}
}

// TestEventIDPinned pins EventID's derivation: journals store EventIDs, and
// every writer, this version or another, must derive the same one for the
// same record, or an event delivered twice is stored twice. The values were
// computed by the first implementation (length-prefixed fields through
// fmt, SHA-256, the first 16 bytes in hex).
func TestEventIDPinned(t *testing.T) {
	ref := ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: "shop", Name: "web", UID: "u-1", ResourceVersion: "42"}
	long := make([]byte, 300)
	for i := range long {
		long[i] = 'a' + byte(i%26)
	}
	for _, tc := range []struct {
		got, want string
	}{
		{EventID("c1/apps/v1/deployments/shop", TypeEvent, ref, Modified), "de77994a709e3caedec0138533a7d134"},
		{EventID("c1/apps/v1/deployments/shop", TypeBaseline, ResourceRef{}, "", "b1", "begin"), "56ed28d4203dda242fb8092eeae5aff4"},
		{EventID("", TypeEvent, ResourceRef{Name: "ünïcode-ä"}, Added, "", "x"), "3d5b3c506e793d9dbdc4937a3615a2fa"},
		{EventID(string(long), TypeEvent, ref, Deleted, string(long)), "389e63217830d9e241d79877a34f4d31"},
	} {
		if tc.got != tc.want {
			t.Errorf("EventID = %s, want %s: the derivation changed, and journals would store events twice", tc.got, tc.want)
		}
	}
}

func BenchmarkEventID(b *testing.B) {
	stream := "c1/apps/v1/deployments/shop"
	ref := ResourceRef{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments", Namespace: "shop", Name: "web-7d4b9c", UID: "6f1c2a9e-3b7d-4c1e-9f0a-2d5e8b7c4a1f", ResourceVersion: "1234567"}
	b.ReportAllocs()
	for b.Loop() {
		_ = EventID(stream, TypeEvent, ref, Modified)
	}
}
