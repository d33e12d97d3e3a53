package replay_test

import (
	"context"
	"fmt"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/yaml"

	"github.com/krply/krply/event"
	"github.com/krply/krply/replay"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
)

// recordList appends a complete baseline of one stream, as the Collector
// writes it after listing the stream's resource.
func recordList(store storage.Store, s event.Stream, kind string, at time.Time, listRV string, bodies ...string) {
	id := "baseline-" + s.Resource
	streamID := s.ID()
	recs := []event.Record{{Type: event.TypeBaseline, EventID: streamID + "/begin", ClusterID: s.ClusterID, StreamID: streamID,
		ObservedAt: at, BaselineID: id, Baseline: &event.Baseline{ID: id, Phase: event.BaselineBegin}}}
	for i, body := range bodies {
		var meta struct {
			Metadata struct{ Namespace, Name string }
		}
		_ = yaml.Unmarshal([]byte(body), &meta)
		ref := event.ResourceRef{Group: s.Group, Version: s.Version, Kind: kind, Resource: s.Resource,
			Namespace: meta.Metadata.Namespace, Name: meta.Metadata.Name, ResourceVersion: fmt.Sprint(i + 1)}
		recs = append(recs, event.Record{Type: event.TypeEvent, EventID: event.EventID(streamID, event.TypeEvent, ref, event.Added, id),
			ClusterID: s.ClusterID, StreamID: streamID, ObservedAt: at, WatchType: event.Added, Synthetic: true,
			Resource: ref, Object: []byte(body), BaselineID: id})
	}
	recs = append(recs, event.Record{Type: event.TypeBaseline, EventID: streamID + "/end", ClusterID: s.ClusterID, StreamID: streamID,
		ObservedAt: at, BaselineID: id, Baseline: &event.Baseline{ID: id, Phase: event.BaselineEnd, ResourceVersion: listRV, ItemCount: len(bodies)}})
	// A bookmark ten minutes later: the watch was healthy until then (a
	// stream is covered only up to its last evidence of continuity).
	recs = append(recs, event.Record{Type: event.TypeCheckpoint, EventID: streamID + "/bookmark", ClusterID: s.ClusterID, StreamID: streamID,
		ObservedAt: at.Add(10 * time.Minute), Checkpoint: &event.Checkpoint{ResourceVersion: listRV, Bookmark: true}})
	if _, err := store.Append(context.Background(), recs); err != nil {
		panic(err)
	}
}

// Plan a recorded namespace into a sandbox namespace and show what the plan
// writes, what it leaves out and why.
func Example() {
	ctx := context.Background()
	store := memory.New()
	defer store.Close()
	at := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	recordList(store, event.Stream{ClusterID: "prod", Version: "v1", Resource: "configmaps", Namespace: "shop"}, "ConfigMap", at, "100",
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":"shop","uid":"1","resourceVersion":"7",
		  "annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}"}},"data":{"color":"blue"}}`)
	recordList(store, event.Stream{ClusterID: "prod", Version: "v1", Resource: "secrets", Namespace: "shop"}, "Secret", at, "100",
		`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"db-pass","namespace":"shop"},"data":{"p":"aHVudGVyMg=="}}`)

	planner, err := replay.NewPlanner(store,
		replay.WithIDGenerator(func() string { return "plan-1" }),
		replay.WithClock(clocktesting.NewFakePassiveClock(at.Add(time.Hour))))
	if err != nil {
		panic(err)
	}
	plan, err := planner.Plan(ctx, replay.Source{ClusterID: "prod", Namespaces: []string{"shop"}, At: at.Add(time.Minute)},
		replay.Target{Namespaces: map[string]string{"shop": "shop-sandbox"}})
	if err != nil {
		panic(err)
	}
	for _, o := range plan.Objects {
		fmt.Println("write", o.Ref, "removed", o.Removed)
	}
	for _, e := range plan.Exclusions {
		fmt.Println("leave out", e.Ref, "-", e.Reason)
	}
	doc, _ := yaml.JSONToYAML(plan.Objects[1].Object)
	fmt.Print(string(doc))
	// Output:
	// write namespaces shop-sandbox removed []
	// write configmaps shop-sandbox/settings removed [/metadata/uid /metadata/resourceVersion /metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration]
	// leave out secrets shop/db-pass - Secrets hold credentials; replaying them copies credentials into the target (opt in with Policy.AllowSecrets)
	// apiVersion: v1
	// data:
	//   color: blue
	// kind: ConfigMap
	// metadata:
	//   annotations:
	//     krply.io/replay-source: prod configmaps shop/settings at resourceVersion 1
	//   name: settings
	//   namespace: shop-sandbox
}

// The kinds a plan leaves out unless the Policy opts in.
func ExampleDefaultExclusions() {
	for _, e := range replay.DefaultExclusions() {
		optIn := e.OptIn
		if optIn == "" {
			optIn = "always"
		}
		fmt.Printf("%-18s %s\n", e.Rule, optIn)
	}
	// Output:
	// secrets            AllowSecrets
	// service-accounts   AllowServiceAccounts
	// rbac               AllowRBAC
	// pods               AllowPods
	// jobs               AllowJobs
	// storage            AllowStorage
	// load-balancers     AllowLoadBalancers
	// webhooks           AllowWebhooks
	// crds               AllowCRDs
	// events             always
	// leases             always
	// endpoints          always
	// controller-owned   always
	// cluster-published  always
}
