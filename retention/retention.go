package retention

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/utils/clock"

	"github.com/krply/krply/internal/diskspace"
	"github.com/krply/krply/storage"
)

// ErrInvalidArgument is storage.ErrInvalidArgument, the sentinel of every
// krply package.
var ErrInvalidArgument = storage.ErrInvalidArgument

// ErrPressure is the error Ready wraps while the journal cannot be kept
// within its bounds: over its size with nothing left to compact, short of
// disk, or the last run failed.
var ErrPressure = errors.New("retention: journal under pressure")

// Defaults of the options.
const (
	DefaultInterval = 5 * time.Minute
	DefaultMinAge   = time.Hour
	// sizeTarget is the share of MaxSize a run that compacts by size aims
	// for, so that the next runs do not compact again at once.
	sizeTarget = 0.8
	// sizeSteps bounds the compactions of one run by size.
	sizeSteps = 6
)

// Option configures a Keeper.
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

type config struct {
	maxAge, minAge, interval time.Duration
	maxSize                  int64
	diskPath                 string
	diskReserve              int64
	log                      logr.Logger
	clock                    clock.WithTicker
	diskFree                 func(path string) (int64, error)
	resourceAges             []resourceAge
}

// resourceAge is one WithResourceMaxAge.
type resourceAge struct {
	age       time.Duration
	resources []string
}

// WithMaxAge keeps history for at most d: each run compacts before now
// minus d. 0 (the default) keeps history of any age.
func WithMaxAge(d time.Duration) Option { return optionFunc(func(c *config) { c.maxAge = d }) }

// WithResourceMaxAge keeps the history of the given resources ("events"
// for the core group, "resource.group" otherwise, e.g.
// "events.events.k8s.io") for at most d, however long the rest is kept:
// each run compacts their streams alone before now minus d
// (storage.ResourceCompactor), so that a resource of great volume and
// short use, such as Kubernetes Events, cannot crowd out object history.
// Coverage of those streams before their cut says where their history
// begins. It needs a store that implements storage.ResourceCompactor (the
// stores of this module and storage/postgres do); 0 keeps them as long as
// the rest.
func WithResourceMaxAge(d time.Duration, resources ...string) Option {
	return optionFunc(func(c *config) {
		c.resourceAges = append(c.resourceAges, resourceAge{age: d, resources: resources})
	})
}

// WithMaxSize bounds the bytes the journal's data takes (Stats.UsedBytes:
// its pages in use, without those Compact freed and without the
// write-ahead log; for a store without a file, Stats.BodyBytes). 0 (the
// default) sets no bound.
func WithMaxSize(bytes int64) Option { return optionFunc(func(c *config) { c.maxSize = bytes }) }

// WithMinAge is the history a compaction by size never removes: it cuts no
// later than now minus d (default DefaultMinAge). When that is not enough
// to meet WithMaxSize, the Keeper reports pressure.
func WithMinAge(d time.Duration) Option { return optionFunc(func(c *config) { c.minAge = d }) }

// WithInterval sets how often Run enforces the policy (default
// DefaultInterval).
func WithInterval(d time.Duration) Option { return optionFunc(func(c *config) { c.interval = d }) }

// WithDiskReserve reports pressure while the file system holding path
// (the journal's file or folder) has less than bytes available to this
// process. It is checked at every run.
func WithDiskReserve(path string, bytes int64) Option {
	return optionFunc(func(c *config) { c.diskPath, c.diskReserve = path, bytes })
}

// WithLogger sets the logger (default: none).
func WithLogger(l logr.Logger) Option { return optionFunc(func(c *config) { c.log = l }) }

// WithClock sets the clock the cuts and the schedule use (default the real
// clock).
func WithClock(clk clock.WithTicker) Option { return optionFunc(func(c *config) { c.clock = clk }) }

// Status is the outcome of the Keeper's runs.
type Status struct {
	// Runs counts the runs, Compactions the compactions they made,
	// Failures the runs that failed.
	Runs        int64 `json:"runs"`
	Compactions int64 `json:"compactions"`
	Failures    int64 `json:"failures"`
	// LastRun is when the last run ended, LastError its error ("" when it
	// succeeded).
	LastRun   time.Time `json:"lastRun,omitzero"`
	LastError string    `json:"lastError,omitempty"`
	// Cut is the latest time the whole journal was compacted before: its
	// history begins there (zero until a compaction removed something). A
	// WithResourceMaxAge compaction counts in Compactions and the removed
	// totals, not here.
	Cut time.Time `json:"cut,omitzero"`
	// RecordsRemoved and BodiesRemoved add up what the compactions removed.
	RecordsRemoved int64 `json:"recordsRemoved"`
	BodiesRemoved  int64 `json:"bodiesRemoved"`
	// UsedBytes is what the journal took after the last run, FileBytes the
	// size of its files, and DiskFreeBytes the space left on its file
	// system (-1 when unknown or not asked for).
	UsedBytes     int64 `json:"usedBytes"`
	FileBytes     int64 `json:"fileBytes"`
	DiskFreeBytes int64 `json:"diskFreeBytes"`
	// Pressure says why the journal is not within its bounds ("" when it
	// is): over its size with nothing left to compact, or short of disk.
	Pressure string `json:"pressure,omitempty"`
}

// Keeper enforces a retention policy on a journal.
type Keeper struct {
	store storage.ReadWriter
	cfg   config

	runMu sync.Mutex // one run at a time
	mu    sync.Mutex
	st    Status
}

// New returns a Keeper of store's history. It does no I/O; Run and Enforce
// do.
func New(store storage.ReadWriter, opts ...Option) (*Keeper, error) {
	if store == nil {
		return nil, fmt.Errorf("retention: %w: nil store", ErrInvalidArgument)
	}
	cfg := config{minAge: DefaultMinAge, interval: DefaultInterval, log: logr.Discard(), clock: clock.RealClock{}, diskFree: diskspace.Free}
	for _, o := range opts {
		if o != nil {
			o.apply(&cfg)
		}
	}
	switch {
	case cfg.maxAge < 0 || cfg.minAge < 0 || cfg.maxSize < 0 || cfg.diskReserve < 0:
		return nil, fmt.Errorf("retention: %w: negative age, size or reserve", ErrInvalidArgument)
	case cfg.interval <= 0:
		return nil, fmt.Errorf("retention: %w: interval %s must be positive", ErrInvalidArgument, cfg.interval)
	case cfg.clock == nil:
		return nil, fmt.Errorf("retention: %w: nil clock", ErrInvalidArgument)
	case cfg.diskReserve > 0 && cfg.diskPath == "":
		return nil, fmt.Errorf("retention: %w: a disk reserve needs the journal's path", ErrInvalidArgument)
	}
	for _, ra := range cfg.resourceAges {
		switch {
		case ra.age < 0:
			return nil, fmt.Errorf("retention: %w: WithResourceMaxAge(%s, %q): negative age", ErrInvalidArgument, ra.age, ra.resources)
		case len(ra.resources) == 0 || slices.Contains(ra.resources, ""):
			return nil, fmt.Errorf("retention: %w: WithResourceMaxAge(%s) names no resource (e.g. \"events\")", ErrInvalidArgument, ra.age)
		}
		if _, ok := store.(storage.ResourceCompactor); !ok {
			return nil, fmt.Errorf("retention: %w: WithResourceMaxAge needs a store that compacts resources alone (storage.ResourceCompactor); %T does not", ErrInvalidArgument, store)
		}
	}
	cfg.log = cfg.log.WithName("krply-retention")
	return &Keeper{store: store, cfg: cfg, st: Status{DiskFreeBytes: -1}}, nil
}

// Run enforces the policy at once and then every interval until ctx ends,
// and returns nil then. A failed run does not end it: the failure is
// logged, counted and reported by Status and Ready until a run succeeds.
func (k *Keeper) Run(ctx context.Context) error {
	t := k.cfg.clock.NewTicker(k.cfg.interval)
	defer t.Stop()
	for {
		if _, err := k.Enforce(ctx); err != nil && ctx.Err() == nil {
			k.cfg.log.Error(err, "retention run failed; retrying at the next interval", "interval", k.cfg.interval)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
	}
}

// Status returns the outcome of the runs so far.
func (k *Keeper) Status() Status {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.st
}

// Ready returns nil while the journal is within its bounds, and an error
// wrapping ErrPressure that says why when the last run found pressure or
// failed. It does no I/O.
func (k *Keeper) Ready() error {
	st := k.Status()
	switch {
	case st.LastError != "":
		return fmt.Errorf("%w: the last retention run failed: %s", ErrPressure, st.LastError)
	case st.Pressure != "":
		return fmt.Errorf("%w: %s", ErrPressure, st.Pressure)
	}
	return nil
}

// Result is what one run did.
type Result struct {
	// Cut is the time the run compacted every stream before (zero when it
	// did not).
	Cut time.Time `json:"cut,omitzero"`
	// Removed adds up the run's compactions.
	Removed storage.CompactResult `json:"removed"`
	// UsedBytes is what the journal takes after the run.
	UsedBytes int64 `json:"usedBytes"`
	// Pressure says why the journal is not within its bounds after the run.
	Pressure string `json:"pressure,omitempty"`
}

// Enforce runs the policy once: compaction by age, then by size, then the
// disk check.
func (k *Keeper) Enforce(ctx context.Context) (res Result, err error) {
	k.runMu.Lock()
	defer k.runMu.Unlock()
	start := k.cfg.clock.Now()
	defer func() { err = k.finish(ctx, start, res, err) }()

	if k.cfg.maxAge > 0 {
		if err := k.compact(ctx, start.Add(-k.cfg.maxAge), &res); err != nil {
			return res, err
		}
	}
	if err := k.compactResources(ctx, start, &res); err != nil {
		return res, err
	}
	stats, err := k.store.Stats(ctx)
	if err != nil {
		return res, fmt.Errorf("retention: journal size: %w", err)
	}
	res.UsedBytes = used(stats)
	if k.cfg.maxSize > 0 && res.UsedBytes > k.cfg.maxSize {
		if err := k.shrink(ctx, start, &res); err != nil {
			return res, err
		}
	}
	return res, nil
}

// compact compacts before cut and adds what it removed to res.
func (k *Keeper) compact(ctx context.Context, cut time.Time, res *Result) error {
	cr, err := k.store.Compact(ctx, cut)
	if err != nil {
		return fmt.Errorf("retention: compacting before %s: %w", cut.UTC().Format(time.RFC3339), err)
	}
	if cr.RecordsRemoved > 0 || cr.BodiesRemoved > 0 {
		res.Cut = cut
		res.Removed.RecordsRemoved += cr.RecordsRemoved
		res.Removed.BodiesRemoved += cr.BodiesRemoved
		res.Removed.Streams = max(res.Removed.Streams, cr.Streams)
	}
	return nil
}

// compactResources compacts the streams of each WithResourceMaxAge before
// now minus its age, and adds what it removed to res (not its Cut, which
// is where every stream's history begins).
func (k *Keeper) compactResources(ctx context.Context, now time.Time, res *Result) error {
	for _, ra := range k.cfg.resourceAges {
		if ra.age == 0 {
			continue
		}
		cut := now.Add(-ra.age)
		cr, err := k.store.(storage.ResourceCompactor).CompactResources(ctx, cut, ra.resources)
		if err != nil {
			return fmt.Errorf("retention: compacting %s before %s: %w", strings.Join(ra.resources, ", "), cut.UTC().Format(time.RFC3339), err)
		}
		res.Removed.RecordsRemoved += cr.RecordsRemoved
		res.Removed.BodiesRemoved += cr.BodiesRemoved
		res.Removed.Streams = max(res.Removed.Streams, cr.Streams)
	}
	return nil
}

// shrink compacts at later and later cuts between the oldest record and
// now minus the minimum age until the journal takes at most sizeTarget of
// the maximum size, or says why it cannot.
func (k *Keeper) shrink(ctx context.Context, now time.Time, res *Result) error {
	latest := now.Add(-k.cfg.minAge)
	oldest, err := k.oldest(ctx)
	if err != nil {
		return err
	}
	target := int64(float64(k.cfg.maxSize) * sizeTarget)
	from := oldest
	if res.Cut.After(from) {
		from = res.Cut
	}
	for step := 0; step < sizeSteps && res.UsedBytes > target && from.Before(latest); step++ {
		// Cut the share of the remaining span that the excess is of the
		// journal, at least an eighth of it; the last step cuts at latest.
		share := max(float64(res.UsedBytes-target)/float64(res.UsedBytes), 0.125)
		cut := from.Add(time.Duration(float64(latest.Sub(from)) * share))
		if step == sizeSteps-1 || !cut.Before(latest) {
			cut = latest
		}
		if err := k.compact(ctx, cut, res); err != nil {
			return err
		}
		from = cut
		stats, err := k.store.Stats(ctx)
		if err != nil {
			return fmt.Errorf("retention: journal size: %w", err)
		}
		res.UsedBytes = used(stats)
	}
	if res.UsedBytes > k.cfg.maxSize {
		res.Pressure = fmt.Sprintf("the journal takes %d bytes, more than its maximum size %d, with its history since %s kept (minimum age %s): raise the maximum size or lower the minimum age",
			res.UsedBytes, k.cfg.maxSize, latest.UTC().Format(time.RFC3339), k.cfg.minAge)
	}
	return nil
}

// oldest returns the ObservedAt of the journal's first record.
func (k *Keeper) oldest(ctx context.Context) (time.Time, error) {
	page, err := k.store.Records(ctx, storage.Query{Limit: 1})
	if err != nil {
		return time.Time{}, fmt.Errorf("retention: oldest record: %w", err)
	}
	if len(page.Records) == 0 {
		return k.cfg.clock.Now(), nil
	}
	return page.Records[0].ObservedAt, nil
}

// used is what a journal's data takes (Stats.UsedBytes), or the bodies of
// a store without a file.
func used(st storage.Stats) int64 {
	if st.UsedBytes == 0 {
		return st.BodyBytes
	}
	return st.UsedBytes
}

// finish records a run's outcome in the status, with the disk check, logs
// it, and returns the run's error (or the disk check's).
func (k *Keeper) finish(ctx context.Context, start time.Time, res Result, err error) error {
	free := int64(-1)
	if k.cfg.diskPath != "" {
		if f, derr := k.cfg.diskFree(k.cfg.diskPath); derr == nil {
			free = f
			if k.cfg.diskReserve > 0 && f < k.cfg.diskReserve && res.Pressure == "" {
				res.Pressure = fmt.Sprintf("the disk of %s has %d bytes free, less than the reserve of %d: free space, grow the volume or lower the maximum size", k.cfg.diskPath, f, k.cfg.diskReserve)
			}
		} else if err == nil {
			err = fmt.Errorf("retention: free disk space of %s: %w", k.cfg.diskPath, derr)
		}
	}
	stats, serr := k.store.Stats(context.WithoutCancel(ctx))
	k.mu.Lock()
	prevPressure := k.st.Pressure
	k.st.Runs++
	k.st.LastRun = k.cfg.clock.Now()
	k.st.LastError = ""
	if err != nil {
		k.st.Failures++
		k.st.LastError = err.Error()
	}
	if !res.Cut.IsZero() {
		k.st.Cut = res.Cut
	}
	if res.Removed.RecordsRemoved > 0 || res.Removed.BodiesRemoved > 0 {
		k.st.Compactions++
		k.st.RecordsRemoved += res.Removed.RecordsRemoved
		k.st.BodiesRemoved += res.Removed.BodiesRemoved
	}
	if serr == nil {
		k.st.UsedBytes, k.st.FileBytes = used(stats), stats.FileBytes
	}
	k.st.DiskFreeBytes = free
	k.st.Pressure = res.Pressure
	k.mu.Unlock()

	log := k.cfg.log
	took := k.cfg.clock.Since(start)
	switch {
	case err != nil:
		// Run logs the error.
	case !res.Cut.IsZero():
		log.Info("compacted the journal", "before", res.Cut.UTC(), "recordsRemoved", res.Removed.RecordsRemoved,
			"bodiesRemoved", res.Removed.BodiesRemoved, "usedBytes", res.UsedBytes, "took", took)
	default:
		log.V(1).Info("retention run: nothing to compact", "usedBytes", res.UsedBytes, "took", took)
	}
	if res.Pressure != "" && res.Pressure != prevPressure {
		log.Info("journal under pressure", "reason", res.Pressure)
	} else if res.Pressure == "" && prevPressure != "" {
		log.Info("journal within its bounds again", "usedBytes", res.UsedBytes)
	}
	return err
}
