package audit_test

import (
	"fmt"
	"testing"

	"github.com/krply/krply/audit"
	"github.com/krply/krply/internal/testing/wiretest"
)

// TestWireSummary pins the JSON form of what Ingest and the webhook handler
// report (testdata/wire/audit.json). The links Ingest records are journal
// records with an AuditCorrelation payload; record.json pins those.
func TestWireSummary(t *testing.T) {
	wiretest.Check(t, "audit", map[string]any{
		"summary": audit.Summary{Events: 20, Exact: 5, Scored: 2, SeenThroughRelist: 1, Unmatched: 1, Malformed: 1,
			SkippedReadOnly: 3, SkippedIncomplete: 2, SkippedFailed: 1, SkippedDryRun: 1, SkippedNoObject: 2, SkippedNoChange: 2,
			Recorded: 6, Duplicates: 1,
			Problems: []audit.LineError{{Source: "audit.log", Line: 7, Bytes: 31, Err: fmt.Errorf("%w: unexpected end of JSON input", audit.ErrMalformed)}}},
		// The values of event.AuditCorrelation.Rule.
		"rules": []string{audit.RuleExactResourceVersion, audit.RuleExactUIDDeletion, audit.RuleInferredDeletion,
			audit.RuleSeenThroughRelist, audit.RuleNearestFollowing},
	})
}
