package transfer

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// Export writes the journal r holds to w as an export stream (see the
// package documentation for the format): the header, every record in
// IngestSeq order with its body byte for byte, the status of every
// stream, and the trailer. Options restrict it to clusters (Clusters) and
// to a time window of ObservedAt (Since, Until), and report progress
// (WithProgress).
//
// Export reads the records stored when it starts; records appended while
// it runs are left out. Where IngestSeq does not follow commit order
// across clusters (storage/postgres), the store ends reads of every
// cluster below the Appends in flight: the export then stops before them
// too, and holds no record without every one with a smaller IngestSeq
// that commits later. It only reads r, which may be open read-only.
// A Compact running at the same time may make it miss or repeat records:
// export a journal no process compacts meanwhile.
func Export(ctx context.Context, r storage.Reader, w io.Writer, opts ...ExportOption) (Result, error) {
	c, err := exportConfig(opts)
	if err != nil {
		return Result{}, err
	}
	if r == nil || w == nil {
		return Result{}, fmt.Errorf("transfer: %w: Export needs a journal and a writer", storage.ErrInvalidArgument)
	}
	e := &exporter{ctx: ctx, r: r, c: c, w: bufio.NewWriterSize(w, 1<<20)}
	if err := e.run(); err != nil {
		return e.res, err
	}
	return e.res, nil
}

type exporter struct {
	ctx context.Context
	r   storage.Reader
	c   *config
	w   *bufio.Writer
	buf []byte
	res Result
}

func (e *exporter) run() error {
	last, err := e.lastSeq()
	if err != nil {
		return err
	}
	clusters, err := e.clusters()
	if err != nil {
		return err
	}
	h := header{Format: formatName, Version: FormatVersion, Clusters: clusters}
	if !e.c.since.IsZero() {
		h.Since = &e.c.since
	}
	if !e.c.until.IsZero() {
		h.Until = &e.c.until
	}
	if err := e.writeLine("krplyExport", h); err != nil {
		return err
	}
	e.res.Clusters = clusters
	// Without Clusters, one pass in IngestSeq order; with, one pass per
	// cluster (there is no order across clusters).
	passes := []string{""}
	if len(e.c.clusters) > 0 {
		passes = clusters
	}
	for _, cluster := range passes {
		if err := e.records(cluster, last); err != nil {
			return err
		}
	}
	for _, cluster := range passes {
		streams, err := e.r.Streams(e.ctx, cluster)
		if err != nil {
			return fmt.Errorf("transfer: export: streams: %w", err)
		}
		for _, st := range streams {
			st.LastSeq = 0 // a sequence number of the source journal: not carried
			for _, t := range []*time.Time{&st.CheckpointAt, &st.LastBaselineEndAt, &st.LastGapAt, &st.FirstObservedAt, &st.LastObservedAt} {
				*t = t.UTC()
			}
			if err := e.writeLine("stream", st); err != nil {
				return err
			}
			e.res.Streams++
		}
	}
	if err := e.writeLine("end", trailer{Records: e.res.Records, Streams: e.res.Streams}); err != nil {
		return err
	}
	if err := e.w.Flush(); err != nil {
		return fmt.Errorf("transfer: export: write: %w", err)
	}
	e.c.report(e.res.Progress)
	return nil
}

// lastSeq returns the newest IngestSeq of the journal, which bounds the
// export.
func (e *exporter) lastSeq() (int64, error) {
	page, err := e.r.Records(e.ctx, storage.Query{Descending: true, Limit: 1, WithoutBodies: true})
	if err != nil {
		return 0, fmt.Errorf("transfer: export: newest record: %w", err)
	}
	if len(page.Records) == 0 {
		return 0, nil
	}
	return page.Records[0].IngestSeq, nil
}

// clusters returns the clusters the header names: those asked for, or
// those of the journal's streams.
func (e *exporter) clusters() ([]string, error) {
	if len(e.c.clusters) > 0 {
		return slices.Compact(slices.Sorted(slices.Values(e.c.clusters))), nil
	}
	streams, err := e.r.Streams(e.ctx, "")
	if err != nil {
		return nil, fmt.Errorf("transfer: export: streams: %w", err)
	}
	out := []string{}
	for _, st := range streams {
		out = append(out, st.Stream.ClusterID)
	}
	return slices.Compact(slices.Sorted(slices.Values(out))), nil
}

// records writes the records of one cluster ("" for all) up to seq last.
// One goroutine reads the pages while this one writes the page before.
func (e *exporter) records(cluster string, last int64) error {
	if last == 0 {
		return nil
	}
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	type page struct {
		records []event.Record
		err     error
	}
	pages := make(chan page, 2)
	go func() {
		defer close(pages)
		q := storage.Query{ClusterID: cluster, Since: e.c.since, Until: e.c.until, BeforeSeq: last + 1, Limit: e.c.batch}
		for {
			p, err := e.r.Records(ctx, q)
			if err != nil {
				err = fmt.Errorf("transfer: export: records after #%d: %w", q.AfterSeq, err)
			}
			select {
			case pages <- page{p.Records, err}:
			case <-ctx.Done():
				return
			}
			if err != nil || len(p.Records) < q.Limit {
				return
			}
			q.AfterSeq = p.Records[len(p.Records)-1].IngestSeq
		}
	}()
	for p := range pages {
		if p.err != nil {
			return p.err
		}
		for _, rec := range p.records {
			var err error
			if e.buf, err = appendRecordLine(e.buf[:0], rec); err != nil {
				return err
			}
			if err := e.write(e.buf); err != nil {
				return err
			}
			e.res.Records++
			e.res.observe(rec.ObservedAt.UTC())
		}
		e.c.report(e.res.Progress)
	}
	return ctx.Err()
}

func (e *exporter) writeLine(key string, v any) error {
	data, err := marshalLine(key, v)
	if err != nil {
		return err
	}
	return e.write(data)
}

func (e *exporter) write(data []byte) error {
	if _, err := e.w.Write(data); err != nil {
		return fmt.Errorf("transfer: export: write: %w", err)
	}
	e.res.Lines++
	e.res.Bytes += int64(len(data))
	return nil
}
