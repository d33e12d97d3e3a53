package truth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand"
	"path"
	"time"

	"github.com/google/uuid"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/krply/krply/storage"
)

// kind is one kind of object the workload writes.
type kind struct {
	gvr  schema.GroupVersionResource
	kind string
	// spec fills a new object's content; mutate changes an existing one
	// in a way the kind allows and says what it did.
	spec   func(obj map[string]any, name string, rnd *rand.Rand)
	mutate func(obj map[string]any, rnd *rand.Rand) string
}

func (k kind) apiVersion() string { return k.gvr.GroupVersion().String() }

// collection is the URL path of the kind's objects in ns.
func (k kind) collection(ns string) string {
	if k.gvr.Group == "" {
		return path.Join("/api", k.gvr.Version, "namespaces", ns, k.gvr.Resource)
	}
	return path.Join("/apis", k.gvr.Group, k.gvr.Version, "namespaces", ns, k.gvr.Resource)
}

func nested(obj map[string]any, fields ...string) map[string]any {
	m := obj
	for _, f := range fields {
		next, ok := m[f].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[f] = next
		}
		m = next
	}
	return m
}

func word(rnd *rand.Rand) string { return fmt.Sprintf("v%d", rnd.Intn(1000)) }

// metadataChange changes a label or an annotation.
func metadataChange(obj map[string]any, rnd *rand.Rand) string {
	field := "labels"
	if rnd.Intn(2) == 0 {
		field = "annotations"
	}
	m := nested(obj, "metadata", field)
	key := fmt.Sprintf("truth.krply.io/k%d", rnd.Intn(4))
	if _, ok := m[key]; ok && rnd.Intn(3) == 0 {
		delete(m, key)
		return field + " remove"
	}
	m[key] = word(rnd)
	return field
}

// workloadKinds are ConfigMaps, Secrets, headless Services (no cluster IP
// to allocate, so re-creating them never exhausts the range) and
// Deployments (nothing reconciles them in the harness, so only the
// workload changes them).
func workloadKinds() []kind {
	return []kind{
		{
			gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, kind: "ConfigMap",
			spec: func(obj map[string]any, _ string, rnd *rand.Rand) {
				obj["data"] = map[string]any{"a": word(rnd)}
			},
			mutate: func(obj map[string]any, rnd *rand.Rand) string {
				if rnd.Intn(3) == 0 {
					return metadataChange(obj, rnd)
				}
				nested(obj, "data")[fmt.Sprintf("k%d", rnd.Intn(5))] = word(rnd)
				return "data"
			},
		},
		{
			gvr: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, kind: "Secret",
			spec: func(obj map[string]any, _ string, rnd *rand.Rand) {
				obj["type"] = "Opaque"
				obj["data"] = map[string]any{"token": base64.StdEncoding.EncodeToString([]byte(word(rnd)))}
			},
			mutate: func(obj map[string]any, rnd *rand.Rand) string {
				if rnd.Intn(3) == 0 {
					return metadataChange(obj, rnd)
				}
				nested(obj, "data")["token"] = base64.StdEncoding.EncodeToString([]byte(word(rnd)))
				return "data"
			},
		},
		{
			gvr: schema.GroupVersionResource{Version: "v1", Resource: "services"}, kind: "Service",
			spec: func(obj map[string]any, name string, rnd *rand.Rand) {
				obj["spec"] = map[string]any{
					"clusterIP": "None",
					"selector":  map[string]any{"app": name},
					"ports":     []any{map[string]any{"name": "http", "port": int64(8000 + rnd.Intn(1000)), "protocol": "TCP"}},
				}
			},
			mutate: func(obj map[string]any, rnd *rand.Rand) string {
				if rnd.Intn(3) == 0 {
					return metadataChange(obj, rnd)
				}
				spec := nested(obj, "spec")
				if rnd.Intn(2) == 0 {
					nested(spec, "selector")["tier"] = word(rnd)
					return "spec.selector"
				}
				spec["ports"] = []any{map[string]any{"name": "http", "port": int64(8000 + rnd.Intn(1000)), "protocol": "TCP"}}
				return "spec.ports"
			},
		},
		{
			gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, kind: "Deployment",
			spec: func(obj map[string]any, name string, rnd *rand.Rand) {
				labels := map[string]any{"app": name}
				obj["spec"] = map[string]any{
					"replicas": int64(1 + rnd.Intn(3)),
					"selector": map[string]any{"matchLabels": labels},
					"template": map[string]any{
						"metadata": map[string]any{"labels": labels},
						"spec": map[string]any{"containers": []any{map[string]any{
							"name": "app", "image": "registry.invalid/app:" + word(rnd),
						}}},
					},
				}
			},
			mutate: func(obj map[string]any, rnd *rand.Rand) string {
				switch rnd.Intn(3) {
				case 0:
					return metadataChange(obj, rnd)
				case 1:
					nested(obj, "spec")["replicas"] = int64(rnd.Intn(6))
					return "scale"
				}
				spec := nested(obj, "spec", "template", "spec")
				spec["containers"] = []any{map[string]any{"name": "app", "image": "registry.invalid/app:" + word(rnd)}}
				return "spec.template image"
			},
		},
	}
}

// writer makes the workload's writes through the REST client, so it has
// the server's exact answers, and records them in the oracle. Each write is
// made as one of its users, chosen at random, with an audit ID the writer
// chooses (the Audit-ID header, which the API server's audit log keeps), so
// the oracle knows who made every version and which audit event says so.
type writer struct {
	users   []string
	rest    map[string]rest.Interface
	oracle  *Oracle
	cluster string
}

// writerUser is a user the writer writes as.
type writerUser struct {
	name string
	cfg  *rest.Config
}

func newWriter(oracle *Oracle, cluster string, users ...writerUser) (*writer, error) {
	w := &writer{rest: map[string]rest.Interface{}, oracle: oracle, cluster: cluster}
	for _, u := range users {
		rc, err := rest.UnversionedRESTClientFor(dynamic.ConfigFor(u.cfg))
		if err != nil {
			return nil, err
		}
		w.users = append(w.users, u.name)
		w.rest[u.name] = rc
	}
	if len(w.users) == 0 {
		return nil, fmt.Errorf("a writer needs a user")
	}
	return w, nil
}

// as picks the user of the next write.
func (w *writer) as(rnd *rand.Rand) string { return w.users[rnd.Intn(len(w.users))] }

// request starts a request of verb as user, with a new audit ID.
func (w *writer) request(verb, user string) (*rest.Request, string) {
	id := uuid.NewString()
	return w.rest[user].Verb(verb).SetHeader("Audit-ID", id), id
}

func (w *writer) objectID(k kind, ns, name string) storage.ObjectID {
	return storage.ObjectID{ClusterID: w.cluster, Group: k.gvr.Group, Resource: k.gvr.Resource, Namespace: ns, Name: name}
}

// meta is the part of an answer the oracle indexes.
type meta struct {
	Kind     string `json:"kind"`
	Metadata struct {
		UID             string `json:"uid"`
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
}

func (w *writer) record(obj storage.ObjectID, op Op, user, auditID string, issued time.Time, raw []byte) (Version, error) {
	var m meta
	if err := json.Unmarshal(raw, &m); err != nil {
		return Version{}, fmt.Errorf("%s %s: decode answer: %w", op, obj.Name, err)
	}
	return w.oracle.Record(Version{Object: obj, Op: op, UID: m.Metadata.UID, ResourceVersion: m.Metadata.ResourceVersion,
		Body: raw, IssuedAt: issued, RespondedAt: time.Now(), User: user, AuditID: auditID}), nil
}

func (w *writer) create(ctx context.Context, k kind, ns, name string, rnd *rand.Rand) (Version, error) {
	obj := map[string]any{
		"apiVersion": k.apiVersion(), "kind": k.kind,
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"truth.krply.io/workload": "1"}},
	}
	k.spec(obj, name, rnd)
	body, err := json.Marshal(obj)
	if err != nil {
		return Version{}, err
	}
	user := w.as(rnd)
	req, auditID := w.request("POST", user)
	issued := time.Now()
	raw, err := req.AbsPath(k.collection(ns)).Body(body).Do(ctx).Raw()
	if err != nil {
		return Version{}, fmt.Errorf("create %s %s/%s as %s: %w", k.kind, ns, name, user, err)
	}
	return w.record(w.objectID(k, ns, name), OpCreate, user, auditID, issued, raw)
}

// update applies a mutation to the last version. Each update also stamps
// an annotation with a counter, so no update is a no-op (a no-op update
// makes no new resourceVersion and no watch event).
func (w *writer) update(ctx context.Context, k kind, last Version, rnd *rand.Rand, n int) (Version, string, error) {
	var obj map[string]any
	if err := json.Unmarshal(last.Body, &obj); err != nil {
		return Version{}, "", err
	}
	what := k.mutate(obj, rnd)
	nested(obj, "metadata", "annotations")["truth.krply.io/write"] = fmt.Sprint(n)
	body, err := json.Marshal(obj) // carries the last resourceVersion: a precondition
	if err != nil {
		return Version{}, "", err
	}
	user := w.as(rnd)
	req, auditID := w.request("PUT", user)
	issued := time.Now()
	raw, err := req.AbsPath(k.collection(last.Object.Namespace), last.Object.Name).Body(body).Do(ctx).Raw()
	if err != nil {
		return Version{}, "", fmt.Errorf("update %s %s/%s as %s: %w", k.kind, last.Object.Namespace, last.Object.Name, user, err)
	}
	v, err := w.record(last.Object, OpUpdate, user, auditID, issued, raw)
	return v, what, err
}

// delete deletes the last version, preconditioned on its UID and
// resourceVersion, so the deleted state is known exactly even when the
// server answers with a Status instead of the object (as it does for most
// kinds).
func (w *writer) delete(ctx context.Context, k kind, last Version, rnd *rand.Rand) (Version, error) {
	opts, err := json.Marshal(map[string]any{
		"apiVersion": "v1", "kind": "DeleteOptions",
		"preconditions": map[string]any{"uid": last.UID, "resourceVersion": last.ResourceVersion},
	})
	if err != nil {
		return Version{}, err
	}
	user := w.as(rnd)
	req, auditID := w.request("DELETE", user)
	issued := time.Now()
	raw, err := req.AbsPath(k.collection(last.Object.Namespace), last.Object.Name).Body(opts).Do(ctx).Raw()
	if err != nil {
		return Version{}, fmt.Errorf("delete %s %s/%s as %s: %w", k.kind, last.Object.Namespace, last.Object.Name, user, err)
	}
	var m meta
	if err := json.Unmarshal(raw, &m); err != nil {
		return Version{}, fmt.Errorf("delete %s: decode answer: %w", last.Object.Name, err)
	}
	v := Version{Object: last.Object, Op: OpDelete, UID: last.UID, Body: last.Body, IssuedAt: issued, RespondedAt: time.Now(), User: user, AuditID: auditID}
	if m.Kind == k.kind {
		v.Body, v.ResourceVersion = raw, m.Metadata.ResourceVersion
	}
	return w.oracle.Record(v), nil
}
