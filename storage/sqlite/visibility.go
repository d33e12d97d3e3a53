package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"sort"
	"strings"

	"github.com/krply/krply/storage"
)

// openStream is a stream with open baselines (a begin record and no end
// record): their items are hidden from object queries (storage.Reader).
type openStream struct {
	streamID string
	// minBegin is the seq of the oldest open begin: no item of an open
	// baseline comes before it.
	minBegin int64
	ids      []string
}

// openBaselinesOf returns the streams with open baselines among the
// timeline records with a seq up to bound, ordered by stream ID.
func openBaselinesOf(byStream map[string]storage.Timeline, bound int64) []openStream {
	var out []openStream
	for id, tl := range byStream {
		recs := tl.Records
		if n := len(recs); n > 0 && recs[n-1].IngestSeq > bound {
			recs = recs[:sort.Search(n, func(i int) bool { return recs[i].IngestSeq > bound })]
			tl.Records = recs
		}
		open := tl.OpenBaselines()
		if len(open) == 0 {
			continue
		}
		os := openStream{streamID: id, minBegin: math.MaxInt64}
		for bid, seq := range open {
			os.ids = append(os.ids, bid)
			os.minBegin = min(os.minBegin, seq)
		}
		sort.Strings(os.ids)
		out = append(out, os)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].streamID < out[j].streamID })
	return out
}

// visibility is what a read statement needs to answer as the journal was
// when the statement's caller began: the newest seq then (the statement
// reads nothing newer, so a baseline begun since cannot show its items),
// and the open baselines then, whose items it leaves out.
type visibility struct {
	bound int64
	open  []openStream
	rows  []int64 // the stream row of each open stream
}

// visibility reads the journal's newest seq and its open baselines: one
// query when no timeline changed since the last call.
func (s *Store) visibility(ctx context.Context) (visibility, error) {
	v, err := s.loadTimelines(ctx)
	if err != nil {
		return visibility{}, err
	}
	open := v.open
	if v.maxSeq > v.bound {
		// Another reader loaded records newer than this call's view.
		open = openBaselinesOf(v.byStream, v.bound)
	}
	return s.visibilityOf(ctx, v, open)
}

// visibilityOf returns the visibility of the given open baselines, bound
// by v.bound.
func (s *Store) visibilityOf(ctx context.Context, v timelineView, open []openStream) (visibility, error) {
	vis := visibility{bound: v.bound, open: open}
	for _, os := range open {
		var row int64
		if err := s.streamRow(ctx, os.streamID, &row); err != nil && !errors.Is(err, sql.ErrNoRows) {
			return visibility{}, err
		}
		vis.rows = append(vis.rows, row)
	}
	return vis, nil
}

// where returns the condition, on the records table under alias a, that
// keeps a row visible: a seq up to the bound and not an item of an open
// baseline (other than include). When streamRow is not zero the rows are
// all of that stream, and other streams' baselines are skipped.
func (v visibility) where(a, include string, streamRow int64) (string, []any) {
	cond, args := v.exclude(a, include, streamRow)
	if cond == "" {
		return a + ".seq <= ?", []any{v.bound}
	}
	return a + ".seq <= ? AND " + cond, append([]any{v.bound}, args...)
}

// exclude is where without the bound; "" when no open baseline concerns
// the rows.
func (v visibility) exclude(a, include string, streamRow int64) (string, []any) {
	var b strings.Builder
	var args []any
	for i, os := range v.open {
		if streamRow != 0 && v.rows[i] != streamRow || v.rows[i] == 0 {
			continue
		}
		ids := os.ids
		if include != "" {
			ids = make([]string, 0, len(os.ids))
			for _, id := range os.ids {
				if id != include {
					ids = append(ids, id)
				}
			}
		}
		if len(ids) == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteString(" AND ")
		}
		b.WriteString("NOT (" + a + ".stream = ? AND " + a + ".synthetic <> 0 AND " + a + ".seq > ? AND ")
		args = append(args, v.rows[i], os.minBegin)
		b.WriteString(a + ".baseline IN (SELECT id FROM baselines WHERE baseline_id IN (?" + strings.Repeat(",?", len(ids)-1) + ")))")
		for _, id := range ids {
			args = append(args, id)
		}
	}
	return b.String(), args
}
