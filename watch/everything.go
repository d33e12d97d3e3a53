package watch

// WithAllResources: every listable and watchable resource, followed as
// the server adds and removes them.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// errResourceRemoved is the cause that ends the streams of a resource the
// server no longer serves.
var errResourceRemoved = errors.New("resource no longer served by the API server (removed from discovery, e.g. its CRD was deleted)")

// served returns every listable and watchable resource of the catalog,
// one per group and resource: at the group's preferred version when it
// serves the resource there, else at its first version in discovery order.
func (cat *catalog) served() map[schema.GroupResource]Resource {
	out := map[schema.GroupResource]Resource{}
	for _, r := range cat.resources {
		gr := r.GroupResource()
		if cur, ok := out[gr]; !ok || (cat.preferred[r.Group] == r.Version && cat.preferred[cur.Group] != cur.Version) {
			out[gr] = r
		}
	}
	return out
}

// everything returns the resources WithAllResources records now, logging
// what it leaves out and why.
func (c *Collector) everything(ctx context.Context, cat *catalog) []Resource {
	var out []Resource
	var excluded []string
	for _, r := range cat.served() {
		if reason := c.cfg.exclusionOf(r); reason != "" {
			excluded = append(excluded, r.String())
			c.log.V(1).Info("resource excluded", "resource", r.String(), "reason", reason)
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	sort.Strings(excluded)
	out, denied := c.allowed(ctx, out)
	c.log.Info("recording every listable and watchable resource", "resources", len(out), "excluded", strings.Join(excluded, ","),
		"denied", strings.Join(denied, ","))
	return out
}

// follow starts the streams of resources served since the last discovery
// and ends those of resources no longer served, leaving alone the groups
// whose discovery failed.
func (c *Collector) follow(ctx context.Context, cat *catalog) {
	served := cat.served()
	c.mu.Lock()
	active := map[schema.GroupResource]bool{}
	for r := range c.resources {
		active[r.GroupResource()] = true
	}
	var candidates []Resource
	for gr, r := range served {
		if !active[gr] && c.cfg.exclusionOf(r) == "" {
			candidates = append(candidates, r)
		}
	}
	c.mu.Unlock()
	sort.Slice(candidates, func(i, j int) bool { return candidates[i].String() < candidates[j].String() })
	// Asked without the lock: a review is a request to the server.
	added, _ := c.allowed(ctx, candidates)

	c.mu.Lock()
	defer c.mu.Unlock()
	for r := range c.resources {
		if _, ok := served[r.GroupResource()]; ok || cat.failed[r.Group] {
			continue
		}
		c.log.Info("resource no longer served: ending its streams", "resource", r.String())
		delete(c.resources, r)
		for _, s := range c.streams {
			if s.res == r {
				s.cancel(errResourceRemoved)
			}
		}
	}
	for _, r := range added {
		c.log.Info("discovered resource", "resource", r.String(), "gvr", r.GVR().String())
		c.addResourceLocked(ctx, r, true)
	}
}

// removed records that the stream's resource is no longer served: a gap
// when the stream was covered, and a coverage change, then the state
// StateRemoved. A store failure stops the Collector.
func (s *stream) removed(ctx context.Context, cause error) {
	if err := s.markUnavailable(ctx, cause); err != nil {
		s.stop(ctx, fmt.Errorf("recording that %s is no longer served: %w", s.res, err))
		return
	}
	s.setState(StateRemoved, cause.Error())
}

// ssarGVR is SelfSubjectAccessReview, through which WithAllResources asks
// which resources the Collector may list and watch.
var ssarGVR = schema.GroupVersionResource{Group: "authorization.k8s.io", Version: "v1", Resource: "selfsubjectaccessreviews"}

// permitted reports whether the Collector may list and watch r in every
// namespace it records r in (or cluster-wide), asking the server with
// SelfSubjectAccessReviews.
func (c *Collector) permitted(ctx context.Context, r Resource) (bool, error) {
	namespaces := []string{""}
	if r.Namespaced && len(c.cfg.namespaces) > 0 {
		namespaces = c.cfg.namespaces
	}
	for _, ns := range namespaces {
		for _, verb := range []string{"list", "watch"} {
			review := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
				"spec": map[string]any{"resourceAttributes": map[string]any{
					"verb": verb, "group": r.Group, "version": r.Version, "resource": r.Resource, "namespace": ns,
				}},
			}}
			out, err := c.dyn.Resource(ssarGVR).Create(ctx, review, metav1.CreateOptions{})
			if err != nil {
				return false, fmt.Errorf("asking whether it may %s %s: %w", verb, r, err)
			}
			if allowed, _, _ := unstructured.NestedBool(out.Object, "status", "allowed"); !allowed {
				return false, nil
			}
		}
	}
	return true, nil
}

// allowed returns the resources of rs the Collector may list and watch,
// and the names of the others. A review that fails counts as denied for
// now; the next rediscovery asks again.
func (c *Collector) allowed(ctx context.Context, rs []Resource) (ok []Resource, denied []string) {
	for _, r := range rs {
		yes, err := c.permitted(ctx, r)
		if err != nil {
			c.log.Error(err, "access review failed; asking again at the next rediscovery", "resource", r.String())
		}
		if yes {
			ok = append(ok, r)
		} else {
			denied = append(denied, r.String())
		}
	}
	return ok, denied
}
