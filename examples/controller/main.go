// Command controller runs krply's Collector inside a controller-runtime
// manager: added with mgr.Add, it records only while this replica holds
// the leader lease; /readyz reports Collector.Synced, /healthz that the
// process serves; and krply's metrics (package krply/metrics) are served
// on the manager's /metrics endpoint.
//
//	cd examples/controller && go run . --kubeconfig ~/.kube/config --store krply.db --resource deploy,cm
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/krply/krply"
	"github.com/krply/krply/crutil"
	"github.com/krply/krply/metrics"
	"github.com/krply/krply/watch"
)

func main() {
	if err := run(ctrl.SetupSignalHandler(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
}

// run is the whole command. It returns instead of exiting, so the deferred
// cleanup — waiting for the Collector, then closing the journal — runs on
// every path out.
func run(ctx context.Context, args []string) (err error) {
	fs := flag.NewFlagSet("controller", flag.ContinueOnError)
	kubeconfig := fs.String("kubeconfig", "", "path of a kubeconfig (default: $KUBECONFIG, the in-cluster config, then ~/.kube/config)")
	store := fs.String("store", "krply.db", "path of the SQLite journal")
	resources := fs.String("resource", "", "comma-separated resources to record (default: krply's defaults)")
	metricsAddr := fs.String("metrics-bind-address", ":8080", `address of the /metrics endpoint ("0" turns it off)`)
	probeAddr := fs.String("health-probe-bind-address", ":8081", `address of the /healthz and /readyz endpoints ("0" turns them off)`)
	leaderElect := fs.Bool("leader-elect", true, "record only while holding the leader lease (one writer per journal)")
	leaseNamespace := fs.String("leader-election-namespace", "", "namespace of the lease (default: the pod's namespace)")
	opts := zap.Options{Development: true}
	opts.BindFlags(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("krply")

	cfg, err := restConfig(*kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig: %w (set --kubeconfig)", err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics:                 metricsserver.Options{BindAddress: *metricsAddr},
		HealthProbeBindAddress:  *probeAddr,
		LeaderElection:          *leaderElect,
		LeaderElectionID:        "krply-recorder",
		LeaderElectionNamespace: *leaseNamespace,
		// Step down when stopped, so that a rollout's new pod takes over
		// at once instead of after the lease expires. The manager releases
		// the lease only after its Runnables returned (within its graceful
		// shutdown timeout, 30s by default), so the Collector's final
		// commit (at most 10s after the stop) precedes the release.
		LeaderElectionReleaseOnCancel: true,
		// The manager logs that release as "leader election lost", an
		// error with a stack trace: StepDownLogger says what it is.
		Logger: crutil.StepDownLogger(ctx, ctrl.Log),
	})
	if err != nil {
		return fmt.Errorf("manager: %w", err)
	}
	jopts := []krply.Option{krply.WithLogger(log)}
	if *resources != "" {
		jopts = append(jopts, krply.WithResources(strings.Split(*resources, ",")...))
	}
	j, err := krply.Open(ctx, *store, jopts...)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	// The latency histograms of the Collector's appends and baselines.
	hs := metrics.NewHistograms()
	rec, err := j.NewCollectorForConfig(mgr.GetConfig(), watch.WithMetrics(hs))
	if err != nil {
		return errors.Join(fmt.Errorf("collector: %w", err), j.Close())
	}
	// crutil.Add adds the Collector as a Runnable that records only on the
	// elected leader, the leader-aware readiness check "krply-synced", and
	// krply's metrics in controller-runtime's registry. Its Close closes
	// the journal once the Collector stopped: the manager does not wait for
	// its Runnables when it loses the lease.
	recording, err := crutil.Add(mgr, rec, j, crutil.WithMetrics(
		metrics.NewHandler(metrics.WithCollector(rec), metrics.WithStore(j.Store()), metrics.WithHistograms(hs))))
	if err != nil {
		return errors.Join(err, j.Close())
	}
	defer func() {
		if cerr := recording.Close(); cerr != nil {
			err = errors.Join(err, cerr)
		}
	}()
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return fmt.Errorf("healthz: %w", err)
	}
	log.Info("starting", "store", *store, "leaderElection", *leaderElect, "probes", *probeAddr, "metrics", *metricsAddr)
	return mgr.Start(ctx)
}

// restConfig loads the kubeconfig at path, or controller-runtime's default
// configuration when path is empty.
func restConfig(path string) (*rest.Config, error) {
	if path != "" {
		return clientcmd.BuildConfigFromFlags("", path)
	}
	return ctrl.GetConfig()
}
