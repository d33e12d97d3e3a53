package watch

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"

	"github.com/krply/krply/watch/status"
)

// Resource is a resolved API resource: what one or more streams record
// (declared in package watch/status, with its methods).
type Resource = status.Resource

// isSecret reports whether r is the core group's secrets.
func isSecret(r Resource) bool { return r.Group == "" && r.Resource == "secrets" }

// aliases maps the short names kubectl users type to group/resource, so
// they resolve even against a discovery (a fake) that has no short names.
var aliases = map[string]schema.GroupResource{
	"cm":     {Resource: "configmaps"},
	"cs":     {Resource: "componentstatuses"},
	"ep":     {Resource: "endpoints"},
	"ev":     {Resource: "events"},
	"limits": {Resource: "limitranges"},
	"no":     {Resource: "nodes"},
	"ns":     {Resource: "namespaces"},
	"po":     {Resource: "pods"},
	"pv":     {Resource: "persistentvolumes"},
	"pvc":    {Resource: "persistentvolumeclaims"},
	"quota":  {Resource: "resourcequotas"},
	"rc":     {Resource: "replicationcontrollers"},
	"sa":     {Resource: "serviceaccounts"},
	"secret": {Resource: "secrets"},
	"svc":    {Resource: "services"},
	"deploy": {Group: "apps", Resource: "deployments"},
	"ds":     {Group: "apps", Resource: "daemonsets"},
	"rs":     {Group: "apps", Resource: "replicasets"},
	"sts":    {Group: "apps", Resource: "statefulsets"},
	"job":    {Group: "batch", Resource: "jobs"},
	"cj":     {Group: "batch", Resource: "cronjobs"},
	"hpa":    {Group: "autoscaling", Resource: "horizontalpodautoscalers"},
	"ing":    {Group: "networking.k8s.io", Resource: "ingresses"},
	"netpol": {Group: "networking.k8s.io", Resource: "networkpolicies"},
	"pdb":    {Group: "policy", Resource: "poddisruptionbudgets"},
	"crd":    {Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
	"crds":   {Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"},
	"sc":     {Group: "storage.k8s.io", Resource: "storageclasses"},
	"pc":     {Group: "scheduling.k8s.io", Resource: "priorityclasses"},
	"csr":    {Group: "certificates.k8s.io", Resource: "certificatesigningrequests"},
	"lease":  {Group: "coordination.k8s.io", Resource: "leases"},
}

// Alias returns the group and resource of a short name that WithResources
// accepts without asking discovery ("deploy" is deployments.apps, "cm"
// configmaps), so that tools resolve the names a recorder was given the
// same way: kubectl krply resolves TYPE/NAME arguments with it.
func Alias(name string) (schema.GroupResource, bool) {
	gr, ok := aliases[strings.ToLower(name)]
	return gr, ok
}

// DefaultResources returns the resources recorded when WithResources is not
// given: namespaces, configmaps, services, deployments, statefulsets,
// daemonsets, runtimeclasses and pods.
func DefaultResources() []string {
	return []string{
		"namespaces", "configmaps", "services", "deployments.apps", "statefulsets.apps",
		"daemonsets.apps", "runtimeclasses.node.k8s.io", "pods",
	}
}

// catalog is what discovery serves: every listable and watchable resource
// at every version, and each group's preferred version.
type catalog struct {
	preferred map[string]string // group → preferred version
	resources []Resource        // every version of every resource
	names     map[Resource][]string
	failed    map[string]bool // groups whose discovery failed
}

// discover reads the server's groups and resources. A partial failure (an
// aggregated API that does not answer) still yields the groups that did.
func discover(ctx context.Context, disc discovery.DiscoveryInterface) (*catalog, error) {
	var (
		groups []*metav1.APIGroup
		lists  []*metav1.APIResourceList
		err    error
	)
	if dc, ok := disc.(discovery.ServerResourcesInterfaceWithContext); ok {
		groups, lists, err = dc.ServerGroupsAndResourcesWithContext(ctx)
	} else {
		groups, lists, err = disc.ServerGroupsAndResources()
	}
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	cat := &catalog{preferred: map[string]string{}, names: map[Resource][]string{}, failed: map[string]bool{}}
	var failed *discovery.ErrGroupDiscoveryFailed
	if errors.As(err, &failed) {
		for gv := range failed.Groups {
			cat.failed[gv.Group] = true
		}
	}
	for _, g := range groups {
		if g != nil {
			cat.preferred[g.Name] = g.PreferredVersion.Version
		}
	}
	for _, list := range lists {
		if list == nil {
			continue
		}
		gv, perr := schema.ParseGroupVersion(list.GroupVersion)
		if perr != nil {
			continue
		}
		for _, ar := range list.APIResources {
			if strings.Contains(ar.Name, "/") || !hasVerbs(ar.Verbs, "list", "watch") {
				continue
			}
			r := Resource{Group: gv.Group, Version: gv.Version, Resource: ar.Name, Kind: ar.Kind, Namespaced: ar.Namespaced}
			cat.resources = append(cat.resources, r)
			names := []string{ar.Name, strings.ToLower(ar.Kind)}
			if ar.SingularName != "" {
				names = append(names, ar.SingularName)
			}
			names = append(names, ar.ShortNames...)
			cat.names[r] = names
		}
	}
	return cat, nil
}

func hasVerbs(verbs metav1.Verbs, want ...string) bool {
	for _, w := range want {
		found := false
		for _, v := range verbs {
			if v == w {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// resolve finds the resource a spec names; ok is false when nothing matches.
func (cat *catalog) resolve(spec string) (Resource, bool) {
	name := strings.ToLower(strings.TrimSpace(spec))
	var group, version string
	explicitGroup := false
	switch parts := strings.Split(name, "/"); len(parts) {
	case 1:
		if gr, ok := aliases[name]; ok {
			name, group, explicitGroup = gr.Resource, gr.Group, true
		} else if n, rest, ok := strings.Cut(name, "."); ok {
			// "resource.group" or "resource.version.group": try the
			// version form first, as kubectl does.
			if v, g, ok := strings.Cut(rest, "."); ok && cat.hasGroupVersion(g, v) {
				name, version, group = n, v, g
			} else {
				name, group = n, rest
			}
			explicitGroup = true
		}
	case 2: // "v1/configmaps" or "apps/deployments"
		if cat.hasGroupVersion("", parts[0]) {
			version, name = parts[0], parts[1]
		} else {
			group, name = parts[0], parts[1]
		}
		explicitGroup = true
	case 3: // "apps/v1/deployments"
		group, version, name = parts[0], parts[1], parts[2]
		explicitGroup = true
	default:
		return Resource{}, false
	}

	var matches []Resource
	for _, r := range cat.resources {
		if explicitGroup && r.Group != group {
			continue
		}
		if version != "" && r.Version != version {
			continue
		}
		if !containsName(cat.names[r], name) {
			continue
		}
		matches = append(matches, r)
	}
	if len(matches) == 0 {
		return Resource{}, false
	}
	// Prefer the core group, then the group's preferred version, then the
	// first group in discovery order — kubectl's priority.
	sort.SliceStable(matches, func(i, j int) bool {
		a, b := matches[i], matches[j]
		if (a.Group == "") != (b.Group == "") {
			return a.Group == ""
		}
		return cat.preferred[a.Group] == a.Version && cat.preferred[b.Group] != b.Version
	})
	return matches[0], true
}

func (cat *catalog) hasGroupVersion(group, version string) bool {
	for _, r := range cat.resources {
		if r.Group == group && r.Version == version {
			return true
		}
	}
	return false
}

func containsName(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// suggestions returns up to three names close to spec.
func (cat *catalog) suggestions(spec string) []string {
	name := strings.ToLower(spec)
	type cand struct {
		name   string
		target schema.GroupResource
		dist   int
	}
	var cands []cand
	consider := func(n string, target schema.GroupResource) {
		d := levenshtein(name, n)
		if d <= 1+len(name)/3 || (len(name) >= 2 && strings.HasPrefix(n, name)) {
			cands = append(cands, cand{n, target, d})
		}
	}
	for alias, gr := range aliases {
		consider(alias, gr)
	}
	for _, r := range cat.resources {
		for _, n := range cat.names[r] {
			consider(n, r.GroupResource())
		}
		if r.Group != "" {
			consider(r.Resource+"."+r.Group, r.GroupResource())
		}
	}
	sort.Slice(cands, func(i, j int) bool {
		if cands[i].dist != cands[j].dist {
			return cands[i].dist < cands[j].dist
		}
		return cands[i].name < cands[j].name
	})
	// One suggestion per resource: its closest name.
	var out []string
	seen := map[schema.GroupResource]bool{}
	for _, c := range cands {
		if len(out) == 3 {
			break
		}
		if !seen[c.target] {
			seen[c.target] = true
			out = append(out, c.name)
		}
	}
	return out
}

func levenshtein(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// qualified reports whether a spec names its group explicitly, so that it
// may wait for the resource to be served (a CRD installed later) instead of
// being a typo.
func qualified(spec string) bool {
	if _, ok := aliases[strings.ToLower(spec)]; ok {
		return false
	}
	return strings.ContainsAny(spec, "./")
}

// UnknownResourceError says that a resource name matches nothing the
// server serves. It wraps ErrUnknownResource.
type UnknownResourceError struct {
	Spec string
	// Suggestions are close names the server does serve.
	Suggestions []string
}

func (e *UnknownResourceError) Error() string {
	msg := fmt.Sprintf("%v %q", ErrUnknownResource, e.Spec)
	if len(e.Suggestions) > 0 {
		msg += "; did you mean " + strings.Join(e.Suggestions, ", ") + "?"
	}
	return msg
}

// Unwrap returns ErrUnknownResource.
func (e *UnknownResourceError) Unwrap() error { return ErrUnknownResource }

// Resolve resolves resource specs (the forms WithResources accepts)
// through discovery to the resources they name, at each group's preferred
// version unless the spec names a version. It fails with an
// *UnknownResourceError for the first spec nothing matches. Duplicates
// are removed.
func Resolve(ctx context.Context, disc discovery.DiscoveryInterface, specs ...string) ([]Resource, error) {
	cat, err := discover(ctx, disc)
	if err != nil {
		return nil, err
	}
	var out []Resource
	seen := map[Resource]bool{}
	for _, spec := range specs {
		r, ok := cat.resolve(spec)
		if !ok {
			return nil, &UnknownResourceError{Spec: spec, Suggestions: cat.suggestions(spec)}
		}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out, nil
}

// resolveResources resolves the resources WithResources names through
// cat. A name qualified with its group that cat lacks is pending (its
// CRD may come later) when rediscovery runs; any other unknown name is
// an *UnknownResourceError, and Secrets without AllowSecrets are
// ErrSecretsNotAllowed.
func (c *config) resolveResources(cat *catalog) (resources []Resource, pending []string, err error) {
	for _, spec := range c.resources {
		r, ok := cat.resolve(spec)
		if !ok {
			if qualified(spec) && c.rediscoveryInterval > 0 {
				pending = append(pending, spec)
				continue
			}
			return nil, nil, &UnknownResourceError{Spec: spec, Suggestions: cat.suggestions(spec)}
		}
		if isSecret(r) && !c.allowSecrets {
			return nil, nil, fmt.Errorf("%w: %q", ErrSecretsNotAllowed, spec)
		}
		resources = append(resources, r)
	}
	return resources, pending, nil
}

// Check refuses, before anything is created, what a Collector with opts
// would refuse: invalid options, Secrets without AllowSecrets
// (ErrSecretsNotAllowed), and, asking disc once, a resource name the
// server serves nothing under (an *UnknownResourceError; a name
// qualified with its group is not refused while rediscovery may find it
// later). A program checks its configuration with it before it creates
// a journal. When discovery fails, Check returns its error wrapped, and
// errors.Is it with none of those sentinels: a Collector retries
// discovery until it answers.
func Check(ctx context.Context, disc discovery.DiscoveryInterface, opts ...Option) error {
	cfg, err := newConfig(opts)
	if err != nil {
		return err
	}
	if isNil(disc) {
		return fmt.Errorf("watch: %w: nil discovery client", ErrInvalidArgument)
	}
	cat, err := discover(ctx, disc)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	_, _, err = cfg.resolveResources(cat)
	return err
}
