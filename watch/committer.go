package watch

import (
	"context"
	"fmt"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"k8s.io/utils/clock"
)

// writeItem is a group of records one stream hands to the committer. The
// records of an item are appended in order, in one Append, after every item
// submitted before it.
type writeItem struct {
	stream *stream
	recs   []event.Record
	bytes  int
	// done, when set, receives the outcome once the records are durable
	// (or failed); the submitter waits for it. Items without done are
	// watch events: their submitter goes on at once, and ordering plus the
	// committer's failure being fatal make them as good as durable.
	done chan error
}

// committer is the single writer of the store. It groups the items of all
// streams into batches bounded by count, bytes and latency, so that a burst
// of events costs one transaction. Its input channel is bounded: when the
// store is slower than the watches, submitters block (backpressure).
type committer struct {
	store   storage.Writer
	in      chan writeItem
	clock   clock.Clock
	maxRecs int
	maxByte int
	maxWait time.Duration

	appendSeconds Histogram
	batchRecords  Histogram

	// dead is closed when run returns: nothing reads in any more.
	dead chan struct{}
}

// errCommitterStopped: the committer stopped (the store failed, or the
// final commit ran), so a record could not be handed over.
var errCommitterStopped = fmt.Errorf("%w: the committer stopped", ErrStore)

func newCommitter(store storage.Writer, cfg *config) *committer {
	return &committer{
		store:         store,
		in:            make(chan writeItem, cfg.queueSize),
		clock:         cfg.clock,
		maxRecs:       cfg.batchMaxEvents,
		maxByte:       cfg.batchMaxBytes,
		maxWait:       cfg.batchMaxLatency,
		appendSeconds: cfg.metrics.NewAppendSeconds(),
		batchRecords:  cfg.metrics.NewBatchRecords(),
		dead:          make(chan struct{}),
	}
}

// submit hands an item to the committer, waiting while the queue is full.
// With wait it also waits until the records are durable.
func (c *committer) submit(ctx context.Context, it writeItem, wait bool) error {
	if wait {
		it.done = make(chan error, 1)
	}
	select {
	case c.in <- it:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.dead:
		return errCommitterStopped
	}
	if !wait {
		return nil
	}
	select {
	case err := <-it.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// pipeline submits items so that one is being appended while the next is
// being built (fetching a list page overlaps appending the previous one),
// with at most one item in flight: memory stays at three pages (the one
// appended, the one built, and the next one fetched: see fetchPage).
type pipeline struct {
	c        *committer
	inFlight chan error
}

// submit waits for the item in flight, then hands over this one without
// waiting for it.
func (p *pipeline) submit(ctx context.Context, it writeItem) error {
	if err := p.wait(ctx); err != nil {
		return err
	}
	it.done = make(chan error, 1)
	select {
	case p.c.in <- it:
	case <-ctx.Done():
		return ctx.Err()
	}
	p.inFlight = it.done
	return nil
}

// wait waits until the item in flight, if any, is durable.
func (p *pipeline) wait(ctx context.Context) error {
	if p.inFlight == nil {
		return nil
	}
	select {
	case err := <-p.inFlight:
		p.inFlight = nil
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// run commits until stop is closed or the store fails. Every Append runs on
// ctx, which the caller cancels only when the final commit after stop has
// run out of time: a stop never cancels an Append in flight. On stop it
// commits what it already holds, so that a clean shutdown loses nothing
// that was received.
func (c *committer) run(ctx context.Context, stop <-chan struct{}) error {
	defer close(c.dead)
	var (
		pending []writeItem
		recs    int
		bytes   int
		timer   clock.Timer
		timerC  <-chan time.Time
	)
	flush := func(ctx context.Context) error {
		if timer != nil {
			timer.Stop()
			timer, timerC = nil, nil
		}
		if len(pending) == 0 {
			return nil
		}
		err := c.append(ctx, pending, recs)
		for _, it := range pending {
			if it.done != nil {
				it.done <- err
			}
		}
		pending, recs, bytes = pending[:0], 0, 0
		return err
	}
	add := func(it writeItem) {
		pending = append(pending, it)
		recs += len(it.recs)
		bytes += it.bytes
		if timer == nil && c.maxWait > 0 {
			timer = c.clock.NewTimer(c.maxWait)
			timerC = timer.C()
		}
	}
	for {
		select {
		case it := <-c.in:
			add(it)
			// Take what is already queued without waiting, so that a
			// burst becomes one batch.
		drain:
			for recs < c.maxRecs && bytes < c.maxByte {
				select {
				case more := <-c.in:
					add(more)
				default:
					break drain
				}
			}
			if it.done != nil || recs >= c.maxRecs || bytes >= c.maxByte || c.maxWait == 0 || hasWaiter(pending) {
				if err := flush(ctx); err != nil {
					return err
				}
			}
		case <-timerC:
			timer, timerC = nil, nil
			if err := flush(ctx); err != nil {
				return err
			}
		case <-stop:
			for {
				select {
				case it := <-c.in:
					add(it)
					continue
				default:
				}
				break
			}
			return flush(ctx)
		}
	}
}

func hasWaiter(items []writeItem) bool {
	for _, it := range items {
		if it.done != nil {
			return true
		}
	}
	return false
}

func (c *committer) append(ctx context.Context, items []writeItem, n int) error {
	batch := make([]event.Record, 0, n)
	for _, it := range items {
		batch = append(batch, it.recs...)
	}
	start := c.clock.Now()
	_, err := c.store.Append(ctx, batch)
	c.appendSeconds.Observe(c.clock.Since(start).Seconds())
	c.batchRecords.Observe(float64(len(batch)))
	if err != nil {
		return fmt.Errorf("%w: append %d records: %w", ErrStore, len(batch), err)
	}
	for _, it := range items {
		if it.stream != nil {
			it.stream.durable(it.recs)
		}
	}
	return nil
}
