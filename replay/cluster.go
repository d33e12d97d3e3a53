package replay

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// DefaultFieldManager is the server-side apply field manager a Cluster uses
// unless told otherwise. It is the same for every plan, so a later plan
// replayed into the same target updates the fields krply's earlier replay
// set instead of conflicting with them.
const DefaultFieldManager = "krply-replay"

// PlanFieldManagerPrefix prefixes the per-plan field manager (see
// WithPerPlanFieldManager): "krply-plan-<plan ID>".
const PlanFieldManagerPrefix = "krply-plan-"

// Cluster is a target cluster: the client DryRun and Apply write through,
// the field manager they write as, and the cluster's identity.
//
// A Cluster holds no state beyond its configuration and is safe for
// concurrent use. It needs no Close.
type Cluster struct {
	dyn            dynamic.Interface
	fieldManager   string
	perPlanManager bool
	clusterID      string
	log            logr.Logger
}

type clusterConfig struct {
	fieldManager   string
	perPlanManager bool
	clusterID      string
	log            logr.Logger
}

// ClusterOption configures a Cluster.
type ClusterOption interface{ applyCluster(*clusterConfig) }

type clusterOptionFunc func(*clusterConfig)

func (f clusterOptionFunc) applyCluster(c *clusterConfig) { f(c) }

// WithFieldManager sets the server-side apply field manager, e.g.
// "sandbox-restore" (at most 128 characters). The default is
// DefaultFieldManager. Keep it stable per target: a different manager
// conflicts with the fields an earlier replay set.
func WithFieldManager(name string) ClusterOption {
	return clusterOptionFunc(func(c *clusterConfig) { c.fieldManager = name })
}

// WithPerPlanFieldManager makes every plan write as its own field manager,
// PlanFieldManagerPrefix + plan ID. A later plan then conflicts with fields
// an earlier plan set to other values, which is what you want only when
// every replay must go into a fresh target.
func WithPerPlanFieldManager() ClusterOption {
	return clusterOptionFunc(func(c *clusterConfig) { c.perPlanManager = true })
}

// WithClusterID gives the cluster the name a Collector recording it was
// configured with (watch.WithClusterID), so that the source-cluster check
// recognises it by that name as well as by its kube-system namespace UID.
func WithClusterID(id string) ClusterOption {
	return clusterOptionFunc(func(c *clusterConfig) { c.clusterID = id })
}

// NewCluster returns a target cluster reached through dyn. It does no I/O.
func NewCluster(dyn dynamic.Interface, opts ...ClusterOption) (*Cluster, error) {
	if dyn == nil {
		return nil, fmt.Errorf("replay: %w: nil dynamic client", ErrInvalidArgument)
	}
	cfg := clusterConfig{fieldManager: DefaultFieldManager, log: logr.Discard()}
	for _, o := range opts {
		if o != nil {
			o.applyCluster(&cfg)
		}
	}
	if cfg.fieldManager == "" {
		return nil, fmt.Errorf("replay: %w: empty field manager", ErrInvalidArgument)
	}
	if len(cfg.fieldManager) > 128 {
		return nil, fmt.Errorf("replay: %w: field manager %q is longer than 128 characters", ErrInvalidArgument, cfg.fieldManager)
	}
	return &Cluster{dyn: dyn, fieldManager: cfg.fieldManager, perPlanManager: cfg.perPlanManager, clusterID: cfg.clusterID, log: cfg.log}, nil
}

// NewClusterForConfig returns a target cluster for a rest.Config. It does
// no I/O.
func NewClusterForConfig(cfg *rest.Config, opts ...ClusterOption) (*Cluster, error) {
	if cfg == nil {
		return nil, fmt.Errorf("replay: %w: nil rest.Config", ErrInvalidArgument)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("replay: dynamic client for %s: %w", cfg.Host, err)
	}
	return NewCluster(dyn, opts...)
}

// FieldManagerFor returns the field manager the cluster writes a plan as.
func (c *Cluster) FieldManagerFor(p *Plan) string {
	if c.perPlanManager {
		return PlanFieldManagerPrefix + p.ID
	}
	return c.fieldManager
}

var namespacesGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}

// Identity reads the cluster's identity: its kube-system namespace UID.
// It fails (wrapping ErrIdentity) when that namespace cannot be read: a
// cluster krply cannot identify cannot be told apart from the source.
func (c *Cluster) Identity(ctx context.Context) (Identity, error) {
	ns, err := c.dyn.Resource(namespacesGVR).Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
	if err != nil {
		return Identity{}, fmt.Errorf("%w: read namespace kube-system: %w", ErrIdentity, err)
	}
	if ns.GetUID() == "" {
		return Identity{}, fmt.Errorf("%w: namespace kube-system has no UID", ErrIdentity)
	}
	return Identity{UID: string(ns.GetUID()), ClusterID: c.clusterID}, nil
}
