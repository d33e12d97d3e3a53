package why_test

import (
	"context"
	"fmt"

	"github.com/krply/krply/krplytest/incident"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/why"
)

// A Pod of Deployment web crashed at 10:12. Explain finds the crash (T),
// walks the Pod's dependencies as they were then, and ranks what changed
// before it: the key the Pod reads, changed by a person, comes before the
// controller's scale-up that came later.
func ExampleExplainer_Explain() {
	ctx := context.Background()
	store := memory.New()
	defer store.Close()
	// A journal recorded from 10:00 to 10:30.
	s := &incident.Journal{Cluster: "prod", Namespace: "shop", Pods: 2, Events: true}
	if err := s.Write(ctx, store); err != nil {
		panic(err)
	}
	ex, err := why.New(store)
	if err != nil {
		panic(err)
	}
	a, err := ex.Explain(ctx, why.Query{
		Object: storage.ObjectID{ClusterID: "prod", Resource: "pods", Namespace: "shop", Name: "web-1-0"},
		From:   incident.T0, // the window starts when recording began
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("T %s (%s): %s %s\n", a.At.Format("15:04"), a.AtSource, a.Bad.What, a.Bad.Reason)
	fmt.Println("complete:", a.Complete)
	for _, c := range a.Candidates[:2] {
		fmt.Println(c.Score, c.Summary)
		fmt.Println("   ", c.Reasons[0])
	}
	fmt.Println("and", len(a.Candidates)-2, "more: the creations in the window")
	for _, e := range a.Events {
		fmt.Println("event:", e.Reason, e.Message)
	}
	// Output:
	// T 10:12 (first-bad-transition): container app CrashLoopBackOff
	// complete: true
	// 95 configmaps shop/settings: data.color "blue" → "chartreuse" by kubectl-edit (field manager)
	//     +40 changed key "color", which is read (spec.containers[name=app].env[name=COLOR].valueFrom.configMapKeyRef)
	// 52 deployments.apps shop/web: spec.replicas 2 → 3 by kube-controller-manager (field manager)
	//     +15 changed spec.replicas
	// and 4 more: the creations in the window
	// event: BackOff Back-off restarting failed container app
}
