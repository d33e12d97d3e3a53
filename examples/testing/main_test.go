package main

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/materialize"
)

func deployment(ns, name string, replicas int64) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"namespace": ns, "name": name},
		"spec":     map[string]any{"replicas": replicas},
	}}
}

// TestPause checks what Pause did to the cluster, change by change, rather
// than only the state it left behind.
func TestPause(t *testing.T) {
	c := krplytest.NewCluster(t, krplytest.WithObjects(
		deployment("shop", "web", 3),
		deployment("shop", "idle", 0),
		deployment("other", "api", 2),
	))
	before := c.Mark()

	paused, err := Pause(context.Background(), c.Dynamic, "shop")
	if err != nil {
		t.Fatalf("Pause: %v", err)
	}
	if len(paused) != 1 || paused[0] != "web" {
		t.Fatalf("Pause paused %q, want [web]", paused)
	}

	// web was changed exactly once: replicas to 0, the old count kept.
	krplytest.AssertHistory(t, c.History("deploy", "shop", "web"),
		krplytest.Version{Type: event.Added, Origin: materialize.OriginBaseline},
		krplytest.Version{Type: event.Modified, Changes: map[string]any{
			"spec.replicas": 0,
			// web had no annotations, so the whole map was added.
			"metadata.annotations": map[string]string{PausedReplicasAnnotation: "3"},
		}},
	)
	// idle was never written to.
	krplytest.AssertHistory(t, c.History("deploy", "shop", "idle"),
		krplytest.Version{Type: event.Added, Origin: materialize.OriginBaseline},
	)
	// Nothing outside the namespace changed, nothing was created or deleted.
	krplytest.AssertDiff(t, c.Diff(before, c.Mark()),
		krplytest.ObjectChange{Type: materialize.ObjectChanged, Resource: "deployments", Namespace: "shop", Name: "web"},
	)
}

// TestPauseIsIdempotent checks that a second Pause writes nothing.
func TestPauseIsIdempotent(t *testing.T) {
	c := krplytest.NewCluster(t, krplytest.WithResources("deploy"), krplytest.WithObjects(deployment("shop", "web", 2)))
	if _, err := Pause(context.Background(), c.Dynamic, "shop"); err != nil {
		t.Fatalf("first Pause: %v", err)
	}
	between := c.Mark()
	paused, err := Pause(context.Background(), c.Dynamic, "shop")
	if err != nil {
		t.Fatalf("second Pause: %v", err)
	}
	if len(paused) != 0 {
		t.Errorf("second Pause paused %q, want nothing", paused)
	}
	krplytest.AssertDiff(t, c.Diff(between, c.Mark()))
	if h := c.History("deploy", "shop", "web"); len(h.Versions()) != 2 {
		t.Errorf("web has %d versions, want 2 (the baseline and one pause)", len(h.Versions()))
	}
}
