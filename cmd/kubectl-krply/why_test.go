package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/krply/krply/krplytest/incident"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/storage/sqlite"
	whypkg "github.com/krply/krply/why"
)

// incidentJournal writes the journal of krplytest/incident (Pod web-1-0
// crashes after the key it reads changed) into a journal file.
func incidentJournal(t *testing.T, events bool) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "incident.db")
	s, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := (&incident.Journal{Cluster: "c1", Namespace: "shop", Pods: 2, Events: events}).Write(ctx, s); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestGoldenWhy pins why's transcripts: the table, JSON and YAML of the
// incident, an incomplete answer (Events not recorded), and bad input.
func TestGoldenWhy(t *testing.T) {
	j := incidentJournal(t, true)
	noEvents := incidentJournal(t, false)
	from := incident.T0.Format(time.RFC3339)
	for _, tc := range []struct {
		name    string
		journal string
		code    int
		args    []string
	}{
		{"why", j, 0, []string{"why", "pod/web-1-0", "-n", "shop", "--from", from}},
		{"why-wide", j, 0, []string{"why", "pod/web-1-0", "-n", "shop", "--from", from, "-o", "wide"}},
		{"why-json", j, 0, []string{"why", "pod/web-1-0", "-n", "shop", "--from", from, "-o", "json"}},
		{"why-yaml", j, 0, []string{"why", "pod/web-1-0", "-n", "shop", "--from", from, "--max-objects", "3", "-o", "yaml"}},
		{"why-jsonpath", j, 0, []string{"why", "pod/web-1-0", "-n", "shop", "--from", from, "-o", "jsonpath={.candidates[0].summary}"}},
		{"why-at", j, 0, []string{"why", "deploy/web", "-n", "shop", "--at", incident.Scaled.Format(time.RFC3339), "--window", "5m"}},
		{"why-incomplete", noEvents, 3, []string{"why", "pod/web-1-0", "-n", "shop", "--from", from, "--require-complete"}},
		{"why-missing", j, 1, []string{"why", "pod/nope", "-n", "shop"}},
		{"why-before-journal", j, 1, []string{"why", "pod/web-1-0", "-n", "shop", "--at", incident.T0.Add(-time.Hour).Format(time.RFC3339)}},
		{"usage-why-window", j, 2, []string{"why", "pod/web-1-0", "-n", "shop", "--window", "-5m"}},
		{"usage-why-from-and-window", j, 2, []string{"why", "pod/web-1-0", "-n", "shop", "--window", "5m", "--from", from}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkGolden(t, tc.journal, tc.name, tc.code, tc.args...) })
	}
}

// why through --server prints what it prints from the journal file.
func TestServerWhy(t *testing.T) {
	j := incidentJournal(t, true)
	url := serve(t, j)
	from := incident.T0.Format(time.RFC3339)
	for _, args := range [][]string{
		{"why", "pod/web-1-0", "-n", "shop", "--from", from},
		{"why", "pod/web-1-0", "-n", "shop", "--require-complete"},
		{"why", "deploy/web", "-n", "shop", "--at", incident.Scaled.Format(time.RFC3339), "--window", "5m", "-o", "json"},
	} {
		want := runPlugin(t, append([]string{"--journal", j}, args...)...)
		got := runPlugin(t, append([]string{"--server", url, "--token", "secret"}, args...)...)
		if got != want {
			t.Errorf("%v through --server:\n%s%s\nthrough --journal:\n%s%s", args, got.stdout, got.stderr, want.stdout, want.stderr)
		}
	}
}

// TestWhyIncidents plays the incidents of krplytest/incident on the shared
// control plane into a journal file and asks kubectl krply why about each
// Pod that broke: the culprit first, with who made it; across the gap, the
// answer incomplete, and the table names the ConfigMaps stream's gap.
func TestWhyIncidents(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.db")
	store, err := sqlite.Open(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := store.Close(); err != nil {
			t.Error(err)
		}
	})
	p := incident.Play(t, testenv.Shared(t), store)
	why := func(pod string, code int, args ...string) result {
		t.Helper()
		r := runPlugin(t, append([]string{"--journal", path, "why", "pod/" + pod, "-n", p.Namespace, "--from", p.From.Format(time.RFC3339Nano)}, args...)...)
		if r.code != code {
			t.Fatalf("why %s %q: exit %d, want %d\n%s%s", pod, args, r.code, code, r.stdout, r.stderr)
		}
		return r
	}
	answer := func(pod string) *whypkg.Answer {
		t.Helper()
		var a whypkg.Answer
		if err := json.Unmarshal([]byte(why(pod, 0, "-o", "json").stdout), &a); err != nil {
			t.Fatalf("why %s -o json: %v", pod, err)
		}
		return &a
	}
	for _, c := range p.Incidents {
		if err := c.Check(answer(c.Pod)); err != nil {
			t.Error(err)
		}
	}
	gap := p.PlayGap()
	if err := gap.CheckGap(answer(gap.Pod)); err != nil {
		t.Error(err)
	}
	table := why(gap.Pod, 3, "--require-complete").stdout
	var first string
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "1 ") {
			first = line
			break
		}
	}
	if !strings.Contains(first, gap.Summary) {
		t.Errorf("the table's first candidate %q; want %q\n%s", first, gap.Summary, table)
	}
	for _, want := range []string{"complete: no", "/core/v1/configmaps/" + p.Namespace + " ", "gap"} {
		if !strings.Contains(table, want) {
			t.Errorf("the table lacks %q:\n%s", want, table)
		}
	}
}
