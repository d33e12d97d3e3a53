package krplytest_test

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/materialize"
)

// lastChanges prints the field changes of an object's last version.
func lastChanges(c *krplytest.Cluster, resource, ns, name string) {
	vs := c.History(resource, ns, name).Versions()
	fmt.Println(krplytest.FormatChanges(vs[len(vs)-1].Changes))
}

// A map (or list) that did not exist is reported as one change of the
// whole map, at the map's path; a key added to a map that existed is a
// change of its own. An expectation may name either: a path inside a map
// added or removed whole matches the value inside it.
func Example_mapsAddedWhole() {
	t := &exampleT{}
	defer t.done()
	c := krplytest.NewCluster(t, krplytest.WithResources("deploy"), krplytest.WithObjects(deployment("shop", "web", 1)))

	// web has no annotations yet: the whole map is added.
	c.Modify("deploy", "shop", "web", func(u *unstructured.Unstructured) {
		u.SetAnnotations(map[string]string{"owner": "ann"})
	})
	lastChanges(c, "deploy", "shop", "web")
	h := c.History("deploy", "shop", "web")
	fmt.Println(krplytest.AssertHistory(t, h, krplytest.Version{}, krplytest.Version{Changes: map[string]any{
		"metadata.annotations": map[string]string{"owner": "ann"},
	}}))
	fmt.Println(krplytest.AssertHistory(t, h, krplytest.Version{}, krplytest.Version{Changes: map[string]any{
		"metadata.annotations.owner": "ann",
	}}))

	// Now the map exists: a new key is a change of that key.
	c.Modify("deploy", "shop", "web", func(u *unstructured.Unstructured) {
		u.SetAnnotations(map[string]string{"owner": "ann", "team": "shop"})
	})
	lastChanges(c, "deploy", "shop", "web")
	// Output:
	// metadata.annotations: + {"owner":"ann"}
	// true
	// true
	// metadata.annotations.team: + "shop"
}

// A field name made of letters, digits, _, $ and - (not first) follows a
// dot; any other name — with a dot, a slash, a space, or starting with a
// digit — is written as a Go-quoted string in brackets:
// metadata.annotations["example.com/x"], data["config.yaml"].
func Example_keysWithDots() {
	t := &exampleT{}
	defer t.done()
	c := krplytest.NewCluster(t, krplytest.WithResources("cm"), krplytest.WithObjects(configMap("shop", "settings", "a")))
	c.Modify("cm", "shop", "settings", func(u *unstructured.Unstructured) {
		u.SetLabels(map[string]string{"app.kubernetes.io/name": "shop"})
		_ = unstructured.SetNestedField(u.Object, "debug: true", "data", "config.yaml")
		_ = unstructured.SetNestedField(u.Object, "b", "data", "key")
		_ = unstructured.SetNestedField(u.Object, "x", "data", "log-level")
	})
	lastChanges(c, "cm", "shop", "settings")
	fmt.Println(krplytest.AssertHistory(t, c.History("cm", "shop", "settings"), krplytest.Version{}, krplytest.Version{Changes: map[string]any{
		`data["config.yaml"]`: "debug: true",
		"data.log-level":      "x",
		// Inside the labels added whole.
		`metadata.labels["app.kubernetes.io/name"]`: "shop",
	}}))
	// Output:
	// data["config.yaml"]: + "debug: true"; data.key: "a" -> "b"; data.log-level: + "x"; metadata.labels: + {"app.kubernetes.io/name":"shop"}
	// true
}

// Items of lists with a merge key (containers, env, volumes and
// volumeMounts by name, ports by containerPort, conditions by type, …:
// materialize.DefaultMergeKeys) are named by it, so a reordering is no
// change: spec.template.spec.containers[name=app].image. A value that is
// not a plain name is quoted ([name="my.app"]); numbers are bare
// ([containerPort=8080]). Other lists, or lists whose items lack a unique
// key, go by position: args[1].
func Example_listItemsByMergeKey() {
	t := &exampleT{}
	defer t.done()
	d := deployment("shop", "web", 1)
	_ = unstructured.SetNestedSlice(d.Object, []any{
		map[string]any{"name": "app", "image": "app:1", "args": []any{"serve", "--fast"},
			"ports": []any{map[string]any{"containerPort": int64(8080)}},
			"env":   []any{map[string]any{"name": "LOG_LEVEL", "value": "info"}}},
		map[string]any{"name": "my.sidecar", "image": "sidecar:1"},
	}, "spec", "template", "spec", "containers")
	c := krplytest.NewCluster(t, krplytest.WithResources("deploy"), krplytest.WithObjects(d))
	c.Modify("deploy", "shop", "web", func(u *unstructured.Unstructured) {
		cs, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
		app, sidecar := cs[0].(map[string]any), cs[1].(map[string]any)
		app["image"] = "app:2"
		app["args"] = []any{"serve", "--slow"}
		app["ports"] = []any{map[string]any{"containerPort": int64(8080), "protocol": "TCP"}}
		app["env"] = []any{map[string]any{"name": "LOG_LEVEL", "value": "debug"}}
		sidecar["image"] = "sidecar:2"
		// Reordered: the sidecar first. Not a change.
		_ = unstructured.SetNestedSlice(u.Object, []any{sidecar, app}, "spec", "template", "spec", "containers")
	})
	for _, fc := range c.History("deploy", "shop", "web").Versions()[1].Changes {
		fmt.Println(krplytest.FormatChanges([]materialize.FieldChange{fc}))
	}
	fmt.Println(krplytest.AssertHistory(t, c.History("deploy", "shop", "web"), krplytest.Version{}, krplytest.Version{Changes: map[string]any{
		"spec.template.spec.containers[name=app].image":                     "app:2",
		`spec.template.spec.containers[name="my.sidecar"].image`:            "sidecar:2",
		"spec.template.spec.containers[name=app].env[name=LOG_LEVEL].value": "debug",
	}}))
	// Output:
	// spec.template.spec.containers[name="my.sidecar"].image: "sidecar:1" -> "sidecar:2"
	// spec.template.spec.containers[name=app].args[1]: "--fast" -> "--slow"
	// spec.template.spec.containers[name=app].env[name=LOG_LEVEL].value: "info" -> "debug"
	// spec.template.spec.containers[name=app].image: "app:1" -> "app:2"
	// spec.template.spec.containers[name=app].ports[containerPort=8080].protocol: + "TCP"
	// true
}
