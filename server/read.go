package server

import (
	"context"
	"net/http"
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/event"
	"github.com/krply/krply/materialize"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/watch"
)

// statusReporter is a Recorder that tells its streams' state.
type statusReporter interface {
	Status() []watch.StreamStatus
}

// authorizeRead asks whether u may read the history of the namespaces
// (none: cluster scope).
func (h *handler) authorizeRead(ctx context.Context, u *user, namespaces []string) error {
	return h.auth.authorize(ctx, u, "get", ResourceHistory, namespaces...)
}

func (h *handler) clusters(r *http.Request, u *user) (int, any, error) {
	if err := h.authorizeRead(r.Context(), u, nil); err != nil {
		return 0, nil, err
	}
	sts, err := h.j.Streams(r.Context(), "")
	if err != nil {
		return 0, nil, err
	}
	out := ClusterList{Items: []Cluster{}}
	byID := map[string]int{}
	for _, st := range sts {
		i, ok := byID[st.Stream.ClusterID]
		if !ok {
			i = len(out.Items)
			byID[st.Stream.ClusterID] = i
			out.Items = append(out.Items, Cluster{ClusterID: st.Stream.ClusterID})
		}
		c := &out.Items[i]
		c.Streams++
		c.Records += st.Records
		if !st.FirstObservedAt.IsZero() && (c.FirstObservedAt.IsZero() || st.FirstObservedAt.Before(c.FirstObservedAt)) {
			c.FirstObservedAt = st.FirstObservedAt
		}
		if st.LastObservedAt.After(c.LastObservedAt) {
			c.LastObservedAt = st.LastObservedAt
		}
	}
	sort.Slice(out.Items, func(i, j int) bool { return out.Items[i].ClusterID < out.Items[j].ClusterID })
	return http.StatusOK, out, nil
}

// streamMatches reports whether a stream can hold records of the scope.
func streamMatches(st event.Stream, scope materialize.Scope) bool {
	if st.ClusterID != scope.ClusterID {
		return false
	}
	if len(scope.Resources) > 0 && !slices.ContainsFunc(scope.Resources, func(gr schema.GroupResource) bool { return gr.Group == st.Group && gr.Resource == st.Resource }) {
		return false
	}
	return st.Namespace == "" || len(scope.Namespaces) == 0 || slices.Contains(scope.Namespaces, st.Namespace)
}

func (h *handler) listStreams(r *http.Request, u *user) (int, any, error) {
	ctx := r.Context()
	p := h.params(r)
	scope, at, err := p.scopeAt(ctx)
	if err != nil {
		return 0, nil, err
	}
	limit, cur, err := p.page()
	if err != nil {
		return 0, nil, err
	}
	if err := h.authorizeRead(ctx, u, scope.Namespaces); err != nil {
		return 0, nil, err
	}
	// The evidence (in the statuses) is read before the timelines, as
	// storage.CoverageFrom requires.
	sts, err := h.j.Streams(ctx, scope.ClusterID)
	if err != nil {
		return 0, nil, err
	}
	tls, err := storage.Timelines(ctx, h.j, scope.ClusterID)
	if err != nil {
		return 0, nil, err
	}
	timelines := make(map[string]storage.Timeline, len(tls))
	for _, tl := range tls {
		timelines[tl.StreamID] = tl
	}
	live := map[string]*watch.StreamStatus{}
	if rep, ok := h.cfg.recorder.(statusReporter); ok {
		for _, st := range rep.Status() {
			live[st.StreamID] = &st
		}
	}
	out := StreamList{Items: []StreamInfo{}}
	for _, st := range sts {
		if !streamMatches(st.Stream, scope) || (cur != nil && st.StreamID <= cur.Key) {
			continue
		}
		if len(out.Items) == limit {
			out.Next = p.next(cursor{Key: out.Items[limit-1].Status.StreamID})
			break
		}
		tl, ok := timelines[st.StreamID]
		if !ok {
			tl = storage.Timeline{StreamID: st.StreamID, Stream: st.Stream}
		}
		cov, err := storage.CoverageFrom(ctx, h.j, tl, st.CheckpointAt, at)
		if err != nil {
			return 0, nil, err
		}
		info := StreamInfo{Status: st, Coverage: cov, Collector: live[st.StreamID]}
		for _, rec := range tl.Records {
			if _, loss := storage.LossStart(rec); loss {
				info.Gaps = append(info.Gaps, rec)
			}
		}
		out.Items = append(out.Items, info)
	}
	return http.StatusOK, out, nil
}

// recordFilter decides which records of the journal a records query or
// the change feed returns.
type recordFilter struct {
	scope materialize.Scope
	name  string
	// scoped: a namespace, resource or name filter is given.
	scoped bool
	// streams caches, per stream ID, whether the stream matches the scope.
	streams map[string]bool
}

// newRecordFilter reads the scope parameters of records and watch.
func (h *handler) newRecordFilter(ctx context.Context, p *params) (*recordFilter, error) {
	scope, err := p.scope(ctx)
	if err != nil {
		return nil, err
	}
	sts, err := h.allStreams(ctx)
	if err != nil {
		return nil, err
	}
	f := &recordFilter{scope: scope, name: p.q.Get("name"), streams: map[string]bool{}}
	f.scoped = len(scope.Namespaces) > 0 || len(scope.Resources) > 0 || f.name != ""
	for _, st := range sts {
		f.streams[st.StreamID] = f.matches(st.Stream)
	}
	return f, nil
}

// matches reports whether the filter keeps records of a stream: one that
// can hold records of the scope and does not record Secrets.
func (f *recordFilter) matches(st event.Stream) bool {
	return streamMatches(st, f.scope) && !isSecret(st.Group, st.Resource)
}

// keep reports whether rec belongs to the answer. Secrets never do.
func (f *recordFilter) keep(rec *event.Record) bool {
	if rec.ClusterID != f.scope.ClusterID || isSecret(rec.Resource.Group, rec.Resource.Resource) {
		return false
	}
	if rec.StreamID == "" {
		if rec.Resource.Resource == "" {
			// A saved snapshot or plan: about no one stream.
			return !f.scoped
		}
		// An audit correlation: about the object it names.
		if len(f.scope.Resources) > 0 && !slices.Contains(f.scope.Resources, schema.GroupResource{Group: rec.Resource.Group, Resource: rec.Resource.Resource}) {
			return false
		}
		return (f.name == "" || rec.Resource.Name == f.name) && (len(f.scope.Namespaces) == 0 || slices.Contains(f.scope.Namespaces, rec.Resource.Namespace))
	}
	match, ok := f.streams[rec.StreamID]
	if !ok {
		// A stream that appeared after the filter was made.
		st, err := event.ParseStreamID(rec.StreamID)
		match = err == nil && f.matches(st)
		f.streams[rec.StreamID] = match
	}
	if !match {
		return false
	}
	if rec.Resource.Name == "" {
		return f.name == ""
	}
	if f.name != "" && rec.Resource.Name != f.name {
		return false
	}
	return len(f.scope.Namespaces) == 0 || slices.Contains(f.scope.Namespaces, rec.Resource.Namespace)
}

// single returns the one stream the filter can match, "" when there is
// not exactly one or records of no stream (audit correlations) may match.
func (f *recordFilter) single(types []event.RecordType) string {
	if !f.scoped || len(types) == 0 || slices.Contains(types, event.TypeAuditCorrelation) {
		return ""
	}
	one := ""
	for id, match := range f.streams {
		if match {
			if one != "" {
				return ""
			}
			one = id
		}
	}
	return one
}

// query is the storage query that reads the filter's records.
func (f *recordFilter) query(types []event.RecordType) storage.Query {
	if id := f.single(types); id != "" {
		return storage.Query{StreamID: id, Types: types}
	}
	return storage.Query{ClusterID: f.scope.ClusterID, Types: types}
}

// scanBudget bounds the records one records page reads from the journal.
func (h *handler) scanBudget() int { return 10 * h.cfg.maxPage }

func (h *handler) records(r *http.Request, u *user) (int, any, error) {
	ctx := r.Context()
	p := h.params(r)
	f, err := h.newRecordFilter(ctx, p)
	if err != nil {
		return 0, nil, err
	}
	types, err := p.recordTypes()
	if err != nil {
		return 0, nil, err
	}
	q := f.query(types)
	if q.Until, err = p.time("until", p.now); err != nil {
		return 0, nil, err
	}
	if p.q.Has("since") {
		if q.Since, err = p.time("since", p.now); err != nil {
			return 0, nil, err
		}
		if err := p.checkRange("since", q.Since, q.Until); err != nil {
			return 0, nil, err
		}
	}
	switch order := p.q.Get("order"); order {
	case "", "asc":
	case "desc":
		q.Descending = true
	default:
		return 0, nil, badParam("order", "order %q: want asc or desc", order)
	}
	bodies, err := p.boolean("bodies", true)
	if err != nil {
		return 0, nil, err
	}
	q.WithoutBodies = !bodies
	limit, cur, err := p.page()
	if err != nil {
		return 0, nil, err
	}
	if err := h.authorizeRead(ctx, u, f.scope.Namespaces); err != nil {
		return 0, nil, err
	}
	if cur != nil {
		if q.Descending {
			q.BeforeSeq = cur.Seq
		} else {
			q.AfterSeq = cur.Seq
		}
	}
	out := RecordList{Items: []event.Record{}}
	if err := h.readRecords(ctx, p, f, q, limit, &out); err != nil {
		return 0, nil, err
	}
	// The losses are read after the records: a gap appended meanwhile is
	// then listed (it starts at or after the last evidence before it, so
	// at worst it is listed beside records that end before it). Read the
	// other way round, records from both sides of a gap appended in
	// between would be listed without it.
	if out.Gaps, err = h.lossesIn(ctx, f, q.Since, q.Until); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, out, nil
}

// readRecords reads into out the records of q that f keeps, up to limit
// of them or the scan budget, and the cursor of the rest.
func (h *handler) readRecords(ctx context.Context, p *params, f *recordFilter, q storage.Query, limit int, out *RecordList) error {
	scanned := 0
	q.Limit = min(max(limit, 100), h.cfg.maxPage)
	for {
		page, err := h.j.Records(ctx, q)
		if err != nil {
			return err
		}
		for i := range page.Records {
			rec := &page.Records[i]
			scanned++
			if f.keep(rec) {
				out.Items = append(out.Items, *rec)
			}
			if len(out.Items) == limit || scanned >= h.scanBudget() {
				if i < len(page.Records)-1 || page.Next != "" {
					out.Next = p.next(cursor{Seq: rec.IngestSeq})
				}
				return nil
			}
		}
		if page.Next == "" {
			return nil
		}
		q.Cursor = page.Next
	}
}

// lossesIn returns the loss records (gaps, coverage changes to
// unavailable) of the filter's streams whose loss intersects [since,
// until] (a zero since: from the start). A gap's loss ends when it was
// detected (its record, after which the stream relisted); an
// unavailability ends at the stream's next change to available.
func (h *handler) lossesIn(ctx context.Context, f *recordFilter, since, until time.Time) ([]event.Record, error) {
	tls, err := storage.Timelines(ctx, h.j, f.scope.ClusterID)
	if err != nil {
		return nil, err
	}
	var out []event.Record
	for _, tl := range tls {
		if !f.matches(tl.Stream) {
			continue
		}
		for i, rec := range tl.Records {
			start, ok := storage.LossStart(rec)
			if !ok || start.After(until) {
				continue
			}
			end, open := rec.ObservedAt, rec.Type == event.TypeCoverageChange
			if open {
				for _, later := range tl.Records[i+1:] {
					if later.Type == event.TypeCoverageChange && later.Coverage != nil && later.Coverage.Available {
						end, open = later.ObservedAt, false
						break
					}
				}
			}
			if open || since.IsZero() || !end.Before(since) {
				out = append(out, rec)
			}
		}
	}
	return out, nil
}
