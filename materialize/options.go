package materialize

import (
	"fmt"
	"slices"
	"time"
)

// QueryOption adjusts one ObjectAt, History or Diff call. Options that do
// not concern a call are ignored by it.
type QueryOption interface{ applyQuery(*queryConfig) }

type queryOptionFunc func(*queryConfig)

func (f queryOptionFunc) applyQuery(c *queryConfig) { f(c) }

type queryConfig struct {
	includeStatus  *bool
	defaultIgnores bool
	rules          []IgnoreRule
	mergeKeys      map[string][]string
	since, until   time.Time
	streamID       string
	limit          int
}

// IncludeStatus says whether comparisons include the status field. The
// default is false for Diff (a diff of spec) and true for History.
func IncludeStatus(include bool) QueryOption {
	return queryOptionFunc(func(c *queryConfig) { c.includeStatus = &include })
}

// WithIgnoreRules adds ignore rules to comparisons.
func WithIgnoreRules(rules ...IgnoreRule) QueryOption {
	return queryOptionFunc(func(c *queryConfig) { c.rules = append(c.rules, rules...) })
}

// WithoutDefaultIgnores compares the server-owned fields too (see
// DefaultIgnorePointers).
func WithoutDefaultIgnores() QueryOption {
	return queryOptionFunc(func(c *queryConfig) { c.defaultIgnores = false })
}

// WithMergeKeys matches the items of lists held in fields named field by the
// given item fields, tried in order, before the default merge keys.
func WithMergeKeys(field string, keys ...string) QueryOption {
	return queryOptionFunc(func(c *queryConfig) {
		c.mergeKeys[field] = append(slices.Clone(keys), c.mergeKeys[field]...)
	})
}

// Since restricts History to versions observed at or after t.
func Since(t time.Time) QueryOption {
	return queryOptionFunc(func(c *queryConfig) { c.since = t })
}

// Until restricts History to versions observed at or before t.
func Until(t time.Time) QueryOption {
	return queryOptionFunc(func(c *queryConfig) { c.until = t })
}

// FromStream restricts History to the versions recorded by one stream.
func FromStream(streamID string) QueryOption {
	return queryOptionFunc(func(c *queryConfig) { c.streamID = streamID })
}

// Limit caps the number of versions History returns (the oldest first);
// 0 means no cap.
func Limit(n int) QueryOption {
	return queryOptionFunc(func(c *queryConfig) { c.limit = n })
}

// newQueryConfig applies opts over the defaults; statusDefault is whether
// status is compared unless IncludeStatus says otherwise.
func newQueryConfig(statusDefault bool, opts []QueryOption) (queryConfig, compareConfig, error) {
	qc := queryConfig{defaultIgnores: true, mergeKeys: DefaultMergeKeys()}
	for _, o := range opts {
		if o != nil {
			o.applyQuery(&qc)
		}
	}
	if qc.limit < 0 {
		return qc, compareConfig{}, fmt.Errorf("%w: negative limit %d", ErrInvalidArgument, qc.limit)
	}
	if !qc.since.IsZero() && !qc.until.IsZero() && qc.until.Before(qc.since) {
		return qc, compareConfig{}, fmt.Errorf("%w: until %s is before since %s", ErrInvalidArgument, qc.until, qc.since)
	}
	rules, err := compileRules(qc.rules)
	if err != nil {
		return qc, compareConfig{}, err
	}
	cc := compareConfig{includeStatus: statusDefault, defaultIgnores: qc.defaultIgnores, rules: rules, mergeKeys: qc.mergeKeys}
	if qc.includeStatus != nil {
		cc.includeStatus = *qc.includeStatus
	}
	return qc, cc, nil
}
