package watch

// WithAllResources: every listable and watchable resource, followed as
// the server adds and removes them.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

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
func (c *Collector) everything(cat *catalog) []Resource {
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
	c.log.Info("recording every listable and watchable resource", "resources", len(out), "excluded", strings.Join(excluded, ","))
	return out
}

// follow starts the streams of resources served since the last discovery
// and ends those of resources no longer served, leaving alone the groups
// whose discovery failed.
func (c *Collector) follow(ctx context.Context, cat *catalog) {
	served := cat.served()
	c.mu.Lock()
	defer c.mu.Unlock()
	active := map[schema.GroupResource]bool{}
	for r := range c.resources {
		active[r.GroupResource()] = true
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
	var added []Resource
	for gr, r := range served {
		if !active[gr] && c.cfg.exclusionOf(r) == "" {
			added = append(added, r)
		}
	}
	sort.Slice(added, func(i, j int) bool { return added[i].String() < added[j].String() })
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
