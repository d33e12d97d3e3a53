package watch

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/krply/krply/event"
	"github.com/krply/krply/internal/broadcast"
	"github.com/krply/krply/storage"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
)

// Sentinel errors of the package. Check them with errors.Is.
var (
	// ErrInvalidArgument: an argument or option has a value the Collector
	// cannot use. It is storage.ErrInvalidArgument, the sentinel of every
	// krply package.
	ErrInvalidArgument = storage.ErrInvalidArgument
	// ErrUnknownResource: a resource name matches nothing the server
	// serves. The error is an *UnknownResourceError with close matches.
	ErrUnknownResource = errors.New("watch: unknown resource")
	// ErrSecretsNotAllowed: Secrets were asked for without AllowSecrets.
	ErrSecretsNotAllowed = errors.New("watch: recording secrets requires AllowSecrets")
	// ErrAlreadyStarted: Start was called twice.
	ErrAlreadyStarted = errors.New("watch: collector already started")
	// ErrStore: the store failed; Start returns it, wrapped with the
	// store's own error, and stops.
	ErrStore = errors.New("watch: store failed")
)

// drainTimeout bounds the final commit after a stop, counted from the stop:
// an Append still running then is canceled and Start returns ErrStore.
const drainTimeout = 10 * time.Second

// Collector records a gap-aware history of Kubernetes objects into a
// journal (a storage.ReadWriter). Make one with NewCollector or NewCollectorForConfig and run
// it with Start.
type Collector struct {
	dyn dynamic.Interface
	// raw, when set (NewCollectorForConfig), lists and watches instead of
	// dyn, keeping the bodies the server sent.
	raw   rest.Interface
	disc  discovery.DiscoveryInterface
	store storage.ReadWriter
	cfg   config
	host  string // API server URL, for the fallback cluster ID

	startOnce sync.Once

	mu        sync.Mutex
	clusterID string
	streams   map[string]*stream // by stream ID
	order     []string           // stream IDs in creation order
	pending   []string           // qualified specs not served yet
	resolved  bool               // the initial streams exist
	syncCh    chan struct{}      // closed when every initial stream synced or Start ended
	doneCh    chan struct{}      // closed when Start returned
	startErr  error
	log       logr.Logger
	committer *committer
	// baselineSeconds times each complete baseline (BaselineMetricsProvider).
	baselineSeconds Histogram
	cancel          context.CancelFunc
	wg              sync.WaitGroup
	resources       map[Resource]bool

	// progress wakes its waiters each time a stream's durable evidence
	// advances, appended each time records are made durable.
	progress, appended broadcast.Signal
}

// NewCollector returns a Collector that lists and watches through dyn,
// resolves resource names through disc, and appends to store. It does no
// I/O and starts nothing; Start does. The caller keeps ownership of store
// and closes it after Start returned.
//
// Objects read through dyn are decoded by client-go and recorded as their
// re-encoding (same content, keys sorted). NewCollectorForConfig records
// the bodies as the server sent them, with less CPU per object; use
// NewCollector for client-go fakes and clients made by the caller.
func NewCollector(dyn dynamic.Interface, disc discovery.DiscoveryInterface, store storage.ReadWriter, opts ...Option) (*Collector, error) {
	if isNil(dyn) || isNil(disc) || isNil(store) {
		return nil, fmt.Errorf("watch: %w: the dynamic client, discovery client and store are required", ErrInvalidArgument)
	}
	cfg, err := newConfig(opts)
	if err != nil {
		return nil, err
	}
	c := &Collector{
		dyn:       dyn,
		disc:      disc,
		store:     store,
		cfg:       cfg,
		clusterID: cfg.clusterID,
		streams:   map[string]*stream{},
		syncCh:    make(chan struct{}),
		doneCh:    make(chan struct{}),
		resources: map[Resource]bool{},
	}
	if rc := disc.RESTClient(); !isNil(rc) {
		if req := rc.Get(); req != nil {
			if u := req.URL(); u != nil {
				c.host = u.Scheme + "://" + u.Host
			}
		}
	}
	return c, nil
}

// NewCollectorForConfig returns a Collector for the cluster cfg points at.
// It copies cfg; when cfg sets no rate limit (QPS 0) it allows 50 requests
// per second with bursts of 100, since a baseline of a large cluster is
// many list pages.
//
// It lists and watches with a JSON REST client that keeps each object's
// body byte for byte as the server sent it, reading only the fields the
// Collector needs (kind, apiVersion, name, namespace, uid,
// resourceVersion) instead of decoding whole objects. List items of
// built-in types come without kind and apiVersion; they are inserted first,
// so the body is what a GET of the object returns. Secrets whose values are
// redacted are decoded and re-encoded.
func NewCollectorForConfig(cfg *rest.Config, store storage.ReadWriter, opts ...Option) (*Collector, error) {
	if cfg == nil {
		return nil, fmt.Errorf("watch: %w: nil rest config", ErrInvalidArgument)
	}
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 && cfg.RateLimiter == nil {
		cfg.QPS, cfg.Burst = 50, 100
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("watch: dynamic client: %w", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("watch: discovery client: %w", err)
	}
	raw, err := newRawClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("watch: REST client: %w", err)
	}
	c, err := NewCollector(dyn, disc, store, opts...)
	if err != nil {
		return nil, err
	}
	c.host = cfg.Host
	c.raw = raw
	return c, nil
}

func isNil(v any) bool {
	if v == nil {
		return true
	}
	rv := reflect.ValueOf(v)
	switch rv.Kind() {
	case reflect.Pointer, reflect.Interface, reflect.Map, reflect.Slice, reflect.Func, reflect.Chan:
		return rv.IsNil()
	}
	return false
}

// Start resolves the resources, then records every stream until ctx ends.
// It returns nil when ctx ends, and an error only for an unrecoverable
// failure: the configuration names a resource the server does not serve
// (ErrUnknownResource), Secrets without AllowSecrets, or the store fails
// (ErrStore). API server errors are never fatal: they become gaps and
// coverage changes, and the streams retry with backoff. Start may be called
// once.
func (c *Collector) Start(ctx context.Context) (err error) {
	first := false
	c.startOnce.Do(func() { first = true })
	if !first {
		return ErrAlreadyStarted
	}
	log := logr.FromContextOrDiscard(ctx)
	if c.cfg.logger != nil {
		log = *c.cfg.logger
	}
	log = log.WithName("krply-collector")
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	c.mu.Lock()
	c.log = log
	c.committer = newCommitter(c.store, &c.cfg)
	c.baselineSeconds = baselineSeconds(c.cfg.metrics)
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		if c.startErr == nil {
			c.startErr = err
			if err == nil {
				c.startErr = ctx.Err()
			}
		}
		c.closeSync()
		close(c.doneCh)
		c.mu.Unlock()
	}()

	// The committer's Appends run on appendCtx, which only the end of the
	// final commit's budget (drainTimeout from the stop) cancels: a clean
	// stop never fails an Append in flight.
	appendCtx, cancelAppends := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelAppends()
	stopCommitter := make(chan struct{})
	commitDone := make(chan error, 1)
	go func() {
		err := c.committer.run(appendCtx, stopCommitter)
		if err != nil {
			cancel() // the store failed: stop the streams
		}
		commitDone <- err
	}()
	// stop waits for the streams, then lets the committer write what it
	// holds, and returns the first unrecoverable error.
	stop := func(err error) error {
		cancel()
		c.wg.Wait()
		close(stopCommitter)
		budget := time.AfterFunc(drainTimeout, cancelAppends)
		defer budget.Stop()
		if commitErr := <-commitDone; commitErr != nil {
			return commitErr
		}
		if e := c.firstStreamErr(); e != nil {
			return e
		}
		if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) {
			return err
		}
		return nil
	}

	c.mu.Lock()
	c.cancel = cancel
	c.mu.Unlock()
	if err := c.setup(ctx); err != nil {
		return stop(err)
	}
	if c.cfg.rediscoveryInterval > 0 {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.rediscover(ctx)
		}()
	}
	<-ctx.Done()
	return stop(nil)
}

// setup finds the cluster ID, resolves the resources and starts a goroutine
// per stream.
func (c *Collector) setup(ctx context.Context) error {
	if c.clusterID == "" {
		id, err := c.deriveClusterID(ctx)
		if err != nil {
			return err
		}
		c.mu.Lock()
		c.clusterID = id
		c.mu.Unlock()
	}
	var cat *catalog
	b := newBackoff(c.cfg.backoffMin, c.cfg.backoffMax, c.cfg.clock)
	for {
		var err error
		cat, err = discover(ctx, c.disc)
		if err == nil {
			break
		}
		c.log.Error(err, "discovery failed, retrying", "backoff", b.next())
		if werr := b.wait(ctx); werr != nil {
			return werr
		}
	}
	var resources []Resource
	if c.cfg.allResources {
		resources = c.everything(ctx, cat)
	}
	named, pending, err := c.cfg.resolveResources(cat)
	if err != nil {
		return err
	}
	resources = append(resources, named...)
	for _, spec := range pending {
		c.log.Info("resource not served yet; waiting for rediscovery", "resource", spec)
	}
	c.mu.Lock()
	c.pending = pending
	for _, r := range resources {
		c.addResourceLocked(ctx, r, false)
	}
	c.resolved = true
	c.checkSyncedLocked()
	c.mu.Unlock()
	return nil
}

// addResourceLocked starts the streams of a resource unless it has them.
func (c *Collector) addResourceLocked(ctx context.Context, r Resource, discovered bool) {
	if c.resources[r] {
		return
	}
	c.resources[r] = true
	namespaces := []string{""}
	if r.Namespaced && len(c.cfg.namespaces) > 0 {
		namespaces = c.cfg.namespaces
	}
	for _, ns := range namespaces {
		st := event.Stream{
			ClusterID: c.clusterID, Group: r.Group, Version: r.Version, Resource: r.Resource,
			Namespace: ns, Selector: ruleSelector(canonicalSelector(c.cfg.labelSelector, c.cfg.fieldSelector), c.cfg.rule),
		}
		s := newStream(c, r, st, discovered)
		if old, dup := c.streams[s.id]; dup {
			if old.status().State != StateRemoved {
				continue
			}
		} else {
			c.order = append(c.order, s.id)
		}
		c.streams[s.id] = s
		sctx, cancel := context.WithCancelCause(ctx)
		s.cancel = cancel
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			defer cancel(nil)
			s.run(sctx)
			if cause := context.Cause(sctx); errors.Is(cause, errResourceRemoved) && ctx.Err() == nil {
				s.removed(ctx, cause)
			}
		}()
	}
}

// canonicalSelector is the Stream.Selector of a label and field selector:
// empty when both are, otherwise "labels:<l>;fields:<f>" with each selector
// in its parsed, sorted form.
func canonicalSelector(labelSel, fieldSel string) string {
	if labelSel == "" && fieldSel == "" {
		return ""
	}
	return "labels:" + canonicalLabels(labelSel) + ";fields:" + canonicalFields(fieldSel)
}

// rediscover looks for pending resources on the rediscovery interval.
func (c *Collector) rediscover(ctx context.Context) {
	t := c.cfg.clock.NewTicker(c.cfg.rediscoveryInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		c.mu.Lock()
		pending := append([]string(nil), c.pending...)
		c.mu.Unlock()
		if len(pending) == 0 && !c.cfg.allResources {
			continue
		}
		cat, err := discover(ctx, c.disc)
		if err != nil {
			c.log.Error(err, "rediscovery failed; retrying at the next interval", "interval", c.cfg.rediscoveryInterval)
			continue
		}
		if c.cfg.allResources {
			c.follow(ctx, cat)
		}
		c.mu.Lock()
		var still []string
		for _, spec := range c.pending {
			r, ok := cat.resolve(spec)
			if !ok || (isSecret(r) && !c.cfg.allowSecrets) {
				still = append(still, spec)
				continue
			}
			c.log.Info("discovered resource", "resource", spec, "gvr", r.GVR().String())
			c.addResourceLocked(ctx, r, true)
		}
		c.pending = still
		c.mu.Unlock()
	}
}

// deriveClusterID returns the UID of the kube-system namespace, or a hash
// of the server URL when that namespace cannot be read.
func (c *Collector) deriveClusterID(ctx context.Context) (string, error) {
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	b := newBackoff(c.cfg.backoffMin, c.cfg.backoffMax, c.cfg.clock)
	for {
		ns, err := c.dyn.Resource(nsGVR).Get(ctx, metav1.NamespaceSystem, metav1.GetOptions{})
		if err == nil && ns.GetUID() != "" {
			return string(ns.GetUID()), nil
		}
		if err == nil || apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsUnauthorized(err) {
			if c.host == "" {
				return "", fmt.Errorf("watch: %w: cannot derive a cluster ID (kube-system unreadable: %v, server URL unknown); use WithClusterID", ErrInvalidArgument, err)
			}
			sum := sha256.Sum256([]byte(strings.TrimRight(c.host, "/")))
			id := "url-" + hex.EncodeToString(sum[:8])
			c.log.Info("kube-system namespace unreadable; cluster ID derived from the server URL", "clusterID", id, "reason", fmt.Sprint(err))
			return id, nil
		}
		c.log.Error(err, "reading kube-system for the cluster ID, retrying", "backoff", b.next())
		if werr := b.wait(ctx); werr != nil {
			return "", werr
		}
	}
}

// ClusterID returns the cluster ID the records carry: the configured one,
// or the derived one once Start derived it ("" before).
func (c *Collector) ClusterID() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.clusterID
}

// WaitForSync blocks until every stream configured at Start has a complete
// baseline or has resumed its watch from the durable checkpoint, and
// returns nil. It returns ctx's error if ctx ends first, and Start's error
// (or "collector stopped") if Start returns first. Streams discovered later
// do not hold it up; a stream the server keeps denying (403) does, so give
// ctx a deadline and look at Status to see which.
//
// A synced stream opens its watch a moment later. A real apiserver replays
// what changed in between; client-go's dynamic fake does not (it sends the
// changed objects as ADDED and loses deletions), so a test on the fake
// should also wait until Status shows every stream StateWatching before it
// changes the fake, as krplytest does.
func (c *Collector) WaitForSync(ctx context.Context) error {
	select {
	case <-c.syncCh:
	case <-ctx.Done():
		return ctx.Err()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.allSyncedLocked() {
		return nil
	}
	if c.startErr != nil {
		return fmt.Errorf("watch: collector stopped before sync: %w", c.startErr)
	}
	return errors.New("watch: collector stopped before sync")
}

// WaitForProgress blocks until every stream has durable evidence of
// continuity after t — an event, a bookmark, a progress checkpoint or a
// baseline end observed after t (StreamStatus.LastDurableAt) — and returns
// nil. Coverage at t needs that evidence (storage.Coverage), so a snapshot
// of "now" is complete once WaitForProgress(ctx, now) returned, unless a
// stream lost continuity: it waits for evidence, not for coverage, and a
// stream in a gap at t stays incomplete at t.
//
// A quiet stream gets evidence once per progress interval
// (WithProgressInterval), so the wait lasts up to about one interval; with
// progress checkpoints off, only events, bookmarks and baselines advance
// it. Streams discovered later count once they exist; resources not served
// yet do not. It returns ctx's error, naming the streams still behind, if
// ctx ends first, and an error if Start returns first (or ctx ends before
// Start resolved the streams).
func (c *Collector) WaitForProgress(ctx context.Context, t time.Time) error {
	for {
		ch := c.progressChan()
		c.mu.Lock()
		resolved := c.resolved
		streams := make([]*stream, 0, len(c.order))
		for _, id := range c.order {
			streams = append(streams, c.streams[id])
		}
		c.mu.Unlock()
		var behind []string
		for _, s := range streams {
			st := s.status()
			if !st.LastDurableAt.After(t) && st.State != StateRemoved {
				behind = append(behind, fmt.Sprintf("%s (evidence reaches to %s)", st.StreamID, st.LastDurableAt.UTC().Format(time.RFC3339Nano)))
			}
		}
		if resolved && len(behind) == 0 {
			return nil
		}
		select {
		case <-ch:
		case <-c.doneCh:
			if c.progressed(t) {
				return nil
			}
			return fmt.Errorf("watch: collector stopped before every stream had evidence after %s: %s", t.UTC().Format(time.RFC3339Nano), strings.Join(behind, ", "))
		case <-ctx.Done():
			if !resolved {
				return fmt.Errorf("watch: waiting for evidence after %s: the streams are not resolved yet: %w", t.UTC().Format(time.RFC3339Nano), ctx.Err())
			}
			return fmt.Errorf("watch: waiting for evidence after %s: %s: %w", t.UTC().Format(time.RFC3339Nano), strings.Join(behind, ", "), ctx.Err())
		}
	}
}

// progressed reports whether every stream has evidence after t.
func (c *Collector) progressed(t time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.resolved {
		return false
	}
	for _, id := range c.order {
		if st := c.streams[id].status(); !st.LastDurableAt.After(t) && st.State != StateRemoved {
			return false
		}
	}
	return true
}

// progressChan returns the channel the next advance of evidence closes.
func (c *Collector) progressChan() <-chan struct{} { return c.progress.Wait() }

// notifyProgress wakes WaitForProgress: a stream's evidence advanced.
func (c *Collector) notifyProgress() { c.progress.Notify() }

// Appended returns a channel closed the next time the Collector makes
// records durable in its store: a reader of the store (the query API's
// change feed, server.WithRecorder) reads them at once instead of polling.
func (c *Collector) Appended() <-chan struct{} { return c.appended.Wait() }

func (c *Collector) allSyncedLocked() bool {
	if !c.resolved {
		return false
	}
	for _, id := range c.order {
		if s := c.streams[id]; !s.discovered && !s.isSynced() && s.status().State != StateRemoved {
			return false
		}
	}
	return true
}

func (c *Collector) checkSyncedLocked() {
	if c.allSyncedLocked() {
		c.closeSync()
	}
}

func (c *Collector) closeSync() {
	select {
	case <-c.syncCh:
	default:
		close(c.syncCh)
	}
}

func (c *Collector) streamSynced() {
	c.mu.Lock()
	c.checkSyncedLocked()
	c.mu.Unlock()
}

func (c *Collector) firstStreamErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, id := range c.order {
		if err := c.streams[id].fatalErr(); err != nil {
			return err
		}
	}
	return nil
}

// Status returns the state of every stream, ordered by stream ID, plus one
// entry (State "pending") per configured resource that is not served yet.
func (c *Collector) Status() []StreamStatus {
	c.mu.Lock()
	streams := make([]*stream, 0, len(c.order))
	for _, id := range c.order {
		streams = append(streams, c.streams[id])
	}
	pending := append([]string(nil), c.pending...)
	c.mu.Unlock()
	out := make([]StreamStatus, 0, len(streams)+len(pending))
	for _, s := range streams {
		out = append(out, s.status())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StreamID < out[j].StreamID })
	for _, spec := range pending {
		out = append(out, StreamStatus{State: StatePending, Degraded: true, DegradedReason: fmt.Sprintf("resource %q is not served by the API server", spec)})
	}
	return out
}
