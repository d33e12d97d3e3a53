package why

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// gnode is a node of the graph with what the walk knows of it.
type gnode struct {
	Node
	body map[string]any
	// workload is true for the object asked about, its owners and what it
	// owns: the objects whose pod spec, labels and owners are followed.
	workload bool
	up, down bool
	// keys are the keys read one by one; allKeys is set by a reference to
	// the whole ConfigMap or Secret.
	keys    map[string]string // key -> where it is read
	allKeys string            // where the whole object is read
	// via says how the walk reached the node, in words.
	via string
}

// walker walks the dependency graph of one object at one time.
type walker struct {
	ctx     context.Context
	store   storage.Reader
	cluster string
	at      time.Time
	max     int

	nodes       map[storage.ObjectID]*gnode
	order       []storage.ObjectID
	edges       []Edge
	edgeSeen    map[Edge]bool
	alive       map[resource]map[string][]objectAt // resource -> namespace -> objects
	recorded    map[resource]map[string]bool       // resource -> namespaces ("" all) with a stream
	notRecorded map[string]bool
	cut         []string
	cutMore     int
}

// objectAt is an object alive at T, decoded.
type objectAt struct {
	id   storage.ObjectID
	body map[string]any
}

// maxCutListed bounds the list of what the walk left out.
const maxCutListed = 20

func newWalker(ctx context.Context, store storage.Reader, streams []storage.StreamStatus, cluster string, at time.Time, max int) *walker {
	w := &walker{ctx: ctx, store: store, cluster: cluster, at: at, max: max,
		nodes: map[storage.ObjectID]*gnode{}, edgeSeen: map[Edge]bool{},
		alive: map[resource]map[string][]objectAt{}, recorded: map[resource]map[string]bool{}, notRecorded: map[string]bool{}}
	for _, st := range streams {
		r := resource{st.Stream.Group, st.Stream.Resource}
		if w.recorded[r] == nil {
			w.recorded[r] = map[string]bool{}
		}
		w.recorded[r][st.Stream.Namespace] = true
	}
	return w
}

// isRecorded says whether a stream records a resource in a namespace.
func (w *walker) isRecorded(r resource, namespace string) bool {
	ns := w.recorded[r]
	ok := ns[""] || ns[namespace]
	if !ok {
		w.notRecorded[resourceName(r.group, r.name)] = true
	}
	return ok
}

// walk builds the graph from root.
func (w *walker) walk(root *gnode) error {
	root.workload, root.up, root.down = true, true, true
	w.nodes[root.ID] = root
	w.order = append(w.order, root.ID)
	for i := 0; i < len(w.order); i++ {
		if err := w.ctx.Err(); err != nil {
			return err
		}
		n := w.nodes[w.order[i]]
		if n.body == nil {
			continue
		}
		if err := w.expand(n); err != nil {
			return err
		}
	}
	return nil
}

// expand adds the dependencies of one node.
func (w *walker) expand(n *gnode) error {
	switch n.ID.Resource {
	case "persistentvolumeclaims":
		if v := str(n.body, "spec", "volumeName"); v != "" {
			w.link(n, idOf(w.cluster, "v1", "PersistentVolume", "", v), "PersistentVolume", EdgeReferences, "spec.volumeName", nil)
		}
		if v := str(n.body, "spec", "storageClassName"); v != "" {
			w.link(n, idOf(w.cluster, "storage.k8s.io/v1", "StorageClass", "", v), "StorageClass", EdgeReferences, "spec.storageClassName", nil)
		}
	case "persistentvolumes":
		if v := str(n.body, "spec", "storageClassName"); v != "" {
			w.link(n, idOf(w.cluster, "storage.k8s.io/v1", "StorageClass", "", v), "StorageClass", EdgeReferences, "spec.storageClassName", nil)
		}
	}
	if !n.workload {
		return nil
	}
	if n.up {
		w.owners(n)
	}
	if n.down {
		if err := w.children(n); err != nil {
			return err
		}
	}
	if spec, prefix := podSpecOf(n.Kind, n.body); spec != nil {
		w.podReferences(n, spec, prefix)
		if err := w.selecting(n); err != nil {
			return err
		}
		if n.Kind == "Pod" && str(spec, "nodeName") == "" {
			if err := w.schedulable(n, spec); err != nil {
				return err
			}
		}
	}
	return w.autoscalers(n)
}

// link adds the edge from n to id, adding id's node when new. configure
// sets up a new node before it is loaded.
func (w *walker) link(n *gnode, id storage.ObjectID, kind, typ, reason string, configure func(*gnode)) *gnode {
	return w.linkDir(n, id, kind, typ, reason, false, configure)
}

// linkDir is link with the edge from id to n when reverse.
func (w *walker) linkDir(n *gnode, id storage.ObjectID, kind, typ, reason string, reverse bool, configure func(*gnode)) *gnode {
	m, seen := w.nodes[id]
	if !seen {
		if len(w.nodes) >= w.max {
			if len(w.cut) < maxCutListed {
				w.cut = append(w.cut, fmt.Sprintf("%s (%s of %s)", describe(id), reason, describe(n.ID)))
			} else {
				w.cutMore++
			}
			return nil
		}
		m = &gnode{Node: Node{ID: id, Kind: kind, Distance: n.Distance + 1}, via: viaText(n, typ, reason, reverse)}
		if configure != nil {
			configure(m)
		}
		w.nodes[id] = m
		w.order = append(w.order, id)
		if err := w.load(m); err != nil {
			// A node that cannot be read stays in the graph without its
			// dependencies; the answer says so.
			m.body = nil
		}
	} else if configure != nil {
		configure(m)
	}
	from, to := n.ID, id
	if reverse {
		from, to = id, n.ID
	}
	e := Edge{From: from, To: to, Type: typ, Reason: reason}
	if !w.edgeSeen[e] {
		w.edgeSeen[e] = true
		w.edges = append(w.edges, e)
	}
	return m
}

// viaText says how a node is reached from n.
func viaText(n *gnode, typ, reason string, reverse bool) string {
	verb := map[string]string{EdgeOwner: "owns", EdgeReferences: "is read by", EdgeSelects: "selects", EdgeSchedule: "could take"}[typ]
	if typ == EdgeOwner && reverse {
		verb = "is owned by"
	}
	return fmt.Sprintf("%s %s (%s)", verb, describe(n.ID), reason)
}

// load reads a node's body at T (or nil when it did not exist then).
func (w *walker) load(n *gnode) error {
	r := resource{n.ID.Group, n.ID.Resource}
	if !w.isRecorded(r, n.ID.Namespace) {
		return nil
	}
	rec, err := w.store.LatestAt(w.ctx, n.ID, w.at)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return nil
	case err != nil:
		return err
	}
	if rec.WatchType == event.Deleted {
		return nil
	}
	n.Exists = true
	body, err := decode(rec.Object)
	if err != nil {
		return err
	}
	n.body = body
	return nil
}

// owners follows n's ownerReferences up.
func (w *walker) owners(n *gnode) {
	refs, _ := get(n.body, "metadata", "ownerReferences").([]any)
	for _, r := range refs {
		ref, _ := r.(map[string]any)
		kind, name := str(ref, "kind"), str(ref, "name")
		if kind == "" || name == "" {
			continue
		}
		reason := "metadata.ownerReferences"
		if b, _ := ref["controller"].(bool); b {
			reason += " (controller)"
		}
		w.link(n, idOf(w.cluster, str(ref, "apiVersion"), kind, n.ID.Namespace, name), kind, EdgeOwner, reason,
			func(m *gnode) { m.workload, m.up = true, true })
	}
}

// childResources are the kinds a workload owns, to walk down from it.
var childResources = map[string][]string{
	"Deployment":            {"ReplicaSet"},
	"ReplicaSet":            {"Pod"},
	"StatefulSet":           {"Pod"},
	"DaemonSet":             {"Pod"},
	"Job":                   {"Pod"},
	"CronJob":               {"Job"},
	"ReplicationController": {"Pod"},
}

// children adds the objects n owns at T.
func (w *walker) children(n *gnode) error {
	uid := str(n.body, "metadata", "uid")
	for _, kind := range childResources[n.Kind] {
		objs, err := w.aliveIn(kinds[kind], n.ID.Namespace)
		if err != nil {
			return err
		}
		for _, o := range objs {
			refs, _ := get(o.body, "metadata", "ownerReferences").([]any)
			for _, r := range refs {
				ref, _ := r.(map[string]any)
				if uid != "" && str(ref, "uid") == uid {
					w.linkDir(n, o.id, kind, EdgeOwner, "metadata.ownerReferences", true, func(m *gnode) { m.workload, m.down = true, true })
				}
			}
		}
	}
	return nil
}

// aliveIn returns the objects of a resource alive at T in a namespace
// ("" for cluster scope), read once per answer.
func (w *walker) aliveIn(r resource, namespace string) ([]objectAt, error) {
	if objs, ok := w.alive[r][namespace]; ok {
		return objs, nil
	}
	if w.alive[r] == nil {
		w.alive[r] = map[string][]objectAt{}
	}
	if !w.isRecorded(r, namespace) {
		w.alive[r][namespace] = nil
		return nil, nil
	}
	recs, err := w.store.AliveAt(w.ctx, storage.AliveQuery{At: w.at, ClusterID: w.cluster, Namespace: namespace, Group: r.group, Resource: r.name})
	if err != nil {
		return nil, fmt.Errorf("%s alive at %s: %w", resourceName(r.group, r.name), w.at.UTC().Format(time.RFC3339), err)
	}
	objs := make([]objectAt, 0, len(recs))
	for _, rec := range recs {
		body, err := decode(rec.Object)
		if err != nil {
			continue
		}
		objs = append(objs, objectAt{id: storage.ObjectIDOf(rec), body: body})
	}
	w.alive[r][namespace] = objs
	return objs, nil
}

// podSpecOf returns the pod spec of a Pod or a workload's template, and
// the path prefix to it.
func podSpecOf(kind string, body map[string]any) (map[string]any, string) {
	switch kind {
	case "Pod":
		spec, _ := get(body, "spec").(map[string]any)
		return spec, "spec."
	case "CronJob":
		spec, _ := get(body, "spec", "jobTemplate", "spec", "template", "spec").(map[string]any)
		return spec, "spec.jobTemplate.spec.template.spec."
	}
	if _, ok := childResources[kind]; ok {
		spec, _ := get(body, "spec", "template", "spec").(map[string]any)
		return spec, "spec.template.spec."
	}
	return nil, ""
}

// podLabels returns the labels of a Pod, or of a workload's pod template.
func podLabels(kind string, body map[string]any) map[string]string {
	var m any
	switch kind {
	case "Pod":
		m = get(body, "metadata", "labels")
	case "CronJob":
		m = get(body, "spec", "jobTemplate", "spec", "template", "metadata", "labels")
	default:
		m = get(body, "spec", "template", "metadata", "labels")
	}
	out := map[string]string{}
	if mm, ok := m.(map[string]any); ok {
		for k, v := range mm {
			if s, ok := v.(string); ok {
				out[k] = s
			}
		}
	}
	return out
}

// podReferences adds what a pod spec names.
func (w *walker) podReferences(n *gnode, spec map[string]any, prefix string) {
	ns := n.ID.Namespace
	whole := func(kind, name, where string) {
		if name == "" {
			return
		}
		w.link(n, idOf(w.cluster, "v1", kind, ns, name), kind, EdgeReferences, where, func(m *gnode) {
			if m.allKeys == "" {
				m.allKeys = where
			}
		})
	}
	keyed := func(kind, name, key, where string) {
		if name == "" {
			return
		}
		w.link(n, idOf(w.cluster, "v1", kind, ns, name), kind, EdgeReferences, where, func(m *gnode) {
			if m.keys == nil {
				m.keys = map[string]string{}
			}
			if _, ok := m.keys[key]; !ok && key != "" {
				m.keys[key] = where
			}
		})
	}
	for _, v := range items(spec, "volumes") {
		at := fmt.Sprintf("%svolumes[name=%s]", prefix, str(v, "name"))
		whole("ConfigMap", str(v, "configMap", "name"), at+".configMap")
		whole("Secret", str(v, "secret", "secretName"), at+".secret")
		if c := str(v, "persistentVolumeClaim", "claimName"); c != "" {
			w.link(n, idOf(w.cluster, "v1", "PersistentVolumeClaim", ns, c), "PersistentVolumeClaim", EdgeReferences, at+".persistentVolumeClaim", nil)
		}
		for _, src := range items(v, "projected", "sources") {
			whole("ConfigMap", str(src, "configMap", "name"), at+".projected.sources.configMap")
			whole("Secret", str(src, "secret", "name"), at+".projected.sources.secret")
		}
	}
	for _, list := range []string{"initContainers", "containers"} {
		for _, c := range items(spec, list) {
			at := fmt.Sprintf("%s%s[name=%s]", prefix, list, str(c, "name"))
			for _, ef := range items(c, "envFrom") {
				whole("ConfigMap", str(ef, "configMapRef", "name"), at+".envFrom.configMapRef")
				whole("Secret", str(ef, "secretRef", "name"), at+".envFrom.secretRef")
			}
			for _, env := range items(c, "env") {
				where := fmt.Sprintf("%s.env[name=%s].valueFrom", at, str(env, "name"))
				keyed("ConfigMap", str(env, "valueFrom", "configMapKeyRef", "name"), str(env, "valueFrom", "configMapKeyRef", "key"), where+".configMapKeyRef")
				keyed("Secret", str(env, "valueFrom", "secretKeyRef", "name"), str(env, "valueFrom", "secretKeyRef", "key"), where+".secretKeyRef")
			}
		}
	}
	for _, s := range items(spec, "imagePullSecrets") {
		whole("Secret", str(s, "name"), prefix+"imagePullSecrets")
	}
	sa := str(spec, "serviceAccountName")
	if sa == "" && n.Kind == "Pod" {
		sa = "default"
	}
	if sa != "" {
		w.link(n, idOf(w.cluster, "v1", "ServiceAccount", ns, sa), "ServiceAccount", EdgeReferences, prefix+"serviceAccountName", nil)
	}
	for field, kind := range map[string]string{"nodeName": "Node", "priorityClassName": "PriorityClass", "runtimeClassName": "RuntimeClass"} {
		if name := str(spec, field); name != "" {
			w.link(n, idOf(w.cluster, "", kind, "", name), kind, EdgeReferences, prefix+field, nil)
		}
	}
}

// selecting adds the Services, NetworkPolicies and PodDisruptionBudgets
// of n's namespace that select its pods at T.
func (w *walker) selecting(n *gnode) error {
	podLabelSet := labels.Set(podLabels(n.Kind, n.body))
	if len(podLabelSet) == 0 {
		return nil
	}
	for _, sel := range []struct {
		kind string
		path []string
		set  bool // a map of labels rather than a LabelSelector
	}{
		{"Service", []string{"spec", "selector"}, true},
		{"NetworkPolicy", []string{"spec", "podSelector"}, false},
		{"PodDisruptionBudget", []string{"spec", "selector"}, false},
	} {
		objs, err := w.aliveIn(kinds[sel.kind], n.ID.Namespace)
		if err != nil {
			return err
		}
		for _, o := range objs {
			raw := get(o.body, sel.path...)
			if raw == nil {
				continue
			}
			selector, ok := selectorOf(raw, sel.set)
			if !ok || (sel.set && selector.Empty()) || !selector.Matches(podLabelSet) {
				continue
			}
			w.link(n, o.id, sel.kind, EdgeSelects, strings.Join(sel.path, ".")+" matches the pod labels", nil)
		}
	}
	return nil
}

// selectorOf parses a label map or a LabelSelector.
func selectorOf(raw any, set bool) (labels.Selector, bool) {
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, false
	}
	if set {
		var m map[string]string
		if json.Unmarshal(b, &m) != nil {
			return nil, false
		}
		return labels.SelectorFromSet(m), true
	}
	var ls metav1.LabelSelector
	if json.Unmarshal(b, &ls) != nil {
		return nil, false
	}
	s, err := metav1.LabelSelectorAsSelector(&ls)
	return s, err == nil
}

// autoscalers adds the HPAs whose scaleTargetRef names n.
func (w *walker) autoscalers(n *gnode) error {
	if _, ok := childResources[n.Kind]; !ok {
		return nil
	}
	objs, err := w.aliveIn(kinds["HorizontalPodAutoscaler"], n.ID.Namespace)
	if err != nil {
		return err
	}
	for _, o := range objs {
		if str(o.body, "spec", "scaleTargetRef", "kind") == n.Kind && str(o.body, "spec", "scaleTargetRef", "name") == n.ID.Name {
			w.link(n, o.id, "HorizontalPodAutoscaler", EdgeSelects, "spec.scaleTargetRef", nil)
		}
	}
	return nil
}

// schedulable adds, for a Pod not yet on a Node, the Nodes its
// nodeSelector allows at T.
func (w *walker) schedulable(n *gnode, spec map[string]any) error {
	nodes, err := w.aliveIn(kinds["Node"], "")
	if err != nil {
		return err
	}
	want := map[string]string{}
	if m, ok := spec["nodeSelector"].(map[string]any); ok {
		for k, v := range m {
			if s, ok := v.(string); ok {
				want[k] = s
			}
		}
	}
	selector := labels.SelectorFromSet(want)
	reason := "not scheduled yet (no spec.nodeName): any node"
	if len(want) > 0 {
		reason = "not scheduled yet: spec.nodeSelector " + selector.String()
	}
	for _, o := range nodes {
		if selector.Matches(labels.Set(podLabels("Pod", o.body))) {
			w.link(n, o.id, "Node", EdgeSchedule, reason, nil)
		}
	}
	return nil
}

// graph returns the nodes and edges, nodes by distance then name.
func (w *walker) graph() ([]Node, []Edge) {
	nodes := make([]Node, 0, len(w.order))
	for _, id := range w.order {
		n := w.nodes[id]
		if n.allKeys == "" {
			for k := range n.keys {
				n.Keys = append(n.Keys, k)
			}
			sort.Strings(n.Keys)
		}
		nodes = append(nodes, n.Node)
	}
	sort.SliceStable(nodes, func(i, j int) bool {
		if nodes[i].Distance != nodes[j].Distance {
			return nodes[i].Distance < nodes[j].Distance
		}
		return describe(nodes[i].ID) < describe(nodes[j].ID)
	})
	return nodes, w.edges
}

// decode decodes a JSON object.
func decode(raw []byte) (map[string]any, error) {
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, err
	}
	return m, nil
}

// get returns the value at a path of nested objects, nil when absent.
func get(m map[string]any, path ...string) any {
	var v any = m
	for _, p := range path {
		mm, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = mm[p]
	}
	return v
}

// str returns the string at a path, "" when absent.
func str(m map[string]any, path ...string) string {
	s, _ := get(m, path...).(string)
	return s
}

// items returns the objects of the list at a path.
func items(m map[string]any, path ...string) []map[string]any {
	l, _ := get(m, path...).([]any)
	out := make([]map[string]any, 0, len(l))
	for _, v := range l {
		if mm, ok := v.(map[string]any); ok {
			out = append(out, mm)
		}
	}
	return out
}
