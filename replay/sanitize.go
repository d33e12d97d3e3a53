package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/krply/krply/event"
)

// AnnotationSource is the annotation a plan puts on each of its objects:
// the recorded version the object was rebuilt from, as "<source cluster ID>
// <resource> <namespace/name> at resourceVersion <rv>" (without the
// resourceVersion when the recording had none; "… not recorded" for a
// Namespace the plan made up because the journal has no record of it). It
// depends only on what is replayed, never on the plan: replaying state the
// target already holds, from any number of plans, leaves the object
// unchanged on the server. Which plan wrote an object is in the journal's
// apply reports.
const AnnotationSource = "krply.io/replay-source"

// sourceAnnotation is the value of AnnotationSource for cluster's object
// ref: a recorded version, or a Namespace the plan synthesized.
func sourceAnnotation(clusterID string, ref event.ResourceRef, synthesized bool) string {
	switch {
	case synthesized:
		return clusterID + " " + ref.String() + " not recorded"
	case ref.ResourceVersion == "":
		return clusterID + " " + ref.String()
	}
	return clusterID + " " + ref.String() + " at resourceVersion " + ref.ResourceVersion
}

// lastAppliedAnnotation is kubectl's client-side apply record; it describes
// the source's last kubectl apply, not the replayed object.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// controllerOwnedAnnotations are set by the target cluster's own controllers
// (the Deployment and DaemonSet controllers). Replaying the source's values
// would make krply's field manager co-own them, and the next replay would
// conflict with the controller that keeps changing them.
var controllerOwnedAnnotations = []string{
	"deployment.kubernetes.io/revision",
	"deprecated.daemonset.template.generation",
}

// serverOwnedMetadata are the metadata fields the API server sets; a replay
// must not send them.
var serverOwnedMetadata = []string{
	"uid", "resourceVersion", "creationTimestamp", "generation", "managedFields",
	"deletionTimestamp", "selfLink",
}

// decodeObject decodes a JSON object keeping numbers exact (json.Number), so
// integers beyond 2^53 and fields of unknown CRDs survive unchanged.
func decodeObject(raw []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, err
	}
	if obj == nil {
		return nil, fmt.Errorf("not a JSON object")
	}
	return obj, nil
}

// sanitize removes from body, in place, exactly the fields of the DESIGN.md
// list that the policy does not keep, then the policy's StripPaths. It
// returns the JSON pointers of what it removed, in a stable order. Nothing
// else is touched: fields it does not know (of CRDs, of newer API versions)
// survive.
func sanitize(p Policy, k objectKind, body map[string]any) []string {
	var removed []string
	remove := func(m map[string]any, key string, ptr ...string) {
		if _, ok := m[key]; ok {
			delete(m, key)
			removed = append(removed, pointer(ptr...))
		}
	}

	if md, ok := body["metadata"].(map[string]any); ok {
		for _, f := range serverOwnedMetadata {
			remove(md, f, "metadata", f)
		}
		if !p.KeepOwnerReferences {
			remove(md, "ownerReferences", "metadata", "ownerReferences")
		}
		removed = append(removed, filterFinalizers(p, md)...)
		if ann, ok := md["annotations"].(map[string]any); ok {
			remove(ann, lastAppliedAnnotation, "metadata", "annotations", lastAppliedAnnotation)
			for _, a := range controllerOwnedAnnotations {
				remove(ann, a, "metadata", "annotations", a)
			}
		}
	}
	remove(body, "status", "status")

	if k.is("", "services") {
		if spec, ok := body["spec"].(map[string]any); ok {
			removed = append(removed, sanitizeServiceSpec(p, spec)...)
		}
	}

	for _, s := range p.StripPaths {
		kind, tokens, err := parseStripPath(s)
		if err != nil || (kind != "" && kind != k.Kind) {
			continue // validatePolicy rejected malformed paths already
		}
		if removePath(body, tokens) {
			removed = append(removed, pointer(tokens...))
		}
	}
	return removed
}

// filterFinalizers keeps only the allowlisted finalizers.
func filterFinalizers(p Policy, md map[string]any) []string {
	list, ok := md["finalizers"].([]any)
	if !ok {
		return nil
	}
	var kept []any
	var removed []string
	for i, f := range list {
		if name, _ := f.(string); slices.Contains(p.AllowFinalizers, name) {
			kept = append(kept, f)
			continue
		}
		removed = append(removed, pointer("metadata", "finalizers", strconv.Itoa(i)))
	}
	switch {
	case len(kept) == 0:
		delete(md, "finalizers")
		return []string{pointer("metadata", "finalizers")}
	case len(removed) > 0:
		md["finalizers"] = kept
	}
	return removed
}

// sanitizeServiceSpec drops allocated IPs and node ports. A headless
// Service's clusterIP "None" is not an allocation but its defining setting
// (and immutable), so it stays.
func sanitizeServiceSpec(p Policy, spec map[string]any) []string {
	var removed []string
	if !p.KeepClusterIPs {
		if ip, _ := spec["clusterIP"].(string); ip != "None" {
			if _, ok := spec["clusterIP"]; ok {
				delete(spec, "clusterIP")
				removed = append(removed, "/spec/clusterIP")
			}
		}
		if ips, ok := spec["clusterIPs"].([]any); ok && !(len(ips) == 1 && ips[0] == "None") {
			delete(spec, "clusterIPs")
			removed = append(removed, "/spec/clusterIPs")
		}
	}
	if !p.KeepNodePorts {
		ports, _ := spec["ports"].([]any)
		for i, port := range ports {
			if pm, ok := port.(map[string]any); ok {
				if _, ok := pm["nodePort"]; ok {
					delete(pm, "nodePort")
					removed = append(removed, pointer("spec", "ports", strconv.Itoa(i), "nodePort"))
				}
			}
		}
		if _, ok := spec["healthCheckNodePort"]; ok {
			delete(spec, "healthCheckNodePort")
			removed = append(removed, "/spec/healthCheckNodePort")
		}
	}
	return removed
}

// removePath deletes the value at a JSON pointer path (map keys and array
// indexes); it reports whether something was removed.
func removePath(obj map[string]any, tokens []string) bool {
	_, removed := removeAt(obj, tokens)
	return removed
}

// removeAt removes the value at tokens below cur and returns cur as it must
// be stored in its parent (a shorter slice when an element was removed).
func removeAt(cur any, tokens []string) (any, bool) {
	t, rest := tokens[0], tokens[1:]
	switch v := cur.(type) {
	case map[string]any:
		child, ok := v[t]
		if !ok {
			return cur, false
		}
		if len(rest) == 0 {
			delete(v, t)
			return v, true
		}
		next, removed := removeAt(child, rest)
		v[t] = next
		return v, removed
	case []any:
		idx, err := strconv.Atoi(t)
		if err != nil || idx < 0 || idx >= len(v) {
			return cur, false
		}
		if len(rest) == 0 {
			return slices.Delete(v, idx, idx+1), true
		}
		next, removed := removeAt(v[idx], rest)
		v[idx] = next
		return v, removed
	}
	return cur, false
}
