package krply_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"

	"github.com/krply/krply"
	"github.com/krply/krply/audit"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/replay"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/sqlite"
	"github.com/krply/krply/storage/storagetest"
	"github.com/krply/krply/watch"
)

// One sentinel for an unusable argument or option, whatever the package:
// errors.Is(err, krply.ErrInvalidArgument) holds for every one of them, and
// so does the package's own ErrInvalidArgument.
func TestOneInvalidArgumentSentinel(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	defer store.Close()
	correlator, err := audit.NewCorrelator(store, "c1")
	if err != nil {
		t.Fatal(err)
	}
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{}}
	dyn := dynamicfake.NewSimpleDynamicClient(runtime.NewScheme())
	cases := []struct {
		what string
		err  error
		pkg  error // the package's own sentinel
	}{
		{"krply.NewJournal(nil)", second(krply.NewJournal(nil)), krply.ErrInvalidArgument},
		{"krply.NewJournal with an option of Open", second(krply.NewJournal(store, krply.WithSQLiteOptions(sqlite.WithReadConnections(2)))), krply.ErrInvalidArgument},
		{"krply.NewJournal with WithReadOnly", second(krply.NewJournal(store, krply.WithReadOnly())), krply.ErrInvalidArgument},
		{"krply.NewCluster(nil)", second(krply.NewCluster(nil)), krply.ErrInvalidArgument},
		{"watch.NewCollector(nil client)", second(watch.NewCollector(nil, disc, store)), watch.ErrInvalidArgument},
		{"watch.WithQueueSize(0)", second(watch.NewCollector(dyn, disc, store, watch.WithQueueSize(0))), watch.ErrInvalidArgument},
		{"materialize.New(nil)", second(materialize.New(nil)), materialize.ErrInvalidArgument},
		{"materialize.WithClock(nil)", second(materialize.New(store, materialize.WithClock(nil))), materialize.ErrInvalidArgument},
		{"replay.NewPlanner(nil)", second(replay.NewPlanner(nil)), replay.ErrInvalidArgument},
		{"replay.WithMaxDryRunAge(0)", second(replay.NewPlanner(store, replay.WithMaxDryRunAge(0))), replay.ErrInvalidArgument},
		{"replay.WithPolicy(bad pattern)", second(replay.NewPlanner(store, replay.WithPolicy(replay.Policy{Names: []string{"["}}))), replay.ErrInvalidPolicy},
		{"replay.NewCluster(nil)", second(replay.NewCluster(nil)), replay.ErrInvalidArgument},
		{"audit.NewCorrelator(nil)", second(audit.NewCorrelator(nil, "c1")), audit.ErrInvalidArgument},
		{"audit.WithBatchSize(0)", second(audit.NewCorrelator(store, "c1", audit.WithBatchSize(0))), audit.ErrInvalidArgument},
		{"audit.WithSettleDelay(-1s)", second(audit.NewWebhookHandler(correlator, audit.WithSettleDelay(-time.Second))), audit.ErrInvalidArgument},
		{"audit.WithMaxEventBytes(0)", second(audit.NewReader(bytes.NewReader(nil), "x", audit.WithMaxEventBytes(0))), audit.ErrInvalidArgument},
		{"sqlite.WithReadConnections(0)", second(sqlite.Open(ctx, filepath.Join(t.TempDir(), "a.db"), sqlite.WithReadConnections(0))), sqlite.ErrInvalidArgument},
		{"sqlite.WithSynchronous(9)", second(sqlite.Open(ctx, filepath.Join(t.TempDir(), "b.db"), sqlite.WithSynchronous(9))), sqlite.ErrInvalidArgument},
		{"sqlite.WithMmapSize(-1)", second(sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"), sqlite.WithMmapSize(-1))), sqlite.ErrInvalidArgument},
	}
	for _, tc := range cases {
		if !errors.Is(tc.err, krply.ErrInvalidArgument) {
			t.Errorf("%s = %v, want krply.ErrInvalidArgument", tc.what, tc.err)
		}
		if !errors.Is(tc.err, tc.pkg) {
			t.Errorf("%s = %v, want its package's %v", tc.what, tc.err, tc.pkg)
		}
	}
	for _, s := range []error{watch.ErrInvalidArgument, materialize.ErrInvalidArgument, replay.ErrInvalidArgument, audit.ErrInvalidArgument, sqlite.ErrInvalidArgument, krply.ErrInvalidArgument} {
		if s != storage.ErrInvalidArgument {
			t.Errorf("%v is not storage.ErrInvalidArgument: one sentinel, re-exported", s)
		}
	}
}

// Not found is storage.ErrNotFound, whatever was not found and whoever says
// so; the packages' ErrNotFound are that sentinel.
func TestOneNotFoundSentinel(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	defer store.Close()
	j, err := krply.NewJournal(store)
	if err != nil {
		t.Fatal(err)
	}
	for what, err := range map[string]error{
		"Journal.LoadPlan":             second(j.LoadPlan(ctx, "nope")),
		"Journal.GetSnapshot":          second(j.GetSnapshot(ctx, "nope")),
		"Planner.LoadPlan":             second(j.Planner().LoadPlan(ctx, "nope")),
		"Materializer.GetSnapshot":     second(j.Materializer().GetSnapshot(ctx, "nope")),
		"Plan from a missing snapshot": second(j.Plan(ctx, krply.Source{SnapshotID: "nope"}, krply.Target{})),
		"Store.Get":                    second(store.Get(ctx, "nope")),
	} {
		if !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("%s(nope) = %v, want storage.ErrNotFound", what, err)
		}
	}
	for _, s := range []error{materialize.ErrNotFound, replay.ErrNotFound, krply.ErrNotFound} {
		if s != storage.ErrNotFound {
			t.Errorf("%v is not storage.ErrNotFound: one sentinel, re-exported", s)
		}
	}
}

// Read-only is storage.ErrReadOnly, whoever refuses the write: on a
// journal opened read-only every consumer answers its queries and every
// save fails with it. The packages' ErrReadOnly are that sentinel.
func TestOneReadOnlySentinel(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "krply.db")
	writeShopJournal(t, path)
	j, err := krply.Open(ctx, path, krply.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	at := shopAt.Add(30 * time.Second)
	snap, err := j.Snapshot(ctx, krply.Namespaces("c1", "shop"), at)
	if err != nil || !snap.Complete || len(snap.Objects) != 2 {
		t.Fatalf("Snapshot on a read-only journal = %+v, %v; want both ConfigMaps, complete", snap, err)
	}
	plan, err := j.Plan(ctx, krply.Source{ClusterID: "c1", Namespaces: []string{"shop"}, At: at}, krply.Target{Namespaces: map[string]string{"shop": "copy"}})
	if err != nil {
		t.Fatal(err)
	}
	correlator, err := audit.NewCorrelator(j.Store(), "c1")
	if err != nil {
		t.Fatal(err)
	}
	created := storagetest.ConfigMap("shop", "new", "u2", "12", map[string]string{"k": "v"})
	write := audit.Event{Kind: "Event", APIVersion: audit.APIVersion, Level: audit.LevelRequestResponse, AuditID: "a1",
		Stage: audit.StageResponseComplete, Verb: "create", RequestURI: "/api/v1/namespaces/shop/configmaps",
		User:           authnv1.UserInfo{Username: "alice"},
		ObjectRef:      &audit.ObjectReference{Resource: "configmaps", Namespace: "shop", Name: "new", APIVersion: "v1"},
		ResponseStatus: &metav1.Status{Code: 201}, ResponseObject: created,
		RequestReceivedTimestamp: metav1.NewMicroTime(shopAt.Add(9 * time.Second)),
		StageTimestamp:           metav1.NewMicroTime(shopAt.Add(9*time.Second + 5*time.Millisecond))}
	if id, err := correlator.Match(ctx, write); err != nil || id == "" {
		t.Fatalf("Match on a read-only journal = %q, %v; want the creation of new", id, err)
	}
	for what, err := range map[string]error{
		"Journal.SaveSnapshot":      j.SaveSnapshot(ctx, snap, "x"),
		"Materializer.SaveSnapshot": j.Materializer().SaveSnapshot(ctx, snap, "x"),
		"Journal.SavePlan":          j.SavePlan(ctx, plan),
		"Planner.SavePlan":          j.Planner().SavePlan(ctx, plan),
		"Correlator.Ingest":         second(correlator.Ingest(ctx, audit.Events(write))),
		"Store.Compact":             second(j.Store().Compact(ctx, at)),
	} {
		if !errors.Is(err, storage.ErrReadOnly) || !errors.Is(err, krply.ErrReadOnly) {
			t.Errorf("%s on a read-only journal = %v, want storage.ErrReadOnly", what, err)
		}
	}
	for _, s := range []error{materialize.ErrReadOnly, replay.ErrReadOnly, krply.ErrReadOnly} {
		if s != storage.ErrReadOnly {
			t.Errorf("%v is not storage.ErrReadOnly: one sentinel, re-exported", s)
		}
	}
}

// second returns the error of a call that returns a value and an error.
func second[T any](_ T, err error) error { return err }
