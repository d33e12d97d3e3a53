package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// bobAudit is an audit log: bob's update of ConfigMap settings (the
// journal's version 14, green), a line that is not an audit event, and a
// get.
func bobAudit(t *testing.T) string {
	t.Helper()
	lines := []string{
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"b0000001-0000-4000-8000-000000000001","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/shop/configmaps/settings","verb":"update","user":{"username":"bob","groups":["system:authenticated"]},"sourceIPs":["192.0.2.20"],"userAgent":"kubectl/v1.37.2","objectRef":{"resource":"configmaps","namespace":"shop","name":"settings","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"responseObject":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"settings","namespace":"shop","uid":"u-settings","resourceVersion":"14"},"data":{"color":"green"}},"requestReceivedTimestamp":"2026-11-30T09:00:19.900000Z","stageTimestamp":"2026-11-30T09:00:19.910000Z"}`,
		`this line is not an audit event`,
		`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"b0000002-0000-4000-8000-000000000002","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/shop/configmaps/settings","verb":"get","user":{"username":"bob"},"objectRef":{"resource":"configmaps","namespace":"shop","name":"settings","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestReceivedTimestamp":"2026-11-30T09:00:21.000000Z","stageTimestamp":"2026-11-30T09:00:21.000000Z"}`,
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// audit ingest lists malformed lines and fails on them unless
// --tolerate-malformed; the links of the good lines are saved either way,
// so history says who.
func TestAuditIngest(t *testing.T) {
	j := shopJournal(t)
	log := bobAudit(t)
	r := runPlugin(t, "--journal", j, "audit", "ingest", log)
	if r.code != exitError {
		t.Errorf("ingest of a log with a malformed line: exit %d, want 1\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "malformed: "+log+":2") || !strings.Contains(r.stderr, "--tolerate-malformed") {
		t.Errorf("the problem is not listed with its file and line, or the flag is not named:\n%s", r.stderr)
	}
	fields := strings.Fields(strings.Split(r.stdout, "\n")[1])
	if want := []string{"2", "1", "0", "0", "1", "0", "1", "1", "0"}; strings.Join(fields, " ") != strings.Join(want, " ") {
		t.Errorf("summary %v, want %v:\n%s%s", fields, want, r.stdout, r.stderr)
	}
	h := runPlugin(t, "--journal", j, "history", "cm/settings", "-n", "shop")
	if !strings.Contains(h.stdout, "bob (update)") {
		t.Errorf("history after ingest does not say bob changed settings:\n%s", h.stdout)
	}

	r = runPlugin(t, "--journal", j, "audit", "ingest", log, "--tolerate-malformed", "-o", "json")
	if r.code != exitOK || !strings.Contains(r.stderr, "malformed: "+log+":2") {
		t.Errorf("--tolerate-malformed: exit %d, want 0 with the problem still listed\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, `"duplicates": 1`) || !strings.Contains(r.stdout, `"recorded": 0`) {
		t.Errorf("a second ingest stored links again:\n%s", r.stdout)
	}
	if r := runPlugin(t, "--journal", j, "audit", "ingest"); r.code != exitUsage {
		t.Errorf("audit ingest without a file: exit %d, want 2", r.code)
	}
}

// Queries leave the journal as it was; snapshot --save saves a snapshot.
func TestOnlySaveWrites(t *testing.T) {
	j := shopJournal(t)
	before, err := os.ReadFile(j)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"status"}, {"gaps"}, {"history", "deploy/web", "-n", "shop"}, {"blame", "deploy/web", "-n", "shop"},
		{"get", "deploy/web", "-n", "shop", "--at", stamp(15)}, {"diff", "-n", "shop", "--from", stamp(5), "--to", stamp(35)},
		{"snapshot", "-n", "shop", "--at", stamp(35)},
	} {
		if r := runPlugin(t, append([]string{"--journal", j}, args...)...); r.code != exitOK {
			t.Fatalf("%v: exit %d\n%s", args, r.code, r.stderr)
		}
	}
	after, err := os.ReadFile(j)
	if err != nil {
		t.Fatal(err)
	}
	if string(before) != string(after) {
		t.Error("a query changed the journal file")
	}
	r := runPlugin(t, "--journal", j, "snapshot", "-n", "shop", "--at", stamp(35), "--save", "before-rollout", "-o", "jsonpath={.id} {.name} {.complete}")
	if r.code != exitOK || r.stdout != "snapshot-1 before-rollout true" || !strings.Contains(r.stderr, `saved snapshot "before-rollout" as snapshot-1`) {
		t.Errorf("snapshot --save: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
