package materialize

import (
	"encoding/json"
	"maps"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FieldManager is an entry of an object's metadata.managedFields: a field
// manager — the name a client or controller writes with, such as "kubectl"
// or "deployment-controller" — that last applied or updated a set of the
// object's fields, and when. It names a client, not a user: who made a
// request is what an audit log tells (Version.Provenance). It is what the
// object itself records, so it needs no audit log.
type FieldManager struct {
	// Manager is the field manager's name.
	Manager string `json:"manager"`
	// Operation is "Apply" (server-side apply) or "Update".
	Operation string `json:"operation"`
	// Subresource is the subresource written through, e.g. "status".
	Subresource string `json:"subresource,omitempty"`
	// APIVersion is the version of the object the manager wrote.
	APIVersion string `json:"apiVersion,omitempty"`
	// Time is the entry's timestamp, in seconds, set by the API server
	// when the manager changed its fields; zero when the entry has none.
	Time time.Time `json:"time,omitzero"`
}

// managedEntry is one managedFields entry with its parsed field set.
type managedEntry struct {
	FieldManager
	fields map[string]any // the fieldsV1 tree: "f:name", "k:{...}", "v:...", "i:N", "."
}

func (e *managedEntry) key() string {
	return e.Manager + "\x00" + e.Operation + "\x00" + e.Subresource + "\x00" + e.APIVersion
}

// managedEntries reads the managedFields of a body; nil when it has none or
// is not an object.
func managedEntries(body []byte) []managedEntry {
	if len(body) == 0 {
		return nil
	}
	var obj struct {
		Metadata struct {
			ManagedFields []metav1.ManagedFieldsEntry `json:"managedFields"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(body, &obj); err != nil {
		return nil
	}
	out := make([]managedEntry, 0, len(obj.Metadata.ManagedFields))
	for _, mf := range obj.Metadata.ManagedFields {
		e := managedEntry{FieldManager: FieldManager{Manager: mf.Manager, Operation: string(mf.Operation),
			Subresource: mf.Subresource, APIVersion: mf.APIVersion}}
		if mf.Time != nil {
			e.Time = mf.Time.UTC()
		}
		if mf.FieldsV1 != nil {
			if v, err := decodeJSON(mf.FieldsV1.Raw); err == nil {
				e.fields, _ = v.(map[string]any)
			}
		}
		out = append(out, e)
	}
	return out
}

// managedEntriesOf is managedEntries of a body already decoded (by
// decodeJSON) into v. It reads the entries from v when the body is in the
// form the API server writes — a JSON object whose metadata.managedFields
// is a list of objects with string fields, each key spelled as the API
// defines it; ok is false otherwise, and then managedEntries must read the
// body, so that an unusual body has the same entries either way.
func managedEntriesOf(v any) (out []managedEntry, ok bool) {
	obj, ok := v.(map[string]any)
	if !ok || !exactKeys(obj, "metadata") {
		return nil, false
	}
	meta, ok := obj["metadata"].(map[string]any)
	if !ok {
		return nil, obj["metadata"] == nil
	}
	if !exactKeys(meta, "managedFields") {
		return nil, false
	}
	list, ok := meta["managedFields"].([]any)
	if !ok {
		return nil, meta["managedFields"] == nil
	}
	out = make([]managedEntry, 0, len(list))
	for _, item := range list {
		mf, ok := item.(map[string]any)
		if !ok || !exactKeys(mf, "manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource") {
			return nil, false
		}
		var e managedEntry
		for _, f := range []struct {
			key string
			to  *string
		}{{"manager", &e.Manager}, {"operation", &e.Operation}, {"apiVersion", &e.APIVersion}, {"subresource", &e.Subresource}, {"fieldsType", new(string)}} {
			switch s := mf[f.key].(type) {
			case nil:
			case string:
				*f.to = s
			default:
				return nil, false
			}
		}
		switch t := mf["time"].(type) {
		case nil:
		case string:
			// As metav1.Time reads it.
			pt, err := time.Parse(time.RFC3339, t)
			if err != nil {
				return nil, false
			}
			e.Time = pt.UTC()
		default:
			return nil, false
		}
		e.fields, _ = mf["fieldsV1"].(map[string]any)
		out = append(out, e)
	}
	return out, true
}

// exactKeys reports whether no key of m matches one of names only case
// insensitively (encoding/json reads such a key into the struct field).
func exactKeys(m map[string]any, names ...string) bool {
	for k := range m {
		for _, n := range names {
			if k != n && strings.EqualFold(k, n) {
				return false
			}
		}
	}
	return true
}

// fieldManagers returns the field managers of a body's managedFields, in
// its order.
func fieldManagers(entries []managedEntry) []FieldManager {
	if len(entries) == 0 {
		return nil
	}
	out := make([]FieldManager, len(entries))
	for i, e := range entries {
		out[i] = e.FieldManager
	}
	return out
}

// attributeFields says, from the managedFields entries of two consecutive
// versions (old, then cur), which field managers wrote the second one and
// who changed each field.
//
// The manager that changes a field owns it afterwards (an Update takes
// ownership of the fields it changes, an Apply of the fields it sets), so
// a changed or added field is attributed to its owner in the second
// version; when several own it, the strictly newest entry decides. A
// removed field has no owner afterwards: it is attributed to the entry
// that wrote the second version when exactly one did, or else to the one
// writer that owned it before. Otherwise FieldChange.FieldManager stays
// nil. An entry wrote a version when it is new, its time changed, or its
// field set gained a field (an entry that only lost fields lost them to
// another manager); the entries that wrote, and those a change was
// attributed to, are returned in the second version's order. paths holds
// the path of each change.
func attributeFields(old, cur []managedEntry, changes []FieldChange, paths [][]seg) []FieldManager {
	oldByKey := make(map[string]*managedEntry, len(old))
	for i := range old {
		oldByKey[old[i].key()] = &old[i]
	}
	curByKey := make(map[string]*managedEntry, len(cur))
	writes := make(map[string]bool, len(cur)) // by their entries alone
	for i := range cur {
		e := &cur[i]
		curByKey[e.key()] = e
		if o := oldByKey[e.key()]; o == nil || !o.Time.Equal(e.Time) || gained(e.fields, o.fields) {
			writes[e.key()] = true
		}
	}
	wrote := maps.Clone(writes)
	for i := range changes {
		if i >= len(paths) || len(paths[i]) == 0 {
			continue
		}
		var owners []*managedEntry
		if changes[i].Op == OpRemove {
			var writers, formerOwners []*managedEntry
			for j := range cur {
				if e := &cur[j]; writes[e.key()] {
					writers = append(writers, e)
					if o := oldByKey[e.key()]; o != nil && owns(o.fields, paths[i]) {
						formerOwners = append(formerOwners, e)
					}
				}
			}
			owners = writers
			if len(writers) > 1 {
				owners = formerOwners
			}
			if len(owners) != 1 {
				continue
			}
		} else {
			for j := range cur {
				if owns(cur[j].fields, paths[i]) {
					owners = append(owners, &cur[j])
				}
			}
		}
		if o := soleOrLatest(owners); o != nil {
			fm := o.FieldManager
			changes[i].FieldManager = &fm
			if curByKey[o.key()] != nil {
				wrote[o.key()] = true
			}
		}
	}
	var out []FieldManager
	for _, e := range cur {
		if wrote[e.key()] {
			out = append(out, e.FieldManager)
		}
	}
	return out
}

// gained reports whether the fieldsV1 set now holds a path that was not
// in before.
func gained(now, before map[string]any) bool {
	for k, v := range now {
		b, ok := before[k]
		if !ok {
			return true
		}
		nm, _ := v.(map[string]any)
		bm, _ := b.(map[string]any)
		if gained(nm, bm) {
			return true
		}
	}
	return false
}

// soleOrLatest returns the only owner, or the one whose entry is strictly
// the newest; nil when that does not decide (shared ownership at the same
// second).
func soleOrLatest(owners []*managedEntry) *managedEntry {
	var best *managedEntry
	tie := false
	for _, o := range owners {
		switch {
		case best == nil || o.Time.After(best.Time):
			best, tie = o, false
		case o.Time.Equal(best.Time):
			tie = true
		}
	}
	if tie {
		return nil
	}
	return best
}

// owns reports whether a fieldsV1 set holds a path: every step is in the
// set, or the set ends in a leaf above the path (a field owned as a whole,
// such as an atomic list).
func owns(set map[string]any, path []seg) bool {
	if set == nil {
		return false
	}
	cur := set
	for _, s := range path {
		if len(cur) == 0 {
			return true
		}
		var next any
		found := false
		switch s.kind {
		case segField:
			next, found = cur["f:"+s.name]
		case segIndex:
			next, found = cur["i:"+strconv.Itoa(s.index)]
		case segKey:
			for k, v := range cur {
				if strings.HasPrefix(k, "k:") && keyMatches(k[2:], s.name, s.value) {
					next, found = v, true
					break
				}
			}
		}
		if !found {
			return false
		}
		if cur, found = next.(map[string]any); !found {
			return false
		}
	}
	return true
}

// keyMatches reports whether the JSON object of a "k:" key has the merge
// key's value.
func keyMatches(keyJSON, name string, value any) bool {
	v, err := decodeJSON([]byte(keyJSON))
	if err != nil {
		return false
	}
	m, ok := v.(map[string]any)
	return ok && equalJSON(m[name], value)
}
