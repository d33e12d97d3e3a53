// Package cli holds what examples/record needs besides the library:
// kubeconfig flags, a repeatable flag, the journal's cluster, a logger.
// The command-line tool with kubectl's habits is cmd/kubectl-krply; the
// other examples use the library alone.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/krply/krply/storage"
)

// Strings is a repeatable string flag.
type Strings []string

// String implements flag.Value.
func (s *Strings) String() string { return strings.Join(*s, ",") }

// Set implements flag.Value; a value may hold several items separated by
// commas.
func (s *Strings) Set(v string) error {
	for _, item := range strings.Split(v, ",") {
		if item = strings.TrimSpace(item); item != "" {
			*s = append(*s, item)
		}
	}
	return nil
}

// Cluster holds the --kubeconfig and --context flags.
type Cluster struct {
	Kubeconfig string
	Context    string
}

// Register adds the flags to fs.
func (c *Cluster) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG or ~/.kube/config)")
	fs.StringVar(&c.Context, "context", "", "kubeconfig context to use (default: the current context)")
}

// Config returns the rest.Config the flags select.
func (c *Cluster) Config() (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = c.Kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: c.Context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	return cfg, nil
}

// StoreFlag adds the --store flag.
func StoreFlag(fs *flag.FlagSet) *string {
	return fs.String("store", "krply.db", "path of the SQLite journal")
}

// ClusterID returns id when set, otherwise the only cluster the journal
// recorded.
func ClusterID(ctx context.Context, store storage.Reader, id string) (string, error) {
	if id != "" {
		return id, nil
	}
	streams, err := store.Streams(ctx, "")
	if err != nil {
		return "", err
	}
	var ids []string
	for _, st := range streams {
		if !slices.Contains(ids, st.Stream.ClusterID) {
			ids = append(ids, st.Stream.ClusterID)
		}
	}
	switch len(ids) {
	case 0:
		return "", errors.New("the journal has recorded no cluster yet")
	case 1:
		return ids[0], nil
	}
	return "", fmt.Errorf("the journal holds several clusters (%s): choose one with --cluster", strings.Join(ids, ", "))
}

// Logger returns a logger writing to stderr, at verbosity v.
func Logger(v int) logr.Logger {
	return funcr.New(func(prefix, args string) {
		fmt.Fprintln(os.Stderr, time.Now().Format("15:04:05"), prefix, args)
	}, funcr.Options{Verbosity: v})
}

// Fail prints err and exits with status 1.
func Fail(name string, err error) {
	fmt.Fprintf(os.Stderr, "%s: %v\n", name, err)
	os.Exit(1)
}
