package watch

import (
	"slices"
	"strings"
)

// Exclusion is a resource WithAllResources leaves out, and why.
type Exclusion struct {
	// Resource is "resource.group" ("events" for the core group).
	Resource string `json:"resource"`
	Reason   string `json:"reason"`
}

// DefaultExclusions returns the resources WithAllResources leaves out
// unless asked for: Secrets (credentials; AllowSecrets records them,
// redacted), Events (WithInclude("events")), and high-churn objects
// derived from others or renewed every few seconds, whose history is
// noise.
func DefaultExclusions() []Exclusion {
	return []Exclusion{
		{"secrets", "credentials: recorded only with AllowSecrets (--allow-secrets), values redacted"},
		{"events", "high churn, and they expire after an hour: WithInclude(\"events\") (--include events) records them"},
		{"events.events.k8s.io", "the same Events as core events, another API: WithInclude(\"events\") records them"},
		{"leases.coordination.k8s.io", "renewed every few seconds by leader election and node heartbeats: noise"},
		{"leasecandidates.coordination.k8s.io", "renewed every few seconds by coordinated leader election: noise"},
		{"endpointslices.discovery.k8s.io", "derived from Services and Pods by a controller, rewritten on every Pod change"},
		{"endpoints", "derived from Services and Pods by a controller (deprecated for EndpointSlices)"},
	}
}

// matchesSpec reports whether an exclusion spec ("resource" in any group,
// or "resource.group") names r.
func matchesSpec(spec string, r Resource) bool {
	spec = strings.ToLower(spec)
	if spec == r.Resource {
		return true
	}
	if gr, ok := aliases[spec]; ok {
		return gr.Resource == r.Resource && gr.Group == r.Group
	}
	return spec == r.String()
}

// exclusionOf returns why the configuration leaves r out of
// WithAllResources, or "" when it records r.
func (c *config) exclusionOf(r Resource) string {
	if isSecret(r) && c.allowSecrets {
		return ""
	}
	included := func(spec string) bool { return matchesSpec(spec, r) }
	for _, spec := range c.exclude {
		if matchesSpec(spec, r) {
			return "excluded by WithExclude (--exclude)"
		}
	}
	for _, e := range DefaultExclusions() {
		if e.Resource == r.String() && (isSecret(r) || !slices.ContainsFunc(c.include, included)) {
			return e.Reason
		}
	}
	return ""
}
