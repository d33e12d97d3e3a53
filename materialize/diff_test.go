package materialize_test

import (
	"context"
	"encoding/json"
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
	if want := []string{"unknown ConfigMap shop/old", "unknown ConfigMap shop/same", "unknown Deployment shop/web"}; !d.HasGaps || !slices.Equal(describeDiff(d), want) {
		t.Fatalf("from before the first baseline: hasGaps=%v %q, want %q", d.HasGaps, describeDiff(d), want)
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
		// at 6 intersects it, and the state at 6 is unknown.
		{name: "ends inside the outage", from: at(4.5), to: at(6), hasGaps: true, gaps: 1, objects: []string{"unknown ConfigMap shop/a", "unknown ConfigMap shop/c"}},
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

// An object whose state the journal does not know at one end of the window
// — before its stream's first complete baseline, or inside a gap — is
// unknown at that end, with the reason, never added or removed.
func TestDiffUnknownAtEnds(t *testing.T) {
	type want struct {
		desc string // type kind namespace/name
		// For an unknown object: the end, a part of the reason, and
		// whether it has versions before and after.
		end           materialize.DiffEnd
		reason        string
		before, after bool
	}
	check := func(t *testing.T, m *materialize.Materializer, from, to time.Time, wants ...want) *materialize.Diff {
		t.Helper()
		d, err := m.Diff(context.Background(), materialize.Scope{ClusterID: "c1", Namespaces: []string{"shop"}}, from, to)
		if err != nil {
			t.Fatal(err)
		}
		var got, wantDesc []string
		for _, od := range d.Objects {
			got = append(got, fmt.Sprintf("%s %s %s/%s", od.Type, od.Kind, od.ID.Namespace, od.ID.Name))
		}
		for _, w := range wants {
			wantDesc = append(wantDesc, w.desc)
		}
		if !slices.Equal(got, wantDesc) {
			t.Fatalf("objects %q, want %q", got, wantDesc)
		}
		if unknown := slices.ContainsFunc(d.Objects, func(od materialize.ObjectDiff) bool { return od.Type == materialize.ObjectUnknown }); unknown != d.HasGaps {
			t.Errorf("HasGaps is %v, objects of unknown state: %v", d.HasGaps, unknown)
		}
		for i, od := range d.Objects {
			w := wants[i]
			if od.UnknownAt != w.end || !strings.Contains(od.Reason, w.reason) || (w.reason == "") != (od.Reason == "") {
				t.Errorf("%s: unknown at %q (%q), want %q (%q)", w.desc, od.UnknownAt, od.Reason, w.end, w.reason)
			}
			if (od.Before != nil) != w.before || (od.After != nil) != w.after {
				t.Errorf("%s: before %v after %v, want %v and %v", w.desc, od.Before != nil, od.After != nil, w.before, w.after)
			}
			if od.Type == materialize.ObjectUnknown && (len(od.Changes) != 0 || od.Recreated) {
				t.Errorf("%s: changes %v claimed for an unknown state", w.desc, od.Changes)
			}
		}
		return d
	}

	t.Run("window starts before the first baseline", func(t *testing.T) {
		j, _, _ := deployJournal(t)
		start := "no complete baseline"
		d := check(t, j.materializer(), at(0), at(2),
			want{desc: "unknown ConfigMap shop/old", end: materialize.DiffFrom, reason: start, after: true},
			want{desc: "unknown ConfigMap shop/same", end: materialize.DiffFrom, reason: start, after: true},
			want{desc: "unknown Deployment shop/web", end: materialize.DiffFrom, reason: start, after: true})
		var table, unified strings.Builder
		if err := d.WriteTable(&table); err != nil {
			t.Fatal(err)
		}
		if err := d.WriteUnified(&unified); err != nil {
			t.Fatal(err)
		}
		wantTable := `warning: 2 part(s) of the scope are not covered at one end of the window
ConfigMap   shop/old   (unknown at start: no complete baseline at or before this time)
ConfigMap   shop/same  (unknown at start: no complete baseline at or before this time)
Deployment  shop/web   (unknown at start: no complete baseline at or before this time)
`
		if table.String() != wantTable {
			t.Errorf("table\n%s\nwant\n%s", table.String(), wantTable)
		}
		wantUnified := `# warning: 2 part(s) of the scope are not covered at one end of the window
# unknown at start: ConfigMap shop/old: no complete baseline at or before this time
# unknown at start: ConfigMap shop/same: no complete baseline at or before this time
# unknown at start: Deployment shop/web: no complete baseline at or before this time
`
		if unified.String() != wantUnified {
			t.Errorf("unified\n%s\nwant\n%s", unified.String(), wantUnified)
		}
		// Covered from the baseline on: the window's changes as usual.
		check(t, j.materializer(), at(1), at(10),
			want{desc: "added ConfigMap shop/new", after: true},
			want{desc: "removed ConfigMap shop/old", before: true},
			want{desc: "changed Deployment shop/web", before: true, after: true})
	})
	t.Run("window ends inside a gap", func(t *testing.T) {
		// c was modified at the gap's start and deleted during the gap (the
		// relist at 9 found it absent): at 6 its state is unknown.
		j := newOutageJournal(t)
		d := check(t, j.materializer(), at(4.5), at(6),
			want{desc: "unknown ConfigMap shop/a", end: materialize.DiffTo, reason: "gap from", before: true, after: true},
			want{desc: "unknown ConfigMap shop/c", end: materialize.DiffTo, reason: "gap from", before: true, after: true})
		// After is the last version recorded before the gap.
		if got := dataOfString(d.Objects[1].After.Object); got != "2" {
			t.Errorf("c after: data.v %q, want the last recorded 2", got)
		}
	})
	t.Run("window ends in a second gap, after the inferred deletion", func(t *testing.T) {
		j := newOutageJournal(t)
		j.gap(j.cms, at(9.5), at(11))
		check(t, j.materializer(), at(4.5), at(10),
			want{desc: "unknown ConfigMap shop/a", end: materialize.DiffTo, reason: "gap from", before: true, after: true},
			want{desc: "unknown ConfigMap shop/c", end: materialize.DiffTo, reason: "gap from", before: true})
	})
	t.Run("both ends unknown", func(t *testing.T) {
		j := newOutageJournal(t)
		both := "at the start: no complete baseline at or before this time; at the end: gap from"
		check(t, j.materializer(), at(0.5), at(6),
			want{desc: "unknown ConfigMap shop/a", end: materialize.DiffBoth, reason: both, after: true},
			want{desc: "unknown ConfigMap shop/c", end: materialize.DiffBoth, reason: both, after: true})
	})
}

// A Diff sent as JSON (the query API's answer) renders as the Diff it was:
// the renderers leave out the fields the comparison ignored, such as
// resourceVersion, also on the decoded copy.
func TestDiffRenderersAfterJSON(t *testing.T) {
	j, _, _ := deployJournal(t)
	d, err := j.materializer().Diff(context.Background(), materialize.Scope{ClusterID: "c1", Namespaces: []string{"shop"}}, at(2), at(10))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var decoded materialize.Diff
	if err := json.Unmarshal(raw, &decoded); err != nil {
		t.Fatal(err)
	}
	var want, got strings.Builder
	if err := d.WriteUnified(&want); err != nil {
		t.Fatal(err)
	}
	if err := decoded.WriteUnified(&got); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("the decoded Diff renders\n%s\nthe Diff renders\n%s", got.String(), want.String())
	}
}
