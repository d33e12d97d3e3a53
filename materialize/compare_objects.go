package materialize

import (
	"encoding/json"

	"github.com/krply/krply/event"
)

// CompareObjects returns the field changes between two bodies of one object
// (nil for an absent object), with the same rules as Diff: server-owned
// metadata (DefaultIgnorePointers) and status are ignored unless opts say
// otherwise, and list items are matched by merge key. ref identifies the
// object for ignore rules. The replay package uses it to report what a dry
// run would change.
func CompareObjects(ref event.ResourceRef, before, after json.RawMessage, opts ...CompareOption) ([]FieldChange, error) {
	cc, err := newCompareConfig(opts)
	if err != nil {
		return nil, err
	}
	return cc.compareBodies(ref, before, after)
}
