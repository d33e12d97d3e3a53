package watch_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/watch"
)

func TestAlias(t *testing.T) {
	for name, want := range map[string]schema.GroupResource{
		"deploy": {Group: "apps", Resource: "deployments"},
		"CM":     {Resource: "configmaps"},
		"svc":    {Resource: "services"},
		"sts":    {Group: "apps", Resource: "statefulsets"},
	} {
		if got, ok := watch.Alias(name); !ok || got != want {
			t.Errorf("Alias(%q) = %v, %v; want %v", name, got, ok, want)
		}
	}
	for _, name := range []string{"deployments", "widgets", ""} {
		if got, ok := watch.Alias(name); ok {
			t.Errorf("Alias(%q) = %v, want no alias", name, got)
		}
	}
}
