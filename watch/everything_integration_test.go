package watch

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest/testenv"
)

// recorded returns the resources of the streams in the Collector's status
// that are in state, as "resource.group".
func recorded(c *Collector, states ...StreamState) []string {
	var out []string
	for _, st := range c.Status() {
		if len(states) == 0 || slices.Contains(states, st.State) {
			out = append(out, st.Resource.String())
		}
	}
	return out
}

// WithAllResources against a real API server: every listable and
// watchable resource but the default exclusions is recorded; a CRD
// installed later is followed (coverage change "discovered"), its removal
// ends the stream with a coverage change saying so (Synced stays nil), and
// its return starts the stream again.
func TestIntegrationAllResources(t *testing.T) {
	env := testenv.Shared(t)
	admin := dynFor(t, env.Config())
	ctx := context.Background()
	group := fmt.Sprintf("all%d.example.com", time.Now().UnixNano()%1e9)
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	_, createCRD := testCRD(t, admin, group, "gadget", "Gadget")

	st := newMemory(t)
	c := newReal(t, env.Config(), st, WithClusterID("all"), WithAllResources(), WithExclude("pods"), WithLogger(testr.New(t)),
		WithBackoff(20*time.Millisecond, 300*time.Millisecond), WithRediscoveryInterval(100*time.Millisecond), WithProgressInterval(2*time.Second))
	run(t, c)
	waitSync(t, c)
	got := recorded(c)
	for _, want := range []string{"configmaps", "namespaces", "deployments.apps", "customresourcedefinitions.apiextensions.k8s.io", "clusterroles.rbac.authorization.k8s.io"} {
		if !slices.Contains(got, want) {
			t.Errorf("%s not recorded; recorded: %v", want, got)
		}
	}
	for _, excluded := range []string{"secrets", "events", "events.events.k8s.io", "leases.coordination.k8s.io", "endpointslices.discovery.k8s.io", "endpoints", "pods"} {
		if slices.Contains(got, excluded) {
			t.Errorf("%s recorded, want it excluded", excluded)
		}
	}
	if len(got) < 30 {
		t.Errorf("%d resources recorded, want every listable and watchable one: %v", len(got), got)
	}

	createCRD()
	id := event.Stream{ClusterID: "all", Group: group, Version: "v1", Resource: "gadgets"}.ID()
	eventually(t, 30*time.Second, "the gadgets stream synced", func() bool {
		return slices.Contains(recorded(c, StateWatching), "gadgets."+group) && c.Synced() == nil
	})
	if cc := ofType(streamRecords(t, st, id), event.TypeCoverageChange); len(cc) != 1 || cc[0].Coverage.Reason != "discovered" {
		t.Fatalf("coverage changes %+v, want discovered", cc)
	}

	if err := admin.Resource(crdGVR).Delete(ctx, "gadgets."+group, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the CRD gone", func() bool {
		_, err := admin.Resource(crdGVR).Get(ctx, "gadgets."+group, metav1.GetOptions{})
		return apierrors.IsNotFound(err)
	})
	eventually(t, 30*time.Second, "the gadgets stream removed", func() bool {
		return slices.Contains(recorded(c, StateRemoved), "gadgets."+group)
	})
	if err := c.Synced(); err != nil {
		t.Fatalf("Synced with a removed resource = %v, want nil", err)
	}
	cc := ofType(streamRecords(t, st, id), event.TypeCoverageChange)
	if last := cc[len(cc)-1]; last.Coverage.Available {
		t.Fatalf("coverage changes %+v, want the last one unavailable", cc)
	}
	// The resource comes back: its stream starts again.
	createCRD()
	eventually(t, 30*time.Second, "the gadgets stream back", func() bool {
		return slices.Contains(recorded(c, StateWatching), "gadgets."+group) && c.Synced() == nil
	})
	cc = ofType(streamRecords(t, st, id), event.TypeCoverageChange)
	if last := cc[len(cc)-1]; !last.Coverage.Available {
		t.Fatalf("coverage changes %+v, want the last one available", cc)
	}
	var reasons []string
	for _, r := range cc {
		reasons = append(reasons, fmt.Sprintf("%v %s", r.Coverage.Available, r.Coverage.Reason))
	}
	t.Logf("coverage changes of the gadgets stream: %s", strings.Join(reasons, "; "))
}
