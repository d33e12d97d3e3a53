package krplytest_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/watch"
)

// With a label selector, the fake cluster's Sync compares the journal with
// what the selector lets through, as the fake's List does.
func TestClusterWithALabelSelector(t *testing.T) {
	web := configMap("shop", "web", "a")
	web.SetLabels(map[string]string{"app": "web"})
	c := krplytest.NewCluster(t, krplytest.WithResources("cm"), krplytest.WithObjects(web, configMap("shop", "other", "a")),
		krplytest.WithCollectorOptions(watch.WithLabelSelector("app=web")))
	for _, name := range []string{"web", "other"} {
		c.Modify("cm", "shop", name, func(u *unstructured.Unstructured) {
			_ = unstructured.SetNestedField(u.Object, "b", "data", "key")
		})
	}
	krplytest.AssertHistory(t, c.History("cm", "shop", "web"),
		krplytest.Version{Type: event.Added},
		krplytest.Version{Type: event.Modified, Changes: map[string]any{"data.key": "b"}},
	)
	if n := len(c.History("cm", "shop", "other").Versions()); n != 0 {
		t.Errorf("the filtered-out ConfigMap has %d versions, want 0", n)
	}

	// As on an API server, an object that stops matching is deleted from
	// the stream's point of view, and one that starts matching is added.
	c.Modify("cm", "shop", "web", func(u *unstructured.Unstructured) { u.SetLabels(nil) })
	c.Modify("cm", "shop", "other", func(u *unstructured.Unstructured) { u.SetLabels(map[string]string{"app": "web"}) })
	krplytest.AssertHistory(t, c.History("cm", "shop", "web"),
		krplytest.Version{Type: event.Added},
		krplytest.Version{Type: event.Modified},
		krplytest.Version{Type: event.Deleted},
	)
	krplytest.AssertHistory(t, c.History("cm", "shop", "other"),
		krplytest.Version{Type: event.Added, Origin: materialize.OriginWatch},
	)
}
