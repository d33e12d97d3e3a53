package krplytest

import (
	"reflect"
	"testing"
)

// parsePath reads every form materialize writes, and refuses others.
func TestParsePath(t *testing.T) {
	for _, tc := range []struct {
		path string
		want []pathSeg
	}{
		{"spec.replicas", []pathSeg{{kind: 'f', field: "spec"}, {kind: 'f', field: "replicas"}}},
		{`metadata.annotations["example.com/x"]`, []pathSeg{{kind: 'f', field: "metadata"}, {kind: 'f', field: "annotations"}, {kind: 'f', field: "example.com/x"}}},
		{`["1st"].a-b`, []pathSeg{{kind: 'f', field: "1st"}, {kind: 'f', field: "a-b"}}},
		{"spec.args[12]", []pathSeg{{kind: 'f', field: "spec"}, {kind: 'f', field: "args"}, {kind: 'i', index: 12}}},
		{"c[name=app].ports[containerPort=80]", []pathSeg{{kind: 'f', field: "c"}, {kind: 'k', key: "name", value: "app"}, {kind: 'f', field: "ports"}, {kind: 'k', key: "containerPort", value: "80"}}},
		{`c[name="my.app"].image`, []pathSeg{{kind: 'f', field: "c"}, {kind: 'k', key: "name", value: "my.app"}, {kind: 'f', field: "image"}}},
	} {
		got, err := parsePath(tc.path)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("parsePath(%q) = %+v, %v; want %+v", tc.path, got, err, tc.want)
		}
	}
	for _, bad := range []string{".a", "a..b", "a[", `a["x`, "a[x]", "a[=1]", "a b"} {
		if got, err := parsePath(bad); err == nil {
			t.Errorf("parsePath(%q) = %+v, want an error", bad, got)
		}
	}
}
