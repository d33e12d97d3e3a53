package transfer_test

import (
	"testing"

	"github.com/krply/krply/krplytest/recording"
	"github.com/krply/krply/storage/memory"
	"github.com/krply/krply/storage/transfer/transfertest"
)

// A journal recorded from the real control plane — writes by two users,
// an outage during which etcd is compacted (the restarted recorder gets
// 410 Gone, records a gap, relists and infers a deletion), audit
// correlations, a saved snapshot and a saved plan — goes SQLite → NDJSON →
// memory → NDJSON → SQLite and answers every query the same; the exports
// are byte for byte the same; a second import stores nothing. The same
// after compacting it just after the relist that closed the gap.
func TestRoundTripRecordedJournal(t *testing.T) {
	src := openSQLite(t)
	counts := recording.Outage(t, src)
	t.Logf("recorded %v", counts)
	transfertest.RoundTrip(t, src, memory.New(), openSQLite(t))

	t.Logf("compacted: %+v", recording.CompactAfterRelist(t, src))
	transfertest.RoundTrip(t, src, memory.New(), openSQLite(t))
}
