package why_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/krplytest/incident"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/why"
)

func shopExplainer(t *testing.T, s *incident.Journal) *why.Explainer {
	t.Helper()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	if err := s.Write(context.Background(), store); err != nil {
		t.Fatal(err)
	}
	ex, err := why.New(store)
	if err != nil {
		t.Fatal(err)
	}
	return ex
}

func TestExplainShop(t *testing.T) {
	ex := shopExplainer(t, &incident.Journal{Cluster: "c1", Namespace: "shop", Pods: 3, Events: true})
	pod := storage.ObjectID{ClusterID: "c1", Resource: "pods", Namespace: "shop", Name: "web-1-0"}
	a, err := ex.Explain(context.Background(), why.Query{Object: pod, From: incident.T0})
	if err != nil {
		t.Fatal(err)
	}
	if a.AtSource != why.AtFirstBad || !a.At.Equal(incident.T0.Add(12*time.Minute)) || a.Bad.What != "container app" || a.Bad.Reason != "CrashLoopBackOff" {
		t.Fatalf("T %s from %s, bad %+v; want the crash at incident.T0+12m", a.At, a.AtSource, a.Bad)
	}
	if !a.Complete || !a.EventsRecorded || len(a.Events) != 1 || a.Events[0].Reason != "BackOff" {
		t.Fatalf("complete %v, events %+v; want complete with the BackOff event\ncoverage %+v\nwarnings %q", a.Complete, a.Events, a.Coverage, a.Warnings)
	}
	if len(a.Candidates) < 2 {
		t.Fatalf("candidates %+v", a.Candidates)
	}
	first, second := a.Candidates[0], a.Candidates[1]
	if !strings.HasPrefix(first.Summary, `configmaps shop/settings: data.color "blue" → "chartreuse" by kubectl-edit`) || first.Score != 40+25+20+10 {
		t.Errorf("first candidate %q score %d %q", first.Summary, first.Score, first.Reasons)
	}
	// The controller's scale-up is closer to T but cannot change what the
	// Pod reads.
	if !strings.HasPrefix(second.Summary, "deployments.apps shop/web: spec.replicas 3 → 4") || second.Score != 15+27+10+0 {
		t.Errorf("second candidate %q score %d %q", second.Summary, second.Score, second.Reasons)
	}
	if want := "+40 changed key \"color\", which is read (spec.containers[name=app].env[name=COLOR].valueFrom.configMapKeyRef)"; first.Reasons[0] != want {
		t.Errorf("reason %q; want %q", first.Reasons[0], want)
	}
	// The other Pods' creation and the crash itself are symptoms, not
	// candidates.
	for _, c := range a.Candidates {
		if a.Changes[c.Change].Object.Resource == "pods" || a.Changes[c.Change].Object.Resource == "replicasets" {
			t.Errorf("candidate %q is a symptom", c.Summary)
		}
	}
	kinds := map[string]int{}
	for _, e := range a.Edges {
		kinds[e.Type]++
	}
	// The ConfigMap is read by the Pod and by its owners' pod templates.
	if kinds[why.EdgeOwner] != 2 || kinds[why.EdgeReferences] != 5 {
		t.Errorf("edges %+v; want 2 owner edges (Pod → ReplicaSet → Deployment) and 5 references (ConfigMap ×3, ServiceAccount, Node)", a.Edges)
	}
}

func TestExplainBadInput(t *testing.T) {
	ctx := context.Background()
	ex := shopExplainer(t, &incident.Journal{Cluster: "c1", Namespace: "shop", Pods: 3})
	pod := storage.ObjectID{ClusterID: "c1", Resource: "pods", Namespace: "shop", Name: "web-1-0"}
	for _, tc := range []struct {
		name string
		q    why.Query
		is   error
		says string
	}{
		{"no name", why.Query{Object: storage.ObjectID{ClusterID: "c1", Resource: "pods"}}, why.ErrInvalidArgument, "needs a clusterID, a resource and a name"},
		{"negative window", why.Query{Object: pod, Before: -time.Minute}, why.ErrInvalidArgument, "Query.Before is -1m0s"},
		{"before and from", why.Query{Object: pod, Before: time.Minute, From: incident.T0}, why.ErrInvalidArgument, "give one of them"},
		{"from after T", why.Query{Object: pod, At: incident.T0.Add(5 * time.Minute), From: incident.T0.Add(6 * time.Minute)}, why.ErrInvalidArgument, "is after T"},
		{"never recorded", why.Query{Object: storage.ObjectID{ClusterID: "c1", Resource: "pods", Namespace: "shop", Name: "nope"}}, why.ErrNotFound,
			"the journal has no record of pods shop/nope; it records configmaps (shop);"},
		{"resource not recorded", why.Query{Object: storage.ObjectID{ClusterID: "c1", Group: "batch", Resource: "jobs", Namespace: "shop", Name: "x"}}, why.ErrNotFound,
			"no stream records jobs.batch in namespace shop"},
		{"before the journal", why.Query{Object: pod, At: incident.T0.Add(-time.Hour)}, why.ErrOutOfRange, "before the journal began recording the object's resource: its evidence covers 2026-03-01T10:00:00Z to 2026-03-01T10:30:00Z"},
		{"after the evidence", why.Query{Object: pod, At: incident.T0.Add(time.Hour)}, why.ErrOutOfRange, "after the journal's last evidence"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ex.Explain(ctx, tc.q)
			if !errors.Is(err, tc.is) || err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %v; want %v saying %q", err, tc.is, tc.says)
			}
		})
	}

	t.Run("no bad transition", func(t *testing.T) {
		a, err := ex.Explain(ctx, why.Query{Object: storage.ObjectID{ClusterID: "c1", Resource: "pods", Namespace: "shop", Name: "web-1-1"}})
		if err != nil {
			t.Fatal(err)
		}
		if a.AtSource != why.AtLatestChange || a.Bad != nil || !strings.Contains(strings.Join(a.Warnings, "\n"), "found no bad transition of pods shop/web-1-1") {
			t.Errorf("T from %s, bad %v, warnings %q", a.AtSource, a.Bad, a.Warnings)
		}
	})
	t.Run("events not recorded", func(t *testing.T) {
		a, err := ex.Explain(ctx, why.Query{Object: pod})
		if err != nil {
			t.Fatal(err)
		}
		if a.Complete || a.EventsRecorded || !strings.Contains(strings.Join(a.Warnings, "\n"), `Events were not recorded in namespace "shop"`) {
			t.Errorf("complete %v, events recorded %v, warnings %q", a.Complete, a.EventsRecorded, a.Warnings)
		}
		if len(a.Candidates) == 0 || len(a.Candidates[0].Caveats) == 0 || !strings.Contains(a.Candidates[0].Caveats[0], "Events not recorded") {
			t.Errorf("first candidate without the caveat: %+v", a.Candidates)
		}
	})
	t.Run("graph too large", func(t *testing.T) {
		a, err := ex.Explain(ctx, why.Query{Object: storage.ObjectID{ClusterID: "c1", Group: "apps", Resource: "deployments", Namespace: "shop", Name: "web"},
			At: incident.T0.Add(12 * time.Minute), MaxObjects: 3})
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Nodes) != 3 || len(a.Cut) == 0 || !strings.Contains(strings.Join(a.Warnings, "\n"), "reached MaxObjects (3)") {
			t.Errorf("nodes %d, cut %q, warnings %q", len(a.Nodes), a.Cut, a.Warnings)
		}
	})
}

// A gap over the culprit's stream: the answer names the gap, is not
// complete, and presents no candidate as certain; the culprit, seen only
// by the relist, carries the interval it happened in.
func TestExplainGap(t *testing.T) {
	ex := shopExplainer(t, &incident.Journal{Cluster: "c1", Namespace: "shop", Pods: 2, Events: true, GapOverChange: true})
	a, err := ex.Explain(context.Background(), why.Query{Object: storage.ObjectID{ClusterID: "c1", Resource: "pods", Namespace: "shop", Name: "web-1-0"}, From: incident.T0})
	if err != nil {
		t.Fatal(err)
	}
	if a.Complete {
		t.Fatal("complete across a gap")
	}
	var gap *why.StreamCoverage
	for i, sc := range a.Coverage {
		if sc.Resource == "configmaps" {
			gap = &a.Coverage[i]
		}
	}
	if gap == nil || gap.Covered || len(gap.Gaps) != 1 || !gap.Gaps[0].From.Equal(incident.GapFrom) || !gap.Gaps[0].To.Equal(incident.Relisted) ||
		gap.Reason != "gap: 410 Gone: too old resource version 2026-03-01T10:09:00Z–2026-03-01T10:10:30Z: a change in it may be missing" {
		t.Fatalf("configmaps coverage %+v", gap)
	}
	first := a.Candidates[0]
	c := a.Changes[first.Change]
	if c.Object.Name != "settings" || c.Between == nil || !c.Between.To.Equal(incident.Relisted) || len(first.Caveats) != 2 ||
		!strings.HasPrefix(first.Caveats[0], "seen only by a relist after a loss of continuity: it happened between 2026-03-01T10:01:00Z and 2026-03-01T10:10:30Z") {
		t.Errorf("first candidate %q between %+v, caveats %q", first.Summary, c.Between, first.Caveats)
	}
	for _, cand := range a.Candidates {
		if len(cand.Caveats) == 0 {
			t.Errorf("candidate %q without caveat", cand.Summary)
		}
	}
}
