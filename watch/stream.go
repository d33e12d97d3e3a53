package watch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/utils/clock"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// resumeSyncDelay is how long a watch resumed from a durable checkpoint must
// stay open without an error (a 410 arrives at once) before the stream
// counts as synced, when no event arrived earlier.
const resumeSyncDelay = time.Second

// Why a watch ended without an error from the server.
var (
	errWatchClosed = errors.New("watch closed by the server")
	errWatchIdle   = errors.New("watch idle for too long")
	// errStopRecording: an event the watch delivered before the stop
	// could not be recorded, so no stop checkpoint may vouch past it.
	errStopRecording = errors.New("an event delivered before the stop not recorded")
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
	// vouchedAt is when the server last vouched that the stream was
	// continuous at rv: lastAt, or later when that evidence (an unchanged
	// bookmark, the end of a watch at its timeout) came too soon after the
	// last durable record to be written (see progress). The stop's
	// checkpoint writes it: a stop vouches for no time the server did not.
	vouchedAt time.Time
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
	prior map[storage.ObjectID]event.Record
	// members are the objects the journal holds alive for a stream with
	// a recording rule: those whose last recorded version matched it.
	// listed are the items of the baseline being taken that match it.
	members, listed map[storage.ObjectID]struct{}
	useWatchList    bool
	// watchListIncomplete counts WatchLists that ended before their
	// initial-events-end bookmark; in auto mode two of them turn it off.
	watchListIncomplete int
	productive          bool // the current watch delivered something
	// serverTimeouts is true once the server ended a watch at its
	// timeoutSeconds: it honors them, so a watch that outlives its timeout
	// is abandoned as half-open (idleLimit).
	serverTimeouts bool
	// ignoresTimeouts is true once a watch stayed open long after its
	// timeoutSeconds (outlived): the server does not end watches at
	// their timeout, so a clean stop does not ask it to confirm.
	ignoresTimeouts bool
	// goneAgain is true from a 410 until a watch delivers something: a
	// second 410 in a row waits for the backoff instead of relisting at
	// once.
	goneAgain bool

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
	relists   int
	// baselineStart is when the current baseline began (for its duration).
	baselineStart time.Time
	fatal         error
	// cancel ends the stream alone (retire), with the cause.
	cancel context.CancelCauseFunc
}

func newStream(c *Collector, r Resource, st event.Stream, discovered bool) *stream {
	s := &stream{
		c:          c,
		res:        r,
		stream:     st,
		id:         st.ID(),
		discovered: discovered,
		redact:     isSecret(r) && !c.cfg.keepSecretValues,
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
	var err error
	for ctx.Err() == nil {
		if s.covered && s.rv != "" {
			err = s.watch(ctx)
		} else {
			err = s.relist(ctx)
		}
		if !s.handle(ctx, err) {
			break
		}
	}
	// The stop's checkpoint, here only: whether the stop found a watch
	// open (which recorded what it had delivered, recordAtStop), or came
	// between two watches (the last one ended at its timeout, or the stop
	// canceled the request opening the next).
	if ctx.Err() != nil && endedCleanly(err) {
		s.stopCheckpoint(ctx)
	}
}

// endedCleanly reports whether err, the end of the stream's last watch,
// leaves it healthy at a stop: none, a watch the server closed, or one
// the stop canceled after recording what it had delivered.
func endedCleanly(err error) bool {
	if errors.Is(err, errStopRecording) {
		return false
	}
	return err == nil || errors.Is(err, errWatchClosed) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
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
		s.log.V(1).Info("new stream: taking the initial baseline")
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w: status of %s: %w", ErrStore, s.id, err)
	}
	cov, err := storage.CoverageAt(ctx, s.c.store, s.id, s.clock.Now())
	if err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	s.rv, s.lastAt, s.vouchedAt = st.CheckpointRV, st.CheckpointAt, st.CheckpointAt
	s.stampMu.Lock()
	s.stampedAt = st.LastObservedAt
	s.stampMu.Unlock()
	s.available = st.Available
	s.hadHistory = st.Records > 0
	s.covered = cov.Continuous() // evidence ends at the checkpoint: time since is not yet observed
	if !s.covered {
		s.lossFrom, s.openGap = lossOf(st, cov)
	}
	s.mu.Lock()
	s.durableRV, s.durableAt, s.gaps = st.CheckpointRV, st.CheckpointAt, st.Gaps
	if s.covered {
		s.coveredAt = st.LastBaselineEndAt
	}
	s.mu.Unlock()
	s.m.covered.Set(boolGauge(s.covered))
	s.interrupted = st.OpenBaselineID != "" && st.LastBaselineID == ""
	if s.covered && s.rv != "" && s.c.cfg.rule != nil {
		if err := s.loadMembers(ctx); err != nil {
			return err
		}
	}
	switch {
	case s.covered && s.rv != "":
		s.log.V(1).Info("resuming from the durable checkpoint", "resourceVersion", s.rv, "checkpointAt", s.lastAt)
	case s.interrupted:
		s.log.Info("initial baseline interrupted; relisting", "interruptedBaseline", st.OpenBaselineID)
	case st.OpenBaselineID != "":
		s.log.Info("journal not continuous for this stream: relisting", "reason", cov.Reason, "interruptedBaseline", st.OpenBaselineID)
	default:
		s.log.Info("journal not continuous for this stream: relisting", "reason", cov.Reason)
	}
	return nil
}

// lossOf returns when the continuity of a stream that is not continuous
// was lost — the earliest start of its losses, else its checkpoint, else
// its first record — and the gap the next complete baseline closes.
func lossOf(st storage.StreamStatus, cov storage.Coverage) (from time.Time, openGap string) {
	from = st.CheckpointAt
	for _, g := range cov.Gaps {
		if g.Type == event.TypeGap {
			openGap = g.EventID
		}
		if start, ok := storage.LossStart(g); ok && (from.IsZero() || start.Before(from)) {
			from = start
		}
	}
	if from.IsZero() {
		from = st.FirstObservedAt
	}
	return from, openGap
}

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
		// A 410 is an answer: the server is back, and the failures of an
		// outage before it say nothing about the relist, which starts at
		// once. Only a 410 again before a watch delivered anything (a
		// loop) waits for the backoff.
		wait = s.goneAgain
		if !wait {
			s.backoff.reset()
		}
		s.goneAgain = true
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
