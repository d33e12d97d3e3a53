package transfer

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/journal"
)

// Import reads an export stream from rd and appends its records to store,
// in the stream's order, WithBatchSize records per Append (one
// transaction each; into a storage.BulkAppender, many batches per bulk
// transaction, see the package documentation). Records the journal holds already (the same EventID)
// are not stored again, so importing a stream twice adds nothing the
// second time, and an import cut short is completed by importing the
// whole stream again.
//
// Every line is checked before its batch is appended: it must be JSON of
// the kind its place calls for, and each record must be one the journal
// accepts (storage.ErrInvalidRecord; a body that does not match its
// ObjectHash is one). The last batch is appended only after the trailer,
// whose counts must match. A stream that is not an export, of a newer
// format, corrupt, or cut short fails with a *LineError (wrapping
// ErrInvalidStream) naming the line, and no record of the batch that line
// belongs to is stored: the journal then holds whole batches, a prefix of
// the stream, which LineError.Records counts. To import all or nothing,
// Verify the stream first.
//
// The importing journal assigns its own IngestSeqs, in the stream's
// order. A record of a stream the journal records already must not be
// observed before that stream's last record there (ErrOutOfOrder; see
// the package documentation). A stream's status follows from its
// records, except that its checkpoint and availability are restored from
// its stream line when the journal implements storage.StreamRestorer, the
// export was not restricted in time, and the journal's records of the
// stream are exactly the exported ones (after a Compact in the source,
// its records alone may not give them); Result.StreamsRestored counts
// those streams.
func Import(ctx context.Context, rd io.Reader, store storage.ReadWriter, opts ...ImportOption) (Result, error) {
	if store == nil {
		return Result{}, fmt.Errorf("transfer: %w: Import needs a journal", storage.ErrInvalidArgument)
	}
	return read(ctx, rd, store, opts)
}

// Verify reads an export stream as Import does, checking every line, the
// order of lines and the trailer's counts, and stores nothing. A stream
// Verify accepts, Import accepts too (unless the journal refuses a write).
func Verify(ctx context.Context, rd io.Reader, opts ...ImportOption) (Result, error) {
	return read(ctx, rd, nil, opts)
}

func read(ctx context.Context, rd io.Reader, store storage.ReadWriter, opts []ImportOption) (Result, error) {
	c, err := importConfig(opts)
	if err != nil {
		return Result{}, err
	}
	if rd == nil {
		return Result{}, fmt.Errorf("transfer: %w: no reader to import from", storage.ErrInvalidArgument)
	}
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	im := &importer{ctx: pctx, c: c, store: store, lr: newLineReader(rd), batches: make(chan batch, 2)}
	im.bulker, _ = store.(storage.BulkAppender)
	// One goroutine reads and checks lines into batches while this one
	// appends the batches before them, in order.
	var parseErr error
	go func() {
		defer close(im.batches)
		parseErr = im.run()
	}()
	var failed *LineError
	for b := range im.batches {
		if failed != nil {
			continue // drain: the reader stops at its next send
		}
		if err := im.append(b); err != nil {
			failed = &LineError{Line: b.line, Records: im.committed, Err: errors.Join(err, im.rollback())}
			cancel()
			continue
		}
		c.report(Progress{Lines: b.line, Records: b.count, Bytes: b.bytes})
	}
	res := im.res
	res.Lines, res.Bytes = im.lr.line, im.lr.bytes
	if failed != nil {
		return res, failed
	}
	// The batches appended are whole and checked, even when a later line
	// was not: they are committed either way.
	if err := im.commit(); err != nil {
		return res, &LineError{Line: im.lr.line, Records: im.committed, Err: errors.Join(parseErr, err)}
	}
	if parseErr != nil {
		return res, &LineError{Line: im.lr.line, Records: im.committed, Err: parseErr}
	}
	if err := im.restore(); err != nil {
		return res, &LineError{Line: res.Lines, Records: im.committed, Err: err}
	}
	res.StreamsRestored = im.res.StreamsRestored
	c.report(res.Progress)
	return res, nil
}

// batch is a batch of checked records and where the stream was after it.
type batch struct {
	records            []event.Record
	line, bytes, count int64
}

// append appends a batch in one transaction.
func (im *importer) append(b batch) error {
	if im.store == nil {
		return nil
	}
	if err := im.inOrder(b.records); err != nil {
		return err
	}
	res, err := im.appendBatch(b.records)
	if err != nil {
		return fmt.Errorf("transfer: import: append the %d records up to this line: %w", len(b.records), err)
	}
	for i, rec := range b.records {
		// A record the journal held when the import met its stream has
		// a sequence number no later than the stream's last then.
		if st := im.seen[rec.StreamID]; st != nil && i < len(res.Seqs) && res.Seqs[i] <= st.lastSeq {
			st.held++
		}
	}
	im.res.Inserted += int64(res.Inserted)
	im.res.Duplicates += int64(res.Duplicates)
	return nil
}

// bulkRecords is how many records an import into a storage.BulkAppender
// appends per transaction, in batches of WithBatchSize.
var bulkRecords int64 = 1 << 18

// appendBatch appends records in one transaction of their own or, when
// the journal is a storage.BulkAppender, in the bulk transaction, which
// it commits once it holds bulkRecords records. The records of a batch
// appended are counted in committed once committed.
func (im *importer) appendBatch(records []event.Record) (storage.AppendResult, error) {
	if im.bulker == nil {
		res, err := im.store.Append(im.ctx, records)
		if err == nil {
			im.committed += int64(len(records))
		}
		return res, err
	}
	if im.bulk == nil {
		bulk, err := im.bulker.BeginBulk(im.ctx)
		if err != nil {
			return storage.AppendResult{}, err
		}
		im.bulk = bulk
	}
	res, err := im.bulk.Append(im.ctx, records)
	if err != nil {
		return res, err
	}
	im.pending += int64(len(records))
	if im.pending >= bulkRecords {
		return res, im.commit()
	}
	return res, nil
}

// commit commits the bulk transaction, if one is open.
func (im *importer) commit() error {
	if im.bulk == nil {
		return nil
	}
	bulk := im.bulk
	im.bulk = nil
	if err := bulk.Commit(); err != nil {
		return errors.Join(fmt.Errorf("transfer: import: commit the %d records before this line: %w", im.pending, err), bulk.Rollback())
	}
	im.committed += im.pending
	im.pending = 0
	return nil
}

// rollback rolls the bulk transaction back, if one is open: its records
// are not stored.
func (im *importer) rollback() error {
	if im.bulk == nil {
		return nil
	}
	bulk := im.bulk
	im.bulk, im.pending = nil, 0
	if err := bulk.Rollback(); err != nil {
		return fmt.Errorf("transfer: import: roll back: %w", err)
	}
	return nil
}

// inOrder refuses a batch that would add to a stream a record observed
// before the stream's last record in the journal as it was when the
// import began: within a stream ObservedAt must not decrease in append
// order (storage.Writer), and the stream's timeline would interleave two
// histories. A record the journal holds already is no such addition (a
// second import); it is looked up only when its time is suspect. Nor is
// a record that comes after every record the journal held of its stream
// in this import (an import cut short, resumed): the stream then goes on
// in the order of the export, which is its source's (after a Compact,
// the compaction's baseline comes before older records of its stream).
func (im *importer) inOrder(records []event.Record) error {
	if im.seen == nil {
		im.seen = map[string]*streamSeen{}
	}
	for i, rec := range records {
		if rec.StreamID == "" {
			continue
		}
		st := im.seen[rec.StreamID]
		if st == nil {
			status, err := im.store.StreamStatus(im.ctx, rec.StreamID)
			if err != nil && !errors.Is(err, storage.ErrNotFound) {
				return fmt.Errorf("transfer: import: stream %s: %w", rec.StreamID, err)
			}
			st = &streamSeen{last: status.LastObservedAt, records: status.Records, lastSeq: status.LastSeq}
			im.seen[rec.StreamID] = st
		}
		if st.resumed || !rec.ObservedAt.Before(st.last) {
			continue
		}
		held, err := im.holds(rec.EventID)
		if err != nil || held {
			return err
		}
		// The records of the stream earlier in this batch that the
		// journal holds, with those of the batches before.
		n := st.held
		for _, earlier := range records[:i] {
			if earlier.StreamID != rec.StreamID {
				continue
			}
			held, err := im.holds(earlier.EventID)
			if err != nil {
				return err
			}
			if held {
				n++
			}
		}
		if n == st.records {
			st.resumed = true
			continue
		}
		return fmt.Errorf("%w: record %q of stream %s is observed at %s, before the stream's last record in the journal (%s): import it into a journal that does not record the stream, or export only the records after that (Since)",
			ErrOutOfOrder, rec.EventID, rec.StreamID, rec.ObservedAt.UTC().Format(time.RFC3339Nano), st.last.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// holds reports whether the journal holds the record with this EventID.
func (im *importer) holds(eventID string) (bool, error) {
	_, err := im.store.Get(im.ctx, eventID)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("transfer: import: look up %q: %w", eventID, err)
	}
	return true, nil
}

// streamSeen is what an import knows of a stream of the journal.
type streamSeen struct {
	// last, records and lastSeq: its last record's ObservedAt, its
	// number of records and its last IngestSeq when the import first met
	// it.
	last    time.Time
	records int64
	lastSeq int64
	// held counts its records in the batches appended so far that the
	// journal held already; resumed is set once they were all of them
	// (see inOrder).
	held    int64
	resumed bool
}

type importer struct {
	// seen holds what the import knows of each stream of the journal
	// (the appender's).
	seen  map[string]*streamSeen
	ctx   context.Context
	c     *config
	store storage.ReadWriter
	lr    *lineReader
	// bulker is store when it is a storage.BulkAppender; bulk is its
	// open bulk transaction (the appender's), holding pending records;
	// committed counts the records committed.
	bulker             storage.BulkAppender
	bulk               storage.Bulk
	pending, committed int64
	// batch is the batch being read; batches go to the appender.
	batch   []event.Record
	batches chan batch
	// res is shared: the reader sets Records, Streams and Clusters, the
	// appender Inserted, Duplicates and StreamsRestored; read it after
	// the reader ended.
	res Result
	// window is true when the export was restricted in time; streams are
	// the stream lines.
	window  bool
	streams []storage.StreamStatus
}

// The parts of a stream, in order.
const (
	partRecords = iota
	partStreams
)

func (im *importer) run() error {
	first, err := im.lr.next()
	if errors.Is(err, io.EOF) {
		im.lr.line = 1
		return fmt.Errorf("%w: the stream is empty: an export starts with its header line", ErrInvalidStream)
	}
	if err != nil {
		return err
	}
	if err := im.header(first); err != nil {
		return err
	}
	part := partRecords
	for {
		if err := im.ctx.Err(); err != nil {
			return fmt.Errorf("transfer: import: %w", err)
		}
		data, err := im.lr.next()
		if errors.Is(err, io.EOF) {
			im.lr.line++
			return fmt.Errorf("%w: the stream ends without its trailer line: it was cut short", ErrInvalidStream)
		}
		if err != nil {
			return err
		}
		l, err := parseLine(data)
		if err != nil {
			return err
		}
		switch {
		case l.Header != nil:
			return fmt.Errorf("%w: a second header line", ErrInvalidStream)
		case l.End != nil:
			return im.end(l.End)
		case l.Stream != nil:
			part = partStreams
			if _, err := event.ParseStreamID(l.Stream.StreamID); err != nil {
				return fmt.Errorf("%w: stream line: %v", ErrInvalidStream, err)
			}
			im.res.Streams++
			im.streams = append(im.streams, *l.Stream)
		case part != partRecords:
			return fmt.Errorf("%w: record %q after the stream lines: records come first", ErrInvalidStream, l.EventID)
		default:
			if err := im.record(l.Record); err != nil {
				return err
			}
		}
	}
}

func (im *importer) header(data []byte) error {
	l, err := parseLine(data)
	if err != nil && bytes.Contains(data, []byte(`{"krplyExport":`)) {
		return fmt.Errorf("%w (the header line)", err)
	}
	if err != nil || l.Header == nil {
		return fmt.Errorf("%w: the first line is not the header of a krply export ({\"krplyExport\":...})", ErrInvalidStream)
	}
	h := l.Header
	switch {
	case h.Format != formatName:
		return fmt.Errorf("%w: header names format %q, want %q", ErrInvalidStream, h.Format, formatName)
	case h.Version > FormatVersion:
		return fmt.Errorf("%w: format version %d is newer than this krply reads (%d): import it with a newer krply", ErrInvalidStream, h.Version, FormatVersion)
	case h.Version < 1:
		return fmt.Errorf("%w: format version %d does not exist", ErrInvalidStream, h.Version)
	}
	im.res.Clusters = h.Clusters
	im.window = h.Since != nil || h.Until != nil
	return nil
}

func (im *importer) record(rec event.Record) error {
	if err := journal.Validate(&rec); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidStream, recordProblem(rec, err))
	}
	im.batch = append(im.batch, rec)
	im.res.Records++
	im.res.observe(rec.ObservedAt.UTC())
	if len(im.batch) >= im.c.batch {
		return im.flush()
	}
	return nil
}

// flush hands the batch to the appender.
func (im *importer) flush() error {
	if len(im.batch) == 0 {
		return nil
	}
	b := batch{records: im.batch, line: im.lr.line, bytes: im.lr.bytes, count: im.res.Records}
	im.batch = make([]event.Record, 0, im.c.batch)
	select {
	case im.batches <- b:
		return nil
	case <-im.ctx.Done():
		return fmt.Errorf("transfer: import: %w", context.Cause(im.ctx))
	}
}

func (im *importer) end(t *trailer) error {
	if t.Records != im.res.Records || t.Streams != im.res.Streams {
		return fmt.Errorf("%w: the trailer counts %d records and %d streams, the stream holds %d and %d",
			ErrInvalidStream, t.Records, t.Streams, im.res.Records, im.res.Streams)
	}
	if _, err := im.lr.next(); !errors.Is(err, io.EOF) {
		if err == nil {
			return fmt.Errorf("%w: a line after the trailer", ErrInvalidStream)
		}
		return err
	}
	return im.flush()
}

// restore sets the checkpoint and availability of the streams whose
// records in the journal are exactly those the exported stream had (same
// count, bounds, baselines and gaps) where they differ from the exported
// ones, which happens after a Compact in the source. A stream with
// other records as well (the journal recorded it too) follows from all
// of its records; an export restricted in time restores nothing.
func (im *importer) restore() error {
	sr, ok := im.store.(storage.StreamRestorer)
	if !ok || im.window {
		return nil
	}
	var todo []storage.StreamStatus
	for _, want := range im.streams {
		got, err := im.store.StreamStatus(im.ctx, want.StreamID)
		switch {
		case errors.Is(err, storage.ErrNotFound) && want.Records == 0:
			todo = append(todo, want)
		case err != nil && !errors.Is(err, storage.ErrNotFound):
			return fmt.Errorf("transfer: import: stream %s: %w", want.StreamID, err)
		case err == nil && sameRecords(got, want) && !sameDurable(got, want):
			todo = append(todo, want)
		}
	}
	if len(todo) == 0 {
		return nil
	}
	if err := sr.RestoreStreams(im.ctx, todo); err != nil {
		return fmt.Errorf("transfer: import: restore the checkpoint and availability of %d streams: %w", len(todo), err)
	}
	im.res.StreamsRestored = len(todo)
	return nil
}

// sameRecords reports whether two statuses describe the same records.
func sameRecords(a, b storage.StreamStatus) bool {
	return a.Records == b.Records && a.FirstObservedAt.Equal(b.FirstObservedAt) && a.LastObservedAt.Equal(b.LastObservedAt) &&
		a.LastBaselineID == b.LastBaselineID && a.LastBaselineEndAt.Equal(b.LastBaselineEndAt) &&
		a.OpenBaselineID == b.OpenBaselineID && a.Gaps == b.Gaps && a.LastGapAt.Equal(b.LastGapAt)
}

// sameDurable reports whether two statuses have the same checkpoint and
// availability.
func sameDurable(a, b storage.StreamStatus) bool {
	return a.CheckpointRV == b.CheckpointRV && a.CheckpointAt.Equal(b.CheckpointAt) &&
		a.Available == b.Available && a.AvailabilityReason == b.AvailabilityReason
}
