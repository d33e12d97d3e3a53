package main

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/krply/krply/replay"
	"github.com/krply/krply/server"
)

// Messages name flags, never Go fields, and say "replay:" once at most.
func TestMessagesNameFlags(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want []string
	}{
		{&replay.SourceClusterError{PlanID: "p1", ClusterID: "c1"}, []string{"plan p1 was not applied", "--allow-source-cluster", "--context"}},
		{&replay.SourceClusterError{PlanID: "p1", ClusterID: "c1", DryRun: true}, []string{"dry run of plan p1 refused: the target cluster c1", "--allow-source-cluster", "--context"}},
		{fmt.Errorf("apply: %w", &replay.ConfirmationRequiredError{PlanID: "p1", PlanHash: "sha256:ab", Reason: "the hash differs"}),
			[]string{"plan p1 was not applied: the hash differs", "kubectl krply replay apply p1 --confirm sha256:ab"}},
		{errors.New("replay: replay: plan p1 is stale: set Policy.AllowGaps"), []string{"replay: plan p1 is stale: give --allow-gaps"}},
		{&server.Error{Status: 409, Code: server.CodeCoverageIncomplete, Message: "replay: coverage of cluster c1 is incomplete (set Policy.AllowGaps to plan anyway)"},
			[]string{"coverage of cluster c1 is incomplete (give --allow-gaps to plan anyway)", "--at"}},
		{&server.Error{Status: 401, Code: server.CodeUnauthenticated, Message: "give a bearer token"}, []string{"--token or --token-file"}},
	} {
		got := message(tc.err)
		for _, want := range tc.want {
			if !strings.Contains(got, want) {
				t.Errorf("message(%v) = %q, want it to contain %q", tc.err, got, want)
			}
		}
		if strings.Contains(got, "Policy.") || strings.Contains(got, "replay: replay:") {
			t.Errorf("message(%v) = %q names a Go field or repeats its prefix", tc.err, got)
		}
		if source := (*replay.SourceClusterError)(nil); errors.As(tc.err, &source) && source.DryRun && strings.Contains(got, "applied") {
			t.Errorf("message(%v) = %q words a refused dry run as an apply", tc.err, got)
		}
	}
	if got := flagWords("Secrets hold credentials (opt in with Policy.AllowSecrets)"); got != "Secrets hold credentials (opt in with --allow-secrets)" {
		t.Errorf("exclusion reason: %q", got)
	}
}
