package watch

import (
	"errors"
	"fmt"
	"strings"
)

// ErrNotSynced is the error Synced wraps when the Collector is not
// recording every stream right now.
var ErrNotSynced = errors.New("watch: not synced")

// maxNotSyncedNamed bounds how many streams Synced's error names.
const maxNotSyncedNamed = 10

// Synced reports whether the Collector is recording everything it was
// configured to record, right now: it returns nil while Start is running
// and every entry of Status is Synced with State watching — each stream's
// baseline is durable (or its watch resumed from the durable checkpoint)
// and its watch is open — and no configured resource is pending. Otherwise
// it returns an error wrapping ErrNotSynced that names the streams that are
// not recording and why (taking its initial baseline, unavailable with the
// server's 403 or 404, backing off after an error, relisting after a gap,
// pending, stopped), or says that Start has not been called, is still
// resolving the resources, or has returned (wrapping Start's error).
//
// It is meant for a readiness check (a controller-runtime healthz.Checker is
// one line: func(*http.Request) error { return c.Synced() }). Unlike
// WaitForSync, which waits once for the streams configured at Start,
// Synced tells the present state and turns to an error again when a stream
// loses its watch or is denied; it counts the streams rediscovery added and
// the resources still pending too. It never blocks on I/O, costs what Status
// costs (one lock per stream), and is safe for concurrent use, before, during
// and after Start.
func (c *Collector) Synced() error {
	c.mu.Lock()
	started, resolved, startErr := c.committer != nil, c.resolved, c.startErr
	c.mu.Unlock()
	switch {
	case !started:
		return fmt.Errorf("%w: the collector is not started (Start has not been called)", ErrNotSynced)
	case startErr != nil:
		return fmt.Errorf("%w: the collector stopped: %w", ErrNotSynced, startErr)
	case !resolved:
		return fmt.Errorf("%w: the collector is starting: resolving the cluster ID and the resources", ErrNotSynced)
	}
	statuses := c.Status()
	var why []string
	for _, st := range statuses {
		if reason := notRecording(st); reason != "" {
			why = append(why, reason)
		}
	}
	if len(why) == 0 {
		return nil
	}
	n := len(why)
	if n > maxNotSyncedNamed {
		why = append(why[:maxNotSyncedNamed], fmt.Sprintf("and %d more", n-maxNotSyncedNamed))
	}
	return fmt.Errorf("%w: %d of %d streams not recording: %s", ErrNotSynced, n, len(statuses), strings.Join(why, "; "))
}

// notRecording says why a stream is not recording, or "" when it is synced
// and watching.
func notRecording(st StreamStatus) string {
	if (st.Synced && st.State == StateWatching) || st.State == StateRemoved {
		return ""
	}
	if st.State == StatePending {
		return "pending: " + st.DegradedReason
	}
	reason := st.DegradedReason
	if reason == "" {
		switch {
		case st.State == StateStarting:
			reason = "reading its durable state"
		case st.State == StateListing && !st.Synced:
			reason = "taking its initial baseline"
		case st.State == StateListing && st.Covered:
			// Its baseline is durable, its watch not open yet.
			reason = "opening its watch after its baseline"
		case st.State == StateListing:
			reason = "relisting after a gap"
		case st.State == StateWatching:
			reason = "watch resumed from the checkpoint, not confirmed yet"
		case st.State == StateStopped:
			reason = "its watch ended"
		}
	}
	if reason == "" {
		return fmt.Sprintf("%s is %s", st.StreamID, st.State)
	}
	return fmt.Sprintf("%s is %s (%s)", st.StreamID, st.State, reason)
}
