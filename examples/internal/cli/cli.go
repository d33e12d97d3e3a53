// Package cli holds what the krply examples share: connecting to a cluster
// from kubeconfig flags, opening the journal, finding its cluster, naming an
// object, and parsing times such as "10m ago".
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

	"github.com/krply/krply"
	"github.com/krply/krply/audit"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/server"
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

// OpenExisting opens a journal that must already exist (the query
// examples never create one by mistake).
func OpenExisting(ctx context.Context, path string, opts ...krply.Option) (*krply.Journal, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("journal %s: %w (record one first: go run ./examples/record --store %s)", path, err, path)
	}
	return krply.Open(ctx, path, opts...)
}

// ReadOnlyUnless returns the options that open the journal read-only,
// unless the command writes (saves a snapshot, a plan or audit
// correlations): a query then leaves the journal as it was, and works on
// a journal the user may only read.
func ReadOnlyUnless(writes bool) []krply.Option {
	if writes {
		return nil
	}
	return []krply.Option{krply.WithReadOnly()}
}

// OpenJournal opens an existing journal and finds its cluster: cluster
// when set, otherwise the only one recorded.
func OpenJournal(ctx context.Context, path, cluster string, opts ...krply.Option) (*krply.Journal, string, error) {
	j, err := OpenExisting(ctx, path, opts...)
	if err != nil {
		return nil, "", err
	}
	if cluster, err = ClusterID(ctx, j.Store(), cluster); err != nil {
		return nil, "", errors.Join(err, j.Close())
	}
	return j, cluster, nil
}

// FormatChanges renders field changes on one line:
// "spec.replicas: 1 → 3; data.key = v; metadata.labels removed".
func FormatChanges(changes []materialize.FieldChange) string {
	parts := make([]string, 0, len(changes))
	for _, c := range changes {
		switch c.Op {
		case materialize.OpAdd:
			parts = append(parts, fmt.Sprintf("%s = %v", c.Path, c.After))
		case materialize.OpRemove:
			parts = append(parts, fmt.Sprintf("%s removed", c.Path))
		default:
			parts = append(parts, fmt.Sprintf("%s: %v → %v", c.Path, c.Before, c.After))
		}
	}
	return strings.Join(parts, "; ")
}

// Correlate links the writes of kube-apiserver audit logs (JSON lines,
// rotated or gzipped files welcome) to the journal events they caused, so
// histories can say who made each change. Correlating a log twice stores
// nothing twice.
func Correlate(ctx context.Context, j storage.ReadWriter, clusterID string, paths ...string) (audit.Summary, error) {
	c, err := audit.NewCorrelator(j, clusterID)
	if err != nil {
		return audit.Summary{}, err
	}
	files, err := audit.OpenFiles(paths)
	if err != nil {
		return audit.Summary{}, err
	}
	defer files.Close()
	return c.Ingest(ctx, files)
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

// ObjectID names an object from a resource as the journal records it:
// "deployments.apps", "configmaps", or a plural the journal records in a
// single group ("deployments").
func ObjectID(ctx context.Context, store storage.Reader, clusterID, resource, namespace, name string) (storage.ObjectID, error) {
	obj := krply.Object(clusterID, resource, namespace, name)
	if strings.Contains(resource, ".") {
		return obj, nil
	}
	streams, err := store.Streams(ctx, clusterID)
	if err != nil {
		return obj, err
	}
	var groups []string
	for _, st := range streams {
		if st.Stream.Resource == resource && !slices.Contains(groups, st.Stream.Group) {
			groups = append(groups, st.Stream.Group)
		}
	}
	switch len(groups) {
	case 0:
		return obj, fmt.Errorf("the journal records no %q (use the plural resource name, e.g. deployments)", resource)
	case 1:
		obj.Group = groups[0]
		return obj, nil
	}
	return obj, fmt.Errorf("%q is recorded in several groups (%s): write resource.group", resource, strings.Join(groups, ", "))
}

// ParseTime reads "now", an RFC 3339 time, or a duration ago: "10m",
// "10m ago", "1h30m ago". It is server.ParseTime, the parser the query API
// uses, so every tool reads times alike.
func ParseTime(s string, now time.Time) (time.Time, error) {
	return server.ParseTime(s, now)
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
