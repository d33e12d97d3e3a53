package main

import (
	"fmt"
	"os"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// restConfig returns the cluster --kubeconfig, --context and KUBECONFIG
// select (or, in a pod without a kubeconfig, the pod's own cluster). With
// no configuration at all — KUBECONFIG naming only files that do not
// exist, no ~/.kube/config, no pod — it fails at once, as kubectl does,
// instead of letting client-go fall back to http://localhost:8080.
func (e *env) restConfig() (*rest.Config, error) {
	loader := e.kube.ToRawKubeConfigLoader()
	raw, err := loader.RawConfig()
	if err != nil {
		return nil, err
	}
	if len(raw.Clusters) == 0 {
		if _, inCluster := rest.InClusterConfig(); inCluster != nil {
			return nil, noKubeconfig(loader.ConfigAccess().GetLoadingPrecedence())
		}
	}
	return e.kube.ToRESTConfig()
}

// noKubeconfig says that none of the kubeconfig files looked for (files)
// names a cluster; the callers add which flags choose one.
func noKubeconfig(files []string) error {
	var missing, empty []string
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			missing = append(missing, f)
		} else {
			empty = append(empty, f)
		}
	}
	where := "the default kubeconfig"
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		where = "KUBECONFIG=" + env
	}
	var why []string
	if len(missing) > 0 {
		why = append(why, strings.Join(missing, ", ")+" does not exist")
	}
	if len(empty) > 0 {
		why = append(why, strings.Join(empty, ", ")+" names no cluster")
	}
	return fmt.Errorf("no cluster configured: %s: %s, and this is not a pod with a service account", where, strings.Join(why, "; "))
}
