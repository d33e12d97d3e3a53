package materialize

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// Predicate decides whether a condition holds for one version of an
// object. Find asks it about the body of each version as received (JSON);
// a deleted object matches nothing, so Find never asks about a deletion.
// The predicate of a request may keep state across calls (a cost budget),
// so Find never calls it concurrently, unless it is a ConcurrentPredicate
// that says it may; it may call it from several goroutines, one after
// another. The body is Find's only for the call:
// Match must not keep it, nor change it. krply's CEL expressions
// (module github.com/krply/krply/cel) are Predicates; any other
// condition can be given as a PredicateFunc.
type Predicate interface {
	Match(ctx context.Context, object json.RawMessage) (bool, error)
}

// ConcurrentPredicate is a Predicate that may say it is safe for
// concurrent use: Find then evaluates the parts of a stream it sweeps
// side by side at the same time, instead of in turn. krply's CEL
// predicates are.
type ConcurrentPredicate interface {
	Predicate
	// Concurrent reports whether Match may be called concurrently.
	Concurrent() bool
}

// PredicateFunc is a function that is a Predicate.
type PredicateFunc func(ctx context.Context, object json.RawMessage) (bool, error)

// Match calls f.
func (f PredicateFunc) Match(ctx context.Context, object json.RawMessage) (bool, error) {
	return f(ctx, object)
}

// Conditions compiles the text of a condition into a Predicate for one
// request. The query server, the kubectl plugin and other front ends take
// one to answer Find with expressions; github.com/krply/krply/cel's
// Conditions is one, for CEL.
type Conditions interface {
	// Compile returns the condition the expression says, or an error
	// wrapping ErrInvalidArgument that says where and why it does not
	// compile.
	Compile(expression string) (Predicate, error)
}

// ErrEvaluation is returned by a Predicate (wrapped, with the cause) when
// its condition cannot be evaluated on one version — a CEL expression that
// reads a field the version lacks. Find counts such a version as not
// matching and says so in a warning; any other error of a Predicate ends
// the Find with that error.
var ErrEvaluation = errors.New("materialize: condition cannot be evaluated on this version")

// FindQuery says which objects Find looks at and which of its answers it
// returns. Its JSON form is what the query API and other tools take.
type FindQuery struct {
	// Scope chooses the streams and objects (cluster, resources,
	// namespaces).
	Scope Scope `json:"scope"`
	// ExcludeResources leaves these group/resources out of Scope, whatever
	// Scope says (the query API leaves Secrets out: a condition over a
	// Secret would reveal its data).
	ExcludeResources []schema.GroupResource `json:"excludeResources,omitempty"`
	// LabelSelector restricts the objects to the versions whose labels
	// match (Kubernetes label selector syntax): a version whose labels do
	// not match counts as not matching.
	LabelSelector string `json:"labelSelector,omitempty"`
	// Since and Until keep only the intervals that overlap [Since, Until];
	// zero does not restrict. The intervals kept are whole: their bounds
	// may lie outside the window.
	Since time.Time `json:"since,omitzero"`
	Until time.Time `json:"until,omitzero"`
	// First keeps, for each object, only its first interval in the window:
	// the first moment the condition became true.
	First bool `json:"first,omitempty"`
	// Now keeps only the intervals still open: the condition is true at
	// the stream's last evidence.
	Now bool `json:"now,omitempty"`
}

// Found is Find's answer: for each object, the intervals of time during
// which the condition was true, and for each stream looked at, the times
// its journal cannot tell.
type Found struct {
	Query FindQuery `json:"query"`
	// Objects are the objects with at least one interval, sorted by group,
	// resource, namespace, name and stream.
	Objects []FoundObject `json:"objects,omitempty"`
	// Streams are the streams looked at, ordered by ID, with their unknown
	// spans.
	Streams []FindStream `json:"streams,omitempty"`
	// Missing lists the requested parts of the scope no stream records.
	Missing []MissingStream `json:"missing,omitempty"`
	// Versions counts the versions read; Evaluated those the condition was
	// evaluated on (a version whose body repeats the one before it reuses
	// that one's answer).
	Versions  int `json:"versions"`
	Evaluated int `json:"evaluated"`
	// Warnings are human-readable notes about the answer.
	Warnings []string `json:"warnings,omitempty"`
	// Next is set on a page of the answer (Found.Page) when more objects
	// follow: the last object of the page, to give as the next Page's
	// After. It is no part of the JSON: the query API carries it in its
	// cursor.
	Next *storage.ObjectID `json:"-"`
}

// Page returns the page of f's objects that page selects, in their order:
// a copy of f with only those objects (sharing f's), and Next set when
// more follow. The entries of one object (one per stream that recorded
// it) are never split between pages, so a page may hold a few entries
// more than page.Limit. An error wrapping ErrInvalidArgument for a Limit
// below 1.
func (f *Found) Page(page Page) (*Found, error) {
	if err := page.validate(); err != nil {
		return nil, err
	}
	objs := f.Objects
	if page.After != nil {
		objs = objs[sort.Search(len(objs), func(i int) bool { return lessObjectID(*page.After, objs[i].Object) }):]
	}
	out := *f
	out.Next = nil
	if len(objs) > page.Limit {
		end := page.Limit
		for end < len(objs) && objs[end].Object == objs[end-1].Object {
			end++
		}
		if end < len(objs) {
			last := objs[end-1].Object
			out.Next = &last
		}
		objs = objs[:end]
	}
	out.Objects = slices.Clip(objs)
	return &out, nil
}

// FoundObject is one object and the intervals during which the condition
// held for it, as one stream recorded it (an object recorded by two streams
// appears once for each).
type FoundObject struct {
	Object    storage.ObjectID `json:"object"`
	StreamID  string           `json:"streamID"`
	Intervals []Interval       `json:"intervals"`
}

// Interval is a span of time during which the condition was true of an
// object: at every moment from From up to (not including) To the stream
// was continuous and the object's version matched.
//
// Each end is either known — a version made the condition true (Opened) or
// false (Closed) — or unknown, because the stream's journal cannot tell
// what happened next to it (a gap, a loss of availability, the object
// leaving the stream's recording rule) or before it (time before the
// stream's first complete baseline, after a gap, or while the object did
// not match the stream's recording rule):
// StartUnknown and EndUnknown then say why. An interval is never extended
// into time the journal cannot tell about, nor cut without saying so.
// Times are ObservedAt: when the collector saw the change.
type Interval struct {
	// From is when the condition became true, or, when StartUnknown is
	// set, when the journal began to show it true.
	From time.Time `json:"from"`
	// Opened is the version that made it true or, with StartUnknown, the
	// version that showed it true when the stream became continuous (a
	// baseline item, say): who appears there made that version, which is
	// not necessarily what made the condition true.
	Opened *Version `json:"opened"`
	// StartUnknown says why the condition may have been true before From.
	StartUnknown string `json:"startUnknown,omitempty"`
	// To is when the condition stopped being true, or, with EndUnknown,
	// since when the journal cannot tell. Zero while the interval is open:
	// still true at the stream's last evidence (FindStream.EvidenceUntil).
	To time.Time `json:"to,omitzero"`
	// Closed is the version that made the condition false (a DELETED one
	// when the object went away); nil when the interval is open or its end
	// is unknown.
	Closed *Version `json:"closed,omitempty"`
	// EndUnknown says why the condition may have stayed true after To.
	EndUnknown string `json:"endUnknown,omitempty"`
}

// Open reports whether the condition is still true at the stream's last
// evidence.
func (iv Interval) Open() bool { return iv.To.IsZero() }

// FindStream is a stream Find looked at and the spans of time in which
// its journal cannot tell what its objects were.
type FindStream struct {
	StreamID string `json:"streamID"`
	// Unknown are those spans in order; the last has no To when the
	// stream is still not continuous. Time before the first span's From,
	// when it is not the zero time, is unknown too (before any baseline).
	Unknown []UnknownSpan `json:"unknown,omitempty"`
	// EvidenceUntil is how far the stream's evidence of continuity
	// reaches: later time is not yet observed.
	EvidenceUntil time.Time `json:"evidenceUntil,omitzero"`
}

// UnknownSpan is a span of time a stream's journal cannot tell about.
type UnknownSpan struct {
	From   time.Time `json:"from,omitzero"`
	To     time.Time `json:"to,omitzero"`
	Reason string    `json:"reason"`
}

// Find returns, for the objects of q.Scope, the intervals of time during
// which cond was true of them (see Interval), with the versions that
// opened and closed each interval and who made them where audit
// correlations tell. Each stream of the scope is read once — object by
// object when the store is a storage.ObjectOrderReader (the SQLite store
// is), in journal order otherwise, with the same answer — and cond is
// evaluated once per distinct body of an object (a version that repeats
// its predecessor's body reuses the answer), so the cost grows with the
// versions recorded, not with the window. A storage.ObjectOrderReader's
// stream is read in parts side by side; a storage.ObjectOrderScanner's
// parts are also swept side by side, each on its own goroutine, calling
// cond in turn, or at the same time when it is a ConcurrentPredicate
// that says it may be.
//
// Find only reads. An error of cond other than ErrEvaluation ends it.
func (m *Materializer) Find(ctx context.Context, q FindQuery, cond Predicate) (*Found, error) {
	if err := validateScope(q.Scope); err != nil {
		return nil, err
	}
	if cond == nil {
		return nil, fmt.Errorf("materialize: %w: Find without a condition", ErrInvalidArgument)
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && q.Until.Before(q.Since) {
		return nil, fmt.Errorf("materialize: %w: until %s is before since %s", ErrInvalidArgument, q.Until, q.Since)
	}
	var sel labels.Selector
	if q.LabelSelector != "" {
		s, err := labels.Parse(q.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("materialize: %w: label selector %q: %v", ErrInvalidArgument, q.LabelSelector, err)
		}
		sel = s
	}
	streams, missing, err := m.contributingStreams(ctx, q.Scope)
	if err != nil {
		return nil, err
	}
	f := &finder{ctx: ctx, cond: cond, selector: sel, found: &Found{Query: q, Missing: missing}}
	if c, ok := cond.(ConcurrentPredicate); ok && c.Concurrent() {
		f.concurrent = true
	}
	for _, st := range streams {
		if slices.Contains(q.ExcludeResources, schema.GroupResource{Group: st.Stream.Group, Resource: st.Stream.Resource}) {
			continue
		}
		if err := f.stream(m.store, q.Scope, st); err != nil {
			return nil, err
		}
	}
	f.found.Objects = keepIntervals(q, f.objects)
	if err := m.findProvenance(ctx, f.found.Objects); err != nil {
		return nil, err
	}
	if f.evalErrors > 0 {
		f.found.Warnings = append(f.found.Warnings, fmt.Sprintf("the condition could not be evaluated on %d versions, counted as not true; the first: %v", f.evalErrors, f.firstEvalError))
	}
	return f.found, nil
}

// finder is the state of one Find.
type finder struct {
	ctx      context.Context
	cond     Predicate
	selector labels.Selector
	found    *Found
	objects  []*findObject
	// concurrent is set when cond may be called concurrently
	// (ConcurrentPredicate); mu serialises its calls otherwise, and
	// guards what the evaluation errors count, when parts of a stream
	// are swept side by side.
	concurrent     bool
	mu             sync.Mutex
	evalErrors     int
	firstEvalError error
	firstEvalSeq   int64
}

// findObject is one object of a stream during the sweep.
type findObject struct {
	id       storage.ObjectID
	streamID string
	// last is the object's last version so far, without its body.
	last event.Record
	// matched says whether the condition holds for last.
	matched bool
	// open is the interval being built; intervals those closed.
	open      *Interval
	intervals []Interval
	walk      walk
	// entered says why the condition may have been true before last, a
	// version that entered its stream's recording rule; "" otherwise.
	entered string
}

// continuityChange is a time at which a stream's continuity changes.
type continuityChange struct {
	at         time.Time
	continuous bool
	reason     string
}

// continuityChanges returns the times at which tl's continuity changes
// and the reason it is not continuous before the first.
func continuityChanges(tl storage.Timeline) (changes []continuityChange, initial string) {
	_, initial = tl.ContinuousAt(time.Time{})
	continuous, reason := false, initial
	for _, at := range tl.ContinuityChanges() {
		c, r := tl.ContinuousAt(at)
		if c != continuous || r != reason {
			changes = append(changes, continuityChange{at: at, continuous: c, reason: r})
			continuous, reason = c, r
		}
	}
	return changes, initial
}

// unknownSpans turns a stream's continuity changes into its unknown spans.
func unknownSpans(changes []continuityChange, initial string) []UnknownSpan {
	spans := []UnknownSpan{{Reason: initial}}
	for _, c := range changes {
		last := &spans[len(spans)-1]
		switch {
		case c.continuous && last.To.IsZero():
			last.To = c.at
		case !c.continuous && !last.To.IsZero():
			spans = append(spans, UnknownSpan{From: c.at, Reason: c.reason})
		case !c.continuous && c.reason != last.Reason:
			// Still unknown, for another reason from here.
			last.To = c.at
			spans = append(spans, UnknownSpan{From: c.at, Reason: c.reason})
		}
	}
	return spans
}

// sweep is the walk through one stream's time. Each object walks it on
// its own: the points at which its versions or the stream's continuity
// change, in order. An object's answer depends only on its versions and
// the stream's continuity, so the stream's records may come in journal
// order or grouped by object (storage.ObjectOrderReader), as long as
// each object's come in the order of their times.
type sweep struct {
	f       *finder
	objects map[storage.ObjectID]*findObject
	order   []*findObject
	// last is the object of the last version applied: records grouped
	// by object come one object at a time.
	last    *findObject
	changes []continuityChange
	initial string
	// ruled is true for a stream with a recording rule.
	ruled bool
	// versions counts the versions applied, evaluated those the
	// condition was evaluated on.
	versions, evaluated int
}

// walk is where an object is in its walk through the stream's time.
type walk struct {
	// next is the stream's next continuity change; continuous and reason
	// the stream's continuity at point, before it is settled.
	next       int
	continuous bool
	reason     string
	point      time.Time
	pending    bool
}

// stream sweeps one stream: every object change, in journal order or
// object by object when the Reader can read so.
func (f *finder) stream(r storage.Reader, scope Scope, st storage.StreamStatus) error {
	// The stream's newest record before its timeline is read: a record
	// appended after it may come after timeline records (a gap, a
	// relist) that the timeline read lacks, so the sweep ends there.
	newest, err := r.Records(f.ctx, storage.Query{StreamID: st.StreamID, Descending: true, Limit: 1, WithoutBodies: true})
	if err != nil {
		return fmt.Errorf("find: records of %s: %w", st.StreamID, err)
	}
	var bound int64
	if len(newest.Records) > 0 {
		bound = newest.Records[0].IngestSeq
	}
	tl, err := storage.StreamTimeline(f.ctx, r, st.StreamID)
	if err != nil {
		return fmt.Errorf("find: timeline of %s: %w", st.StreamID, err)
	}
	changes, initial := continuityChanges(tl)
	f.found.Streams = append(f.found.Streams, FindStream{StreamID: st.StreamID, Unknown: unknownSpans(changes, initial), EvidenceUntil: st.CheckpointAt})
	open := tl.OpenBaselines()
	newSweep := func() *sweep {
		return &sweep{f: f, objects: map[storage.ObjectID]*findObject{}, changes: changes, initial: initial, ruled: st.Stream.Rule() != ""}
	}
	// take applies rec to the sweep when it is a version Find looks at.
	take := func(s *sweep, rec *event.Record) error {
		if rec.IngestSeq > bound || !rec.IsObjectChange() || storage.IsBaselineItem(rec) && inOpen(open, rec.BaselineID) {
			return nil
		}
		if id := storage.ObjectIDOf(*rec); inScope(scope, id.Namespace) {
			return s.version(rec, id)
		}
		return nil
	}
	q := storage.Query{StreamID: st.StreamID, Types: []event.RecordType{event.TypeEvent}, Limit: 1000}
	var sweeps []*sweep
	if or, ok := r.(storage.ObjectOrderReader); ok {
		// The objects in parts, read side by side: reading is most of
		// the work.
		parts, err := or.SplitByObject(f.ctx, st.StreamID, findParts())
		if err != nil {
			return fmt.Errorf("find: records of %s: %w", st.StreamID, err)
		}
		if sc, ok := r.(storage.ObjectOrderScanner); ok {
			// Each part swept on its own: an object's records are all
			// in one part.
			if sweeps, err = f.scanParts(sc, q, parts, newSweep, take); err != nil {
				return fmt.Errorf("find: records of %s: %w", st.StreamID, err)
			}
		} else {
			// The sweep takes each object's records as they come,
			// whatever part they come from.
			s := newSweep()
			sweeps = []*sweep{s}
			if err := f.readAll(or.RecordsByObject, q, parts, s, take); err != nil {
				return fmt.Errorf("find: records of %s: %w", st.StreamID, err)
			}
		}
	} else {
		s := newSweep()
		sweeps = []*sweep{s}
		if err := f.readAll(r.Records, q, []string{""}, s, take); err != nil {
			return fmt.Errorf("find: records of %s: %w", st.StreamID, err)
		}
	}
	for _, s := range sweeps {
		for _, o := range s.order {
			s.settle(o)
			for o.walk.next < len(s.changes) {
				o.walk.point, o.walk.pending = s.changes[o.walk.next].at, true
				s.settle(o)
			}
		}
		f.found.Versions += s.versions
		f.found.Evaluated += s.evaluated
		f.objects = append(f.objects, s.order...)
	}
	return nil
}

// readAll reads the pages of q from each cursor of parts side by side,
// applying each record to s with take.
func (f *finder) readAll(read func(context.Context, storage.Query) (storage.Page, error), q storage.Query, parts []string, s *sweep, take func(*sweep, *event.Record) error) error {
	ctx, cancel := context.WithCancel(f.ctx)
	pages := readParts(ctx, read, q, parts)
	defer func() {
		// The reader is done before Find returns, even after an error.
		cancel()
		for range pages {
		}
	}()
	for page := range pages {
		if page.err != nil {
			return page.err
		}
		for i := range page.Records {
			if err := take(s, &page.Records[i]); err != nil {
				return err
			}
		}
	}
	return nil
}

// scanParts sweeps each part of parts (cursors of SplitByObject) on a
// goroutine of its own, scanning it with sc, and returns their sweeps.
// The first error ends every part's scan.
func (f *finder) scanParts(sc storage.ObjectOrderScanner, q storage.Query, parts []string, newSweep func() *sweep, take func(*sweep, *event.Record) error) ([]*sweep, error) {
	ctx, cancel := context.WithCancel(f.ctx)
	defer cancel()
	sweeps := make([]*sweep, len(parts))
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for i, cursor := range parts {
		s := newSweep()
		sweeps[i] = s
		q := q
		q.Cursor = cursor
		wg.Go(func() {
			err := sc.ScanByObject(ctx, q, func(rec *event.Record) error { return take(s, rec) })
			if err != nil {
				once.Do(func() { first = err })
				cancel()
			}
		})
	}
	wg.Wait()
	if first != nil {
		return nil, first
	}
	return sweeps, nil
}

// readPage is a page of records read ahead, or the error that ended the
// reading.
type readPage struct {
	storage.Page
	err error
}

// findParts is how many parts of a stream Find reads side by side from a
// storage.ObjectOrderReader: one per CPU, at least two (so that the parts
// are always read the same way) and at most four (a store's readers are
// shared with other requests).
func findParts() int { return min(max(runtime.GOMAXPROCS(0), 2), 4) }

// readParts reads the pages of q from each cursor of parts (the parts of
// storage.ObjectOrderReader.SplitByObject, or q's own cursor alone) side
// by side, each one page ahead of the receiver, into one channel, closed
// after every part's last page or an error; cancel ctx to stop the
// reading early.
func readParts(ctx context.Context, read func(context.Context, storage.Query) (storage.Page, error), q storage.Query, parts []string) <-chan readPage {
	pages := make(chan readPage, len(parts))
	var wg sync.WaitGroup
	for _, cursor := range parts {
		q := q
		q.Cursor = cursor
		wg.Go(func() {
			for {
				page, err := read(ctx, q)
				select {
				case pages <- readPage{page, err}:
				case <-ctx.Done():
					return
				}
				if err != nil || page.Next == "" {
					return
				}
				q.Cursor = page.Next
			}
		})
	}
	go func() {
		wg.Wait()
		close(pages)
	}()
	return pages
}

// version applies one version of an object at its time.
func (s *sweep) version(rec *event.Record, id storage.ObjectID) error {
	o := s.last
	if o == nil || o.id != id {
		if o = s.objects[id]; o == nil {
			o = &findObject{id: id, streamID: rec.StreamID, walk: walk{reason: s.initial}}
			s.objects[id] = o
			s.order = append(s.order, o)
		}
		s.last = o
	}
	w := &o.walk
	at := rec.ObservedAt
	if w.pending && at.Before(w.point) {
		// Append keeps ObservedAt in order within a stream; a record
		// out of order counts at the point the object has reached.
		at = w.point
	}
	if !w.pending || at.After(w.point) {
		s.settle(o)
		// The continuity changes before this version's time.
		for w.next < len(s.changes) && s.changes[w.next].at.Before(at) {
			w.point, w.pending = s.changes[w.next].at, true
			s.settle(o)
		}
		w.point, w.pending = at, true
	}
	s.versions++
	matched, err := s.match(o, rec)
	if err != nil {
		return err
	}
	o.entered = ""
	if s.ruled && rec.WatchType == event.Modified && !rec.Synthetic && (o.last.EventID == "" || o.last.IsExclusion()) {
		// A change the stream recorded although it held no version
		// of the object: the version before it did not match the
		// rule, and was not recorded.
		o.entered = event.ExcludedByRule + " before this version"
	}
	o.matched = matched
	o.last = *rec
	o.last.Object = nil
	return nil
}

// settle decides o's current point: the stream's continuity change at it,
// if any, then the truth of the object.
func (s *sweep) settle(o *findObject) {
	w := &o.walk
	if !w.pending {
		return
	}
	w.pending = false
	before, beforeReason := w.continuous, w.reason
	if w.next < len(s.changes) && s.changes[w.next].at.Equal(w.point) {
		c := s.changes[w.next]
		w.next++
		w.continuous, w.reason = c.continuous, c.reason
	}
	o.settle(w.point, w.continuous, w.reason, before, beforeReason)
}

// settle opens or closes o's interval at a point, given the stream's
// continuity at it and just before it.
func (o *findObject) settle(at time.Time, continuous bool, reason string, before bool, beforeReason string) {
	truth := continuous && o.matched
	switch {
	case truth && o.open == nil:
		o.open = &Interval{From: at, Opened: versionOf(o.last)}
		switch {
		case !before:
			o.open.StartUnknown = beforeReason
		case o.entered != "":
			o.open.StartUnknown = o.entered
		}
	case !truth && o.open != nil:
		o.open.To = at
		switch {
		case !continuous:
			o.open.EndUnknown = reason
		case o.last.IsExclusion():
			// The object left the stream's rule: what became of it
			// is not recorded.
			o.open.EndUnknown = o.last.Inferred.Reason
		default:
			o.open.Closed = versionOf(o.last)
		}
		o.intervals = append(o.intervals, *o.open)
		o.open = nil
	}
}

// match evaluates the condition on a version of o, reusing the answer of
// the version before when the body is the same.
func (s *sweep) match(o *findObject, rec *event.Record) (bool, error) {
	f := s.f
	if rec.WatchType == event.Deleted {
		return false, nil
	}
	if o.last.EventID != "" && o.last.WatchType != event.Deleted && rec.ObjectHash != "" && rec.ObjectHash == o.last.ObjectHash {
		return o.matched, nil
	}
	if f.selector != nil {
		var meta struct {
			Metadata struct {
				Labels map[string]string `json:"labels"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(rec.Object, &meta); err != nil {
			return false, fmt.Errorf("find: version %s of %s: %w", rec.Resource.ResourceVersion, describeObject(o.id), err)
		}
		if !f.selector.Matches(labels.Set(meta.Metadata.Labels)) {
			return false, nil
		}
	}
	s.evaluated++
	var ok bool
	var err error
	if f.concurrent {
		ok, err = f.cond.Match(f.ctx, rec.Object)
	} else {
		f.mu.Lock()
		ok, err = f.cond.Match(f.ctx, rec.Object)
		f.mu.Unlock()
	}
	if errors.Is(err, ErrEvaluation) {
		f.mu.Lock()
		defer f.mu.Unlock()
		// The first in the journal, whatever order the records came in.
		if f.evalErrors == 0 || rec.IngestSeq < f.firstEvalSeq {
			f.firstEvalError = fmt.Errorf("%s version %s: %w", describeObject(o.id), rec.Resource.ResourceVersion, err)
			f.firstEvalSeq = rec.IngestSeq
		}
		f.evalErrors++
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("find: %s version %s: %w", describeObject(o.id), rec.Resource.ResourceVersion, err)
	}
	return ok, nil
}

// versionOf returns the version a record is, without its body.
func versionOf(rec event.Record) *Version {
	v := &Version{}
	setVersion(v, rec)
	v.eventID = rec.EventID
	return v
}

func inOpen(open map[string]int64, baselineID string) bool {
	_, ok := open[baselineID]
	return ok
}

// keepIntervals returns the objects with the intervals q keeps, sorted.
func keepIntervals(q FindQuery, objects []*findObject) []FoundObject {
	var out []FoundObject
	for _, o := range objects {
		all := o.intervals
		if o.open != nil {
			all = append(all, *o.open)
		}
		var kept []Interval
		for _, iv := range all {
			if !q.Until.IsZero() && iv.From.After(q.Until) || !q.Since.IsZero() && !iv.Open() && !iv.To.After(q.Since) {
				continue
			}
			if q.Now && !iv.Open() {
				continue
			}
			kept = append(kept, iv)
		}
		if q.First && len(kept) > 1 {
			kept = kept[:1]
		}
		if len(kept) > 0 {
			out = append(out, FoundObject{Object: o.id, StreamID: o.streamID, Intervals: kept})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i].Object, out[j].Object
		if a != b {
			return lessObjectID(a, b)
		}
		return out[i].StreamID < out[j].StreamID
	})
	return out
}

// findProvenance sets who made the versions that bound the intervals.
func (m *Materializer) findProvenance(ctx context.Context, objects []FoundObject) error {
	var versions []*Version
	var ids []string
	for i := range objects {
		for j := range objects[i].Intervals {
			for _, v := range []*Version{objects[i].Intervals[j].Opened, objects[i].Intervals[j].Closed} {
				if v != nil {
					versions = append(versions, v)
					ids = append(ids, v.eventID)
				}
			}
		}
	}
	const batch = 500
	for start := 0; start < len(ids); start += batch {
		end := min(start+batch, len(ids))
		corr, err := m.store.Correlations(ctx, ids[start:end])
		if err != nil {
			return fmt.Errorf("find: audit correlations: %w", err)
		}
		for k := start; k < end; k++ {
			versions[k].Provenance = provenanceOf(versions[k], corr[ids[k]])
		}
	}
	return nil
}
