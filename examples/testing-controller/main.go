// Command testing-controller runs a small controller-runtime reconciler:
// a Deployment labelled example.com/paused=true is scaled to zero and its
// replica count kept in an annotation; once the label is gone, the count
// is restored and the annotation removed. It stands for the controller of
// a downstream project; main_test.go shows how to test what such a
// reconciler does with krply: through controller-runtime's fake client
// (krplytest/crtest), against envtest (krplytest.Record), and against a
// golden history (krplytest.AssertGolden).
//
//	cd examples/testing-controller && go run . --kubeconfig ~/.kube/config
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

const (
	// PausedLabel, set to "true", asks for a Deployment to be paused.
	PausedLabel = "example.com/paused"
	// PausedReplicasAnnotation keeps a paused Deployment's replica count.
	PausedReplicasAnnotation = "example.com/paused-replicas"
)

// Pauser reconciles Deployments: it pauses those labelled PausedLabel=true
// and resumes those no longer labelled.
type Pauser struct {
	Client client.Client
}

// Reconcile pauses or resumes one Deployment. It writes only when
// something must change, so a second call is a no-op.
func (p *Pauser) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var d appsv1.Deployment
	if err := p.Client.Get(ctx, req.NamespacedName, &d); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	replicas := ptr.Deref(d.Spec.Replicas, 1)
	saved, isPaused := d.Annotations[PausedReplicasAnnotation]
	switch wantPaused := d.Labels[PausedLabel] == "true"; {
	case wantPaused && !isPaused:
		if d.Annotations == nil {
			d.Annotations = map[string]string{}
		}
		d.Annotations[PausedReplicasAnnotation] = strconv.FormatInt(int64(replicas), 10)
		d.Spec.Replicas = ptr.To(int32(0))
	case !wantPaused && isPaused:
		n, err := strconv.ParseInt(saved, 10, 32)
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("deployment %s: annotation %s=%q is not a replica count: %w", req, PausedReplicasAnnotation, saved, err)
		}
		delete(d.Annotations, PausedReplicasAnnotation)
		d.Spec.Replicas = ptr.To(int32(n))
	default:
		return ctrl.Result{}, nil
	}
	return ctrl.Result{}, p.Client.Update(ctx, &d)
}

// SetupWithManager registers the reconciler for Deployments.
func (p *Pauser) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).For(&appsv1.Deployment{}).Named("pauser").Complete(p)
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "path of a kubeconfig (default: $KUBECONFIG, the in-cluster config, then ~/.kube/config)")
	flag.Parse()
	ctrl.SetLogger(zap.New())
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = *kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testing-controller:", err)
		os.Exit(1)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}})
	if err == nil {
		err = (&Pauser{Client: mgr.GetClient()}).SetupWithManager(mgr)
	}
	if err == nil {
		err = mgr.Start(ctrl.SetupSignalHandler())
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "testing-controller:", err)
		os.Exit(1)
	}
}
