package materialize

import (
	"encoding/json"
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
	id     string         // see setKey
	// raw is the entry as written when it was read from a history's
	// bodies: entries read from the same bytes share their fields.
	raw []byte
}

// setKey sets the entry's key: what identifies the entry of a manager in
// the next version (manager, operation, subresource and API version).
func (e *managedEntry) setKey() {
	e.id = e.Manager + "\x00" + e.Operation + "\x00" + e.Subresource + "\x00" + e.APIVersion
}

func (e *managedEntry) key() string { return e.id }

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
		e.setKey()
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
	return managedListOf(list)
}

// managedListOf is managedEntriesOf of the decoded list of managedFields.
func managedListOf(list []any) (out []managedEntry, ok bool) {
	out = make([]managedEntry, 0, len(list))
	for _, item := range list {
		e, ok := managedEntryOf(item)
		if !ok {
			return nil, false
		}
		out = append(out, e)
	}
	return out, true
}

// managedEntryOf is managedListOf of one item of the list.
func managedEntryOf(item any) (e managedEntry, ok bool) {
	mf, ok := item.(map[string]any)
	if !ok || !exactKeys(mf, "manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource") {
		return e, false
	}
	for _, f := range []struct {
		key string
		to  *string
	}{{"manager", &e.Manager}, {"operation", &e.Operation}, {"apiVersion", &e.APIVersion}, {"subresource", &e.Subresource}, {"fieldsType", new(string)}} {
		switch s := mf[f.key].(type) {
		case nil:
		case string:
			*f.to = s
		default:
			return e, false
		}
	}
	switch t := mf["time"].(type) {
	case nil:
	case string:
		// As metav1.Time reads it.
		pt, err := time.Parse(time.RFC3339, t)
		if err != nil {
			return e, false
		}
		e.Time = pt.UTC()
	default:
		return e, false
	}
	e.fields, _ = mf["fieldsV1"].(map[string]any)
	e.setKey()
	return e, true
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
	if len(cur) == 0 {
		return nil
	}
	oldIndex, curIndex := indexEntries(old), indexEntries(cur)
	// Entries sharing a key share their marks, those of the last of them.
	const writes, wrote = 1, 2 // by their entries alone; and by a change
	var buf [8]uint8
	marks := buf[:0]
	if len(cur) > len(buf) {
		marks = make([]uint8, 0, len(cur))
	}
	marks = marks[:len(cur)]
	mark := func(e *managedEntry, m uint8) { marks[curIndex.find(e.key())] |= m }
	marked := func(e *managedEntry, m uint8) bool { return marks[curIndex.find(e.key())]&m != 0 }
	for i := range cur {
		e := &cur[i]
		j := oldIndex.find(e.key())
		if j < 0 {
			mark(e, writes|wrote)
			continue
		}
		// A history shares the entries of versions whose managedFields
		// are written alike: o is then e, or was read from the same bytes.
		if o := &old[j]; o != e && !sameEntryBytes(o, e) && (!o.Time.Equal(e.Time) || gained(e.fields, o.fields)) {
			mark(e, writes|wrote)
		}
	}
	for i := range changes {
		if i >= len(paths) || len(paths[i]) == 0 {
			continue
		}
		var owner *managedEntry
		if changes[i].Op == OpRemove {
			var writer, formerOwner *managedEntry
			writers, formerOwners := 0, 0
			for j := range cur {
				if e := &cur[j]; marked(e, writes) {
					writers++
					writer = e
					if o := oldIndex.find(e.key()); o >= 0 && owns(old[o].fields, paths[i]) {
						formerOwners++
						formerOwner = e
					}
				}
			}
			switch {
			case writers == 1:
				owner = writer
			case writers > 1 && formerOwners == 1:
				owner = formerOwner
			default:
				continue
			}
		} else {
			owner = latestOwner(cur, paths[i])
		}
		if owner != nil {
			fm := owner.FieldManager
			changes[i].FieldManager = &fm
			mark(owner, wrote)
		}
	}
	var out []FieldManager
	for i := range cur {
		if marked(&cur[i], wrote) {
			out = append(out, cur[i].FieldManager)
		}
	}
	return out
}

// sameEntryBytes reports whether two entries were read from the same
// bytes, and so are equal.
func sameEntryBytes(a, b *managedEntry) bool {
	return len(a.raw) > 0 && len(a.raw) == len(b.raw) && &a.raw[0] == &b.raw[0]
}

// entryIndex finds the last of entries with a key, as a map from keys
// to entries would hold it.
type entryIndex struct {
	entries []managedEntry
	index   map[string]int // when there are many
}

func indexEntries(entries []managedEntry) entryIndex {
	x := entryIndex{entries: entries}
	if len(entries) > 8 {
		x.index = make(map[string]int, len(entries))
		for i := range entries {
			x.index[entries[i].key()] = i
		}
	}
	return x
}

// find returns the position of the last entry with key, -1 when none.
func (x entryIndex) find(key string) int {
	if x.index != nil {
		if i, ok := x.index[key]; ok {
			return i
		}
		return -1
	}
	for i := len(x.entries) - 1; i >= 0; i-- {
		if x.entries[i].key() == key {
			return i
		}
	}
	return -1
}

// latestOwner returns the entry of cur that owns path, or the one whose
// entry is strictly the newest among those that do; nil when that does
// not decide (shared ownership at the same second).
func latestOwner(cur []managedEntry, path []seg) *managedEntry {
	var best *managedEntry
	tie := false
	for j := range cur {
		o := &cur[j]
		if !owns(o.fields, path) {
			continue
		}
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

// owns reports whether a fieldsV1 set holds a path: every step is in the
// set, or the set ends in a leaf above the path (a field owned as a whole,
// such as an atomic list).
func owns(set map[string]any, path []seg) bool {
	if set == nil {
		return false
	}
	cur := set
	var buf [64]byte // the key looked up, without allocating when short
	for _, s := range path {
		if len(cur) == 0 {
			return true
		}
		var next any
		found := false
		switch s.kind {
		case segField:
			next, found = cur[string(append(append(buf[:0], "f:"...), s.name...))]
		case segIndex:
			next, found = cur[string(strconv.AppendInt(append(buf[:0], "i:"...), int64(s.index), 10))]
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
