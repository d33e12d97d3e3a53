// Command pause scales every Deployment of a namespace to zero and
// remembers each one's replica count in an annotation, so that it can be
// resumed later. It stands for the code of a downstream project; its test,
// main_test.go, shows how to check what such code does to a cluster with
// krply's krplytest package.
//
//	go run ./examples/testing --kubeconfig ~/.kube/config --namespace shop
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

// PausedReplicasAnnotation holds a paused Deployment's replica count.
const PausedReplicasAnnotation = "example.com/paused-replicas"

var deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}

// Pause scales every Deployment of namespace to zero replicas and records
// the previous count in PausedReplicasAnnotation. Deployments already at
// zero are left alone. It returns the names of the Deployments it paused.
func Pause(ctx context.Context, dyn dynamic.Interface, namespace string) ([]string, error) {
	list, err := dyn.Resource(deployments).Namespace(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list deployments in %s: %w", namespace, err)
	}
	var paused []string
	for i := range list.Items {
		d := &list.Items[i]
		replicas, found, err := unstructured.NestedInt64(d.Object, "spec", "replicas")
		if err != nil {
			return paused, fmt.Errorf("deployment %s: %w", d.GetName(), err)
		}
		if !found {
			replicas = 1 // the API server's default
		}
		if replicas == 0 {
			continue
		}
		ann := d.GetAnnotations()
		if ann == nil {
			ann = map[string]string{}
		}
		ann[PausedReplicasAnnotation] = strconv.FormatInt(replicas, 10)
		d.SetAnnotations(ann)
		if err := unstructured.SetNestedField(d.Object, int64(0), "spec", "replicas"); err != nil {
			return paused, fmt.Errorf("deployment %s: %w", d.GetName(), err)
		}
		if _, err := dyn.Resource(deployments).Namespace(namespace).Update(ctx, d, metav1.UpdateOptions{}); err != nil {
			return paused, fmt.Errorf("pause deployment %s: %w", d.GetName(), err)
		}
		paused = append(paused, d.GetName())
	}
	return paused, nil
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "path to the kubeconfig file (default: the usual rules, $KUBECONFIG or ~/.kube/config)")
	namespace := flag.String("namespace", "default", "namespace whose Deployments to pause")
	flag.Parse()

	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = *kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		fmt.Fprintln(os.Stderr, "pause:", err)
		os.Exit(1)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pause:", err)
		os.Exit(1)
	}
	paused, err := Pause(context.Background(), dyn, *namespace)
	for _, name := range paused {
		fmt.Println("paused", name)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "pause:", err)
		os.Exit(1)
	}
}
