package krply_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"

	"github.com/krply/krply"
	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest"
	"github.com/krply/krply/replay"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/storagetest"
)

func TestObject(t *testing.T) {
	cases := []struct {
		resource         string
		group, resource2 string
	}{
		{"configmaps", "", "configmaps"},
		{"deployments.apps", "apps", "deployments"},
		{"widgets.example.com", "example.com", "widgets"},
	}
	for _, tc := range cases {
		got := krply.Object("c1", tc.resource, "shop", "web")
		want := storage.ObjectID{ClusterID: "c1", Group: tc.group, Resource: tc.resource2, Namespace: "shop", Name: "web"}
		if got != want {
			t.Errorf("Object(%q) = %+v, want %+v", tc.resource, got, want)
		}
	}
	if s := krply.Namespaces("c1"); s.ClusterID != "c1" || len(s.Namespaces) != 0 {
		t.Errorf("Namespaces(c1) = %+v, want the whole cluster", s)
	}
}

func TestNewJournalLeavesTheStoreToTheCaller(t *testing.T) {
	if _, err := krply.NewJournal(nil); !errors.Is(err, krply.ErrInvalidArgument) {
		t.Fatalf("NewJournal(nil) = %v, want ErrInvalidArgument", err)
	}
	store := memory.New()
	defer store.Close()
	j, err := krply.NewJournal(store)
	if err != nil {
		t.Fatal(err)
	}
	if j.Store() != storage.Store(store) {
		t.Error("Store() is not the store given")
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Stats(context.Background()); err != nil {
		t.Errorf("the caller's store was closed by Journal.Close: %v", err)
	}
}

func TestOpenOwnsTheFile(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "krply.db")
	j, err := krply.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	store := j.Store()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Stats(ctx); !errors.Is(err, storage.ErrClosed) {
		t.Errorf("Stats after Close = %v, want storage.ErrClosed", err)
	}

	notAJournal := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notAJournal, []byte("not a database, clearly not a journal, long enough to look like a file"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := krply.Open(ctx, notAJournal); !errors.Is(err, storage.ErrIncompatible) {
		t.Errorf("Open(a text file) = %v, want storage.ErrIncompatible", err)
	}
}

// Replaying through the Journal takes the root package's names alone:
// NewCluster, Plan, SavePlan, DryRun and Apply with a Confirmation reach
// the Planner, whose refusals come back as they are.
func TestJournalReplaysWithRootNames(t *testing.T) {
	ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "shop"}}}
	system := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "kube-system", "uid": "cluster-uid"}}}
	c := krplytest.NewCluster(t, krplytest.WithResources("cm", "ns"), krplytest.WithObjects(ns, system, configMapObject("shop", "settings", "blue")))
	at := c.Mark()
	c.Stop()
	ctx := context.Background()

	j, err := krply.NewJournal(c.Store)
	if err != nil {
		t.Fatal(err)
	}
	if j.Materializer() == nil || j.Planner() == nil {
		t.Fatal("Materializer() or Planner() is nil")
	}
	var sandbox *krply.Cluster
	if sandbox, err = krply.NewCluster(c.Dynamic, replay.WithClusterID(c.ClusterID)); err != nil {
		t.Fatal(err)
	}
	var plan *krply.Plan
	plan, err = j.Plan(ctx, krply.Source{ClusterID: c.ClusterID, Namespaces: []string{"shop"}, At: at},
		krply.Target{Namespaces: map[string]string{"shop": "shop-copy"}})
	if err != nil {
		t.Fatal(err)
	}
	var unsaved *replay.UnsavedPlanError
	if _, err := j.DryRun(ctx, plan, sandbox); !errors.As(err, &unsaved) {
		t.Errorf("DryRun of a plan preview = %v, want *replay.UnsavedPlanError", err)
	}
	if err := j.SavePlan(ctx, plan); err != nil {
		t.Fatal(err)
	}
	loaded, err := j.LoadPlan(ctx, plan.ID)
	if err != nil || loaded.Hash != plan.Hash {
		t.Fatalf("LoadPlan = %v, %v; want the saved plan with hash %s", loaded, err, plan.Hash)
	}
	var confirm *replay.ConfirmationRequiredError
	if _, err := j.Apply(ctx, loaded, sandbox, krply.Confirmation{}); !errors.As(err, &confirm) {
		t.Errorf("Apply without confirmation = %v, want *replay.ConfirmationRequiredError", err)
	}
	var source *replay.SourceClusterError
	if _, err := j.DryRun(ctx, loaded, sandbox); !errors.As(err, &source) {
		t.Errorf("DryRun into the source cluster = %v, want *replay.SourceClusterError", err)
	}
}

func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "krply.db")
	if _, err := krply.Open(ctx, path, krply.WithReadOnly()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open(missing, WithReadOnly) = %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open(missing, WithReadOnly) created the journal: %v", err)
	}

	recs := writeShopJournal(t, path)
	j, err := krply.Open(ctx, path, krply.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	obj, err := j.ObjectAt(ctx, krply.Object("c1", "configmaps", "shop", "web"), shopAt.Add(30*time.Second))
	if err != nil || !obj.Exists || obj.Object == nil || !obj.Covered {
		t.Errorf("ObjectAt on a read-only journal = %+v, %v; want the covered ConfigMap", obj, err)
	}
	if _, err := j.NewCollectorForConfig(&rest.Config{Host: "https://127.0.0.1:1"}); !errors.Is(err, storage.ErrReadOnly) {
		t.Errorf("NewCollectorForConfig on a read-only journal = %v, want storage.ErrReadOnly", err)
	}
	if _, err := j.Store().Append(ctx, recs); !errors.Is(err, storage.ErrReadOnly) {
		t.Errorf("Append on a read-only journal = %v, want storage.ErrReadOnly", err)
	}
}

// shopAt is when writeShopJournal's baseline ended.
var shopAt = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// writeShopJournal writes a journal of cluster c1 at path: a baseline of
// the ConfigMaps of namespace shop at shopAt holding "web" (UID u1,
// resourceVersion 10), the creation of "new" (u2, 12) watched 10s later,
// and a checkpoint a minute later. It returns the records.
func writeShopJournal(t *testing.T, path string) []event.Record {
	t.Helper()
	ctx := context.Background()
	j, err := krply.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	stream := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	ref := storagetest.Ref(stream, "ConfigMap", "shop", "web", "u1", "10")
	recs := storagetest.Baseline(stream, "b1", shopAt, "10", []storagetest.Item{{Ref: ref, Object: storagetest.ConfigMap("shop", "web", "u1", "10", map[string]string{"k": "v"})}})
	recs = append(recs,
		storagetest.Event(stream, event.Added, storagetest.Ref(stream, "ConfigMap", "shop", "new", "u2", "12"),
			storagetest.ConfigMap("shop", "new", "u2", "12", map[string]string{"k": "v"}), shopAt.Add(10*time.Second)),
		storagetest.Checkpoint(stream, "13", true, shopAt.Add(time.Minute)))
	if _, err := j.Store().Append(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	return recs
}
