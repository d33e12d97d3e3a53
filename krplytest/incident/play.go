package incident

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/krply/krply/audit"
	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/krplytest/shop"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/watch"
	"github.com/krply/krply/why"
)

// ControllerUser writes what controllers and the kubelet would: no
// controller-manager, scheduler or kubelet runs on the test control plane.
const ControllerUser = "system:kube-controller-manager"

// EnvOptions are the options of the control plane Play needs: an audit
// log (who made each change) and ControllerUser.
func EnvOptions() []testenv.Option {
	return []testenv.Option{testenv.WithAudit(""), testenv.WithUser(ControllerUser, "system:masters")}
}

// TB is what Play needs of a test: *testing.T satisfies it.
type TB interface {
	testenv.TB
	Errorf(format string, args ...any)
}

// Case is one incident played: the Pod that broke and the change a why
// answer must rank first.
type Case struct {
	Name string
	// Pod is the name of the Pod that broke.
	Pod string
	// Summary starts the first candidate's summary; Reason is among its
	// reasons; User made the change (from the audit log).
	Summary, Reason, User string
}

// Played is the incidents played on a real control plane and recorded by
// one Collector into a store, with the audit log correlated:
//
//   - "configmap key": alice changes the key a Pod reads (bob changes
//     another key and annotates the Deployment); the Pod crashes
//     (CrashLoopBackOff) and a BackOff Event says so;
//   - "image": bob changes the Deployment's image (alice scales it); the
//     new ReplicaSet's Pod cannot pull it (ImagePullBackOff);
//   - "taint": admin taints the only Node a new Deployment's Pod may run on;
//     the Pod is Unschedulable;
//   - "secret": bob rotates a Secret, dropping the key a Pod reads (alice
//     annotates the Service selecting it); CreateContainerConfigError.
//
// PlayGap plays the fifth incident, whose culprit's stream has a gap.
type Played struct {
	Cluster, Namespace string
	// From is when recording was in sync: a why query's window starts
	// there, since before it the journal rightly calls an answer
	// incomplete.
	From time.Time
	// Incidents are the four incidents, in the order above.
	Incidents []Case
	// Pods is the Pods that broke, the fifth's once PlayGap has played it.
	Pods []string

	t       TB
	ctx     context.Context
	env     *testenv.Env
	store   storage.ReadWriter
	l       *lab
	stop    func()
	restart func() (*watch.Collector, func())
	gapPod  string
}

// Play plays the four incidents of Played in a new namespace of env (which
// must have EnvOptions) and records them into store with a Collector that
// runs until the test ends (or Stop). It returns once every write is
// recorded, its author correlated and every stream has evidence after the
// last one, so that the answers about them are complete. Play and PlayGap
// take at most three minutes together.
func Play(t TB, env *testenv.Env, store storage.ReadWriter) *Played {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	ns := env.CreateNamespace(t)
	l := newLab(t, ctx, env, ns)
	// The Collector watches through an apiserver without watch cache, so
	// that a watch from a compacted resourceVersion fails with 410 Gone.
	source := env.StartAPIServer(t, "--watch-cache=false").Config()
	p := &Played{Namespace: ns, t: t, ctx: ctx, env: env, store: store, l: l}
	p.restart = func() (*watch.Collector, func()) {
		col, err := watch.NewCollectorForConfig(source, store,
			watch.WithResources("pods", "rs", "deploy", "cm", "secrets", "sa", "svc", "networkpolicies", "pdb", "hpa", "nodes", "events"),
			watch.WithNamespaces(ns), watch.AllowSecrets(), watch.KeepSecretValues(),
			watch.WithProgressInterval(2*time.Second), watch.WithBackoff(50*time.Millisecond, time.Second))
		if err != nil {
			t.Fatalf("incident: %v", err)
		}
		return col, krplytest.StartCollector(t, col, 2*time.Minute)
	}
	var col *watch.Collector
	col, p.stop = p.restart()
	p.Cluster = col.ClusterID()

	// The objects, as they were before.
	l.create(testenv.UserAlice, cmGVR, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("settings-1", nil), "data": map[string]any{"color": "blue", "size": "L"}})
	_, _, pod1 := l.workload("shop-1", map[string]any{"nodeName": "node-1", "containers": []any{container(map[string]any{"env": []any{
		map[string]any{"name": "COLOR", "valueFrom": map[string]any{"configMapKeyRef": map[string]any{"name": "settings-1", "key": "color"}}}}})}})
	deploy2, _, _ := l.workload("shop-2", map[string]any{"nodeName": "node-1", "containers": []any{container(nil)}})
	l.create(testenv.UserAdmin, nodesGVR, map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": meta(ns+"-node", map[string]any{"labels": map[string]any{"pool": ns}})})
	l.create(testenv.UserAlice, secretsGVR, map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": meta("db-4", nil),
		"data": map[string]any{"password": base64.StdEncoding.EncodeToString([]byte("hunter2"))}})
	_, _, pod4 := l.workload("shop-4", map[string]any{"nodeName": "node-1", "containers": []any{container(map[string]any{"env": []any{
		map[string]any{"name": "DB_PASSWORD", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "db-4", "key": "password"}}}}})}})
	l.create(testenv.UserAlice, svcGVR, map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": meta("shop-4", nil),
		"spec": map[string]any{"selector": map[string]any{"app": "shop-4"}, "ports": []any{map[string]any{"port": int64(80)}}}})
	// The gap's incident reads its ConfigMap as the first does.
	l.create(testenv.UserAlice, cmGVR, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("settings-5", nil), "data": map[string]any{"color": "blue"}})
	_, _, p.gapPod = l.workload("shop-5", map[string]any{"nodeName": "node-1", "containers": []any{container(map[string]any{"env": []any{
		map[string]any{"name": "COLOR", "valueFrom": map[string]any{"configMapKeyRef": map[string]any{"name": "settings-5", "key": "color"}}}}})}})
	if err := col.WaitForSync(ctx); err != nil {
		t.Fatalf("incident: %v", err)
	}
	p.From = time.Now()

	// The culprits, then noise, then the symptoms. Each culprit is
	// recorded before its symptom is written, as it is when a kubelet
	// reacts seconds later: the journal orders changes of different streams
	// only by when its watches delivered them (ObservedAt).
	p.recorded(cmGVR, l.patch(testenv.UserAlice, cmGVR, "settings-1", `{"data":{"color":"chartreuse"}}`))
	l.patch(testenv.UserBob, cmGVR, "settings-1", `{"data":{"size":"XL"}}`) // a key the Pod does not read
	l.patch(testenv.UserBob, deployGVR, "shop-1", `{"metadata":{"annotations":{"note":"looked at it"}}}`)
	l.status(pod1, fmt.Sprintf(crashing, "CrashLoopBackOff", "back-off 40s restarting failed container"))
	l.event(pod1, "BackOff", "Back-off restarting failed container app")

	p.recorded(deployGVR, l.patch(testenv.UserBob, deployGVR, "shop-2", `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"registry.example/shop:1.1-typo"}]}}}}`))
	l.patch(testenv.UserAlice, deployGVR, "shop-2", `{"spec":{"replicas":2}}`)
	current, err := l.res(testenv.UserAdmin, deployGVR).Get(ctx, "shop-2", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("incident: %v", err)
	}
	template, _, _ := unstructured.NestedMap(current.Object, "spec", "template")
	rs2 := l.replicaSet(deploy2, "shop-2-2", template)
	podSpec2, _, _ := unstructured.NestedMap(template, "spec")
	pod2 := l.pod(rs2, "shop-2-2-a", podSpec2)
	l.status(pod2, fmt.Sprintf(crashing, "ImagePullBackOff", "Back-off pulling image registry.example/shop:1.1-typo"))

	p.recorded(nodesGVR, l.patch(testenv.UserAdmin, nodesGVR, ns+"-node", `{"spec":{"taints":[{"key":"maintenance","value":"true","effect":"NoSchedule"}]}}`))
	l.patch(testenv.UserBob, deployGVR, "shop-1", `{"metadata":{"annotations":{"note":"still looking"}}}`)
	deploy3 := l.create(testenv.UserAlice, deployGVR, map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta("shop-3", nil),
		"spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": map[string]any{"app": "shop-3"}},
			"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": "shop-3"}},
				"spec": map[string]any{"nodeSelector": map[string]any{"pool": ns}, "containers": []any{container(nil)}}}}})
	template3, _, _ := unstructured.NestedMap(deploy3.Object, "spec", "template")
	rs3 := l.replicaSet(deploy3, "shop-3-1", template3)
	podSpec3, _, _ := unstructured.NestedMap(template3, "spec")
	pod3 := l.pod(rs3, "shop-3-1-a", podSpec3)
	l.status(pod3, `{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False","reason":"Unschedulable",
		"message":"0/1 nodes are available: 1 node(s) had untolerated taint {maintenance: true}."}]}`)

	p.recorded(secretsGVR, l.patch(testenv.UserBob, secretsGVR, "db-4", `{"data":{"password":null,"password-v2":"`+base64.StdEncoding.EncodeToString([]byte("correct horse"))+`"}}`))
	l.patch(testenv.UserAlice, svcGVR, "shop-4", `{"metadata":{"annotations":{"owner":"alice"}}}`)
	l.status(pod4, fmt.Sprintf(crashing, "CreateContainerConfigError", `couldn't find key password in Secret `+ns+`/db-4`))

	// Who: the audit log, correlated with the journal, once the writes are
	// recorded.
	lastT := p.waitRecorded(pod4)
	p.ingestAudit(storage.ObjectID{ClusterID: p.Cluster, Resource: "secrets", Namespace: ns, Name: "db-4"})
	p.waitEvidence(lastT)

	p.Incidents = []Case{
		{"configmap key", pod1, "configmaps " + ns + "/settings-1: data.color", `changed key "color", which is read`, testenv.UserAlice},
		{"image", pod2, "deployments.apps " + ns + "/shop-2: spec.template.spec.containers[name=app].image", "changed image", testenv.UserBob},
		{"taint", pod3, "nodes " + ns + "-node: spec.taints", "taints", testenv.UserAdmin},
		{"secret", pod4, "secrets " + ns + "/db-4: data", `changed key "password", which is read`, testenv.UserBob},
	}
	p.Pods = []string{pod1, pod2, pod3, pod4}
	return p
}

// PlayGap plays the fifth incident after the four (ask about them first:
// its gap falls in their windows): the recorder is down while alice
// changes the key the Pod reads, etcd forgets that history, the recorder
// comes back through a relist, bob annotates the Deployment, the Pod
// crashes. The answer must name the ConfigMaps stream's gap and present no
// candidate as certain; the culprit, seen only by the relist, comes first.
func (p *Played) PlayGap() Case {
	t, l := p.t, p.l
	t.Helper()
	p.stop()
	l.patch(testenv.UserAlice, cmGVR, "settings-5", `{"data":{"color":"chartreuse"}}`)
	if _, err := p.env.Compact(p.ctx); err != nil {
		t.Fatalf("incident: %v", err)
	}
	col, stop := p.restart()
	p.stop = stop
	if err := col.WaitForSync(p.ctx); err != nil {
		t.Fatalf("incident: %v", err)
	}
	l.patch(testenv.UserBob, deployGVR, "shop-5", `{"metadata":{"annotations":{"note":"looked at it"}}}`)
	l.status(p.gapPod, fmt.Sprintf(crashing, "CrashLoopBackOff", "back-off 10s restarting failed container"))
	p.waitEvidence(p.waitRecorded(p.gapPod))
	p.Pods = append(p.Pods, p.gapPod)
	return Case{Name: "gap over the culprit", Pod: p.gapPod, Summary: "configmaps " + p.Namespace + "/settings-5: data.color",
		Reason: `changed key "color", which is read`}
}

// Stop stops the recorder, so that the journal holds still and two
// answers to one question are the same (a running recorder moves its
// streams' evidence on). PlayGap starts it again.
func (p *Played) Stop() { p.stop() }

// PodID is the ID of a Pod of the incidents.
func (p *Played) PodID(name string) storage.ObjectID {
	return storage.ObjectID{ClusterID: p.Cluster, Resource: "pods", Namespace: p.Namespace, Name: name}
}

// Query is the why query about a Pod of the incidents: T its first bad
// transition, the window from when recording was in sync.
func (p *Played) Query(pod string) why.Query {
	return why.Query{Object: p.PodID(pod), From: p.From}
}

// Check returns what is wrong with an answer about c's Pod (nil when
// nothing is): it must be complete, T its first bad transition, c's change
// first with its reason, made by c.User, a person, with no caveat.
func (c Case) Check(a *why.Answer) error {
	var problems []string
	if a.AtSource != why.AtFirstBad || a.Bad == nil || !a.Bad.Bad {
		problems = append(problems, fmt.Sprintf("T from %q, bad transition %+v; want the first bad transition", a.AtSource, a.Bad))
	}
	if !a.Complete {
		problems = append(problems, fmt.Sprintf("answer incomplete: coverage %+v, warnings %q", a.Coverage, a.Warnings))
	}
	if err := c.checkFirst(a); err != nil {
		problems = append(problems, err.Error())
	} else {
		first := a.Candidates[0]
		if who := a.Changes[first.Change].Who; who == nil || who.User != c.User || who.Actor != why.ActorPerson {
			problems = append(problems, fmt.Sprintf("who %+v; want %s, a person", who, c.User))
		}
		if len(first.Caveats) != 0 {
			problems = append(problems, fmt.Sprintf("caveats %q on a complete answer", first.Caveats))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %s\ncandidates:\n%s", c.Name, strings.Join(problems, "; "), Candidates(a))
	}
	return nil
}

// CheckGap returns what is wrong with an answer about the gap's Pod: it
// must be incomplete, name the ConfigMaps stream's gap, put a caveat on
// every candidate, and rank c's change first, its time bounded by the gap.
func (c Case) CheckGap(a *why.Answer) error {
	var problems []string
	if a.Complete {
		problems = append(problems, "answer complete across a gap")
	}
	var named bool
	for _, sc := range a.Coverage {
		if sc.Resource == "configmaps" && !sc.Covered && len(sc.Gaps) > 0 && strings.Contains(sc.Reason, "may be missing") {
			named = true
		}
	}
	if !named {
		problems = append(problems, fmt.Sprintf("the configmaps stream's gap is not named: %+v", a.Coverage))
	}
	for _, cand := range a.Candidates {
		if len(cand.Caveats) == 0 {
			problems = append(problems, fmt.Sprintf("candidate %q presented without caveat across a gap", cand.Summary))
		}
	}
	if err := c.checkFirst(a); err != nil {
		problems = append(problems, err.Error())
	} else if a.Changes[a.Candidates[0].Change].Between == nil {
		problems = append(problems, "the first candidate's time is not bounded by the gap")
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s: %s\ncandidates:\n%s", c.Name, strings.Join(problems, "; "), Candidates(a))
	}
	return nil
}

func (c Case) checkFirst(a *why.Answer) error {
	if len(a.Candidates) == 0 {
		return fmt.Errorf("no candidate; changes %+v", a.Changes)
	}
	first := a.Candidates[0]
	if !strings.HasPrefix(first.Summary, c.Summary) || !strings.Contains(strings.Join(first.Reasons, "; "), c.Reason) {
		return fmt.Errorf("first candidate %q (%q); want %q because %q", first.Summary, first.Reasons, c.Summary, c.Reason)
	}
	return nil
}

// Candidates lists an answer's candidates, one a line, for a failure
// message.
func Candidates(a *why.Answer) string {
	var b strings.Builder
	for _, c := range a.Candidates {
		fmt.Fprintf(&b, "  %d %s %q %q\n", c.Score, c.Summary, c.Reasons, c.Caveats)
	}
	return b.String()
}

var (
	podsGVR    = shop.PodsGVR
	cmGVR      = shop.ConfigMapsGVR
	svcGVR     = shop.ServicesGVR
	eventsGVR  = shop.EventsGVR
	deployGVR  = shop.DeploymentsGVR
	secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	nodesGVR   = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	rsGVR      = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
)

// lab writes to the control plane as the users of the incidents.
type lab struct {
	t    TB
	ctx  context.Context
	ns   string
	dyns map[string]dynamic.Interface
}

func newLab(t TB, ctx context.Context, env *testenv.Env, ns string) *lab {
	l := &lab{t: t, ctx: ctx, ns: ns, dyns: map[string]dynamic.Interface{}}
	for _, u := range []string{testenv.UserAdmin, testenv.UserAlice, testenv.UserBob, ControllerUser} {
		dyn, err := dynamic.NewForConfig(env.ConfigFor(u))
		if err != nil {
			t.Fatalf("incident: %v", err)
		}
		l.dyns[u] = dyn
	}
	return l
}

// manager is the field manager a user's writes carry.
func manager(user string) string {
	if user == ControllerUser {
		return "kube-controller-manager"
	}
	return "kubectl-edit"
}

func (l *lab) res(user string, gvr schema.GroupVersionResource) dynamic.ResourceInterface {
	if gvr == nodesGVR {
		return l.dyns[user].Resource(gvr)
	}
	return l.dyns[user].Resource(gvr).Namespace(l.ns)
}

func (l *lab) create(user string, gvr schema.GroupVersionResource, obj map[string]any) *unstructured.Unstructured {
	l.t.Helper()
	u, err := l.res(user, gvr).Create(l.ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{FieldManager: manager(user)})
	if err != nil {
		l.t.Fatalf("incident: create %s: %v", gvr.Resource, err)
	}
	return u
}

func (l *lab) patch(user string, gvr schema.GroupVersionResource, name, patch string, subresource ...string) *unstructured.Unstructured {
	l.t.Helper()
	u, err := l.res(user, gvr).Patch(l.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: manager(user)}, subresource...)
	if err != nil {
		l.t.Fatalf("incident: patch %s %s: %v", gvr.Resource, name, err)
	}
	return u
}

// status writes a Pod's status as the kubelet would.
func (l *lab) status(pod, status string) {
	l.t.Helper()
	l.patch(ControllerUser, podsGVR, pod, `{"status":`+status+`}`, "status")
}

func meta(name string, extra map[string]any) map[string]any {
	m := map[string]any{"name": name}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func owner(u *unstructured.Unstructured) map[string]any {
	return map[string]any{"ownerReferences": []any{map[string]any{"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(),
		"name": u.GetName(), "uid": string(u.GetUID()), "controller": true}}}
}

// workload creates a Deployment, its ReplicaSet and one running Pod with
// the given pod spec, and returns the Deployment, the ReplicaSet and the
// Pod's name.
func (l *lab) workload(name string, podSpec map[string]any) (deploy, rs *unstructured.Unstructured, pod string) {
	labels := map[string]any{"app": name}
	template := map[string]any{"metadata": map[string]any{"labels": labels}, "spec": podSpec}
	deploy = l.create(testenv.UserAlice, deployGVR, map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(name, nil),
		"spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": labels}, "template": template}})
	rs = l.replicaSet(deploy, name+"-1", template)
	pod = l.pod(rs, name+"-1-a", podSpec)
	return deploy, rs, pod
}

func (l *lab) replicaSet(deploy *unstructured.Unstructured, name string, template map[string]any) *unstructured.Unstructured {
	labels := template["metadata"].(map[string]any)["labels"]
	return l.create(ControllerUser, rsGVR, map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta(name, owner(deploy)),
		"spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": labels}, "template": template}})
}

func (l *lab) pod(rs *unstructured.Unstructured, name string, podSpec map[string]any) string {
	labels, _, _ := unstructured.NestedMap(rs.Object, "spec", "template", "metadata", "labels")
	m := meta(name, owner(rs))
	m["labels"] = labels
	l.create(ControllerUser, podsGVR, map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": m, "spec": podSpec})
	if _, ok := podSpec["nodeName"]; ok {
		l.status(name, `{"phase":"Running","conditions":[{"type":"PodScheduled","status":"True"},{"type":"Ready","status":"True"}],
			"containerStatuses":[{"name":"app","image":"x","imageID":"","ready":true,"restartCount":0,"state":{"running":{"startedAt":"2026-01-01T00:00:00Z"}}}]}`)
	}
	return name
}

// event writes a core/v1 Event about a Pod, as the kubelet would.
func (l *lab) event(pod, reason, message string) {
	l.t.Helper()
	ts := time.Now().UTC().Format(time.RFC3339)
	l.create(ControllerUser, eventsGVR, map[string]any{"apiVersion": "v1", "kind": "Event",
		"metadata":       meta(fmt.Sprintf("%s.%d", pod, time.Now().UnixNano()), nil),
		"involvedObject": map[string]any{"apiVersion": "v1", "kind": "Pod", "namespace": l.ns, "name": pod},
		"reason":         reason, "message": message, "type": "Warning", "count": int64(1),
		"firstTimestamp": ts, "lastTimestamp": ts, "source": map[string]any{"component": "kubelet"}})
}

func container(extra map[string]any) map[string]any {
	c := map[string]any{"name": "app", "image": "registry.example/shop:1.0"}
	for k, v := range extra {
		c[k] = v
	}
	return c
}

const crashing = `{"phase":"Running","conditions":[{"type":"PodScheduled","status":"True"},{"type":"Ready","status":"False","reason":"ContainersNotReady"}],
	"containerStatuses":[{"name":"app","image":"x","imageID":"","ready":false,"restartCount":3,
	"lastState":{"terminated":{"exitCode":1,"reason":"Error","startedAt":"2026-01-01T00:00:00Z","finishedAt":"2026-01-01T00:00:01Z"}},
	"state":{"waiting":{"reason":"%s","message":"%s"}}}]}`

// waitRecorded waits until the journal holds the Pod's latest status and
// returns when it was observed.
func (p *Played) waitRecorded(pod string) time.Time {
	p.t.Helper()
	var at time.Time
	err := p.poll(func() (bool, error) {
		rec, err := p.store.LatestAt(p.ctx, p.PodID(pod), time.Now().Add(time.Hour))
		if err != nil {
			return false, nil
		}
		at = rec.ObservedAt
		return strings.Contains(string(rec.Object), `"waiting"`) || strings.Contains(string(rec.Object), "Unschedulable"), nil
	})
	if err != nil {
		p.t.Fatalf("incident: the Pod's crash was not recorded: %v", err)
	}
	return at
}

// recorded waits until the journal holds the object u written to gvr (its
// resourceVersion).
func (p *Played) recorded(gvr schema.GroupVersionResource, u *unstructured.Unstructured) {
	p.t.Helper()
	id := storage.ObjectID{ClusterID: p.Cluster, Group: gvr.Group, Resource: gvr.Resource, Namespace: u.GetNamespace(), Name: u.GetName()}
	err := p.poll(func() (bool, error) {
		rec, err := p.store.LatestAt(p.ctx, id, time.Now().Add(time.Hour))
		return err == nil && rec.Resource.ResourceVersion == u.GetResourceVersion(), nil
	})
	if err != nil {
		p.t.Fatalf("incident: %s %s at resourceVersion %s was not recorded: %v", gvr.Resource, u.GetName(), u.GetResourceVersion(), err)
	}
}

// waitEvidence waits until every stream of the cluster has evidence after
// at, so that at is covered.
func (p *Played) waitEvidence(at time.Time) {
	p.t.Helper()
	err := p.poll(func() (bool, error) {
		streams, err := p.store.Streams(p.ctx, p.Cluster)
		if err != nil {
			return false, err
		}
		for _, st := range streams {
			if !st.CheckpointAt.After(at) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		p.t.Fatalf("incident: evidence past %s: %v", at, err)
	}
}

// ingestAudit correlates the audit log with the journal until the latest
// version of last has its user: the audit log is written in request order.
func (p *Played) ingestAudit(last storage.ObjectID) {
	p.t.Helper()
	c, err := audit.NewCorrelator(p.store, last.ClusterID)
	if err != nil {
		p.t.Fatalf("incident: %v", err)
	}
	err = p.poll(func() (bool, error) {
		files, err := audit.OpenFiles([]string{p.env.AuditLogPath()})
		if err != nil {
			return false, err
		}
		if _, err := c.Ingest(p.ctx, files); err != nil {
			return false, err
		}
		rec, err := p.store.LatestAt(p.ctx, last, time.Now().Add(time.Hour))
		if err != nil {
			return false, err
		}
		corr, err := p.store.Correlations(p.ctx, []string{rec.EventID})
		return len(corr[rec.EventID]) > 0, err
	})
	if err != nil {
		p.t.Fatalf("incident: audit correlation: %v", err)
	}
}

// poll calls done every 50ms until it is true, for at most 20 seconds.
func (p *Played) poll(done func() (bool, error)) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		ok, err := done()
		switch {
		case err != nil:
			return err
		case ok:
			return nil
		case time.Now().After(deadline):
			return fmt.Errorf("not done after 20s")
		}
		select {
		case <-p.ctx.Done():
			return p.ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
