package why_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/krply/krply/audit"
	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/server"
	"github.com/krply/krply/server/client"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/watch"
	"github.com/krply/krply/why"
)

// controllerUser writes what controllers and the kubelet would: no
// controller-manager, scheduler or kubelet runs on the test control plane.
const controllerUser = "system:kube-controller-manager"

func TestMain(m *testing.M) {
	os.Exit(testenv.RunMain(m, testenv.WithAudit(""), testenv.WithUser(controllerUser, "system:masters")))
}

var (
	podsGVR    = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	cmGVR      = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secretsGVR = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}
	nodesGVR   = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	svcGVR     = schema.GroupVersionResource{Version: "v1", Resource: "services"}
	eventsGVR  = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	deployGVR  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	rsGVR      = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
)

// lab writes to the control plane as the users of the incidents.
type lab struct {
	t    *testing.T
	ctx  context.Context
	ns   string
	dyns map[string]dynamic.Interface
}

func newLab(t *testing.T, ctx context.Context, env *testenv.Env, ns string) *lab {
	l := &lab{t: t, ctx: ctx, ns: ns, dyns: map[string]dynamic.Interface{}}
	for _, u := range []string{testenv.UserAdmin, testenv.UserAlice, testenv.UserBob, controllerUser} {
		dyn, err := dynamic.NewForConfig(env.ConfigFor(u))
		if err != nil {
			t.Fatal(err)
		}
		l.dyns[u] = dyn
	}
	return l
}

// manager is the field manager a user's writes carry.
func manager(user string) string {
	if user == controllerUser {
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
		l.t.Fatalf("create %s: %v", gvr.Resource, err)
	}
	return u
}

func (l *lab) patch(user string, gvr schema.GroupVersionResource, name, patch string, subresource ...string) {
	l.t.Helper()
	if _, err := l.res(user, gvr).Patch(l.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: manager(user)}, subresource...); err != nil {
		l.t.Fatalf("patch %s %s: %v", gvr.Resource, name, err)
	}
}

// status writes a Pod's status as the kubelet would.
func (l *lab) status(pod, status string) {
	l.t.Helper()
	l.patch(controllerUser, podsGVR, pod, `{"status":`+status+`}`, "status")
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
	return l.create(controllerUser, rsGVR, map[string]any{"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta(name, owner(deploy)),
		"spec": map[string]any{"replicas": int64(1), "selector": map[string]any{"matchLabels": labels}, "template": template}})
}

func (l *lab) pod(rs *unstructured.Unstructured, name string, podSpec map[string]any) string {
	labels, _, _ := unstructured.NestedMap(rs.Object, "spec", "template", "metadata", "labels")
	m := meta(name, owner(rs))
	m["labels"] = labels
	l.create(controllerUser, podsGVR, map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": m, "spec": podSpec})
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
	l.create(controllerUser, eventsGVR, map[string]any{"apiVersion": "v1", "kind": "Event",
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

// TestIncidents scripts four incidents and one with a gap over the
// culprit's stream on the local control plane, records them with one
// Collector, and asks why each Pod broke: the culprit must come first,
// with who made it; in the gap case the answer must name the gap and
// present no candidate as certain.
func TestIncidents(t *testing.T) {
	env := testenv.Shared(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	ns := env.CreateNamespace(t)
	l := newLab(t, ctx, env, ns)
	// The Collector watches through an apiserver without watch cache, so
	// that a watch from a compacted resourceVersion fails with 410 Gone.
	source := env.StartAPIServer(t, "--watch-cache=false").Config()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	startRecorder := func() (*watch.Collector, func()) {
		col, err := watch.NewCollectorForConfig(source, store,
			watch.WithResources("pods", "rs", "deploy", "cm", "secrets", "sa", "svc", "networkpolicies", "pdb", "hpa", "nodes", "events"),
			watch.WithNamespaces(ns), watch.AllowSecrets(), watch.KeepSecretValues(),
			watch.WithProgressInterval(2*time.Second), watch.WithBackoff(50*time.Millisecond, time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return col, krplytest.StartCollector(t, col, 2*time.Minute)
	}
	col, stop := startRecorder()
	cluster := col.ClusterID()
	podID := func(name string) storage.ObjectID {
		return storage.ObjectID{ClusterID: cluster, Resource: "pods", Namespace: ns, Name: name}
	}

	// 1: alice changes the key a Pod reads; bob annotates the Deployment;
	// the Pod restarts and crashes.
	l.create(testenv.UserAlice, cmGVR, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("settings-1", nil), "data": map[string]any{"color": "blue", "size": "L"}})
	_, _, pod1 := l.workload("shop-1", map[string]any{"nodeName": "node-1", "containers": []any{container(map[string]any{"env": []any{
		map[string]any{"name": "COLOR", "valueFrom": map[string]any{"configMapKeyRef": map[string]any{"name": "settings-1", "key": "color"}}}}})}})
	// 2: bob changes the Deployment's image; the controller rolls out a
	// new ReplicaSet whose Pod cannot pull it; alice scales meanwhile.
	deploy2, _, _ := l.workload("shop-2", map[string]any{"nodeName": "node-1", "containers": []any{container(nil)}})
	// 3: admin taints the only Node a Pod may run on; the Pod stays
	// unschedulable.
	l.create(testenv.UserAdmin, nodesGVR, map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": meta(ns+"-node", map[string]any{"labels": map[string]any{"pool": ns}})})
	// 4: bob rotates a Secret and drops the key a Pod reads.
	l.create(testenv.UserAlice, secretsGVR, map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": meta("db-4", nil),
		"data": map[string]any{"password": base64.StdEncoding.EncodeToString([]byte("hunter2"))}})
	_, _, pod4 := l.workload("shop-4", map[string]any{"nodeName": "node-1", "containers": []any{container(map[string]any{"env": []any{
		map[string]any{"name": "DB_PASSWORD", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "db-4", "key": "password"}}}}})}})
	l.create(testenv.UserAlice, svcGVR, map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": meta("shop-4", nil),
		"spec": map[string]any{"selector": map[string]any{"app": "shop-4"}, "ports": []any{map[string]any{"port": int64(80)}}}})
	// 5 (the gap case) reads its ConfigMap as 1 does.
	l.create(testenv.UserAlice, cmGVR, map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("settings-5", nil), "data": map[string]any{"color": "blue"}})
	_, _, pod5 := l.workload("shop-5", map[string]any{"nodeName": "node-1", "containers": []any{container(map[string]any{"env": []any{
		map[string]any{"name": "COLOR", "valueFrom": map[string]any{"configMapKeyRef": map[string]any{"name": "settings-5", "key": "color"}}}}})}})
	if err := col.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	synced := time.Now()

	// The culprits, then noise, then the symptoms.
	l.patch(testenv.UserAlice, cmGVR, "settings-1", `{"data":{"color":"chartreuse"}}`)
	l.patch(testenv.UserBob, cmGVR, "settings-1", `{"data":{"size":"XL"}}`) // a key the Pod does not read
	l.patch(testenv.UserBob, deployGVR, "shop-1", `{"metadata":{"annotations":{"note":"looked at it"}}}`)
	l.status(pod1, fmt.Sprintf(crashing, "CrashLoopBackOff", "back-off 40s restarting failed container"))
	l.event(pod1, "BackOff", "Back-off restarting failed container app")

	l.patch(testenv.UserBob, deployGVR, "shop-2", `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"registry.example/shop:1.1-typo"}]}}}}`)
	l.patch(testenv.UserAlice, deployGVR, "shop-2", `{"spec":{"replicas":2}}`)
	current, err := l.res(testenv.UserAdmin, deployGVR).Get(ctx, "shop-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	template, _, _ := unstructured.NestedMap(current.Object, "spec", "template")
	rs2 := l.replicaSet(deploy2, "shop-2-2", template)
	podSpec2, _, _ := unstructured.NestedMap(template, "spec")
	pod2 := l.pod(rs2, "shop-2-2-a", podSpec2)
	l.status(pod2, fmt.Sprintf(crashing, "ImagePullBackOff", "Back-off pulling image registry.example/shop:1.1-typo"))

	l.patch(testenv.UserAdmin, nodesGVR, ns+"-node", `{"spec":{"taints":[{"key":"maintenance","value":"true","effect":"NoSchedule"}]}}`)
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

	l.patch(testenv.UserBob, secretsGVR, "db-4", `{"data":{"password":null,"password-v2":"`+base64.StdEncoding.EncodeToString([]byte("correct horse"))+`"}}`)
	l.patch(testenv.UserAlice, svcGVR, "shop-4", `{"metadata":{"annotations":{"owner":"alice"}}}`)
	l.status(pod4, fmt.Sprintf(crashing, "CreateContainerConfigError", `couldn't find key password in Secret `+ns+`/db-4`))

	// Who: the audit log, correlated with the journal, once the writes are
	// recorded.
	lastT := waitRecorded(t, ctx, store, podID(pod4))
	ingestAudit(t, ctx, env, store, storage.ObjectID{ClusterID: cluster, Resource: "secrets", Namespace: ns, Name: "db-4"})
	waitEvidence(t, ctx, store, cluster, lastT)

	ex, err := why.New(store)
	if err != nil {
		t.Fatal(err)
	}
	explain := func(pod string) *why.Answer {
		t.Helper()
		// The window starts when recording did: before, the journal
		// would rightly call the answer incomplete.
		a, err := ex.Explain(ctx, why.Query{Object: podID(pod), From: synced})
		if err != nil {
			t.Fatalf("explain %s: %v", pod, err)
		}
		return a
	}
	for _, tc := range []struct {
		name, pod, summary, reason, user string
	}{
		{"configmap key", pod1, "configmaps " + ns + "/settings-1: data.color", `changed key "color", which is read`, testenv.UserAlice},
		{"image", pod2, "deployments.apps " + ns + "/shop-2: spec.template.spec.containers[name=app].image", "changed image", testenv.UserBob},
		{"taint", pod3, "nodes " + ns + "-node: spec.taints", "taints", testenv.UserAdmin},
		{"secret", pod4, "secrets " + ns + "/db-4: data", `changed key "password", which is read`, testenv.UserBob},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := explain(tc.pod)
			t.Logf("T %s (%s); candidates:\n%s", a.At.Format(time.RFC3339Nano), a.AtSource, candidates(a))
			if a.AtSource != why.AtFirstBad || a.Bad == nil || !a.Bad.Bad {
				t.Fatalf("T from %q, bad transition %+v; want the first bad transition", a.AtSource, a.Bad)
			}
			if !a.Complete {
				t.Errorf("answer incomplete: coverage %+v, warnings %q", a.Coverage, a.Warnings)
			}
			if len(a.Candidates) == 0 {
				t.Fatalf("no candidate; changes %+v", a.Changes)
			}
			first := a.Candidates[0]
			c := a.Changes[first.Change]
			if !strings.HasPrefix(first.Summary, tc.summary) || !strings.Contains(strings.Join(first.Reasons, "; "), tc.reason) {
				t.Fatalf("first candidate %q (%q); want %q because %q\nall: %s", first.Summary, first.Reasons, tc.summary, tc.reason, candidates(a))
			}
			if c.Who == nil || c.Who.User != tc.user || c.Who.Actor != why.ActorPerson {
				t.Errorf("who %+v; want %s, a person", c.Who, tc.user)
			}
			if len(first.Caveats) != 0 {
				t.Errorf("caveats %q on a complete answer", first.Caveats)
			}
		})
	}

	// The query API and its Go client give the same answers.
	t.Run("through the query API", func(t *testing.T) {
		srv := httptest.NewServer(server.NewHandler(store))
		t.Cleanup(srv.Close)
		c, err := client.New(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		for _, pod := range []string{pod1, pod2, pod3, pod4} {
			got, err := c.Why(ctx, why.Query{Object: podID(pod), From: synced})
			if err != nil {
				t.Fatalf("%s: %v", pod, err)
			}
			want := explain(pod)
			gotJSON, _ := json.Marshal(got)
			wantJSON, _ := json.Marshal(want)
			if string(gotJSON) != string(wantJSON) {
				t.Errorf("%s: the query API answers\n%s\nthe library\n%s", pod, gotJSON, wantJSON)
			}
		}
	})

	t.Run("graph and events", func(t *testing.T) {
		a := explain(pod1)
		want := []string{"replicasets.apps " + ns + "/shop-1-1", "deployments.apps " + ns + "/shop-1", "configmaps " + ns + "/settings-1", "nodes node-1", "serviceaccounts " + ns + "/default"}
		got := map[string]why.Node{}
		for _, n := range a.Nodes {
			got[describeID(n.ID)] = n
		}
		for _, w := range want {
			if _, ok := got[w]; !ok {
				t.Errorf("graph lacks %s: %v", w, a.Nodes)
			}
		}
		if n := got["configmaps "+ns+"/settings-1"]; len(n.Keys) != 1 || n.Keys[0] != "color" || n.Distance != 1 {
			t.Errorf("settings-1 node %+v; want the key color, one edge away", n)
		}
		if !a.EventsRecorded || len(a.Events) != 1 || a.Events[0].Reason != "BackOff" {
			t.Errorf("events %+v (recorded %v); want the BackOff event", a.Events, a.EventsRecorded)
		}
		a4 := explain(pod4)
		raw, _ := json.Marshal(a4)
		for _, secret := range []string{"hunter2", "correct horse", base64.StdEncoding.EncodeToString([]byte("hunter2"))} {
			if strings.Contains(string(raw), secret) {
				t.Errorf("the answer shows a Secret value (%q)", secret)
			}
		}
		if !strings.Contains(string(raw), `"sha256:`) {
			t.Errorf("the answer lacks the hashes of the Secret's values")
		}
	})

	// 5: the recorder is down while alice changes the key the Pod reads;
	// etcd forgets that history; the recorder comes back through a relist.
	stop()
	l.patch(testenv.UserAlice, cmGVR, "settings-5", `{"data":{"color":"chartreuse"}}`)
	if _, err := env.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	col, stop = startRecorder()
	t.Cleanup(stop)
	if err := col.WaitForSync(ctx); err != nil {
		t.Fatal(err)
	}
	l.patch(testenv.UserBob, deployGVR, "shop-5", `{"metadata":{"annotations":{"note":"looked at it"}}}`)
	l.status(pod5, fmt.Sprintf(crashing, "CrashLoopBackOff", "back-off 10s restarting failed container"))
	waitEvidence(t, ctx, store, cluster, waitRecorded(t, ctx, store, podID(pod5)))
	t.Run("gap over the culprit", func(t *testing.T) {
		a := explain(pod5)
		t.Logf("candidates:\n%s", candidates(a))
		if a.Complete {
			t.Fatalf("answer complete across a gap: %+v", a.Coverage)
		}
		var named bool
		for _, sc := range a.Coverage {
			if sc.Resource == "configmaps" && !sc.Covered && len(sc.Gaps) > 0 && strings.Contains(sc.Reason, "may be missing") {
				named = true
			}
		}
		if !named {
			t.Errorf("the configmaps stream's gap is not named: %+v", a.Coverage)
		}
		if len(a.Candidates) == 0 {
			t.Fatal("no candidate")
		}
		for _, c := range a.Candidates {
			if len(c.Caveats) == 0 {
				t.Errorf("candidate %q presented without caveat across a gap", c.Summary)
			}
		}
		first := a.Candidates[0]
		c := a.Changes[first.Change]
		if c.Object.Name != "settings-5" || c.Between == nil {
			t.Errorf("first candidate %q between %v; want settings-5 seen through the relist, its time bounded by the gap\nall: %s", first.Summary, c.Between, candidates(a))
		}
	})
}

func describeID(id storage.ObjectID) string {
	r := id.Resource
	if id.Group != "" {
		r += "." + id.Group
	}
	if id.Namespace == "" {
		return r + " " + id.Name
	}
	return r + " " + id.Namespace + "/" + id.Name
}

func candidates(a *why.Answer) string {
	var b strings.Builder
	for _, c := range a.Candidates {
		fmt.Fprintf(&b, "  %d %s %q %q\n", c.Score, c.Summary, c.Reasons, c.Caveats)
	}
	return b.String()
}

// waitRecorded waits until the journal holds the Pod's latest status and
// returns when it was observed.
func waitRecorded(t *testing.T, ctx context.Context, store storage.Reader, pod storage.ObjectID) time.Time {
	t.Helper()
	var at time.Time
	err := poll(ctx, func() (bool, error) {
		rec, err := store.LatestAt(ctx, pod, time.Now().Add(time.Hour))
		if err != nil {
			return false, nil
		}
		at = rec.ObservedAt
		return strings.Contains(string(rec.Object), `"waiting"`) || strings.Contains(string(rec.Object), "Unschedulable"), nil
	})
	if err != nil {
		t.Fatalf("the Pod's crash was not recorded: %v", err)
	}
	return at
}

// waitEvidence waits until every stream of the cluster has evidence after
// at, so that at is covered.
func waitEvidence(t *testing.T, ctx context.Context, store storage.Reader, cluster string, at time.Time) {
	t.Helper()
	err := poll(ctx, func() (bool, error) {
		streams, err := store.Streams(ctx, cluster)
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
		t.Fatalf("evidence past %s: %v", at, err)
	}
}

// poll calls done every 50ms until it is true, for at most 20 seconds.
func poll(ctx context.Context, done func() (bool, error)) error {
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
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// ingestAudit correlates the audit log with the journal until the latest
// version of last has its user: the audit log is written in request order.
func ingestAudit(t *testing.T, ctx context.Context, env *testenv.Env, store *memory.Store, last storage.ObjectID) {
	t.Helper()
	c, err := audit.NewCorrelator(store, last.ClusterID)
	if err != nil {
		t.Fatal(err)
	}
	err = poll(ctx, func() (bool, error) {
		files, err := audit.OpenFiles([]string{env.AuditLogPath()})
		if err != nil {
			return false, err
		}
		if _, err := c.Ingest(ctx, files); err != nil {
			return false, err
		}
		rec, err := store.LatestAt(ctx, last, time.Now().Add(time.Hour))
		if err != nil {
			return false, err
		}
		corr, err := store.Correlations(ctx, []string{rec.EventID})
		return len(corr[rec.EventID]) > 0, err
	})
	if err != nil {
		t.Fatalf("audit correlation: %v", err)
	}
}
