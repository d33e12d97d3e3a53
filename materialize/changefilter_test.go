package materialize_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
)

// A change filter keeps the versions it matches and every gap; it sees
// the body before and after, the field paths and who.
func TestHistoryChangeFilter(t *testing.T) {
	j := newOutageJournal(t)
	m := j.materializer()
	ctx := context.Background()
	var seen []string
	f := materialize.ChangeFilterFunc(func(_ context.Context, c materialize.Change) (bool, error) {
		v := c.Version
		seen = append(seen, fmt.Sprintf("%s %s old=%s new=%s paths=%d", v.ResourceVersion, v.WatchType, dataOfString(c.Old), dataOfString(c.New), len(v.Changes)))
		return slices.ContainsFunc(v.Changes, func(fc materialize.FieldChange) bool { return strings.HasPrefix(fc.Path, "data") }), nil
	})
	h, err := m.History(ctx, idOf(j.cms, "c", "shop"), materialize.WithChangeFilter(f))
	if err != nil {
		t.Fatal(err)
	}
	// c: added at 3 (v1), modified at 5 (v2), the gap, deleted (inferred) at 9.
	wantSeen := []string{"103 ADDED old= new=1 paths=0", "105 MODIFIED old=1 new=2 paths=1", "105 DELETED old=2 new= paths=0"}
	if !slices.Equal(seen, wantSeen) {
		t.Errorf("the filter saw\n%q\nwant\n%q", seen, wantSeen)
	}
	var kinds []string
	for _, e := range h.Entries {
		s := string(e.Kind)
		if e.Version != nil {
			s += " " + e.Version.ResourceVersion
		}
		kinds = append(kinds, s)
	}
	if want := []string{"version 105", "gap"}; !slices.Equal(kinds, want) {
		t.Errorf("entries %q, want %q", kinds, want)
	}

	// Nothing kept: the gap stays.
	h, err = m.History(ctx, idOf(j.cms, "c", "shop"), materialize.WithChangeFilter(materialize.ChangeFilterFunc(
		func(context.Context, materialize.Change) (bool, error) { return false, nil })))
	if err != nil || len(h.Entries) != 1 || h.Entries[0].Kind != materialize.EntryGap {
		t.Errorf("a filter that keeps nothing: %+v, %v; want the gap alone", h, err)
	}
	h, err = m.History(ctx, idOf(j.cms, "c", "shop"), materialize.WithChangeFilter(materialize.ChangeFilterFunc(
		func(_ context.Context, c materialize.Change) (bool, error) {
			if c.Version.WatchType == event.Deleted {
				return false, fmt.Errorf("%w: no such key: spec", materialize.ErrEvaluation)
			}
			return true, nil
		})))
	if err != nil || len(h.Versions()) != 2 || len(h.Warnings) != 1 || !strings.Contains(h.Warnings[0], "could not be evaluated on 1 versions") {
		t.Errorf("a filter failing on one version: %v; versions %d, warnings %q", err, len(h.Versions()), h.Warnings)
	}
	stop := fmt.Errorf("budget")
	if _, err := m.History(ctx, idOf(j.cms, "c", "shop"), materialize.WithChangeFilter(materialize.ChangeFilterFunc(
		func(context.Context, materialize.Change) (bool, error) { return false, stop }))); err == nil || !strings.Contains(err.Error(), "budget") {
		t.Errorf("a filter's own error: %v", err)
	}
}
