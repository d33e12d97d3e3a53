package watch

// Recording rules: which objects a stream records, and the records that
// say when one stops matching.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// RecordRule decides, per object, whether a Collector records it (what
// KubeArchive calls an archive rule). krply's CEL expressions (module
// github.com/krply/krply/cel, CompileRule) are RecordRules; any other
// rule can be given as a RecordRuleFunc.
type RecordRule interface {
	// Expression is the rule's text. It becomes part of the identity of
	// every stream the rule applies to (event.Stream.Rule), so a journal
	// recorded under one rule is never continued under another: a new
	// rule starts new streams, each from its own baseline.
	Expression() string
	// Match reports whether the object, its JSON as the Collector
	// records it (a Secret's values redacted), is recorded. The streams
	// call it concurrently. An error other than the context's excludes the
	// object, as false does.
	Match(ctx context.Context, object json.RawMessage) (bool, error)
}

// RecordRuleFunc makes a RecordRule of a function and the text that names
// it.
func RecordRuleFunc(expression string, match func(ctx context.Context, object json.RawMessage) (bool, error)) RecordRule {
	return funcRule{expression: expression, match: match}
}

type funcRule struct {
	expression string
	match      func(context.Context, json.RawMessage) (bool, error)
}

func (r funcRule) Expression() string { return r.expression }
func (r funcRule) Match(ctx context.Context, object json.RawMessage) (bool, error) {
	return r.match(ctx, object)
}

// WithRecordRule records only the objects for which rule holds. An object
// that does not match is not recorded, and answers about it say so: it is
// excluded by rule, never "absent" or "deleted" as if seen. An object the
// stream recorded that stops matching gets a synthetic DELETED record
// marked as an exclusion (event.Record.IsExclusion), without its body;
// one that starts matching is recorded from that version on, with the
// time before unknown. The rule is evaluated on every version the server
// sends, so its cost counts per event.
func WithRecordRule(rule RecordRule) Option {
	return optionFunc(func(c *config) { c.rule, c.ruleSet = rule, true })
}

// validateRule checks the rule of WithRecordRule.
func (c *config) validateRule() error {
	if !c.ruleSet {
		return nil
	}
	if c.rule == nil {
		return fmt.Errorf("watch: %w: WithRecordRule(nil): give a rule, or leave the option out to record every object", ErrInvalidArgument)
	}
	if c.rule.Expression() == "" {
		return fmt.Errorf("watch: %w: WithRecordRule: the rule's Expression is empty; it names the rule in the journal's stream IDs", ErrInvalidArgument)
	}
	return nil
}

// ruleSelector is the Stream.Selector of a stream recorded under rule:
// the label and field selectors' canonical form, then the rule.
func ruleSelector(selector string, rule RecordRule) string {
	if rule == nil {
		return selector
	}
	if selector == "" {
		selector = "labels:;fields:"
	}
	return selector + event.RuleSeparator + rule.Expression()
}

// matches evaluates the stream's rule on a record's body. Only the
// context's error is returned: another error excludes the object, with
// the error as the reason.
func (s *stream) matches(ctx context.Context, rec event.Record) (ok bool, why string, err error) {
	ok, err = s.c.cfg.rule.Match(ctx, rec.Object)
	switch {
	case ctx.Err() != nil:
		return false, "", ctx.Err()
	case err != nil && !errors.Is(err, context.Canceled):
		s.log.V(1).Info("the recording rule could not be evaluated: the object is excluded", "object", rec.Resource.ObjectKey(), "resourceVersion", rec.Resource.ResourceVersion, "error", err.Error())
		return false, fmt.Sprintf("%s (the rule could not be evaluated on resourceVersion %s: %v)", event.ExcludedByRule, rec.Resource.ResourceVersion, err), nil
	case err != nil:
		return false, "", err
	}
	return ok, fmt.Sprintf("%s: resourceVersion %s does not match", event.ExcludedByRule, rec.Resource.ResourceVersion), nil
}

// ruleOnEvent applies the stream's rule to a watch event's record: the
// record to write, or none (keep false) for an object the stream does not
// record and did not hold.
func (s *stream) ruleOnEvent(ctx context.Context, rec event.Record) (out event.Record, keep bool, err error) {
	key := storage.ObjectIDOf(rec)
	ok, why, err := s.matches(ctx, rec)
	if err != nil {
		return event.Record{}, false, err
	}
	if s.members == nil {
		s.members = map[storage.ObjectID]struct{}{}
	}
	_, member := s.members[key]
	switch {
	case ok && rec.WatchType == event.Deleted:
		delete(s.members, key)
		return rec, true, nil
	case ok:
		s.members[key] = struct{}{}
		return rec, true, nil
	case member:
		delete(s.members, key)
		return s.exclusion(rec, rec.ObservedAt, rec.ObservedAt, "", why), true, nil
	}
	return event.Record{}, false, nil
}

// ruleOnItem applies the stream's rule to a baseline item's record: keep
// says whether it is recorded; excluded, when set, is the exclusion of
// the object the journal held alive under its key, which stopped
// matching during the loss of continuity the baseline ends.
func (s *stream) ruleOnItem(ctx context.Context, rec event.Record) (keep bool, excluded *event.Record, err error) {
	key := storage.ObjectIDOf(rec)
	ok, why, err := s.matches(ctx, rec)
	if err != nil {
		return false, nil, err
	}
	if ok {
		s.listed[key] = struct{}{}
		return true, nil, nil
	}
	old, held := s.prior[key]
	if !held {
		return false, nil, nil
	}
	delete(s.prior, key)
	ex := s.exclusion(old, s.lossStart(), rec.ObservedAt, rec.BaselineID, why)
	return false, &ex, nil
}

// exclusion makes the record that marks an object leaving the rule: a
// synthetic DELETED of last's key (its last version in the journal, or
// the version that left the rule), without a body, between from and to.
func (s *stream) exclusion(last event.Record, from, to time.Time, baselineID, why string) event.Record {
	rec := s.inferredDeletion(last, from, to, baselineID)
	rec.EventID = event.EventID(s.id, event.TypeEvent, last.Resource, event.Deleted, baselineID, event.ExcludedByRule)
	rec.Object, rec.ObjectHash = nil, ""
	rec.Inferred.Reason = why
	return rec
}

// loadMembers reads the objects the journal holds alive for the stream:
// those its rule matched when last recorded.
func (s *stream) loadMembers(ctx context.Context) error {
	s.members = map[storage.ObjectID]struct{}{}
	alive, err := s.c.store.AliveAt(ctx, storage.AliveQuery{At: s.observedNow(), StreamID: s.id, WithoutBodies: true})
	if err != nil {
		return fmt.Errorf("%w: alive objects of %s: %w", ErrStore, s.id, err)
	}
	for _, rec := range alive {
		s.members[storage.ObjectIDOf(rec)] = struct{}{}
	}
	return nil
}
