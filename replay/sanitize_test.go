package replay

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// mustDecode decodes a JSON object literal for a test.
func mustDecode(t *testing.T, s string) map[string]any {
	t.Helper()
	obj, err := decodeObject([]byte(s))
	if err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	return obj
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

// canonical re-encodes a JSON literal with sorted keys.
func canonical(t *testing.T, s string) string {
	t.Helper()
	return mustJSON(t, mustDecode(t, s))
}

var (
	kindConfigMap  = objectKind{Version: "v1", Kind: "ConfigMap", Resource: "configmaps"}
	kindService    = objectKind{Version: "v1", Kind: "Service", Resource: "services"}
	kindDeployment = objectKind{Group: "apps", Version: "v1", Kind: "Deployment", Resource: "deployments"}
	kindWidget     = objectKind{Group: "example.com", Version: "v1alpha1", Kind: "Widget", Resource: "widgets"}
)

func TestSanitizeRules(t *testing.T) {
	tests := []struct {
		name        string
		policy      Policy
		kind        objectKind
		in, want    string
		wantRemoved []string
	}{
		{
			name: "server-owned metadata",
			kind: kindConfigMap,
			in: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","uid":"u1","resourceVersion":"42",
				"creationTimestamp":"2026-01-01T00:00:00Z","generation":3,"managedFields":[{"manager":"kubectl"}],
				"deletionTimestamp":"2026-01-02T00:00:00Z","selfLink":"/api/v1/x","labels":{"app":"web"}},"data":{"k":"v"}}`,
			want: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","namespace":"n","labels":{"app":"web"}},"data":{"k":"v"}}`,
			wantRemoved: []string{"/metadata/uid", "/metadata/resourceVersion", "/metadata/creationTimestamp", "/metadata/generation",
				"/metadata/managedFields", "/metadata/deletionTimestamp", "/metadata/selfLink"},
		},
		{
			name:        "ownerReferences dropped",
			kind:        kindConfigMap,
			in:          `{"metadata":{"name":"a","ownerReferences":[{"kind":"X","name":"x","uid":"1"}]}}`,
			want:        `{"metadata":{"name":"a"}}`,
			wantRemoved: []string{"/metadata/ownerReferences"},
		},
		{
			name:   "ownerReferences kept",
			policy: Policy{KeepOwnerReferences: true},
			kind:   kindConfigMap,
			in:     `{"metadata":{"name":"a","ownerReferences":[{"kind":"X","name":"x","uid":"1"}]}}`,
			want:   `{"metadata":{"name":"a","ownerReferences":[{"kind":"X","name":"x","uid":"1"}]}}`,
		},
		{
			name:        "finalizers dropped",
			kind:        kindConfigMap,
			in:          `{"metadata":{"name":"a","finalizers":["example.com/x","example.com/y"]}}`,
			want:        `{"metadata":{"name":"a"}}`,
			wantRemoved: []string{"/metadata/finalizers"},
		},
		{
			name:        "allowlisted finalizer kept",
			policy:      Policy{AllowFinalizers: []string{"example.com/y"}},
			kind:        kindConfigMap,
			in:          `{"metadata":{"name":"a","finalizers":["example.com/x","example.com/y"]}}`,
			want:        `{"metadata":{"name":"a","finalizers":["example.com/y"]}}`,
			wantRemoved: []string{"/metadata/finalizers/0"},
		},
		{
			name:        "last-applied annotation dropped, others kept",
			kind:        kindConfigMap,
			in:          `{"metadata":{"name":"a","annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}","team":"x"}}}`,
			want:        `{"metadata":{"name":"a","annotations":{"team":"x"}}}`,
			wantRemoved: []string{"/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration"},
		},
		{
			name:        "controller-owned annotations dropped",
			kind:        kindDeployment,
			in:          `{"metadata":{"name":"a","annotations":{"deployment.kubernetes.io/revision":"3","deprecated.daemonset.template.generation":"2","team":"x"}}}`,
			want:        `{"metadata":{"name":"a","annotations":{"team":"x"}}}`,
			wantRemoved: []string{"/metadata/annotations/deployment.kubernetes.io~1revision", "/metadata/annotations/deprecated.daemonset.template.generation"},
		},
		{
			name:        "status dropped",
			kind:        kindWidget,
			in:          `{"metadata":{"name":"a"},"spec":{"x":1},"status":{"ready":true}}`,
			want:        `{"metadata":{"name":"a"},"spec":{"x":1}}`,
			wantRemoved: []string{"/status"},
		},
		{
			name: "service IPs and node ports dropped",
			kind: kindService,
			in: `{"metadata":{"name":"s"},"spec":{"type":"NodePort","clusterIP":"10.0.0.7","clusterIPs":["10.0.0.7"],
				"healthCheckNodePort":31000,"ports":[{"port":80,"nodePort":30080},{"port":443}]}}`,
			want:        `{"metadata":{"name":"s"},"spec":{"type":"NodePort","ports":[{"port":80},{"port":443}]}}`,
			wantRemoved: []string{"/spec/clusterIP", "/spec/clusterIPs", "/spec/ports/0/nodePort", "/spec/healthCheckNodePort"},
		},
		{
			name:   "service IPs and node ports kept",
			policy: Policy{KeepClusterIPs: true, KeepNodePorts: true},
			kind:   kindService,
			in:     `{"metadata":{"name":"s"},"spec":{"clusterIP":"10.0.0.7","clusterIPs":["10.0.0.7"],"ports":[{"port":80,"nodePort":30080}]}}`,
			want:   `{"metadata":{"name":"s"},"spec":{"clusterIP":"10.0.0.7","clusterIPs":["10.0.0.7"],"ports":[{"port":80,"nodePort":30080}]}}`,
		},
		{
			name: "headless service keeps clusterIP None",
			kind: kindService,
			in:   `{"metadata":{"name":"s"},"spec":{"clusterIP":"None","clusterIPs":["None"],"ports":[{"port":80}]}}`,
			want: `{"metadata":{"name":"s"},"spec":{"clusterIP":"None","clusterIPs":["None"],"ports":[{"port":80}]}}`,
		},
		{
			name: "clusterIP of a non-Service object is not touched",
			kind: kindWidget,
			in:   `{"metadata":{"name":"w"},"spec":{"clusterIP":"10.0.0.7","ports":[{"nodePort":30080}]}}`,
			want: `{"metadata":{"name":"w"},"spec":{"clusterIP":"10.0.0.7","ports":[{"nodePort":30080}]}}`,
		},
		{
			name:        "strip paths: every kind, one kind, escapes and list items",
			policy:      Policy{StripPaths: []string{"/spec/replicas", "Widget:/metadata/annotations/example.com~1owner", "ConfigMap:/data/gone", "/spec/items/1"}},
			kind:        kindWidget,
			in:          `{"metadata":{"name":"w","annotations":{"example.com/owner":"me","keep":"k"}},"spec":{"replicas":3,"items":["a","b","c"]}}`,
			want:        `{"metadata":{"name":"w","annotations":{"keep":"k"}},"spec":{"items":["a","c"]}}`,
			wantRemoved: []string{"/spec/replicas", "/metadata/annotations/example.com~1owner", "/spec/items/1"},
		},
		{
			name: "unknown CRD fields and exact numbers survive",
			kind: kindWidget,
			in: `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w","uid":"u"},
				"spec":{"big":12345678901234567890,"ratio":1.50,"nested":{"x-unknown":[{"deep":null}],"empty":{}}},
				"extraTopLevel":{"keep":true}}`,
			want: `{"apiVersion":"example.com/v1alpha1","kind":"Widget","metadata":{"name":"w"},
				"spec":{"big":12345678901234567890,"ratio":1.50,"nested":{"x-unknown":[{"deep":null}],"empty":{}}},
				"extraTopLevel":{"keep":true}}`,
			wantRemoved: []string{"/metadata/uid"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := validatePolicy(tt.policy); err != nil {
				t.Fatal(err)
			}
			body := mustDecode(t, tt.in)
			removed := sanitize(tt.policy, tt.kind, body)
			if got, want := mustJSON(t, body), canonical(t, tt.want); got != want {
				t.Errorf("sanitized body\n got %s\nwant %s", got, want)
			}
			if !slices.Equal(removed, tt.wantRemoved) {
				t.Errorf("removed = %q, want %q", removed, tt.wantRemoved)
			}
		})
	}
}

func TestSanitizeKeepsNumbersExact(t *testing.T) {
	body := mustDecode(t, `{"spec":{"big":12345678901234567890,"f":1.50,"e":1e3}}`)
	sanitize(Policy{}, kindWidget, body)
	got := mustJSON(t, body)
	for _, lit := range []string{"12345678901234567890", "1.50", "1e3"} {
		if !strings.Contains(got, lit) {
			t.Errorf("%s lost literal %s", got, lit)
		}
	}
}

func TestPolicyValidate(t *testing.T) {
	bad := []Policy{
		{Names: []string{"[a"}},
		{StripPaths: []string{"spec/x"}},
		{StripPaths: []string{"Kind:"}},
		{StripPaths: []string{"/a/~2"}},
		{Kinds: []string{" "}},
	}
	for _, p := range bad {
		if err := validatePolicy(p); err == nil {
			t.Errorf("validate(%+v) = nil, want an error", p)
		}
	}
	if err := validatePolicy((Policy{StripPaths: []string{"/spec/x", "Deployment:/spec/y"}, Names: []string{"web-*"}})); err != nil {
		t.Errorf("valid policy: %v", err)
	}
}

func TestPointerRoundTrip(t *testing.T) {
	tokens := []string{"metadata", "annotations", "a/b~c"}
	ptr := pointer(tokens...)
	if ptr != "/metadata/annotations/a~1b~0c" {
		t.Fatalf("pointer = %q", ptr)
	}
	got, err := parsePointer(ptr)
	if err != nil || !reflect.DeepEqual(got, tokens) {
		t.Fatalf("parsePointer(%q) = %q, %v", ptr, got, err)
	}
}
