package faultproxy

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// Request is what the proxy understood of one request, in the terms of the
// Kubernetes API (as the apiserver's own request info does).
type Request struct {
	// Verb is get, list, watch, create, update, patch, delete or
	// deletecollection for a resource request, and the lowercase HTTP method
	// for any other request (discovery, /version, /openapi, …).
	Verb        string
	Group       string // "" for the core group
	Version     string
	Resource    string // plural lowercase, "" for non-resource requests
	Subresource string // status, scale, …
	Namespace   string
	Name        string
	Path        string     // the URL path
	Query       url.Values // resourceVersion, watch, allowWatchBookmarks, …
	// Injected describes the fault the proxy injected instead of forwarding
	// (for example "status 410" or "watch error 410"), "" when forwarded.
	Injected string
}

// String renders the request as "verb resource[.group][/subresource]
// [namespace/]name".
func (r Request) String() string {
	if r.Resource == "" {
		return r.Verb + " " + r.Path
	}
	var b strings.Builder
	b.WriteString(r.Verb + " " + r.Resource)
	if r.Group != "" {
		b.WriteString("." + r.Group)
	}
	if r.Subresource != "" {
		b.WriteString("/" + r.Subresource)
	}
	if r.Namespace != "" || r.Name != "" {
		b.WriteString(" ")
		if r.Namespace != "" {
			b.WriteString(r.Namespace + "/")
		}
		b.WriteString(r.Name)
	}
	return b.String()
}

// namespaceSubresources are the subresources of a namespace itself, which the
// apiserver tells apart from a resource inside the namespace.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// parseRequest classifies an HTTP request as the apiserver would.
func parseRequest(r *http.Request) Request {
	req := Request{Path: r.URL.Path, Query: r.URL.Query(), Verb: strings.ToLower(r.Method)}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		req.Version, rest = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		req.Group, req.Version, rest = parts[1], parts[2], parts[3:]
	default:
		return req // discovery and other non-resource paths
	}
	watchPrefix := false
	if rest[0] == "watch" { // the deprecated /watch/ path form
		watchPrefix, rest = true, rest[1:]
	}
	if len(rest) >= 2 && rest[0] == "namespaces" && len(rest) >= 3 && !namespaceSubresources[rest[2]] {
		req.Namespace, rest = rest[1], rest[2:]
	}
	if len(rest) == 0 {
		return Request{Path: req.Path, Query: req.Query, Verb: req.Verb}
	}
	req.Resource = rest[0]
	if len(rest) >= 2 {
		req.Name = rest[1]
	}
	if len(rest) >= 3 {
		req.Subresource = strings.Join(rest[2:], "/")
	}
	if req.Resource == "namespaces" && req.Name != "" && req.Namespace == "" {
		req.Namespace = req.Name
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		req.Verb = "get"
		if req.Name == "" {
			req.Verb = "list"
			if watch, _ := strconv.ParseBool(req.Query.Get("watch")); watch {
				req.Verb = "watch"
			}
		}
		if watchPrefix {
			req.Verb = "watch"
		}
	case http.MethodPost:
		req.Verb = "create"
	case http.MethodPut:
		req.Verb = "update"
	case http.MethodPatch:
		req.Verb = "patch"
	case http.MethodDelete:
		req.Verb = "delete"
		if req.Name == "" {
			req.Verb = "deletecollection"
		}
	}
	return req
}

// Match selects requests by verb, resource and namespace; an empty field
// matches anything, so the zero Match selects every request.
type Match struct {
	// Verb as in Request.Verb: "watch", "list", "get", "create", …
	Verb string
	// Resource is "configmaps", "deployments.apps" (group given: must
	// match) or "deployments" (any group), optionally with a subresource:
	// "deployments.apps/scale". Without a subresource it matches only the
	// resource itself, never its subresources.
	Resource string
	// Namespace of the request; cluster-wide requests have none.
	Namespace string
}

// Matches reports whether m selects r.
func (m Match) Matches(r Request) bool {
	if m.Verb != "" && m.Verb != r.Verb {
		return false
	}
	if m.Namespace != "" && m.Namespace != r.Namespace {
		return false
	}
	if m.Resource == "" {
		return true
	}
	resource, subresource, _ := strings.Cut(m.Resource, "/")
	resource, group, hasGroup := strings.Cut(resource, ".")
	return resource == r.Resource && subresource == r.Subresource && (!hasGroup || group == r.Group)
}

func (m Match) String() string {
	s := m.Verb
	if s == "" {
		s = "*"
	}
	if m.Resource != "" {
		s += " " + m.Resource
	} else {
		s += " *"
	}
	if m.Namespace != "" {
		s += " in " + m.Namespace
	}
	return s
}
