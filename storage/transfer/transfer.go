package transfer

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/krply/krply/storage"
)

// FormatVersion is the version of the export format this package writes
// and the newest it reads.
const FormatVersion = 1

// formatName is the value of the header's "krplyExport" key.
const formatName = "krply-journal"

// ErrInvalidStream: an export stream cannot be read: not an export, a
// newer format version, a line that is not JSON or not a valid record,
// counts that do not match its trailer, or a stream cut short. Errors
// wrap it in a *LineError that names the line.
var ErrInvalidStream = errors.New("transfer: invalid export stream")

// ErrOutOfOrder: Import would add to a stream a record observed before
// the stream's last record in the importing journal. Within a stream,
// records are appended in the order of their ObservedAt, which queries
// rely on; an export cannot be merged into the middle of a stream.
var ErrOutOfOrder = errors.New("transfer: record older than the journal's stream")

// LineError is the error of Import and Verify about one line of the
// stream (1 is the header). Records is how many records the import had
// committed when it failed: whole batches, in stream order (see Import).
type LineError struct {
	Line    int64
	Records int64
	Err     error
}

func (e *LineError) Error() string {
	return fmt.Sprintf("transfer: line %d: %s", e.Line, strings.TrimPrefix(e.Err.Error(), "transfer: "))
}

func (e *LineError) Unwrap() error { return e.Err }

// Progress is what an export or import has done so far.
type Progress struct {
	// Lines counts the lines written or read, the header included.
	Lines int64 `json:"lines"`
	// Records counts the records written or read.
	Records int64 `json:"records"`
	// Bytes counts the bytes written or read.
	Bytes int64 `json:"bytes"`
}

// Result is what Export, Import and Verify did.
type Result struct {
	Progress
	// Streams counts the stream lines.
	Streams int `json:"streams"`
	// Clusters are the clusters the header names.
	Clusters []string `json:"clusters,omitempty"`
	// Inserted and Duplicates count the records Import stored and those
	// the journal had already (zero for Export and Verify).
	Inserted   int64 `json:"inserted"`
	Duplicates int64 `json:"duplicates"`
	// StreamsRestored counts the streams whose checkpoint and
	// availability Import restored from their stream lines (see Import).
	StreamsRestored int `json:"streamsRestored"`
	// FirstObservedAt and LastObservedAt bound the ObservedAt of the
	// records written or read; zero when there were none.
	FirstObservedAt time.Time `json:"firstObservedAt,omitzero"`
	LastObservedAt  time.Time `json:"lastObservedAt,omitzero"`
}

// observe widens the result's time range to a record observed at t.
func (r *Result) observe(t time.Time) {
	if r.FirstObservedAt.IsZero() || t.Before(r.FirstObservedAt) {
		r.FirstObservedAt = t
	}
	if t.After(r.LastObservedAt) {
		r.LastObservedAt = t
	}
}

// ExportOption configures Export.
type ExportOption interface{ applyExport(*config) }

// ImportOption configures Import and Verify.
type ImportOption interface{ applyImport(*config) }

// Option configures Export, Import and Verify alike.
type Option interface {
	ExportOption
	ImportOption
}

type config struct {
	progress  func(Progress)
	batch     int
	clusters  []string
	since     time.Time
	until     time.Time
	invalidBy string
}

// DefaultBatchSize is the number of records per page of Export and per
// transaction of Import when WithBatchSize is not given. Larger batches
// write each page of a store's random-key indexes (event IDs, body
// hashes) fewer times per record, with diminishing returns past about
// 10,000. A batch of 10,000 ConfigMaps holds about 15 MB; Import keeps up
// to three.
const DefaultBatchSize = 10000

type option func(*config)

func (f option) applyExport(c *config) { f(c) }
func (f option) applyImport(c *config) { f(c) }

type exportOption func(*config)

func (f exportOption) applyExport(c *config) { f(c) }

// WithProgress calls report after each batch of records written or read
// (see WithBatchSize) and once at the end, from the goroutine of the call.
func WithProgress(report func(Progress)) Option {
	return option(func(c *config) {
		if report == nil {
			c.invalidBy = "WithProgress(nil): give a function, or leave the option out"
		}
		c.progress = report
	})
}

// WithBatchSize sets how many records Export reads per query and Import
// appends per transaction (DefaultBatchSize by default). It must be
// positive.
func WithBatchSize(n int) Option {
	return option(func(c *config) {
		if n <= 0 {
			c.invalidBy = fmt.Sprintf("WithBatchSize(%d): the batch size must be positive", n)
		}
		c.batch = n
	})
}

// Clusters restricts Export to the records and streams of these clusters.
// Saved snapshots and plans that name no cluster are left out then.
func Clusters(ids ...string) ExportOption {
	return exportOption(func(c *config) {
		for _, id := range ids {
			if id == "" {
				c.invalidBy = "Clusters: an empty cluster ID; leave the option out to export every cluster"
			}
		}
		c.clusters = append(c.clusters, ids...)
	})
}

// Since restricts Export to the records observed at or after t.
func Since(t time.Time) ExportOption {
	return exportOption(func(c *config) { c.since = t })
}

// Until restricts Export to the records observed at or before t.
func Until(t time.Time) ExportOption {
	return exportOption(func(c *config) { c.until = t })
}

func exportConfig(opts []ExportOption) (*config, error) {
	c := &config{batch: DefaultBatchSize}
	for _, o := range opts {
		if o != nil {
			o.applyExport(c)
		}
	}
	return c, c.check()
}

func importConfig(opts []ImportOption) (*config, error) {
	c := &config{batch: DefaultBatchSize}
	for _, o := range opts {
		if o != nil {
			o.applyImport(c)
		}
	}
	return c, c.check()
}

func (c *config) check() error {
	switch {
	case c.invalidBy != "":
		return fmt.Errorf("transfer: %w: %s", storage.ErrInvalidArgument, c.invalidBy)
	case !c.since.IsZero() && !c.until.IsZero() && c.until.Before(c.since):
		return fmt.Errorf("transfer: %w: Until(%s) is before Since(%s)", storage.ErrInvalidArgument,
			c.until.Format(time.RFC3339Nano), c.since.Format(time.RFC3339Nano))
	}
	return nil
}

func (c *config) report(p Progress) {
	if c.progress != nil {
		c.progress(p)
	}
}
