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
	"github.com/krply/krply/storage/storagetest"
)

// managed is one metadata.managedFields entry of a test body.
type managed struct {
	manager, operation, subresource string
	at                              time.Time
	fields                          string // fieldsV1 JSON
}

// deployBody is a Deployment "web" with the given replicas, image, labels
// and managedFields.
func deployBody(rv string, replicas int, image string, labels map[string]string, entries ...managed) []byte {
	var mf []map[string]any
	for _, e := range entries {
		m := map[string]any{"manager": e.manager, "operation": e.operation, "apiVersion": "apps/v1",
			"time": e.at.UTC().Format(time.RFC3339), "fieldsType": "FieldsV1", "fieldsV1": json.RawMessage(e.fields)}
		if e.subresource != "" {
			m["subresource"] = e.subresource
		}
		mf = append(mf, m)
	}
	body, err := json.Marshal(map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": "web", "namespace": "shop", "uid": "uw", "resourceVersion": rv, "labels": labels, "managedFields": mf},
		"spec": map[string]any{"replicas": replicas, "template": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "app", "image": image}}}}},
	})
	if err != nil {
		panic(err)
	}
	return body
}

// Without an audit log, History says which field manager changed each
// field, from the objects' managedFields: a scale through the scale
// subresource, an image change by kubectl and a label added and removed
// by a controller, with ownership moving between them.
func TestHistoryFieldManagers(t *testing.T) {
	j := newJournal(t)
	s := j.stream("apps", "v1", "deployments", "shop")
	const (
		kubectlAll     = `{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`
		kubectlNoScale = `{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`
		scale          = `{"f:spec":{"f:replicas":{}}}`
		team           = `{"f:metadata":{"f:annotations":{"f:owner":{}},"f:labels":{"f:team":{}}}}`
		noTeam         = `{"f:metadata":{"f:annotations":{"f:owner":{}}}}`
	)
	t1, t2, t3, t4 := at(1).Truncate(time.Second), at(2).Truncate(time.Second), at(3).Truncate(time.Second), at(4).Truncate(time.Second)
	app := map[string]string{"app": "web"}
	withTeam := map[string]string{"app": "web", "team": "payments"}
	versions := []struct {
		wt   event.WatchType
		body []byte
	}{
		{event.Added, deployBody("10", 2, "app:1", app, managed{"kubectl", "Update", "", t1, kubectlAll})},
		// The autoscaler scales through the scale subresource: kubectl
		// loses spec.replicas (its entry shrinks, its time stays).
		{event.Modified, deployBody("11", 5, "app:1", app,
			managed{"kubectl", "Update", "", t1, kubectlNoScale}, managed{"autoscaler", "Update", "scale", t2, scale})},
		// kubectl changes the image while a controller adds a label.
		{event.Modified, deployBody("12", 5, "app:2", withTeam,
			managed{"kubectl", "Update", "", t3, kubectlNoScale}, managed{"autoscaler", "Update", "scale", t2, scale},
			managed{"labeler", "Update", "", t3, team})},
		// The controller removes its label.
		{event.Modified, deployBody("13", 5, "app:2", app,
			managed{"kubectl", "Update", "", t3, kubectlNoScale}, managed{"autoscaler", "Update", "scale", t2, scale},
			managed{"labeler", "Update", "", t4, noTeam})},
		// kubectl changes the image again within the second of its last
		// write: its entry is the same, ownership still tells.
		{event.Modified, deployBody("14", 5, "app:3", app,
			managed{"kubectl", "Update", "", t3, kubectlNoScale}, managed{"autoscaler", "Update", "scale", t2, scale},
			managed{"labeler", "Update", "", t4, noTeam})},
	}
	for i, v := range versions {
		var obj map[string]any
		_ = json.Unmarshal(v.body, &obj)
		rv := obj["metadata"].(map[string]any)["resourceVersion"].(string)
		j.append(storagetest.Event(s, v.wt, storagetest.Ref(s, "Deployment", "shop", "web", "uw", rv), v.body, at(float64(i+1))))
	}
	h, err := j.materializer().History(context.Background(), idOf(s, "web", "shop"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, v := range h.Versions() {
		var managers []string
		for _, m := range v.FieldManagers {
			managers = append(managers, fmt.Sprintf("%s/%s/%s@%s", m.Manager, m.Operation, m.Subresource, m.Time.Sub(t0)))
		}
		line := v.ResourceVersion + " [" + strings.Join(managers, " ") + "]"
		for _, c := range v.Changes {
			by := "?"
			if c.FieldManager != nil {
				by = c.FieldManager.Manager
			}
			line += fmt.Sprintf(" %s %s by %s", c.Op, c.Path, by)
		}
		got = append(got, line)
	}
	want := []string{
		"10 [kubectl/Update/@1m0s]",
		"11 [autoscaler/Update/scale@2m0s] replace spec.replicas by autoscaler",
		"12 [kubectl/Update/@3m0s labeler/Update/@3m0s] add metadata.labels.team by labeler replace spec.template.spec.containers[name=app].image by kubectl",
		"13 [labeler/Update/@4m0s] remove metadata.labels.team by labeler",
		"14 [kubectl/Update/@3m0s] replace spec.template.spec.containers[name=app].image by kubectl",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("field managers:\n got %q\nwant %q", got, want)
	}

	// The wire form names them as field managers.
	b, err := json.Marshal(h.Versions()[1])
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"fieldManagers":[{"manager":"autoscaler","operation":"Update","subresource":"scale","apiVersion":"apps/v1","time":"`, `"fieldManager":{"manager":"autoscaler"`} {
		if !strings.Contains(string(b), key) {
			t.Fatalf("JSON of a version lacks %s:\n%s", key, b)
		}
	}
}
