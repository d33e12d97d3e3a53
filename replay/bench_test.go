package replay_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"github.com/krply/krply/internal/cputime"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/replay"
	"github.com/krply/krply/storage/memory"
)

// deploymentBody is a realistic Deployment as the API server returns it.
func deploymentBody(ns, name string, i int) []byte {
	return object("apps/v1", "Deployment", ns, name, fmt.Sprintf("uid-%d", i), fmt.Sprint(1000+i),
		`"spec":{"replicas":2,"selector":{"matchLabels":{"app":"`+name+`"}},"template":{"metadata":{"labels":{"app":"`+name+`"}},`+
			`"spec":{"containers":[{"name":"app","image":"registry.example.com/team/app:1.2.3","ports":[{"containerPort":8080}],`+
			`"env":[{"name":"MODE","value":"prod"},{"name":"LEVEL","value":"info"}],"resources":{"requests":{"cpu":"100m","memory":"128Mi"}}}]}}},`+
			`"status":{"replicas":2,"readyReplicas":2,"conditions":[{"type":"Available","status":"True"}]}`)
}

// BenchmarkPlan plans a namespace of n objects (half ConfigMaps, half
// Deployments) from the memory store: snapshot, sanitize, map, order and
// hash (a plan is saved only by SavePlan).
func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("objects=%d", n), func(b *testing.B) {
			store := memory.New()
			defer store.Close()
			j := &journal{t: b, store: store, cluster: "src"}
			var cms, deploys [][]byte
			for i := range n / 2 {
				cms = append(cms, object("v1", "ConfigMap", "shop", fmt.Sprintf("cm-%05d", i), fmt.Sprintf("c-%d", i), fmt.Sprint(i+1),
					`"data":{"color":"blue","settings.yaml":"a: 1\nb: two\nc: [3, 4]\n"}`))
				deploys = append(deploys, deploymentBody("shop", fmt.Sprintf("web-%05d", i), i))
			}
			j.baseline(cmKind, "shop", t0, "1", cms...)
			j.baseline(deployKind, "shop", t0, "1", deploys...)
			j.healthyUntil(t0.Add(time.Hour))
			p, err := replay.NewPlanner(store)
			if err != nil {
				b.Fatal(err)
			}
			ctx := context.Background()
			cpu := cputime.Process()
			for b.Loop() {
				plan, err := p.Plan(ctx, replay.Source{ClusterID: "src", Namespaces: []string{"shop"}, At: t0.Add(time.Minute)},
					replay.Target{Namespaces: map[string]string{"shop": "sandbox"}})
				if err != nil {
					b.Fatal(err)
				}
				if len(plan.Objects) != n+1 {
					b.Fatalf("%d objects planned, want %d", len(plan.Objects), n+1)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(n), "µs/object")
			// CPU time includes the garbage collector's background work.
			b.ReportMetric(float64((cputime.Process()-cpu).Microseconds())/float64(b.N)/float64(n), "cpu-µs/object")
		})
	}
}

// BenchmarkDryRun dry-runs a plan of 200 ConfigMaps against the real
// control plane (two requests per object: read the live object, then the
// dry-run apply), into a namespace where half of them already exist.
func BenchmarkDryRun(b *testing.B) {
	const n = 200
	env := testenv.Shared(b)
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		b.Fatal(err)
	}
	ns := env.CreateNamespace(b)
	target := env.CreateNamespace(b)
	for i := range n {
		for _, into := range []string{ns, target} {
			if into == target && i%2 == 1 {
				continue
			}
			cm := unstr(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%03d"},"data":{"i":"%d"}}`, i, i))
			if _, err := dyn.Resource(cmKind.gvr).Namespace(into).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	}
	store := memory.New()
	defer store.Close()
	j := &journal{t: b, store: store, cluster: "bench-source"}
	recordBaselines(b, ctx, dyn, j, ns, cmKind)
	// Source and target are the same control plane here.
	p, err := replay.NewPlanner(store, replay.WithPolicy(replay.Policy{AllowSourceCluster: true}))
	if err != nil {
		b.Fatal(err)
	}
	plan, err := p.Plan(ctx, replay.Source{ClusterID: j.cluster, Namespaces: []string{ns}, At: j.healthyNow()},
		replay.Target{Namespaces: map[string]string{ns: target}})
	if err != nil {
		b.Fatal(err)
	}
	if err := p.SavePlan(ctx, plan); err != nil {
		b.Fatal(err)
	}
	c, err := replay.NewClusterForConfig(env.Config())
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		report, err := p.DryRun(ctx, plan, c)
		if err != nil {
			b.Fatal(err)
		}
		if report.Status != replay.StatusDryRunOK {
			b.Fatalf("dry run: %s", report.Summary())
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/float64(len(plan.Objects)), "µs/object")
}
