package krply_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/krply/krply"
	"github.com/krply/krply/event"
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

func TestOpenReadOnly(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "krply.db")
	if _, err := krply.Open(ctx, path, krply.WithReadOnly()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open(missing, WithReadOnly) = %v, want fs.ErrNotExist", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Open(missing, WithReadOnly) created the journal: %v", err)
	}

	j, err := krply.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	stream := event.Stream{ClusterID: "c1", Version: "v1", Resource: "configmaps", Namespace: "shop"}
	ref := storagetest.Ref(stream, "ConfigMap", "shop", "web", "u1", "10")
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	recs := storagetest.Baseline(stream, "b1", at, "10", []storagetest.Item{{Ref: ref, Object: storagetest.ConfigMap("shop", "web", "u1", "10", map[string]string{"k": "v"})}})
	recs = append(recs, storagetest.Checkpoint(stream, "11", true, at.Add(time.Minute)))
	if _, err := j.Store().Append(ctx, recs); err != nil {
		t.Fatal(err)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	j, err = krply.Open(ctx, path, krply.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	obj, err := j.ObjectAt(ctx, krply.Object("c1", "configmaps", "shop", "web"), at.Add(30*time.Second))
	if err != nil || !obj.Exists || obj.Object == nil || !obj.Covered {
		t.Errorf("ObjectAt on a read-only journal = %+v, %v; want the covered ConfigMap", obj, err)
	}
	if _, err := j.Record(&rest.Config{Host: "https://127.0.0.1:1"}); !errors.Is(err, storage.ErrReadOnly) {
		t.Errorf("Record on a read-only journal = %v, want storage.ErrReadOnly", err)
	}
	if _, err := j.Store().Append(ctx, recs); !errors.Is(err, storage.ErrReadOnly) {
		t.Errorf("Append on a read-only journal = %v, want storage.ErrReadOnly", err)
	}
}
