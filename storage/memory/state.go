package memory

import (
	"sort"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/journal"
)

// state is the journal and its indexes. Every slice of records is in
// IngestSeq order unless its name says otherwise; records are never changed
// after they are stored, so indexes share them.
type state struct {
	seq int64

	all       []*event.Record
	byID      map[string]*event.Record
	byType    map[event.RecordType][]*event.Record
	byCluster map[string][]*event.Record
	streamIdx map[string]*streamIndex
	status    map[string]*storage.StreamStatus
	objects   map[storage.ObjectID]*objectIndex
	// clusterObjects indexes objects by cluster for AliveAt.
	clusterObjects map[string]map[storage.ObjectID]*objectIndex
	// correlations indexes audit correlations by TargetEventID.
	correlations map[string][]*event.Record

	bodies    map[string]*body
	bodyBytes int64
	events    int64
	// openBaselines counts the baselines of all streams that began and
	// did not end; while it is zero no record is hidden.
	openBaselines int
}

type body struct {
	data []byte
	refs int
}

type streamIndex struct {
	all []*event.Record
	// byTime holds all in the order of (ObservedAt, IngestSeq): Records
	// bounded by time seeks in it.
	byTime timeOrder
	// timeline holds copies of the stream's storage.Timeline records; it
	// only grows, so a prefix handed to a reader stays valid.
	timeline []event.Record
	byType   map[event.RecordType][]*event.Record
	objects  map[storage.ObjectID]*objectIndex
	// open holds the IDs of the stream's baselines that have a begin
	// record and no end record; their items are hidden from object
	// queries (storage.Reader). ended holds the IDs that have an end.
	open, ended map[string]bool
}

// objectIndex holds the object-change records of one object (in one stream
// or in all of them).
type objectIndex struct {
	id    storage.ObjectID
	bySeq []*event.Record
	// byTime is the order of LatestAt.
	byTime timeOrder
}

// timeOrder is a list of records ordered by (ObservedAt, IngestSeq).
type timeOrder []*event.Record

// insert adds rec. Records mostly arrive in time order: it looks for the
// place from the end.
func (o *timeOrder) insert(rec *event.Record) {
	l := *o
	i := len(l)
	for i > 0 && timeLess(rec, l[i-1]) {
		i--
	}
	l = append(l, nil)
	copy(l[i+1:], l[i:])
	l[i] = rec
	*o = l
}

// upTo returns the number of records observed at or before at: the index
// of the first one observed later.
func (o timeOrder) upTo(at time.Time) int {
	return sort.Search(len(o), func(i int) bool { return o[i].ObservedAt.After(at) })
}

func (st *state) init() {
	*st = state{
		byID:           map[string]*event.Record{},
		byType:         map[event.RecordType][]*event.Record{},
		byCluster:      map[string][]*event.Record{},
		streamIdx:      map[string]*streamIndex{},
		status:         map[string]*storage.StreamStatus{},
		objects:        map[storage.ObjectID]*objectIndex{},
		clusterObjects: map[string]map[storage.ObjectID]*objectIndex{},
		correlations:   map[string][]*event.Record{},
		bodies:         map[string]*body{},
		seq:            st.seq,
	}
}

// add indexes a record whose IngestSeq is larger than every stored one.
// updateStatus applies it to its stream's status (Append does; a rebuild
// after compaction recomputes statuses instead).
func (st *state) add(rec *event.Record, updateStatus bool) {
	st.shareBody(rec)
	st.all = append(st.all, rec)
	st.byID[rec.EventID] = rec
	st.byType[rec.Type] = append(st.byType[rec.Type], rec)
	st.byCluster[rec.ClusterID] = append(st.byCluster[rec.ClusterID], rec)
	if rec.Type == event.TypeEvent {
		st.events++
	}
	if rec.Type == event.TypeAuditCorrelation {
		st.correlations[rec.Audit.TargetEventID] = append(st.correlations[rec.Audit.TargetEventID], rec)
	}
	if rec.StreamID == "" {
		return
	}
	si := st.addToStream(rec)
	if updateStatus {
		ss := st.status[rec.StreamID]
		if ss == nil {
			n := journal.NewStatus(rec.StreamID)
			ss = &n
			st.status[rec.StreamID] = ss
		}
		journal.ApplyStatus(ss, rec)
	}
	if rec.IsObjectChange() {
		st.addObjectChange(si, rec)
	}
}

// shareBody stores rec's body once per hash: a body stored already
// replaces rec's copy.
func (st *state) shareBody(rec *event.Record) {
	if len(rec.Object) == 0 {
		return
	}
	if b, ok := st.bodies[rec.ObjectHash]; ok {
		b.refs++
		rec.Object = b.data
		return
	}
	st.bodies[rec.ObjectHash] = &body{data: rec.Object, refs: 1}
	st.bodyBytes += int64(len(rec.Object))
}

// addToStream adds rec to its stream's index (made on first use), which
// it returns.
func (st *state) addToStream(rec *event.Record) *streamIndex {
	si := st.streamIdx[rec.StreamID]
	if si == nil {
		si = &streamIndex{byType: map[event.RecordType][]*event.Record{}, objects: map[storage.ObjectID]*objectIndex{}}
		st.streamIdx[rec.StreamID] = si
	}
	si.all = append(si.all, rec)
	si.byTime.insert(rec)
	si.byType[rec.Type] = append(si.byType[rec.Type], rec)
	if storage.IsTimelineRecord(rec) {
		si.timeline = append(si.timeline, *copyRecord(rec, false))
		if rec.Type == event.TypeBaseline && rec.Baseline != nil && rec.BaselineID != "" {
			st.baselineMarker(si, rec)
		}
	}
	return si
}

// addObjectChange adds an object change of the stream si to the indexes
// of its object: across streams, by cluster, and within the stream.
func (st *state) addObjectChange(si *streamIndex, rec *event.Record) {
	id := storage.ObjectIDOf(*rec)
	oi := st.objects[id]
	if oi == nil {
		oi = &objectIndex{id: id}
		st.objects[id] = oi
		co := st.clusterObjects[id.ClusterID]
		if co == nil {
			co = map[storage.ObjectID]*objectIndex{}
			st.clusterObjects[id.ClusterID] = co
		}
		co[id] = oi
	}
	oi.add(rec)
	soi := si.objects[id]
	if soi == nil {
		soi = &objectIndex{id: id}
		si.objects[id] = soi
	}
	soi.add(rec)
}

// baselineMarker keeps si's open baselines up to date with a begin or end.
func (st *state) baselineMarker(si *streamIndex, rec *event.Record) {
	id := rec.BaselineID
	switch rec.Baseline.Phase {
	case event.BaselineBegin:
		if !si.ended[id] && !si.open[id] {
			if si.open == nil {
				si.open = map[string]bool{}
			}
			si.open[id] = true
			st.openBaselines++
		}
	case event.BaselineEnd:
		if si.ended == nil {
			si.ended = map[string]bool{}
		}
		si.ended[id] = true
		if si.open[id] {
			delete(si.open, id)
			st.openBaselines--
		}
	}
}

// visibility says which records object queries leave out: the items of
// open baselines, except those of the baseline named include.
type visibility struct {
	st      *state
	include string
}

func (st *state) visibility(include string) visibility { return visibility{st, include} }

// hidden reports whether rec is an item of an open baseline.
func (v visibility) hidden(rec *event.Record) bool {
	if v.st.openBaselines == 0 || !storage.IsBaselineItem(rec) || rec.BaselineID == v.include {
		return false
	}
	si := v.st.streamIdx[rec.StreamID]
	return si != nil && si.open[rec.BaselineID]
}

func (oi *objectIndex) add(rec *event.Record) {
	oi.bySeq = append(oi.bySeq, rec)
	oi.byTime.insert(rec)
}

func timeLess(a, b *event.Record) bool {
	if !a.ObservedAt.Equal(b.ObservedAt) {
		return a.ObservedAt.Before(b.ObservedAt)
	}
	return a.IngestSeq < b.IngestSeq
}

// latestAt returns the last record observed at or before at that v does
// not hide, or nil.
func (oi *objectIndex) latestAt(at time.Time, v visibility) *event.Record {
	if oi == nil {
		return nil
	}
	for i := oi.byTime.upTo(at); i > 0; i-- {
		if rec := oi.byTime[i-1]; !v.hidden(rec) {
			return rec
		}
	}
	return nil
}

func (st *state) latestAt(obj storage.ObjectID, at time.Time) *event.Record {
	return st.objects[obj].latestAt(at, st.visibility(""))
}

func (st *state) streams(clusterID string) []storage.StreamStatus {
	out := make([]storage.StreamStatus, 0, len(st.status))
	for _, ss := range st.status {
		if clusterID != "" && ss.Stream.ClusterID != clusterID {
			continue
		}
		out = append(out, *ss)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StreamID < out[j].StreamID })
	return out
}

// timelines returns the timelines of a cluster's streams ("" for all),
// ordered by stream ID, sharing the records.
func (st *state) timelines(clusterID string) []storage.Timeline {
	streams := st.streams(clusterID)
	out := make([]storage.Timeline, len(streams))
	for i, ss := range streams {
		out[i] = storage.Timeline{StreamID: ss.StreamID, Stream: ss.Stream}
		if si := st.streamIdx[ss.StreamID]; si != nil {
			out[i].Records = si.timeline[:len(si.timeline):len(si.timeline)]
		}
	}
	return out
}

func (st *state) history(obj storage.ObjectID, q storage.HistoryQuery) []event.Record {
	oi := st.objects[obj]
	if oi == nil {
		return nil
	}
	var out []event.Record
	v := st.visibility("")
	for _, rec := range oi.bySeq {
		if q.StreamID != "" && rec.StreamID != q.StreamID || rec.IngestSeq <= q.AfterSeq || v.hidden(rec) {
			continue
		}
		if !q.Since.IsZero() && rec.ObservedAt.Before(q.Since) {
			continue
		}
		if !q.Until.IsZero() && rec.ObservedAt.After(q.Until) {
			continue
		}
		out = append(out, *copyRecord(rec, !q.WithoutBodies))
		if q.Limit > 0 && len(out) == q.Limit {
			break
		}
	}
	return out
}

// inScope reports whether an object matches the cluster, namespace,
// group and resource of q that are set.
func inScope(q storage.AliveQuery, id storage.ObjectID) bool {
	return (q.Namespace == "" || id.Namespace == q.Namespace) && (q.Group == "" || id.Group == q.Group) &&
		(q.Resource == "" || id.Resource == q.Resource) && (q.ClusterID == "" || id.ClusterID == q.ClusterID)
}

func (st *state) aliveAt(q storage.AliveQuery) []event.Record {
	var objs map[storage.ObjectID]*objectIndex
	switch {
	case q.StreamID != "":
		if si := st.streamIdx[q.StreamID]; si != nil {
			objs = si.objects
		}
	case q.ClusterID != "":
		objs = st.clusterObjects[q.ClusterID]
	default:
		objs = st.objects
	}
	alive := make([]*event.Record, 0, len(objs))
	v := st.visibility(q.IncludeBaseline)
	for id, oi := range objs {
		if !inScope(q, id) {
			continue
		}
		if rec := oi.latestAt(q.At, v); rec != nil && rec.WatchType != event.Deleted {
			alive = append(alive, rec)
		}
	}
	sortByObject(alive)
	out := make([]event.Record, len(alive))
	for i, rec := range alive {
		out[i] = *copyRecord(rec, !q.WithoutBodies)
	}
	return out
}

// byResourceVersion returns the first real record of obj with the
// resourceVersion (and uid), else the first visible synthetic one, or nil;
// see storage.Reader.EventByResourceVersion.
func (st *state) byResourceVersion(obj storage.ObjectID, uid, rv string) *event.Record {
	oi := st.objects[obj]
	if oi == nil {
		return nil
	}
	v := st.visibility("")
	var synthetic *event.Record
	for _, rec := range oi.bySeq {
		if rec.Resource.ResourceVersion != rv || uid != "" && rec.Resource.UID != uid {
			continue
		}
		if !rec.Synthetic {
			return rec
		}
		if synthetic == nil && !v.hidden(rec) {
			synthetic = rec
		}
	}
	return synthetic
}

// records answers a Query: it picks the narrowest index, bounds it by
// sequence with binary search and merges the candidate lists in order.
func (st *state) records(q storage.Query) (storage.Page, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = journal.DefaultLimit
	}
	after, before, err := seqBounds(q)
	if err != nil {
		return storage.Page{}, err
	}
	it := newMerge(st.sources(q), after, before, q.Descending)
	var page storage.Page
	for rec := it.next(); rec != nil; rec = it.next() {
		if !matches(q, rec) {
			continue
		}
		if len(page.Records) == limit {
			page.Next = journal.EncodeCursor(page.Records[limit-1].IngestSeq)
			break
		}
		page.Records = append(page.Records, *copyRecord(rec, !q.WithoutBodies))
	}
	return page, nil
}

// seqBounds returns the exclusive IngestSeq bounds of q, its cursor
// included (0 where there is none).
func seqBounds(q storage.Query) (after, before int64, err error) {
	after, before = q.AfterSeq, q.BeforeSeq
	if q.Cursor == "" {
		return after, before, nil
	}
	c, err := journal.DecodeCursor(q.Cursor)
	if err != nil {
		return 0, 0, err
	}
	if q.Descending {
		if before == 0 || c < before {
			before = c
		}
	} else if c > after {
		after = c
	}
	return after, before, nil
}

// sources returns the narrowest lists that hold every record matching q,
// in IngestSeq order: the stream's (per type), the types', the cluster's
// or the whole journal; a stream's cut by time when q has an Until.
func (st *state) sources(q storage.Query) [][]*event.Record {
	var sources [][]*event.Record
	switch {
	case q.StreamID != "":
		si := st.streamIdx[q.StreamID]
		if si == nil {
			return nil
		}
		if len(q.Types) == 0 {
			sources = append(sources, si.all)
		}
		for _, t := range uniqueTypes(q.Types) {
			sources = append(sources, si.byType[t])
		}
		if !q.Until.IsZero() {
			sources = si.boundByTime(sources, q.Until)
		}
	case len(q.Types) > 0:
		for _, t := range uniqueTypes(q.Types) {
			sources = append(sources, st.byType[t])
		}
	case q.ClusterID != "":
		sources = append(sources, st.byCluster[q.ClusterID])
	default:
		sources = append(sources, st.all)
	}
	return sources
}

// matches reports whether rec, from q's sources, matches q's cluster and
// time bounds (the sources decide the stream and types).
func matches(q storage.Query, rec *event.Record) bool {
	if q.ClusterID != "" && rec.ClusterID != q.ClusterID {
		return false
	}
	if !q.Since.IsZero() && rec.ObservedAt.Before(q.Since) {
		return false
	}
	return q.Until.IsZero() || !rec.ObservedAt.After(q.Until)
}

// boundByTime cuts each of the stream's lists (sources, in IngestSeq
// order) after the stream's last record observed at or before until, by
// (ObservedAt, IngestSeq), so that a query bounded by time never walks the
// records after it; match still filters by time. Within a stream
// ObservedAt does not decrease in IngestSeq order (storage.Writer.Append's
// contract), except for the baseline markers of a compaction, which take
// freed sequence numbers among records observed earlier than they are
// (see storage/compaction): cutting by sequence number after the
// last record in time order keeps them, where cutting at the first record
// observed after until in sequence order would cut at a marker and lose
// the records after it.
func (si *streamIndex) boundByTime(sources [][]*event.Record, until time.Time) [][]*event.Record {
	n := si.byTime.upTo(until)
	if n == 0 {
		return nil
	}
	bound := si.byTime[n-1].IngestSeq
	out := make([][]*event.Record, len(sources))
	for i, s := range sources {
		out[i] = s[:sort.Search(len(s), func(j int) bool { return s[j].IngestSeq > bound })]
	}
	return out
}

func uniqueTypes(types []event.RecordType) []event.RecordType {
	seen := make(map[event.RecordType]bool, len(types))
	out := types[:0:0]
	for _, t := range types {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	return out
}

// merge walks several IngestSeq-ordered lists as one, within (after, before).
type merge struct {
	lists [][]*event.Record
	desc  bool
}

func newMerge(sources [][]*event.Record, after, before int64, desc bool) *merge {
	m := &merge{desc: desc}
	for _, s := range sources {
		lo := sort.Search(len(s), func(i int) bool { return s[i].IngestSeq > after })
		hi := len(s)
		if before > 0 {
			hi = sort.Search(len(s), func(i int) bool { return s[i].IngestSeq >= before })
		}
		if lo < hi {
			m.lists = append(m.lists, s[lo:hi])
		}
	}
	return m
}

func (m *merge) next() *event.Record {
	best := -1
	for i, l := range m.lists {
		if len(l) == 0 {
			continue
		}
		if best < 0 {
			best = i
			continue
		}
		b := m.lists[best]
		if m.desc && l[len(l)-1].IngestSeq > b[len(b)-1].IngestSeq || !m.desc && l[0].IngestSeq < b[0].IngestSeq {
			best = i
		}
	}
	if best < 0 {
		return nil
	}
	l := m.lists[best]
	if m.desc {
		m.lists[best] = l[:len(l)-1]
		return l[len(l)-1]
	}
	m.lists[best] = l[1:]
	return l[0]
}
