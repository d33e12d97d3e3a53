package materialize

import (
	"fmt"
	"slices"
	"time"
)

// CompareOption says how versions of an object are compared: which fields
// count (IncludeStatus, WithIgnoreRules, WithoutDefaultIgnores) and how list
// items are matched (WithMergeKeys). History, Diff and CompareObjects take
// it; every CompareOption is a HistoryOption.
type CompareOption interface {
	HistoryOption
	applyCompare(*queryConfig)
}

// HistoryOption adjusts a History call: which versions it returns (Since,
// Until, FromStream, Limit) and, as a CompareOption, how it compares them.
// Diff and CompareObjects do not take the options that select versions:
// passing one of them does not compile.
type HistoryOption interface{ applyHistory(*queryConfig) }

// compareOption is an option of every call that compares.
type compareOption func(*queryConfig)

func (f compareOption) applyHistory(c *queryConfig) { f(c) }
func (f compareOption) applyCompare(c *queryConfig) { f(c) }

// historyOption is an option of History alone.
type historyOption func(*queryConfig)

func (f historyOption) applyHistory(c *queryConfig) { f(c) }

type queryConfig struct {
	includeStatus  *bool
	defaultIgnores bool
	rules          []IgnoreRule
	mergeKeys      map[string][]string
	since, until   time.Time
	streamID       string
	limit          int
	after          string
	changeFilter   ChangeFilter
	// custom names the comparison options given other than IncludeStatus.
	custom []string
}

// IncludeStatus says whether comparisons include the status field. The
// default is false for Diff (a diff of spec) and true for History.
func IncludeStatus(include bool) CompareOption {
	return compareOption(func(c *queryConfig) { c.includeStatus = &include })
}

// WithIgnoreRules adds ignore rules to comparisons.
func WithIgnoreRules(rules ...IgnoreRule) CompareOption {
	return compareOption(func(c *queryConfig) {
		c.rules = append(c.rules, rules...)
		c.custom = append(c.custom, "WithIgnoreRules")
	})
}

// WithoutDefaultIgnores compares the server-owned fields too (see
// DefaultIgnorePointers).
func WithoutDefaultIgnores() CompareOption {
	return compareOption(func(c *queryConfig) {
		c.defaultIgnores = false
		c.custom = append(c.custom, "WithoutDefaultIgnores")
	})
}

// WithMergeKeys matches the items of lists held in fields named field by the
// given item fields, tried in order, before the default merge keys.
func WithMergeKeys(field string, keys ...string) CompareOption {
	return compareOption(func(c *queryConfig) {
		c.mergeKeys[field] = append(slices.Clone(keys), c.mergeKeys[field]...)
		c.custom = append(c.custom, "WithMergeKeys")
	})
}

// Since restricts History to versions observed at or after t.
func Since(t time.Time) HistoryOption {
	return historyOption(func(c *queryConfig) { c.since = t })
}

// Until restricts History to versions observed at or before t.
func Until(t time.Time) HistoryOption {
	return historyOption(func(c *queryConfig) { c.until = t })
}

// FromStream restricts History to the versions recorded by one stream.
func FromStream(streamID string) HistoryOption {
	return historyOption(func(c *queryConfig) { c.streamID = streamID })
}

// WithChangeFilter keeps, of History's versions, those whose change f
// matches; gaps, availability changes and relists' confirmations stay.
// Limit and After count the versions read, before the filter: a page may
// hold fewer than Limit.
func WithChangeFilter(f ChangeFilter) HistoryOption {
	return historyOption(func(c *queryConfig) { c.changeFilter = f })
}

// Limit caps the number of versions History returns (the oldest first);
// 0 means no cap.
func Limit(n int) HistoryOption {
	return historyOption(func(c *queryConfig) { c.limit = n })
}

// After restricts History to the records journaled after the record with
// this EventID — a History's Next, the last record of a page that Limit
// cut short — so that pages of a long history, read one after the other,
// hold every version exactly once, even while new versions are appended.
// The first version of the page is compared with that record's.
func After(eventID string) HistoryOption {
	return historyOption(func(c *queryConfig) { c.after = eventID })
}

// newHistoryConfig applies the options of a History call over the
// defaults; History compares status unless IncludeStatus says otherwise.
func newHistoryConfig(opts []HistoryOption) (queryConfig, compareConfig, error) {
	qc := defaultQueryConfig()
	for _, o := range opts {
		if o != nil {
			o.applyHistory(&qc)
		}
	}
	if qc.limit < 0 {
		return qc, compareConfig{}, fmt.Errorf("materialize: %w: negative limit %d", ErrInvalidArgument, qc.limit)
	}
	if !qc.since.IsZero() && !qc.until.IsZero() && qc.until.Before(qc.since) {
		return qc, compareConfig{}, fmt.Errorf("materialize: %w: until %s is before since %s", ErrInvalidArgument, qc.until, qc.since)
	}
	cc, err := qc.compareConfig(true)
	return qc, cc, err
}

// newCompareConfig applies the options of a Diff or CompareObjects call
// over the defaults; they leave status out unless IncludeStatus says
// otherwise.
func newCompareConfig(opts []CompareOption) (compareConfig, error) {
	return compareQuery(opts).compareConfig(false)
}

// compareQuery applies the options of a Diff or CompareObjects call over
// the defaults.
func compareQuery(opts []CompareOption) queryConfig {
	qc := defaultQueryConfig()
	for _, o := range opts {
		if o != nil {
			o.applyCompare(&qc)
		}
	}
	return qc
}

func defaultQueryConfig() queryConfig {
	return queryConfig{defaultIgnores: true, mergeKeys: DefaultMergeKeys()}
}

// compareConfig compiles the comparison the options ask for;
// statusDefault is whether status is compared unless IncludeStatus says.
func (qc queryConfig) compareConfig(statusDefault bool) (compareConfig, error) {
	rules, err := compileRules(qc.rules)
	if err != nil {
		return compareConfig{}, err
	}
	cc := compareConfig{includeStatus: statusDefault, defaultIgnores: qc.defaultIgnores, rules: rules, mergeKeys: qc.mergeKeys}
	if qc.includeStatus != nil {
		cc.includeStatus = *qc.includeStatus
	}
	return cc, nil
}

// Params are what the options of a History or Diff call ask for, resolved
// for a client that sends the question to krply's query API
// (server/client) instead of answering it here.
type Params struct {
	// Since, Until, StreamID, Limit and After are the arguments of the
	// options of those names (zero when not given).
	Since, Until time.Time
	StreamID     string
	Limit        int
	After        string
	// IncludeStatus is IncludeStatus's argument, nil when not given.
	IncludeStatus *bool
	// Custom names the comparison options given other than IncludeStatus
	// (WithIgnoreRules, WithoutDefaultIgnores, WithMergeKeys), in order.
	Custom []string
	// ChangeFilter is WithChangeFilter's argument, nil when not given. A
	// filter that can say its expression (an Expression() string method,
	// as the CEL filters of github.com/krply/krply/cel do) can be sent to
	// a query API, which compiles it again.
	ChangeFilter ChangeFilter
}

// HistoryParams returns what the options of a History call ask for, or
// the error History returns for them.
func HistoryParams(opts ...HistoryOption) (Params, error) {
	qc, _, err := newHistoryConfig(opts)
	if err != nil {
		return Params{}, err
	}
	return qc.params(), nil
}

// CompareParams returns what the options of a Diff call ask for, or the
// error Diff returns for them.
func CompareParams(opts ...CompareOption) (Params, error) {
	qc := compareQuery(opts)
	if _, err := qc.compareConfig(false); err != nil {
		return Params{}, err
	}
	return qc.params(), nil
}

func (qc queryConfig) params() Params {
	return Params{Since: qc.since, Until: qc.until, StreamID: qc.streamID, Limit: qc.limit, After: qc.after,
		IncludeStatus: qc.includeStatus, Custom: slices.Clone(qc.custom), ChangeFilter: qc.changeFilter}
}
