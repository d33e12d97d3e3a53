package watch

// Baselines: the relist, its paginated list or WatchList, the records of
// its items, its end and the deletions inferred from what it lacks.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	apiwatch "k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// interruptedReason is the Baseline.Reason of the initial baseline taken
// again after one that never ended.
const interruptedReason = "initial baseline interrupted"

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
	s.baselineStart = s.clock.Now()
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
	// The next page is fetched while this one is recorded (see
	// fetchPage); a fetch still running when the list ends early is
	// cancelled and waited for.
	fetchCtx, cancel := context.WithCancel(ctx)
	next := fetchPage(fetchCtx, s.src, opts)
	defer func() {
		cancel()
		if next != nil {
			_, _ = next.wait()
		}
	}()
	for page := 0; ; page++ {
		list, err := next.wait()
		next = nil
		if err != nil {
			if opts.Continue != "" && isGone(err) {
				return fmt.Errorf("%w: %w", errContinueExpired, err)
			}
			return fmt.Errorf("list %s: %w", s.res, err)
		}
		if list.continueToken != "" {
			nextOpts := opts
			nextOpts.Continue = list.continueToken
			next = fetchPage(fetchCtx, s.src, nextOpts)
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
	s.listed = map[storage.ObjectID]struct{}{}
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
	if s.c.cfg.rule != nil {
		keep, excluded, err := s.ruleOnItem(ctx, rec)
		if err != nil {
			return nil, 0, err
		}
		if excluded != nil {
			recs = append(recs, *excluded)
		}
		if !keep {
			return recs, bytes, nil
		}
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
	if s.c.cfg.rule != nil {
		items = len(s.listed) // the items recorded: those the rule matched
	}
	end := s.baselineRecord(id, event.BaselineEnd, reason, rv, items, endAt)
	end.Baseline.ClosesGap = s.openGap
	recs := []event.Record{end}
	if extra != nil {
		recs = append(recs, extra(endAt)...)
	}
	if s.hadHistory {
		dels, err := s.inferDeletions(ctx, id, rv, endAt)
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
	if s.hadHistory {
		s.log.Info("baseline complete", "baselineID", id, "reason", reason, "items", items, "resourceVersion", rv)
	} else {
		s.log.V(1).Info("baseline complete", "baselineID", id, "reason", reason, "items", items, "resourceVersion", rv)
	}
	s.rv, s.lastAt, s.vouchedAt = rv, endAt, endAt
	s.covered, s.available, s.lossFrom, s.openGap, s.prior = true, true, time.Time{}, "", nil
	s.members, s.listed = s.listed, nil
	s.watchListIncomplete = 0
	s.backoff.reset()
	s.m.covered.Set(1)
	s.m.baselines.Inc()
	s.c.baselineSeconds.Observe(s.clock.Since(s.baselineStart).Seconds())
	s.mu.Lock()
	s.coveredAt = endAt
	s.baselines++
	if s.hadHistory {
		s.relists++
	}
	s.mu.Unlock()
	s.markSynced()
	return nil
}

// inferDeletions returns a synthetic DELETED record for every object whose
// last record in the stream is alive and not part of baseline id, taken
// from the list at resourceVersion rv. It reads keys without bodies and
// fetches the body of the missing objects only.
//
// An object whose record is newer than the list (another recorder of the
// cluster, appending to the same journal, recorded it after the list was
// taken) is absent from the list because it did not exist yet: its
// deletion is not inferred (see newerThanList).
func (s *stream) inferDeletions(ctx context.Context, id, rv string, at time.Time) ([]event.Record, error) {
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
		if newerThanList(rec.Resource.ResourceVersion, rv) {
			s.log.Info("no deletion inferred: the journal's version is newer than the relist (another recorder of the cluster recorded it)",
				"object", rec.Resource.ObjectKey(), "resourceVersion", rec.Resource.ResourceVersion, "listResourceVersion", rv)
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

// newerThanList reports whether an object's resourceVersion is newer than
// a list's. resourceVersions of one resource are comparable as the API
// server documents it (KEP-5504; resourceversion.CompareResourceVersion):
// positive integers without leading zeros. An API server whose versions
// are not (an extension API server's own format) gives false: the
// deletion is inferred, as with one recorder.
func newerThanList(objectRV, listRV string) bool {
	c, err := resourceversion.CompareResourceVersion(objectRV, listRV)
	return err == nil && c > 0
}

// watchListBaseline takes a baseline with a streaming WatchList. It ends
// the WatchList at its initial-events-end bookmark: the watch that follows
// is a new one from that bookmark's resourceVersion, with the timeout every
// watch asks for (WithProgressInterval).
func (s *stream) watchListBaseline(ctx context.Context, reason string) error {
	w, err := s.openWatchList(ctx)
	if err != nil {
		return err
	}
	s.productive = false
	defer w.Stop()
	b := &watchListed{s: s, id: uuid.NewString(), reason: reason, observedAt: s.observedNow(), pipe: pipeline{c: s.c.committer}}
	b.recs = s.baselineHead(b.id, reason, b.observedAt)
	idle := s.newIdleTimer(s.c.cfg.watchIdleTimeout)
	defer idle.stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-idle.c():
			return errWatchIdle
		case ev, ok := <-w.ResultChan():
			if !ok {
				return s.watchListClosed()
			}
			idle.reset()
			if done, err := b.onEvent(ctx, ev); done || err != nil {
				return err
			}
		}
	}
}

// openWatchList starts the WatchList of a baseline. In auto mode a server
// that rejects it (400, 422) does not support it: errWatchListUnsupported.
func (s *stream) openWatchList(ctx context.Context) (apiwatch.Interface, error) {
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
			return nil, fmt.Errorf("%w: %w", errWatchListUnsupported, err)
		}
		return nil, fmt.Errorf("watchlist %s: %w", s.res, err)
	}
	return w, nil
}

// watchListClosed is the error of a WatchList the server ended before its
// initial-events-end bookmark; in auto mode the second one in a row says
// the server does not support WatchList.
func (s *stream) watchListClosed() error {
	s.watchListIncomplete++
	if s.c.cfg.watchList == WatchListAuto && s.watchListIncomplete >= 2 {
		return fmt.Errorf("%w: the server ended the watch before the initial-events-end bookmark twice", errWatchListUnsupported)
	}
	return errWatchClosed
}

// watchListed is a baseline a WatchList is delivering: its items are
// handed to the committer a page at a time, and its initial-events-end
// bookmark ends it.
type watchListed struct {
	s          *stream
	id, reason string
	observedAt time.Time
	recs       []event.Record // not yet handed to the committer
	bytes      int            // of the bodies in recs
	items      int
	pipe       pipeline
}

// onEvent records one event of the WatchList; done is true when the
// baseline ended (err nil) or failed.
func (b *watchListed) onEvent(ctx context.Context, ev apiwatch.Event) (done bool, err error) {
	switch ev.Type {
	case apiwatch.Added:
		return false, b.add(ctx, ev.Object)
	case apiwatch.Bookmark:
		return b.bookmark(ctx, ev.Object)
	case apiwatch.Error:
		return true, apierrors.FromObject(ev.Object)
	default:
		return true, fmt.Errorf("watchlist %s: unexpected %s event before the initial-events-end bookmark", b.s.res, ev.Type)
	}
}

// add records one item, and hands a page to the committer once full.
func (b *watchListed) add(ctx context.Context, obj runtime.Object) error {
	var err error
	b.recs, b.bytes, err = b.s.appendItem(ctx, b.recs, b.bytes, obj, b.observedAt, b.id)
	if err != nil {
		return err
	}
	b.items++
	if int64(len(b.recs)) >= b.s.c.cfg.pageSize {
		return b.flush(ctx)
	}
	return nil
}

// flush hands the records not yet handed over to the committer.
func (b *watchListed) flush(ctx context.Context) error {
	if len(b.recs) == 0 {
		return nil
	}
	if err := b.pipe.submit(ctx, writeItem{stream: b.s, recs: b.recs, bytes: b.bytes}); err != nil {
		return err
	}
	b.recs, b.bytes = nil, 0
	// The head (with any "access restored") is queued: the committer
	// writes it or stops the Collector.
	b.s.available = true
	return nil
}

// bookmark ends the baseline at the initial-events-end bookmark, with a
// checkpoint at its resourceVersion; other bookmarks say nothing yet.
func (b *watchListed) bookmark(ctx context.Context, obj runtime.Object) (done bool, err error) {
	rv, end, err := bookmarkOf(obj)
	if err != nil {
		return true, fmt.Errorf("watchlist %s: bookmark: %w", b.s.res, err)
	}
	if !end {
		return false, nil
	}
	if err := b.flush(ctx); err != nil {
		return true, err
	}
	if err := b.pipe.wait(ctx); err != nil {
		return true, err
	}
	checkpoint := func(endAt time.Time) []event.Record {
		return []event.Record{b.s.checkpointRecord(rv, true, true, endAt)}
	}
	return true, b.s.finishBaseline(ctx, b.id, b.reason, rv, b.items, checkpoint)
}
