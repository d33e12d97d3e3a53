// Command controller runs krply's Collector inside a controller-runtime
// manager: added with mgr.Add, it records only while this replica holds
// the leader lease, and its metrics are Prometheus metrics served on the
// manager's /metrics endpoint.
//
//	cd examples/controller && go run . --kubeconfig ~/.kube/config --store krply.db --resource deploy,cm
package main

import (
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/krply/krply"
	"github.com/krply/krply/watch"
)

func main() {
	store := flag.String("store", "krply.db", "path of the SQLite journal")
	resources := flag.String("resource", "", "comma-separated resources to record (default: krply's defaults)")
	metricsAddr := flag.String("metrics-bind-address", ":8080", "address of the /metrics endpoint")
	leaderElect := flag.Bool("leader-elect", true, "record only while holding the leader lease (one writer per journal)")
	leaseNamespace := flag.String("leader-election-namespace", "", "namespace of the lease (default: the pod's namespace)")
	opts := zap.Options{Development: true}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("krply")

	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		Metrics:                 metricsserver.Options{BindAddress: *metricsAddr},
		LeaderElection:          *leaderElect,
		LeaderElectionID:        "krply-recorder",
		LeaderElectionNamespace: *leaseNamespace,
	})
	if err != nil {
		log.Error(err, "manager")
		os.Exit(1)
	}

	ctx := ctrl.SetupSignalHandler()
	provider, err := NewPrometheusMetrics(metrics.Registry)
	if err != nil {
		log.Error(err, "metrics")
		os.Exit(1)
	}
	jopts := []krply.Option{krply.WithLogger(log), krply.WithCollectorOptions(watch.WithMetrics(provider))}
	if *resources != "" {
		jopts = append(jopts, krply.WithResources(strings.Split(*resources, ",")...))
	}
	j, err := krply.Open(ctx, *store, jopts...)
	if err != nil {
		log.Error(err, "journal")
		os.Exit(1)
	}
	defer j.Close()
	rec, err := j.NewCollectorForConfig(mgr.GetConfig())
	if err != nil {
		log.Error(err, "collector")
		os.Exit(1)
	}
	// Collector.Start(ctx) error is a manager.Runnable as is. Wrapped so it
	// runs only on the leader: a standby replica must not write the journal.
	if err := mgr.Add(leaderOnly{rec}); err != nil {
		log.Error(err, "add collector")
		os.Exit(1)
	}
	// Ready once every stream has its first baseline.
	if err := mgr.AddReadyzCheck("krply-synced", func(*http.Request) error { return synced(rec) }); err != nil {
		log.Error(err, "readyz")
		os.Exit(1)
	}
	log.Info("starting", "store", *store, "leaderElection", *leaderElect)
	if err := mgr.Start(ctx); err != nil {
		log.Error(err, "manager stopped")
		os.Exit(1)
	}
}

// leaderOnly runs a Runnable only on the elected leader.
type leaderOnly struct{ manager.Runnable }

// NeedLeaderElection implements manager.LeaderElectionRunnable.
func (leaderOnly) NeedLeaderElection() bool { return true }

var _ manager.LeaderElectionRunnable = leaderOnly{}

// synced reports whether every stream has its first baseline.
func synced(rec *watch.Collector) error {
	for _, st := range rec.Status() {
		if !st.Synced && st.State != watch.StatePending {
			return fmt.Errorf("stream %s is %s", st.StreamID, st.State)
		}
	}
	return nil
}
