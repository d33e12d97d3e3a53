package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/utils/clock"

	"github.com/krply/krply/storage"
	"github.com/krply/krply/storage/transfer"
)

// progressEvery is how often a transfer reports its progress at most; it
// also reports when it ends.
const progressEvery = time.Second

// meter reports a transfer's progress on stderr: the records so far, the
// rate, and the share done where the total is known (the journal's record
// count for an export, the file's size for an import or a verify).
type meter struct {
	w     io.Writer
	what  string
	clock clock.PassiveClock
	// totalRecords and totalBytes are what the transfer will have done
	// when it ends, 0 when unknown.
	totalRecords, totalBytes int64
	started, shown           time.Time
}

func newMeter(w io.Writer, what string, c clock.PassiveClock) *meter {
	now := c.Now()
	return &meter{w: w, what: what, clock: c, started: now, shown: now}
}

// report is given to transfer.WithProgress: it prints a line when
// progressEvery passed since the last one.
func (m *meter) report(p transfer.Progress) {
	if m.totalBytes > 0 && p.Bytes >= m.totalBytes {
		return // the whole input is read: done says so
	}
	if now := m.clock.Now(); now.Sub(m.shown) >= progressEvery {
		m.shown = now
		fmt.Fprintln(m.w, m.line(p, false))
	}
}

// done prints the last line, of a transfer that ended well.
func (m *meter) done(p transfer.Progress) {
	fmt.Fprintln(m.w, m.line(p, true))
}

// line is one report: "import: 120000 records, 48.0 MiB of 192.0 MiB (25%),
// 21000 records/s, 5.7s". Estimates are capped below 100% until the end.
func (m *meter) line(p transfer.Progress, end bool) string {
	elapsed := m.clock.Since(m.started)
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d", m.what, p.Records)
	if m.totalRecords > 0 && !end {
		fmt.Fprintf(&b, " of %d", max(m.totalRecords, p.Records))
	}
	b.WriteString(" records")
	if m.totalRecords > 0 {
		b.WriteString(percent(p.Records, m.totalRecords, end))
	}
	if m.totalBytes > 0 {
		fmt.Fprintf(&b, ", %s of %s%s", byteSize(p.Bytes), byteSize(m.totalBytes), percent(p.Bytes, m.totalBytes, end))
	} else {
		fmt.Fprintf(&b, ", %s", byteSize(p.Bytes))
	}
	if elapsed > 0 {
		fmt.Fprintf(&b, ", %.0f records/s", float64(p.Records)/elapsed.Seconds())
	}
	fmt.Fprintf(&b, ", %s", elapsed.Round(time.Millisecond))
	return b.String()
}

// count prints n things: "1 stream", "3 streams".
func count(n int64, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

// byteSize prints n bytes in the largest binary unit that keeps a digit
// before the point: 512 B, 15.0 KiB, 48.2 MiB.
func byteSize(n int64) string {
	if n < 1<<10 {
		return fmt.Sprintf("%d B", n)
	}
	v, unit := float64(n)/(1<<10), 0
	for v >= 1<<10 && unit < 3 {
		v, unit = v/(1<<10), unit+1
	}
	return fmt.Sprintf("%.1f %s", v, []string{"KiB", "MiB", "GiB", "TiB"}[unit])
}

// percent is " (n%)" of done out of total, at most 99% before the end.
func percent(done, total int64, end bool) string {
	if end {
		return " (100%)"
	}
	return fmt.Sprintf(" (%d%%)", min(99, done*100/total))
}

// progressWanted reports whether to print progress: as --progress says
// when given, else when stderr is a terminal (stdout may be the export).
func (e *env) progressWanted(cmd *cobra.Command) bool {
	if f := cmd.Flags().Lookup("progress"); f != nil && f.Changed {
		return f.Value.String() == "true"
	}
	return isTerminal(e.ErrOut)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// fileSize is the size of in when it is a regular file, else 0 (a pipe).
func fileSize(in io.Reader) int64 {
	f, ok := in.(*os.File)
	if !ok {
		return 0
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return 0
	}
	return fi.Size()
}

// exportTotal is the number of records an export of the whole journal,
// or of one cluster, will write: the journal's count, or its streams'. It
// is 0 (unknown) for an export restricted in time, or when the journal
// cannot say.
func exportTotal(ctx context.Context, r storage.Reader, cluster string, windowed bool) int64 {
	if windowed {
		return 0
	}
	if cluster == "" {
		st, err := r.Stats(ctx)
		if err != nil {
			return 0
		}
		return st.Records
	}
	streams, err := r.Streams(ctx, cluster)
	if err != nil {
		return 0
	}
	var n int64
	for _, st := range streams {
		n += st.Records
	}
	return n
}
