package materialize

import (
	"maps"
	"math/rand/v2"
	"reflect"
	"testing"
)

// attributeFieldsByMaps is attributeFields as it was written first, with
// maps: the reference the faster one is held to.
func attributeFieldsByMaps(old, cur []managedEntry, changes []FieldChange, paths [][]seg) []FieldManager {
	oldByKey := make(map[string]*managedEntry, len(old))
	for i := range old {
		oldByKey[old[i].key()] = &old[i]
	}
	writes := make(map[string]bool, len(cur)) // by their entries alone
	for i := range cur {
		e := &cur[i]
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
		if best != nil && !tie {
			fm := best.FieldManager
			changes[i].FieldManager = &fm
			wrote[best.key()] = true
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

// TestAttributeFieldsMatchesMaps: attributeFields attributes the changes
// and names the writers attributeFieldsByMaps does, for random entry lists
// (managers moved in time, grown, repeated under one key, more than fit
// its small buffers, the same list as before) and random changes.
func TestAttributeFieldsMatchesMaps(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	managedList := func() []managedEntry {
		var raw []byte
		raw = append(raw, `{"metadata":{"managedFields":`...)
		raw = append(raw, managedVariant(r, r.IntN(10))...)
		raw = append(raw, `}}`...)
		entries := managedEntries(raw)
		for range r.IntN(12) / 4 * 4 { // now and then more than 8
			entries = append(entries, entries...)
		}
		return entries
	}
	candidates := [][]seg{
		{{kind: segField, name: "spec"}, {kind: segField, name: "a"}},
		{{kind: segField, name: "spec"}, {kind: segField, name: "b"}, {kind: segField, name: "c"}},
		{{kind: segField, name: "spec"}, {kind: segField, name: "b"}, {kind: segField, name: "d"}},
		{{kind: segField, name: "status"}, {kind: segField, name: "ready"}},
		{{kind: segField, name: "spec"}, {kind: segField, name: "env"}, {kind: segKey, name: "name", value: "A"}, {kind: segField, name: "value"}},
		{{kind: segField, name: "spec"}, {kind: segField, name: "containers"}, {kind: segIndex, index: 0}},
		{{kind: segField, name: "metadata"}, {kind: segField, name: "labels"}, {kind: segField, name: "x"}},
		{{kind: segField, name: "data"}},
	}
	ops := []ChangeOp{OpAdd, OpReplace, OpRemove}
	for range 2000 {
		old := managedList()
		cur := old
		if r.IntN(3) > 0 {
			cur = managedList()
		}
		var changes []FieldChange
		var paths [][]seg
		for range r.IntN(5) {
			changes = append(changes, FieldChange{Op: ops[r.IntN(len(ops))]})
			paths = append(paths, candidates[r.IntN(len(candidates))])
		}
		if r.IntN(10) == 0 {
			paths = paths[:len(paths)/2]
		}
		want := append([]FieldChange(nil), changes...)
		wantWriters := attributeFieldsByMaps(old, cur, want, paths)
		got := append([]FieldChange(nil), changes...)
		gotWriters := attributeFields(old, cur, got, paths)
		if !reflect.DeepEqual(got, want) || !reflect.DeepEqual(gotWriters, wantWriters) {
			t.Fatalf("old %+v\ncur %+v\npaths %v\ngot %+v %+v\nwant %+v %+v", old, cur, paths, got, gotWriters, want, wantWriters)
		}
	}
}
