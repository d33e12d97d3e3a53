package why

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/krply/krply/event"
	"github.com/krply/krply/storage"
)

// streamsOf returns the streams that record an object: its resource, in
// its namespace or in all namespaces.
func streamsOf(streams []storage.StreamStatus, id storage.ObjectID) []storage.StreamStatus {
	var out []storage.StreamStatus
	for _, st := range streams {
		s := st.Stream
		if s.Group == id.Group && s.Resource == id.Resource && (s.Namespace == "" || s.Namespace == id.Namespace) {
			out = append(out, st)
		}
	}
	return out
}

// coverageOf says how complete one stream was over [from, at], and lists
// its losses of continuity that intersect [from, to]. evidence is the
// stream's evidence read before its timeline tl.
func coverageOf(ctx context.Context, r storage.Reader, st storage.StreamStatus, tl storage.Timeline, from, at, to time.Time) (StreamCoverage, error) {
	sc := StreamCoverage{StreamID: st.StreamID, Resource: resourceName(st.Stream.Group, st.Stream.Resource),
		Namespace: st.Stream.Namespace, EvidenceUntil: st.CheckpointAt}
	start, err := storage.CoverageFrom(ctx, r, tl, st.CheckpointAt, from)
	if err != nil {
		return sc, err
	}
	for i, rec := range tl.Records {
		lossAt, ok := storage.LossStart(rec)
		if !ok {
			continue
		}
		end := recoveredAt(tl.Records[i+1:])
		if lossAt.After(to) || (!end.IsZero() && end.Before(from)) {
			continue
		}
		sc.Gaps = append(sc.Gaps, Gap{From: lossAt, To: end, Reason: lossReason(rec)})
	}
	sort.Slice(sc.Gaps, func(i, j int) bool { return sc.Gaps[i].From.Before(sc.Gaps[j].From) })
	var why []string
	if !start.Covered {
		why = append(why, "not covered at the window's start: "+start.Reason)
	}
	for _, g := range sc.Gaps {
		if !g.From.After(at) {
			why = append(why, describeGap(g)+": a change in it may be missing")
		}
	}
	if !st.CheckpointAt.After(at) {
		why = append(why, "not yet observed after "+st.CheckpointAt.UTC().Format(time.RFC3339))
	}
	sc.Covered = len(why) == 0
	sc.Reason = strings.Join(why, "; ")
	return sc, nil
}

// recoveredAt is the end of the first complete baseline among the
// records after a loss: when the stream was continuous again; zero when
// it was not.
func recoveredAt(after []event.Record) time.Time {
	for _, rec := range after {
		if rec.Type == event.TypeBaseline && rec.Baseline != nil && rec.Baseline.Phase == event.BaselineEnd {
			return rec.ObservedAt
		}
	}
	return time.Time{}
}

// lossReason says why a stream lost continuity.
func lossReason(rec event.Record) string {
	if rec.Gap != nil {
		return "gap: " + rec.Gap.Reason
	}
	return "unavailable: " + rec.Coverage.Reason
}

// describeGap says a gap in words.
func describeGap(g Gap) string {
	to := "not recovered"
	if !g.To.IsZero() {
		to = g.To.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("%s %s–%s", g.Reason, g.From.UTC().Format(time.RFC3339), to)
}
