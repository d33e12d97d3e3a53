package materialize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/krply/krply/event"
)

// Change is one version of an object as a change filter sees it: the
// object before and after, and the version (its watch type, origin, field
// changes and who made it).
type Change struct {
	// Old is the body of the version before, nil for the first version
	// and the first after a deletion.
	Old json.RawMessage `json:"old,omitempty"`
	// New is the body of this version, nil for a deletion (whose last
	// known body is Old), as Kubernetes admission sees a DELETE.
	New json.RawMessage `json:"new,omitempty"`
	// Version is the version: WatchType, Origin, Changes (the field paths),
	// Provenance and FieldManagers (who).
	Version *Version `json:"version"`
}

// ChangeFilter decides whether a change is kept. A filter of a request
// may keep state across calls (a cost budget), so it is called from one
// goroutine. krply's CEL change expressions (module
// github.com/krply/krply/cel, CompileChange) are ChangeFilters; an error
// wrapping ErrEvaluation drops the change with a warning, any other ends
// the request.
type ChangeFilter interface {
	MatchChange(ctx context.Context, c Change) (bool, error)
}

// ChangeFilterFunc is a function that is a ChangeFilter.
type ChangeFilterFunc func(ctx context.Context, c Change) (bool, error)

// MatchChange calls f.
func (f ChangeFilterFunc) MatchChange(ctx context.Context, c Change) (bool, error) { return f(ctx, c) }

// ChangeConditions is implemented by a Conditions that also compiles
// change filters (cel.Conditions does): the query server's history route
// takes a filter when its Conditions has it.
type ChangeConditions interface {
	CompileChange(expression string) (ChangeFilter, error)
}

// filterChanges keeps the version entries whose change f matches, and
// every other entry (a relist's confirmation is no change); prev is the
// record before the first entry (nil for none).
func filterChanges(ctx context.Context, f ChangeFilter, prev *event.Record, entries []entryAt, h *History) ([]entryAt, error) {
	var old json.RawMessage
	if prev != nil && prev.WatchType != event.Deleted {
		old = prev.Object
	}
	kept := make([]entryAt, 0, len(entries))
	failed := 0
	var firstErr error
	for _, e := range entries {
		v := e.Version
		if v == nil {
			// A confirmation of the version before: no change.
			kept = append(kept, e)
			continue
		}
		c := Change{Old: old, New: v.Object, Version: v}
		if v.WatchType == event.Deleted {
			c.New = nil
		}
		ok, err := f.MatchChange(ctx, c)
		switch {
		case errors.Is(err, ErrEvaluation):
			if failed == 0 {
				firstErr = fmt.Errorf("version %s: %w", v.ResourceVersion, err)
			}
			failed++
		case err != nil:
			return nil, fmt.Errorf("change filter: version %s: %w", v.ResourceVersion, err)
		case ok:
			kept = append(kept, e)
		}
		old = c.New
	}
	if failed > 0 {
		h.Warnings = append(h.Warnings, fmt.Sprintf("the change filter could not be evaluated on %d versions, left out; the first: %v", failed, firstErr))
	}
	return kept, nil
}
