package materialize_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
)

func describeDiff(d *materialize.Diff) []string {
	var out []string
	for _, od := range d.Objects {
		s := fmt.Sprintf("%s %s %s/%s", od.Type, od.Kind, od.ID.Namespace, od.ID.Name)
		for _, c := range od.Changes {
			s += fmt.Sprintf(" %s:%v→%v", c.Path, c.Before, c.After)
		}
		out = append(out, s)
	}
	return out
}

// deployJournal is a Deployment and ConfigMaps in namespace shop, changed
// between minutes 1 and 10, with no gap; the watches are healthy until
// minute 60.
func deployJournal(t *testing.T) (*journal, event.Stream, event.Stream) {
	j := newJournal(t)
	deploys := j.stream("apps", "v1", "deployments", "shop")
	cms := j.stream("", "v1", "configmaps", "shop")
	web := func(replicas int, image string, ready int, containersFirst bool) obj {
		containers := []any{
			map[string]any{"name": "app", "image": image},
			map[string]any{"name": "proxy", "image": "envoy:1.30"},
		}
		if !containersFirst {
			slices.Reverse(containers)
		}
		return obj{kind: "Deployment", namespace: "shop", name: "web", uid: "uw", body: map[string]any{
			"metadata": map[string]any{"generation": replicas, "annotations": map[string]any{"deployment.kubernetes.io/revision": image}},
			"spec":     map[string]any{"replicas": replicas, "template": map[string]any{"spec": map[string]any{"containers": containers}}},
			"status":   map[string]any{"readyReplicas": ready},
		}}
	}
	j.baseline(deploys, "bd", at(1), web(2, "shop:1", 2, true))
	j.baseline(cms, "bc", at(1), cm("shop", "old", "uo", map[string]any{"k": "v"}), cm("shop", "same", "us", map[string]any{"k": "v"}))
	j.watch(deploys, event.Modified, web(5, "shop:1", 2, false), at(3))
	j.watch(deploys, event.Modified, web(5, "shop:2", 4, false), at(4))
	j.watch(cms, event.Deleted, cm("shop", "old", "uo", map[string]any{"k": "v"}), at(5))
	j.watch(cms, event.Added, cm("shop", "new", "un", map[string]any{"k": "v"}), at(6))
	// touched but unchanged apart from server-owned metadata
	j.watch(cms, event.Modified, cm("shop", "same", "us", map[string]any{"k": "v"}), at(7))
	j.progress(deploys, at(60))
	j.progress(cms, at(60))
	return j, deploys, cms
}

func TestDiff(t *testing.T) {
	j, _, _ := deployJournal(t)
	m := j.materializer()
	scope := materialize.Scope{ClusterID: "c1", Namespaces: []string{"shop"}}
	d, err := m.Diff(context.Background(), scope, at(2), at(10))
	if err != nil {
		t.Fatal(err)
	}
	// Sorted by group (core first), resource, namespace, name.
	want := []string{
		"added ConfigMap shop/new",
		"removed ConfigMap shop/old",
		"changed Deployment shop/web spec.replicas:2→5 spec.template.spec.containers[name=app].image:shop:1→shop:2",
	}
	if got := describeDiff(d); !slices.Equal(got, want) {
		t.Fatalf("diff\n got %q\nwant %q", got, want)
	}
	if d.HasGaps || len(d.Warnings) != 0 || len(d.Missing) != 0 {
		t.Fatalf("hasGaps=%v warnings %q missing %+v on a covered window", d.HasGaps, d.Warnings, d.Missing)
	}

	d, err = m.Diff(context.Background(), scope, at(2), at(10), materialize.IncludeStatus(true),
		materialize.WithIgnoreRules(materialize.IgnoreRule{Group: "apps", Kind: "Deployment", JSONPointers: []string{"/spec/replicas"}}))
	if err != nil {
		t.Fatal(err)
	}
	if got := describeDiff(d)[2]; got != "changed Deployment shop/web spec.template.spec.containers[name=app].image:shop:1→shop:2 status.readyReplicas:2→4" {
		t.Fatalf("with status, without replicas: %q", got)
	}

	// An empty window, and a window before anything was recorded.
	d, err = m.Diff(context.Background(), scope, at(10), at(10))
	if err != nil || len(d.Objects) != 0 || d.HasGaps {
		t.Fatalf("empty window: %q hasGaps=%v err %v", describeDiff(d), d.HasGaps, err)
	}
	d, err = m.Diff(context.Background(), scope, at(0), at(2))
	if err != nil {
		t.Fatal(err)
	}
	if !d.HasGaps || len(describeDiff(d)) != 3 {
		t.Fatalf("from before the first baseline: hasGaps=%v %q", d.HasGaps, describeDiff(d))
	}
	if _, err := m.Diff(context.Background(), scope, at(3), at(2)); err == nil {
		t.Fatal("no error for a reversed window")
	}
}

func TestDiffGaps(t *testing.T) {
	j := newOutageJournal(t)
	m := j.materializer()
	scope := materialize.Scope{ClusterID: "c1"}
	tests := []struct {
		name     string
		from, to time.Time
		hasGaps  bool
		gaps     int
		objects  []string
	}{
		{name: "before the outage", from: at(1), to: at(4.5), objects: []string{"changed ConfigMap shop/a", "removed ConfigMap shop/b", "added ConfigMap shop/c"}},
		// The gap is recorded at minute 8 but began at 5: a window ending
		// at 6 intersects it.
		{name: "ends inside the outage", from: at(4.5), to: at(6), hasGaps: true, gaps: 1, objects: []string{"changed ConfigMap shop/c"}},
		{name: "spans the outage", from: at(4.5), to: at(10), hasGaps: true, gaps: 1, objects: []string{"removed ConfigMap shop/c"}},
		{name: "after the relist", from: at(9), to: at(10)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := m.Diff(context.Background(), scope, tc.from, tc.to)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, od := range d.Objects {
				got = append(got, fmt.Sprintf("%s %s %s/%s", od.Type, od.Kind, od.ID.Namespace, od.ID.Name))
			}
			if !slices.Equal(got, tc.objects) {
				t.Errorf("objects %q, want %q", got, tc.objects)
			}
			if d.HasGaps != tc.hasGaps || len(d.Gaps) != tc.gaps {
				t.Fatalf("hasGaps=%v gaps=%d, want %v and %d (missing %+v)", d.HasGaps, len(d.Gaps), tc.hasGaps, tc.gaps, d.Missing)
			}
			if tc.hasGaps && (len(d.Warnings) == 0 || !strings.Contains(strings.Join(d.Warnings, "\n"), "changes may be missing")) {
				t.Errorf("warnings %q", d.Warnings)
			}
		})
	}
}

func TestDiffRenderers(t *testing.T) {
	j, _, _ := deployJournal(t)
	m := j.materializer()
	d, err := m.Diff(context.Background(), materialize.Scope{ClusterID: "c1", Namespaces: []string{"shop"}}, at(2), at(10))
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	if err := d.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	wantTable := `ConfigMap   shop/new  (added)
ConfigMap   shop/old  (removed)
Deployment  shop/web  spec.replicas                                  2 → 5
Deployment  shop/web  spec.template.spec.containers[name=app].image  shop:1 → shop:2
`
	if table.String() != wantTable {
		t.Fatalf("table\n%s\nwant\n%s", table.String(), wantTable)
	}

	var unified strings.Builder
	if err := d.WriteUnified(&unified); err != nil {
		t.Fatal(err)
	}
	// Reordered containers are aligned by name: only real changes show.
	wantUnified := `--- ConfigMap shop/new	(absent) 2025-03-01T12:02:00Z
+++ ConfigMap shop/new	2025-03-01T12:10:00Z
@@ -0,0 +1,7 @@
+apiVersion: v1
+data:
+  k: v
+kind: ConfigMap
+metadata:
+  name: new
+  namespace: shop
--- ConfigMap shop/old	2025-03-01T12:02:00Z
+++ ConfigMap shop/old	(absent) 2025-03-01T12:10:00Z
@@ -1,7 +0,0 @@
-apiVersion: v1
-data:
-  k: v
-kind: ConfigMap
-metadata:
-  name: old
-  namespace: shop
--- Deployment shop/web	2025-03-01T12:02:00Z
+++ Deployment shop/web	2025-03-01T12:10:00Z
@@ -5,11 +5,11 @@
   name: web
   namespace: shop
 spec:
-  replicas: 2
+  replicas: 5
   template:
     spec:
       containers:
-      - image: shop:1
+      - image: shop:2
         name: app
       - image: envoy:1.30
         name: proxy
`
	if unified.String() != wantUnified {
		t.Fatalf("unified\n%s\nwant\n%s", unified.String(), wantUnified)
	}
}
