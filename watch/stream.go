package watch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// resumeSyncDelay is how long a watch resumed from a durable checkpoint must
// stay open without an error (a 410 arrives at once) before the stream
// counts as synced, when no event arrived earlier.
const resumeSyncDelay = time.Second

// Why a watch ended without an error from the server.
var (
	errWatchClosed = errors.New("watch closed by the server")
	errWatchIdle   = errors.New("watch idle for too long")
	// errContinueExpired: the continue token of a paginated list expired
	// (410); the list starts over with a new baseline.
	errContinueExpired = errors.New("continue token expired")
	// errWatchListUnsupported: the server does not support WatchList.
	errWatchListUnsupported = errors.New("WatchList not supported")
	// errNoListRV: a list came without a resourceVersion, so no watch can
	// start from it; the stream relists after a backoff.
	errNoListRV = errors.New("list returned no resourceVersion to watch from")
)

// stream records one list+watch. Its run goroutine owns every field above
// mu; the fields below mu are shared with Status and the committer.
type stream struct {
	c          *Collector
	res        Resource
	stream     event.Stream
	id         string
	discovered bool // found by rediscovery after Start
	redact     bool
	log        logr.Logger
	src        source
	clock      clock.WithTicker
	backoff    *backoff
	m          streamMetrics

	// stampMu guards stampedAt, the latest ObservedAt the stream stamped on
	// a record: observedNow never goes below it, because the store's
	// time-bounded queries rely on ObservedAt not decreasing within a
	// stream, and a wall clock can step backwards.
	stampMu   sync.Mutex
	stampedAt time.Time

	// rv is the resourceVersion the stream is continuous up to (submitted
	// to the committer, which writes in order or stops everything), and
	// lastAt the ObservedAt of the record that carried it.
	rv     string
	lastAt time.Time
	// covered is true when the journal says the stream is continuous: a
	// complete baseline and no gap or unavailability since.
	covered bool
	// available mirrors the journal's last coverage change.
	available bool
	// lossFrom is when continuity was lost, the From of inferred deletions.
	lossFrom time.Time
	// openGap is the EventID of the gap the next complete baseline closes
	// (Baseline.ClosesGap); empty when no gap is open.
	openGap string
	// hadHistory is true when the journal held records of the stream when
	// the current baseline began (read from the store at each relist), so
	// the baseline is a relist and must look for inferred deletions.
	hadHistory bool
	// interrupted is true when the journal holds an initial baseline that
	// never ended (the recorder was killed mid-list) and no complete one:
	// the next baseline is the initial one again, not a relist after a
	// gap (there is none). Its items stay invisible (storage.Reader).
	interrupted bool
	// prior maps the key of every object the journal held alive when the
	// current relist began to that object's last record (without body); a
	// relist item under the same key with another UID replaced it.
	prior        map[storage.ObjectID]event.Record
	useWatchList bool
	// watchListIncomplete counts WatchLists that ended before their
	// initial-events-end bookmark; in auto mode two of them turn it off.
	watchListIncomplete int
	productive          bool // the current watch delivered something

	mu        sync.Mutex
	state     StreamState
	synced    bool
	degraded  string
	coveredAt time.Time
	durableRV string
	durableAt time.Time
	gaps      int
	events    int64
	bytes     int64
	baselines int
	fatal     error
}

func newStream(c *Collector, r Resource, st event.Stream, discovered bool) *stream {
	s := &stream{
		c:          c,
		res:        r,
		stream:     st,
		id:         st.ID(),
		discovered: discovered,
		redact:     r.isSecret() && !c.cfg.keepSecretValues,
		clock:      c.cfg.clock,
		backoff:    newBackoff(c.cfg.backoffMin, c.cfg.backoffMax, c.cfg.clock),
		available:  true,
		state:      StateStarting,
	}
	s.log = c.log.WithValues("stream", s.id)
	s.m = newStreamMetrics(c.cfg.metrics, s.id)
	ns := ""
	if r.Namespaced {
		ns = st.Namespace
	}
	switch {
	case c.raw != nil:
		s.src = newRawSource(c.raw, r.GVR(), ns)
	case ns != "":
		s.src = dynamicSource{ri: c.dyn.Resource(r.GVR()).Namespace(ns)}
	default:
		s.src = dynamicSource{ri: c.dyn.Resource(r.GVR())}
	}
	switch c.cfg.watchList {
	case WatchListOn:
		s.useWatchList = true
	case WatchListAuto:
		s.useWatchList = c.raw != nil || !watchlist.DoesClientNotSupportWatchListSemantics(c.dyn)
	}
	return s
}

// run is the stream's state machine; it returns when ctx ends or the store
// fails.
func (s *stream) run(ctx context.Context) {
	defer s.setState(StateStopped, "")
	if err := s.load(ctx); err != nil {
		s.stop(ctx, err)
		return
	}
	for ctx.Err() == nil {
		var err error
		if s.covered && s.rv != "" {
			err = s.watch(ctx, nil)
		} else {
			err = s.relist(ctx)
		}
		if !s.handle(ctx, err) {
			return
		}
	}
}

// observedNow returns the ObservedAt for a record the stream writes now:
// the clock's time, or the last one stamped if the clock stepped back.
func (s *stream) observedNow() time.Time {
	now := s.clock.Now()
	s.stampMu.Lock()
	defer s.stampMu.Unlock()
	if now.Before(s.stampedAt) {
		now = s.stampedAt
	}
	s.stampedAt = now
	return now
}

// load reads the stream's durable state: a stream the journal says is
// covered and has a checkpoint resumes its watch from that checkpoint.
func (s *stream) load(ctx context.Context) error {
	st, err := s.c.store.StreamStatus(ctx, s.id)
	if errors.Is(err, storage.ErrNotFound) {
		s.log.Info("new stream: taking the initial baseline")
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: status of %s: %w", ErrStore, s.id, err)
	}
	cov, err := storage.CoverageAt(ctx, s.c.store, s.id, s.clock.Now())
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	s.rv, s.lastAt = st.CheckpointRV, st.CheckpointAt
	s.stampMu.Lock()
	s.stampedAt = st.LastObservedAt
	s.stampMu.Unlock()
	s.available = st.Available
	s.hadHistory = st.Records > 0
	s.covered = cov.Covered
	if !s.covered {
		s.lossFrom = st.CheckpointAt
		for _, g := range cov.Gaps {
			if g.Type == event.TypeGap {
				s.openGap = g.EventID
			}
			if from, ok := storage.LossStart(g); ok && (s.lossFrom.IsZero() || from.Before(s.lossFrom)) {
				s.lossFrom = from
			}
		}
		if s.lossFrom.IsZero() {
			s.lossFrom = st.FirstObservedAt
		}
	}
	s.mu.Lock()
	s.durableRV, s.durableAt, s.gaps = st.CheckpointRV, st.CheckpointAt, st.Gaps
	if s.covered {
		s.coveredAt = st.LastBaselineEndAt
	}
	s.mu.Unlock()
	s.m.covered.Set(boolGauge(s.covered))
	s.interrupted = st.OpenBaselineID != "" && st.LastBaselineID == ""
	switch {
	case s.covered && s.rv != "":
		s.log.Info("resuming from the durable checkpoint", "resourceVersion", s.rv, "checkpointAt", s.lastAt)
	case s.interrupted:
		s.log.Info("initial baseline interrupted; relisting", "interruptedBaseline", st.OpenBaselineID)
	case st.OpenBaselineID != "":
		s.log.Info("journal not continuous for this stream: relisting", "reason", cov.Reason, "interruptedBaseline", st.OpenBaselineID)
	default:
		s.log.Info("journal not continuous for this stream: relisting", "reason", cov.Reason)
	}
	return nil
}

// interruptedReason is the Baseline.Reason of the initial baseline taken
// again after one that never ended.
const interruptedReason = "initial baseline interrupted"

// handle reacts to the end of a list or watch; it returns false when the
// stream must stop.
func (s *stream) handle(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if errors.Is(err, ErrStore) {
		s.stop(ctx, err)
		return false
	}
	if err == nil {
		return true
	}
	wait := true
	switch {
	case errors.Is(err, errWatchClosed) || errors.Is(err, errWatchIdle):
		// Reconnect from the last resourceVersion: no gap. A watch that
		// delivered nothing before closing waits, so a server (or proxy)
		// that closes every watch at once does not make a hot loop.
		s.log.V(1).Info("watch ended; reconnecting from the last resourceVersion", "reason", err.Error(), "resourceVersion", s.rv)
		wait = !s.productive
	case isGone(err):
		s.m.errors.Inc()
		s.log.Info("resourceVersion too old (410): recording a gap and relisting", "lastResourceVersion", s.rv, "lastDurableAt", s.lastAt, "error", err.Error())
		if gerr := s.recordGap(ctx, "410 Gone: "+err.Error()); gerr != nil {
			return s.handle(ctx, gerr)
		}
		// Relist at once, but not in a loop if lists keep failing so.
		wait = s.backoff.failures > 0
		if !wait {
			s.backoff.failures++
		}
	case isUnavailable(err):
		s.m.errors.Inc()
		if uerr := s.markUnavailable(ctx, err); uerr != nil {
			return s.handle(ctx, uerr)
		}
	default:
		s.m.errors.Inc()
		s.log.Info("list/watch failed; retrying with backoff", "error", err.Error(), "backoff", s.backoff.next())
		s.setState(StateBackoff, err.Error())
	}
	if !wait {
		return true
	}
	return s.backoff.wait(ctx) == nil
}

func isGone(err error) bool {
	return apierrors.IsResourceExpired(err) || apierrors.IsGone(err) || apierrors.HasStatusCause(err, metav1.CauseTypeResourceVersionTooLarge)
}

func isUnavailable(err error) bool {
	return apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsUnauthorized(err) ||
		apierrors.IsMethodNotSupported(err)
}

// recordGap writes a gap from the last durable moment to now, unless the
// journal already says the stream is not covered.
func (s *stream) recordGap(ctx context.Context, reason string) error {
	if !s.covered {
		return nil
	}
	now := s.observedNow()
	gap := s.gapRecord(s.lastAt, now, reason, s.rv)
	if err := s.c.committer.submit(ctx, writeItem{stream: s, recs: []event.Record{gap}}, true); err != nil {
		return err
	}
	s.openGap = gap.EventID
	s.log.Info("gap recorded", "from", gap.Gap.From, "to", gap.Gap.To, "lastResourceVersion", s.rv, "reason", reason)
	s.loseCoverage(s.lastAt)
	return nil
}

// markUnavailable records that the server denies or does not serve the
// stream: a gap from the last durable moment when the stream was covered,
// and a coverage change, both once per outage.
func (s *stream) markUnavailable(ctx context.Context, cause error) error {
	reason := cause.Error()
	code := 0
	var status apierrors.APIStatus
	if errors.As(cause, &status) {
		code = int(status.Status().Code)
		reason = fmt.Sprintf("%d %s: %s", code, status.Status().Reason, status.Status().Message)
	}
	s.setState(StateUnavailable, reason)
	if !s.available {
		s.log.V(1).Info("stream still unavailable", "reason", reason, "backoff", s.backoff.next())
		return nil
	}
	now := s.observedNow()
	var recs []event.Record
	from := now
	if s.covered {
		from = s.lastAt
		recs = append(recs, s.gapRecord(s.lastAt, now, reason, s.rv))
	}
	recs = append(recs, s.coverageRecord(false, reason, code, now))
	if err := s.c.committer.submit(ctx, writeItem{stream: s, recs: recs}, true); err != nil {
		return err
	}
	if recs[0].Type == event.TypeGap {
		s.openGap = recs[0].EventID
	}
	s.log.Info("stream unavailable: coverage lost, retrying with backoff", "reason", reason, "code", code, "from", from)
	s.available = false
	s.loseCoverage(from)
	return nil
}

func (s *stream) loseCoverage(from time.Time) {
	if s.covered || s.lossFrom.IsZero() {
		s.lossFrom = from
	}
	s.covered = false
	s.m.covered.Set(0)
	s.mu.Lock()
	s.coveredAt = time.Time{}
	s.mu.Unlock()
}

// stop ends the stream for good: a store failure stops the Collector.
func (s *stream) stop(ctx context.Context, err error) {
	if ctx.Err() != nil && !errors.Is(err, ErrStore) {
		return
	}
	s.mu.Lock()
	s.fatal = err
	s.mu.Unlock()
	s.log.Error(err, "stream stopped")
	s.c.mu.Lock()
	cancel := s.c.cancel
	s.c.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// relist takes a baseline. When the journal was continuous up to here but
// there is no resourceVersion to resume from, it records a gap first, so
// that the journal never claims continuity across the relist.
func (s *stream) relist(ctx context.Context) error {
	if err := s.recordGap(ctx, "no resourceVersion to resume from"); err != nil {
		return err
	}
	// Whether this is a relist comes from the journal: every record
	// submitted before is durable here (a gap or coverage change was
	// waited for), and a stream with records may have objects alive.
	if err := s.loadPrior(ctx); err != nil {
		return err
	}
	defer func() {
		s.prior = nil
		if s.covered {
			s.interrupted = false
		}
	}()
	reason := "initial"
	switch {
	case !s.available:
		reason = "coverage restored"
	case s.interrupted:
		reason = interruptedReason
	case s.hadHistory:
		reason = "relist after gap"
	}
	if s.available {
		// A stream the server denies stays unavailable (and degraded) in
		// its status while it retries; it turns to watching once a list
		// succeeds.
		s.setState(StateListing, "")
	}
	if s.useWatchList {
		err := s.watchListBaseline(ctx, reason)
		if !errors.Is(err, errWatchListUnsupported) {
			return err
		}
		s.log.Info("WatchList not supported; using paginated lists", "error", err.Error())
		s.useWatchList = false
	}
	for restarts := 0; ; restarts++ {
		err := s.listBaseline(ctx, reason)
		if !errors.Is(err, errContinueExpired) || restarts >= 3 {
			return err
		}
		s.log.Info("list continue token expired; restarting the baseline", "error", err.Error())
	}
}

// loadPrior reads from the journal whether the stream has records and, if
// so, the keys and UIDs of the objects it holds alive now.
func (s *stream) loadPrior(ctx context.Context) error {
	s.prior = nil
	st, err := s.c.store.StreamStatus(ctx, s.id)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		s.hadHistory = false
		return nil
	case err != nil:
		return fmt.Errorf("%w: status of %s: %w", ErrStore, s.id, err)
	}
	s.hadHistory = st.Records > 0
	if !s.hadHistory {
		return nil
	}
	alive, err := s.c.store.AliveAt(ctx, storage.AliveQuery{At: s.observedNow(), StreamID: s.id, WithoutBodies: true})
	if err != nil {
		return fmt.Errorf("%w: alive objects of %s: %w", ErrStore, s.id, err)
	}
	s.prior = make(map[storage.ObjectID]event.Record, len(alive))
	for _, rec := range alive {
		s.prior[storage.ObjectIDOf(rec)] = rec
	}
	return nil
}

// replaced returns the inferred deletion of the object the journal held
// alive under rec's key when rec, a relist item, has another UID: the old
// object was deleted and a new one created under its name during the gap.
// The deletion goes right before the item, with the item's ObservedAt, so
// that the item stays the key's last record.
func (s *stream) replaced(ctx context.Context, rec event.Record) (event.Record, bool, error) {
	key := storage.ObjectIDOf(rec)
	old, ok := s.prior[key]
	if !ok {
		return event.Record{}, false, nil
	}
	delete(s.prior, key)
	if old.Resource.UID == "" || rec.Resource.UID == "" || old.Resource.UID == rec.Resource.UID {
		return event.Record{}, false, nil
	}
	last, err := s.c.store.LatestAt(ctx, key, rec.ObservedAt)
	switch {
	case err == nil && last.Resource.UID == old.Resource.UID:
		old.Object, old.ObjectHash = last.Object, last.ObjectHash
	case err != nil && !errors.Is(err, storage.ErrNotFound):
		return event.Record{}, false, fmt.Errorf("%w: last version of %s: %w", ErrStore, old.Resource, err)
	}
	del := s.inferredDeletion(old, s.lossStart(), rec.ObservedAt, rec.BaselineID)
	del.Inferred.Reason = replacedReason
	s.log.Info("inferred deletion: replaced by a new object with the same name during the gap",
		"object", old.Resource.ObjectKey(), "oldUID", old.Resource.UID, "newUID", rec.Resource.UID)
	return del, true, nil
}

// replacedReason is the Inferred.Reason of the deletion of an object that a
// relist shows replaced by a new object (another UID) with the same name.
const replacedReason = "replaced by a new object with the same name during the gap"

// lossStart is the From of inferred deletions: when continuity was lost.
func (s *stream) lossStart() time.Time {
	if s.lossFrom.IsZero() {
		return s.lastAt
	}
	return s.lossFrom
}

// listBaseline takes a baseline with a paginated, consistent list
// (resourceVersion unset, so it is read from etcd, never a stale cache).
func (s *stream) listBaseline(ctx context.Context, reason string) error {
	id := uuid.NewString()
	opts := metav1.ListOptions{Limit: s.c.cfg.pageSize, LabelSelector: s.c.cfg.labelSelector, FieldSelector: s.c.cfg.fieldSelector}
	var (
		listRV     string
		observedAt time.Time
		items      int
	)
	pipe := pipeline{c: s.c.committer}
	for page := 0; ; page++ {
		list, err := s.src.list(ctx, opts)
		if err != nil {
			if opts.Continue != "" && isGone(err) {
				return fmt.Errorf("%w: %w", errContinueExpired, err)
			}
			return fmt.Errorf("list %s: %w", s.res, err)
		}
		var recs []event.Record
		if page == 0 {
			observedAt = s.observedNow()
			listRV = list.resourceVersion
			recs = s.baselineHead(id, reason, observedAt)
		}
		recs, bytes, err := s.appendItems(ctx, recs, list.items, observedAt, id)
		if err != nil {
			return err
		}
		items += len(list.items)
		opts.Continue = list.continueToken
		list.items = nil
		if err := pipe.submit(ctx, writeItem{stream: s, recs: recs, bytes: bytes}); err != nil {
			return err
		}
		// The head (with any "access restored") is queued: the committer
		// writes it or stops the Collector.
		s.available = true
		if opts.Continue == "" {
			break
		}
	}
	if err := pipe.wait(ctx); err != nil {
		return err
	}
	if err := s.finishBaseline(ctx, id, reason, listRV, items, nil); err != nil {
		return err
	}
	if listRV == "" {
		return fmt.Errorf("list %s: %w", s.res, errNoListRV)
	}
	return nil
}

// baselineHead returns the records that open a baseline: a coverage change
// when the stream comes back or was discovered late, and the begin marker.
func (s *stream) baselineHead(id, reason string, at time.Time) []event.Record {
	var recs []event.Record
	switch {
	case !s.available:
		recs = append(recs, s.coverageRecord(true, "access restored", 0, at))
	case s.discovered && !s.hadHistory:
		recs = append(recs, s.coverageRecord(true, "discovered", 0, at))
	}
	return append(recs, s.baselineRecord(id, event.BaselineBegin, reason, "", 0, at))
}

func (s *stream) appendItems(ctx context.Context, recs []event.Record, items []runtime.Object, at time.Time, id string) ([]event.Record, int, error) {
	bytes := 0
	for _, item := range items {
		var err error
		recs, bytes, err = s.appendItem(ctx, recs, bytes, item, at, id)
		if err != nil {
			return nil, 0, err
		}
	}
	return recs, bytes, nil
}

// appendItem appends the record of one baseline item, preceded by the
// inferred deletion of the object it replaced, if any.
func (s *stream) appendItem(ctx context.Context, recs []event.Record, bytes int, obj runtime.Object, at time.Time, id string) ([]event.Record, int, error) {
	rec, err := s.objectRecord(obj, event.Added, at, id)
	if err != nil {
		return nil, 0, err
	}
	del, ok, err := s.replaced(ctx, rec)
	if err != nil {
		return nil, 0, err
	}
	if ok {
		recs = append(recs, del)
		bytes += len(del.Object)
	}
	return append(recs, rec), bytes + len(rec.Object), nil
}

// finishBaseline writes the end marker (with the list's resourceVersion,
// never one taken from the items), the records extra returns (observed at
// the end's time, so that a checkpoint never precedes the end of its
// baseline) and the inferred deletions of objects the journal believed
// alive that the baseline lacks.
func (s *stream) finishBaseline(ctx context.Context, id, reason, rv string, items int, extra func(endAt time.Time) []event.Record) error {
	endAt := s.observedNow()
	end := s.baselineRecord(id, event.BaselineEnd, reason, rv, items, endAt)
	end.Baseline.ClosesGap = s.openGap
	recs := []event.Record{end}
	if extra != nil {
		recs = append(recs, extra(endAt)...)
	}
	if s.hadHistory {
		dels, err := s.inferDeletions(ctx, id, endAt)
		if err != nil {
			return err
		}
		if len(dels) > 0 {
			s.log.Info("inferred deletions: objects absent from the relist", "count", len(dels), "from", s.lossFrom, "to", endAt)
		}
		recs = append(recs, dels...)
	}
	if err := s.c.committer.submit(ctx, writeItem{stream: s, recs: recs}, true); err != nil {
		return err
	}
	s.log.Info("baseline complete", "baselineID", id, "reason", reason, "items", items, "resourceVersion", rv)
	s.rv, s.lastAt = rv, endAt
	s.covered, s.available, s.lossFrom, s.openGap, s.prior = true, true, time.Time{}, "", nil
	s.watchListIncomplete = 0
	s.backoff.reset()
	s.m.covered.Set(1)
	s.m.baselines.Inc()
	s.mu.Lock()
	s.coveredAt = endAt
	s.baselines++
	s.mu.Unlock()
	s.markSynced()
	return nil
}

// inferDeletions returns a synthetic DELETED record for every object whose
// last record in the stream is alive and not part of baseline id. It reads
// keys without bodies and fetches the body of the missing objects only.
func (s *stream) inferDeletions(ctx context.Context, id string, at time.Time) ([]event.Record, error) {
	// The baseline has no end yet: its items count only when asked for.
	alive, err := s.c.store.AliveAt(ctx, storage.AliveQuery{At: at, StreamID: s.id, WithoutBodies: true, IncludeBaseline: id})
	if err != nil {
		return nil, fmt.Errorf("%w: alive objects of %s: %w", ErrStore, s.id, err)
	}
	from := s.lossStart()
	var dels []event.Record
	for _, rec := range alive {
		if rec.BaselineID == id {
			continue
		}
		last, err := s.c.store.LatestAt(ctx, storage.ObjectIDOf(rec), at)
		switch {
		case err == nil && last.Resource.UID == rec.Resource.UID:
			rec.Object, rec.ObjectHash = last.Object, last.ObjectHash
		case err != nil && !errors.Is(err, storage.ErrNotFound):
			return nil, fmt.Errorf("%w: last version of %s: %w", ErrStore, rec.Resource, err)
		}
		dels = append(dels, s.inferredDeletion(rec, from, at, id))
	}
	return dels, nil
}

// watchListBaseline takes a baseline with a streaming WatchList and goes on
// watching on the same connection.
func (s *stream) watchListBaseline(ctx context.Context, reason string) error {
	opts := metav1.ListOptions{
		LabelSelector:        s.c.cfg.labelSelector,
		FieldSelector:        s.c.cfg.fieldSelector,
		SendInitialEvents:    ptr.To(true),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		AllowWatchBookmarks:  true,
	}
	w, err := s.src.watch(ctx, opts)
	if err != nil {
		if s.c.cfg.watchList == WatchListAuto && (apierrors.IsBadRequest(err) || apierrors.IsInvalid(err)) {
			return fmt.Errorf("%w: %w", errWatchListUnsupported, err)
		}
		return fmt.Errorf("watchlist %s: %w", s.res, err)
	}
	s.productive = false
	handedOver := false
	defer func() {
		if !handedOver {
			w.Stop()
		}
	}()
	id := uuid.NewString()
	observedAt := s.observedNow()
	recs := s.baselineHead(id, reason, observedAt)
	bytes, items := 0, 0
	pipe := pipeline{c: s.c.committer}
	flush := func() error {
		if len(recs) > 0 {
			if err := pipe.submit(ctx, writeItem{stream: s, recs: recs, bytes: bytes}); err != nil {
				return err
			}
			recs, bytes = nil, 0
			s.available = true
		}
		return nil
	}
	idle := s.newIdleTimer()
	defer idle.stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-idle.c():
			return errWatchIdle
		case ev, ok := <-w.ResultChan():
			if !ok {
				s.watchListIncomplete++
				if s.c.cfg.watchList == WatchListAuto && s.watchListIncomplete >= 2 {
					return fmt.Errorf("%w: the server ended the watch before the initial-events-end bookmark twice", errWatchListUnsupported)
				}
				return errWatchClosed
			}
			idle.reset()
			switch ev.Type {
			case apiwatch.Added:
				recs, bytes, err = s.appendItem(ctx, recs, bytes, ev.Object, observedAt, id)
				if err != nil {
					return err
				}
				items++
				if int64(len(recs)) >= s.c.cfg.pageSize {
					if err := flush(); err != nil {
						return err
					}
				}
			case apiwatch.Bookmark:
				rv, end, err := bookmarkOf(ev.Object)
				if err != nil {
					return fmt.Errorf("watchlist %s: bookmark: %w", s.res, err)
				}
				if !end {
					continue
				}
				if err := flush(); err != nil {
					return err
				}
				if err := pipe.wait(ctx); err != nil {
					return err
				}
				checkpoint := func(endAt time.Time) []event.Record {
					return []event.Record{s.checkpointRecord(rv, true, true, endAt)}
				}
				if err := s.finishBaseline(ctx, id, reason, rv, items, checkpoint); err != nil {
					return err
				}
				handedOver = true
				return s.watch(ctx, w)
			case apiwatch.Error:
				return apierrors.FromObject(ev.Object)
			default:
				return fmt.Errorf("watchlist %s: unexpected %s event before the initial-events-end bookmark", s.res, ev.Type)
			}
		}
	}
}

// watch records the events of a watch from s.rv (or of w, a WatchList
// already past its initial events) until it ends.
func (s *stream) watch(ctx context.Context, w apiwatch.Interface) error {
	if w == nil {
		var err error
		w, err = s.src.watch(ctx, metav1.ListOptions{
			ResourceVersion:     s.rv,
			AllowWatchBookmarks: s.c.cfg.bookmarks,
			LabelSelector:       s.c.cfg.labelSelector,
			FieldSelector:       s.c.cfg.fieldSelector,
		})
		if err != nil {
			return fmt.Errorf("watch %s from %q: %w", s.res, s.rv, err)
		}
	}
	defer w.Stop()
	s.setState(StateWatching, "")
	s.productive = false
	idle := s.newIdleTimer()
	defer idle.stop()
	var syncC <-chan time.Time
	if !s.isSynced() {
		t := s.clock.NewTimer(resumeSyncDelay)
		defer t.Stop()
		syncC = t.C()
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-syncC:
			syncC = nil
			s.markSynced()
		case <-idle.c():
			return errWatchIdle
		case ev, ok := <-w.ResultChan():
			if !ok {
				return errWatchClosed
			}
			idle.reset()
			switch ev.Type {
			case apiwatch.Added, apiwatch.Modified, apiwatch.Deleted:
				now := s.observedNow()
				rec, err := s.objectRecord(ev.Object, event.WatchType(ev.Type), now, "")
				if err != nil {
					return err
				}
				if err := s.c.committer.submit(ctx, writeItem{stream: s, recs: []event.Record{rec}, bytes: len(rec.Object)}, false); err != nil {
					return err
				}
				if rv := rec.Resource.ResourceVersion; rv != "" {
					s.rv = rv
				}
				s.lastAt = now
			case apiwatch.Bookmark:
				rv, initialEventsEnd, err := bookmarkOf(ev.Object)
				if err != nil {
					return fmt.Errorf("watch %s: bookmark: %w", s.res, err)
				}
				if rv == "" || rv == s.rv {
					break
				}
				now := s.observedNow()
				rec := s.checkpointRecord(rv, true, initialEventsEnd, now)
				if err := s.c.committer.submit(ctx, writeItem{stream: s, recs: []event.Record{rec}}, false); err != nil {
					return err
				}
				s.rv, s.lastAt = rv, now
			case apiwatch.Error:
				return apierrors.FromObject(ev.Object)
			default:
				continue
			}
			if !s.productive {
				s.productive = true
				s.backoff.reset()
				s.markSynced()
				syncC = nil
			}
		}
	}
}

// idleTimer fires when a watch delivered nothing for the idle timeout.
type idleTimer struct {
	t clock.Timer
	d time.Duration
}

func (s *stream) newIdleTimer() *idleTimer {
	if s.c.cfg.watchIdleTimeout <= 0 {
		return &idleTimer{}
	}
	return &idleTimer{t: s.clock.NewTimer(s.c.cfg.watchIdleTimeout), d: s.c.cfg.watchIdleTimeout}
}

func (t *idleTimer) c() <-chan time.Time {
	if t.t == nil {
		return nil
	}
	return t.t.C()
}

func (t *idleTimer) reset() {
	if t.t != nil {
		t.t.Reset(t.d)
	}
}

func (t *idleTimer) stop() {
	if t.t != nil {
		t.t.Stop()
	}
}

// durable is called by the committer once records of the stream are
// durable.
func (s *stream) durable(recs []event.Record) {
	var events, bytes int64
	gaps := 0
	s.mu.Lock()
	for i := range recs {
		r := &recs[i]
		if rv, ok := storage.ProgressRV(*r); ok {
			s.durableRV, s.durableAt = rv, r.ObservedAt
		}
		if r.IsObjectChange() {
			events++
			bytes += int64(len(r.Object))
		}
		if r.Type == event.TypeGap {
			gaps++
		}
	}
	s.events += events
	s.bytes += bytes
	s.gaps += gaps
	s.mu.Unlock()
	s.m.events.Add(float64(events))
	s.m.bytes.Add(float64(bytes))
	if gaps > 0 {
		s.m.gaps.Add(float64(gaps))
	}
}

func (s *stream) setState(st StreamState, reason string) {
	s.mu.Lock()
	s.state, s.degraded = st, reason
	s.mu.Unlock()
}

func (s *stream) markSynced() {
	s.mu.Lock()
	already := s.synced
	s.synced = true
	s.mu.Unlock()
	if !already {
		s.c.streamSynced()
	}
}

func (s *stream) isSynced() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.synced
}

func (s *stream) fatalErr() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fatal
}

func (s *stream) status() StreamStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := StreamStatus{
		StreamID:            s.id,
		Stream:              s.stream,
		Resource:            s.res,
		State:               s.state,
		Synced:              s.synced,
		Covered:             !s.coveredAt.IsZero(),
		CoveredSince:        s.coveredAt,
		LastResourceVersion: s.durableRV,
		LastDurableAt:       s.durableAt,
		Gaps:                s.gaps,
		Events:              s.events,
		Bytes:               s.bytes,
		Baselines:           s.baselines,
		DegradedReason:      s.degraded,
	}
	switch s.state {
	case StateBackoff, StateUnavailable, StatePending:
		st.Degraded = true
	case StateStopped:
		st.Degraded = s.fatal != nil
		if s.fatal != nil {
			st.DegradedReason = s.fatal.Error()
		}
	}
	return st
}

func boolGauge(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
