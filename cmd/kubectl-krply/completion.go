package main

import (
	"context"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/krply/krply/event"
)

// completeObjects completes TYPE/NAME from the journal: the recorded
// resources, then the names of the objects of that resource in the
// namespace. It never fails a completion: nothing is offered instead.
func (e *env) completeObjects(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx := cmd.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	src, err := e.open(ctx, false)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	defer src.Close()
	cluster, err := e.clusterOf(ctx, src)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	typ, _, typed := strings.Cut(toComplete, "/")
	if !typed {
		streams, err := src.Streams(ctx, cluster, "", e.now())
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var out []string
		for _, st := range streams {
			name := st.Status.Stream.Resource
			if st.Status.Stream.Group != "" {
				name += "." + st.Status.Stream.Group
			}
			if strings.HasPrefix(name, toComplete) && !contains(out, name+"/") {
				out = append(out, name+"/")
			}
		}
		sort.Strings(out)
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
	gr, err := resolveType(ctx, src, cluster, "", typ, e.now())
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ns := e.namespace()
	if clusterScoped[gr] {
		ns = ""
	}
	// The objects alive now or ever: a snapshot of now, whose names are
	// what a user asks about most.
	snap, err := src.Snapshot(ctx, e.scopeOf(cluster, ns == ""), e.now())
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var out []string
	for _, o := range snap.Objects {
		if matchesResource(o.Ref, gr.Group, gr.Resource) && (ns == "" || o.Ref.Namespace == ns) {
			if c := typ + "/" + o.Ref.Name; strings.HasPrefix(c, toComplete) {
				out = append(out, c)
			}
		}
	}
	sort.Strings(out)
	return out, cobra.ShellCompDirectiveNoFileComp
}

func matchesResource(ref event.ResourceRef, group, resource string) bool {
	return ref.Group == group && ref.Resource == resource
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
