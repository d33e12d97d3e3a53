package event

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// ResourceRef identifies one version of one Kubernetes object.
type ResourceRef struct {
	Group           string `json:"group,omitempty"`
	Version         string `json:"version,omitempty"`
	Kind            string `json:"kind,omitempty"`
	Resource        string `json:"resource,omitempty"`
	Namespace       string `json:"namespace,omitempty"`
	Name            string `json:"name,omitempty"`
	UID             string `json:"uid,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// ObjectKey returns "namespace/name", or "name" for a cluster-scoped object,
// the form client-go's cache.MetaNamespaceKeyFunc uses.
func (r ResourceRef) ObjectKey() string {
	if r.Namespace == "" {
		return r.Name
	}
	return r.Namespace + "/" + r.Name
}

// GVK returns the object's group, version and kind.
func (r ResourceRef) GVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
}

// GVR returns the object's group, version and resource.
func (r ResourceRef) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: r.Group, Version: r.Version, Resource: r.Resource}
}

// GroupResource returns the object's group and resource, which identify its
// kind across API versions.
func (r ResourceRef) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: r.Group, Resource: r.Resource}
}

// String returns a short human form, e.g. "apps/deployments shop/web".
func (r ResourceRef) String() string {
	gr := r.Resource
	if r.Group != "" {
		gr = r.Group + "/" + r.Resource
	}
	return gr + " " + r.ObjectKey()
}

// Stream is one list+watch: a cluster, a group/version/resource, a
// namespace ("" for all namespaces or a cluster-scoped resource) and a
// label/field selector. Ordering holds only within one stream.
type Stream struct {
	ClusterID string `json:"clusterID"`
	Group     string `json:"group,omitempty"`
	Version   string `json:"version"`
	Resource  string `json:"resource"`
	Namespace string `json:"namespace,omitempty"`
	// Selector is the stream's label and field selector in a canonical
	// form chosen by the collector, e.g. "labels:app=web;fields:", followed
	// by ";rule:" and the expression of its recording rule when it has
	// one (see Rule).
	Selector string `json:"selector,omitempty"`
}

// RuleSeparator introduces a recording rule's expression in
// Stream.Selector: "labels:<l>;fields:<f>;rule:<expression>".
const RuleSeparator = ";rule:"

// Rule returns the expression of the stream's recording rule, or "" when
// it records every object its selector selects. A stream with a rule
// records an object only while the rule holds for it; the others are
// excluded by rule, and the journal knows nothing of them there.
func (s Stream) Rule() string {
	_, rule, ok := strings.Cut(s.Selector, RuleSeparator)
	if !ok {
		return ""
	}
	return rule
}

// GVR returns the stream's group, version and resource.
func (s Stream) GVR() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: s.Group, Version: s.Version, Resource: s.Resource}
}

// coreGroup stands for the empty (core) API group in a stream ID.
const coreGroup = "core"

// ID returns the stream's identifier:
//
//	<cluster>/<group>/<version>/<resource>[/<namespace>][?<selector>]
//
// with "core" for the core group and every field percent-escaped, so IDs are
// readable ("c1/apps/v1/deployments/shop") and ParseStreamID round-trips any
// stream, including selectors that contain '/', ',', '=' and '!'.
func (s Stream) ID() string {
	var b strings.Builder
	b.WriteString(escapeField(s.ClusterID))
	b.WriteByte('/')
	if s.Group == "" {
		b.WriteString(coreGroup)
	} else if s.Group == coreGroup {
		// A group literally named "core" must not read as the core group.
		b.WriteString("%63ore")
	} else {
		b.WriteString(escapeField(s.Group))
	}
	b.WriteByte('/')
	b.WriteString(escapeField(s.Version))
	b.WriteByte('/')
	b.WriteString(escapeField(s.Resource))
	if s.Namespace != "" {
		b.WriteByte('/')
		b.WriteString(escapeField(s.Namespace))
	}
	if s.Selector != "" {
		b.WriteByte('?')
		b.WriteString(escapeField(s.Selector))
	}
	return b.String()
}

// String returns s.ID().
func (s Stream) String() string { return s.ID() }

// ErrInvalidStreamID is returned (wrapped) by ParseStreamID.
var ErrInvalidStreamID = errors.New("event: invalid stream ID")

// ParseStreamID parses an ID made by Stream.ID. It accepts only the
// canonical form, so ParseStreamID(id).ID() == id for every accepted id.
func ParseStreamID(id string) (Stream, error) {
	fail := func(why string) (Stream, error) {
		return Stream{}, fmt.Errorf("%w %q: %s (want cluster/group/version/resource[/namespace][?selector])", ErrInvalidStreamID, id, why)
	}
	path, selector, hasSelector := strings.Cut(id, "?")
	parts := strings.Split(path, "/")
	if len(parts) != 4 && len(parts) != 5 {
		return fail(fmt.Sprintf("%d path segments", len(parts)))
	}
	fields := make([]string, len(parts))
	for i, p := range parts {
		v, err := unescapeField(p)
		if err != nil {
			return fail(err.Error())
		}
		fields[i] = v
	}
	s := Stream{ClusterID: fields[0], Group: fields[1], Version: fields[2], Resource: fields[3]}
	switch parts[1] {
	case coreGroup:
		s.Group = ""
	case "":
		return fail("empty group (the core group is written \"core\")")
	}
	if len(parts) == 5 {
		if fields[4] == "" {
			return fail("empty namespace segment")
		}
		s.Namespace = fields[4]
	}
	if hasSelector {
		if selector == "" {
			return fail("empty selector after '?'")
		}
		v, err := unescapeField(selector)
		if err != nil {
			return fail(err.Error())
		}
		s.Selector = v
	}
	if s.ID() != id {
		return fail("not in canonical form")
	}
	return s, nil
}

const upperHex = "0123456789ABCDEF"

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~' || c == ':'
}

func escapeField(s string) string {
	n := 0
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			n++
		}
	}
	if n == 0 {
		return s
	}
	b := make([]byte, 0, len(s)+2*n)
	for i := 0; i < len(s); i++ {
		c := s[i]
		if unreserved(c) {
			b = append(b, c)
			continue
		}
		b = append(b, '%', upperHex[c>>4], upperHex[c&15])
	}
	return string(b)
}

func unescapeField(s string) (string, error) {
	if !strings.Contains(s, "%") {
		for i := 0; i < len(s); i++ {
			if !unreserved(s[i]) {
				return "", fmt.Errorf("character %q must be percent-escaped", s[i])
			}
		}
		return s, nil
	}
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '%' {
			if !unreserved(c) {
				return "", fmt.Errorf("character %q must be percent-escaped", c)
			}
			b = append(b, c)
			continue
		}
		if i+2 >= len(s) {
			return "", errors.New("truncated percent escape")
		}
		hi, lo := strings.IndexByte(upperHex, s[i+1]), strings.IndexByte(upperHex, s[i+2])
		if hi < 0 || lo < 0 {
			return "", fmt.Errorf("bad percent escape %q (upper-case hex expected)", s[i:i+3])
		}
		b = append(b, byte(hi<<4|lo))
		i += 2
	}
	return string(b), nil
}

// EventID returns the deterministic de-duplication key of a journal record:
// a hash of the stream, the record type, the object's key, UID and
// resourceVersion, the watch type, and any extra parts (for example the
// baseline ID of a baseline item, so that a later baseline records an
// unchanged object again). The same watch event delivered twice yields the
// same ID.
func EventID(stream string, typ RecordType, ref ResourceRef, wt WatchType, extra ...string) string {
	// Each field length-prefixed, "<len>:<field>|", so ("ab","c") and
	// ("a","bc") differ; built in one buffer and hashed once
	// (TestEventIDPinned holds the derivation).
	var buf [256]byte
	b := buf[:0]
	for _, f := range [...]string{stream, string(typ), ref.Group, ref.Resource, ref.Namespace, ref.Name, ref.UID, ref.ResourceVersion, string(wt)} {
		b = appendIDField(b, f)
	}
	for _, e := range extra {
		b = appendIDField(b, e)
	}
	sum := sha256.Sum256(b)
	var out [32]byte
	hex.Encode(out[:], sum[:16])
	return string(out[:])
}

func appendIDField(b []byte, s string) []byte {
	b = strconv.AppendInt(b, int64(len(s)), 10)
	b = append(b, ':')
	b = append(b, s...)
	return append(b, '|')
}

// StreamRecordID returns the EventID of a record of a stream that is not a
// watch event — a baseline marker, a gap, a coverage change: EventID with
// no watch type. parts tell records of one type apart (a baseline ID and
// its phase, a gap's bounds).
func StreamRecordID(stream string, typ RecordType, ref ResourceRef, parts ...string) string {
	return EventID(stream, typ, ref, "", parts...)
}

// RecordID returns the EventID of a record of no stream — a saved plan or
// report, an audit correlation: EventID with neither a stream nor a watch
// type. parts tell records of one type apart (a report's ID, an audit ID).
func RecordID(typ RecordType, ref ResourceRef, parts ...string) string {
	return EventID("", typ, ref, "", parts...)
}

// ObjectHash returns the hex SHA-256 of an object's raw JSON, the key under
// which stores keep each distinct body once.
func ObjectHash(raw []byte) string {
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])
}
