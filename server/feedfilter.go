package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
)

// feedFilter is the change feed's filter (?filter=): of the records of
// objects, it keeps the versions whose change the expression matches, as
// a history with the same change filter shows them; a relist item that
// only confirms the version before it is no change, nor is an audit
// correlation (a version's actor is part of what the filter sees).
// Records of no object (gaps, coverage changes, checkpoints, baselines'
// bounds, saved snapshots and plans) pass as without a filter.
type feedFilter struct {
	h             *handler
	expr          string
	includeStatus bool
	// f is the filter of the current read of the journal: each read
	// compiles a new one, with a fresh cost budget, so that a feed that
	// runs for days does not spend one request's budget.
	f materialize.ChangeFilter
	// used says that f has served a read of the journal.
	used bool
	// rec is the record keep asks about: of the versions the history at
	// its moment holds, only its own failure counts.
	rec *event.Record
	// failed counts the versions of the current read the filter could not
	// be evaluated on; first is the first one's error.
	failed int
	first  error
}

// newFeedFilter reads filter and includeStatus; nil without a filter.
func (h *handler) newFeedFilter(p *params) (*feedFilter, error) {
	expr := p.q.Get("filter")
	if expr == "" {
		if p.q.Has("includeStatus") {
			return nil, badParam("includeStatus", "includeStatus says which changes a filter sees: give filter too, or leave includeStatus out")
		}
		return nil, nil
	}
	status, err := p.boolean("includeStatus", true)
	if err != nil {
		return nil, err
	}
	ff := &feedFilter{h: h, expr: expr, includeStatus: status}
	// Compile once now, so that a bad expression is a 400 before the
	// stream begins.
	if err := ff.renew(); err != nil {
		return nil, err
	}
	return ff, nil
}

// renew compiles the filter of the next read of the journal.
func (ff *feedFilter) renew() error {
	f, err := ff.h.changeFilter(ff.expr)
	if err != nil {
		return err
	}
	ff.f, ff.used = f, false
	return nil
}

// MatchChange calls the current filter, counting the versions it cannot
// evaluate.
func (ff *feedFilter) MatchChange(ctx context.Context, c materialize.Change) (bool, error) {
	ok, err := ff.f.MatchChange(ctx, c)
	if errors.Is(err, materialize.ErrEvaluation) && ff.rec != nil && c.Version.Ref == ff.rec.Resource && c.Version.WatchType == ff.rec.WatchType {
		if ff.failed == 0 {
			ff.first = fmt.Errorf("%s %s version %s (id %d): %w", c.Version.Ref.Resource, c.Version.Ref.ObjectKey(), c.Version.ResourceVersion, ff.rec.IngestSeq, err)
		}
		ff.failed++
	}
	return ok, err
}

// keep reports whether the feed sends rec, a record its scope keeps.
func (ff *feedFilter) keep(ctx context.Context, rec *event.Record) (bool, error) {
	switch {
	case rec.Type == event.TypeAuditCorrelation:
		return false, nil
	case rec.Type != event.TypeEvent || rec.Resource.Name == "":
		return true, nil
	}
	// The history of the object at the record's moment holds the record
	// as a version compared with the version before it, with its
	// provenance as the journal has it now.
	ff.rec, ff.used = rec, true
	defer func() { ff.rec = nil }()
	h, err := ff.h.m.History(ctx, storage.ObjectIDOf(*rec), materialize.Since(rec.ObservedAt), materialize.Until(rec.ObservedAt),
		materialize.IncludeStatus(ff.includeStatus), materialize.WithChangeFilter(ff))
	if err != nil {
		return false, err
	}
	for _, e := range h.Entries {
		if e.EventID == rec.EventID && e.Kind == materialize.EntryVersion {
			return true, nil
		}
	}
	return false, nil
}

// warning returns, and forgets, the warning of the versions the filter
// could not be evaluated on since the last call; "" for none.
func (ff *feedFilter) warning() string {
	if ff.failed == 0 {
		return ""
	}
	w := fmt.Sprintf("the change filter could not be evaluated on %d versions, left out; the first: %v", ff.failed, ff.first)
	ff.failed, ff.first = 0, nil
	return w
}
