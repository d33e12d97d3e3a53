package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/krply/krply/krplytest/golden"
	"github.com/krply/krply/krplytest/incident"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/replay"
)

func TestMain(m *testing.M) {
	flag.Parse()
	// Times print in the local zone: pin it, and keep the user's
	// kubeconfig and journal out of the tests.
	time.Local = time.UTC
	os.Setenv("KUBECONFIG", filepath.Join(os.TempDir(), "kubectl-krply-test-no-kubeconfig"))
	os.Unsetenv("KRPLY_JOURNAL")
	// Tests that record share one control plane (testenv.Shared), which
	// can play the incidents of krplytest/incident.
	os.Exit(testenv.RunMain(m, incident.EnvOptions()...))
}

func streams(out, errOut io.Writer) genericiooptions.IOStreams {
	return genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: errOut}
}

// testPlanOptions fix the plans' clock and IDs: a test's plans are
// "plan-<test name>-1", "-2", …
func testPlanOptions(t testing.TB) []replay.Option {
	n := 0
	name := t.Name()[strings.LastIndex(t.Name(), "/")+1:]
	return []replay.Option{
		replay.WithClock(clocktesting.NewFakePassiveClock(now)),
		replay.WithIDGenerator(func() string { n++; return fmt.Sprintf("plan-%s-%d", name, n) }),
	}
}

// checkGolden runs args on the fixed journal and compares the transcript
// with testdata/NAME.golden (go test -run TestGolden -update rewrites it).
func checkGolden(t *testing.T, journal, name string, wantCode int, args ...string) result {
	t.Helper()
	full := append([]string{"--journal", journal}, args...)
	r := runPlugin(t, full...)
	transcript := fmt.Sprintf("$ kubectl krply %s\n%s--- stderr\n%s--- exit code %d\n", quoteArgs(args), r.stdout, r.stderr, r.code)
	transcript = strings.ReplaceAll(transcript, journal, "krply.db")
	golden.Check(t, filepath.Join("testdata", name+".golden"), []byte(transcript), "")
	if r.code != wantCode {
		t.Errorf("kubectl krply %s: exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", quoteArgs(args), r.code, wantCode, r.stdout, r.stderr)
	}
	return r
}

func quoteArgs(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " '\"{}[]*$") {
			a = "'" + a + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// TestGolden pins the output of every command in every output format on a
// journal with fixed times and IDs.
func TestGolden(t *testing.T) {
	j := shopJournal(t)
	cases := []struct {
		name string
		code int
		args []string
	}{
		{"version", 0, []string{"version"}},
		{"status", 0, []string{"status"}},
		{"status-wide", 0, []string{"status", "-o", "wide"}},
		{"status-json", 0, []string{"status", "-o", "json"}},
		{"gaps", 0, []string{"gaps"}},
		{"gaps-yaml", 0, []string{"gaps", "-o", "yaml"}},
		{"get", 0, []string{"get", "deploy/web", "-n", "shop", "--at", stamp(15)}},
		{"get-wide", 0, []string{"get", "deployments.apps/web", "-n", "shop", "--at", stamp(15), "-o", "wide"}},
		{"get-yaml", 0, []string{"get", "deploy/web", "-n", "shop", "--at", stamp(15), "-o", "yaml"}},
		{"get-yaml-managed-fields", 0, []string{"get", "deploy/web", "-n", "shop", "--at", stamp(15), "-o", "yaml", "--show-managed-fields"}},
		{"get-json", 0, []string{"get", "cm/settings", "-n", "shop", "--at", stamp(25), "-o", "json"}},
		{"get-name", 0, []string{"get", "deployment/web", "-n", "shop", "--at", stamp(15), "-o", "name"}},
		{"get-jsonpath", 0, []string{"get", "deploy/web", "-n", "shop", "--at", stamp(15), "-o", "jsonpath={.spec.replicas}"}},
		{"get-namespace", 0, []string{"get", "ns/shop", "-n", "elsewhere", "--at", stamp(15)}},
		{"get-deleted", 1, []string{"get", "cm/debug", "-n", "shop", "--at", stamp(90)}},
		{"get-missing", 1, []string{"get", "deploy/nope", "-n", "shop", "--at", stamp(15)}},
		{"get-in-gap", 0, []string{"get", "cm/settings", "-n", "shop", "--at", stamp(60)}},
		{"get-in-gap-require-complete", 3, []string{"get", "cm/settings", "-n", "shop", "--at", stamp(60), "--require-complete"}},
		{"history", 0, []string{"history", "deploy/web", "-n", "shop"}},
		{"history-wide", 0, []string{"history", "deploy/web", "-n", "shop", "-o", "wide"}},
		{"history-json", 0, []string{"history", "deploy/web", "-n", "shop", "-o", "json"}},
		{"history-yaml", 0, []string{"history", "deploy/web", "-n", "shop", "-o", "yaml"}},
		{"history-name", 0, []string{"history", "deploy/web", "-n", "shop", "-o", "name"}},
		{"history-jsonpath", 0, []string{"history", "deploy/web", "-n", "shop", "-o", "jsonpath={.entries[*].version.resourceVersion}"}},
		{"history-ignore-status", 0, []string{"history", "deploy/web", "-n", "shop", "--ignore-status"}},
		{"history-gap", 0, []string{"history", "configmaps/settings", "-n", "shop"}},
		{"history-inferred", 0, []string{"history", "configmap/debug", "-n", "shop"}},
		{"history-filter", 0, []string{"history", "deploy/web", "-n", "shop", "--filter", `change.paths.exists(p, p.startsWith("spec.template"))`}},
		{"history-filter-actor", 0, []string{"history", "deploy/web", "-n", "shop", "--filter", `actor.user == "alice"`}},
		{"history-filter-none", 0, []string{"history", "cm/settings", "-n", "shop", "--filter", `change.type == "DELETED"`}},
		{"usage-history-bad-filter", 2, []string{"history", "deploy/web", "-n", "shop", "--filter", `object.spec`}},
		{"history-missing", 1, []string{"history", "deploy/nope", "-n", "shop"}},
		{"history-unknown-type", 1, []string{"history", "widgets/web", "-n", "shop"}},
		{"blame", 0, []string{"blame", "deploy/web", "-n", "shop"}},
		{"blame-json", 0, []string{"blame", "deploy/web", "-n", "shop", "-o", "json"}},
		{"diff", 0, []string{"diff", "-n", "shop", "--from", stamp(5), "--to", stamp(35)}},
		{"diff-unified", 0, []string{"diff", "-n", "shop", "--from", stamp(5), "--to", stamp(35), "-o", "unified"}},
		{"diff-json", 0, []string{"diff", "-n", "shop", "--from", stamp(5), "--to", stamp(35), "-o", "json"}},
		{"diff-name", 0, []string{"diff", "-n", "shop", "--from", stamp(5), "--to", stamp(35), "-o", "name"}},
		{"diff-across-gap", 0, []string{"diff", "-n", "shop", "--from", stamp(5), "--to", stamp(90)}},
		{"diff-in-gap", 0, []string{"diff", "-n", "shop", "--from", stamp(5), "--to", stamp(60)}},
		{"find", 0, []string{"find", "object.spec.replicas > 1", "-n", "shop", "--resource", "deploy"}},
		{"find-gap", 0, []string{"find", `object.data.color != "white"`, "-n", "shop", "--resource", "cm"}},
		{"find-first", 0, []string{"find", `object.data.color != "white"`, "-A", "--first"}},
		{"find-now", 0, []string{"find", `object.data.color != "white"`, "-n", "shop", "--now"}},
		{"find-json", 0, []string{"find", "object.spec.replicas > 1", "-n", "shop", "--resource", "deploy", "-o", "json"}},
		{"find-yaml", 0, []string{"find", `object.data.color == "green"`, "-n", "shop", "-o", "yaml"}},
		{"usage-find-bad-expression", 2, []string{"find", "object.spec.replicas >", "-n", "shop"}},
		{"snapshot", 0, []string{"snapshot", "-n", "shop", "--at", stamp(35)}},
		{"snapshot-wide", 0, []string{"snapshot", "-n", "shop", "--at", stamp(35), "-o", "wide"}},
		{"snapshot-json", 0, []string{"snapshot", "-n", "shop", "--at", stamp(35), "-o", "json"}},
		{"snapshot-yaml", 0, []string{"snapshot", "-n", "shop", "--at", stamp(35), "-o", "yaml"}},
		{"snapshot-name", 0, []string{"snapshot", "-A", "--at", stamp(35), "-o", "name"}},
		{"snapshot-selector", 0, []string{"snapshot", "-A", "--at", stamp(35), "-l", "app in (web,settings)"}},
		{"snapshot-incomplete", 0, []string{"snapshot", "-n", "shop", "--at", stamp(60)}},
		{"snapshot-in-gap", 3, []string{"snapshot", "-n", "shop", "--at", stamp(60), "--require-complete"}},
		{"replay-plan", 0, []string{"replay", "plan", "-n", "shop", "--at", stamp(35), "--to-namespace", "shop-restore"}},
		{"replay-plan-yaml", 0, []string{"replay", "plan", "-n", "shop", "--at", stamp(35), "--to-namespace", "shop-restore", "-o", "yaml"}},
		{"replay-plan-json", 0, []string{"replay", "plan", "-n", "shop", "--at", stamp(35), "-o", "json"}},
		{"replay-plan-name", 0, []string{"replay", "plan", "-n", "shop", "--at", stamp(35), "-o", "name"}},
		{"replay-plan-in-gap", 1, []string{"replay", "plan", "-n", "shop", "--at", stamp(60)}},
		{"replay-apply-without-confirm", 2, []string{"replay", "apply", "plan-replay-plan-1"}},
		{"complete-types", 0, []string{"__complete", "history", ""}},
		{"complete-names", 0, []string{"__complete", "history", "-n", "shop", "cm/"}},
		{"complete-alias", 0, []string{"__complete", "blame", "-n", "shop", "deploy/w"}},
		{"usage-record-listen-without-tokens", 2, []string{"record", "--listen", "0.0.0.0:8080"}},
		{"usage-record-all-and-namespace", 2, []string{"record", "-A", "-n", "shop"}},
		{"usage-record-tls-without-listen", 2, []string{"record", "--tls-cert-file", "tls.crt", "--tls-key-file", "tls.key"}},
		{"usage-record-bad-size", 2, []string{"record", "--max-size", "lots"}},
		{"usage-history-no-arg", 2, []string{"history"}},
		{"usage-history-no-slash", 2, []string{"history", "deploy", "web"}},
		{"usage-snapshot-arg", 2, []string{"snapshot", "shop"}},
		{"usage-bad-output", 2, []string{"diff", "-n", "shop", "-o", "xml"}},
		{"usage-bad-time", 2, []string{"snapshot", "-n", "shop", "--at", "yesterday"}},
		{"usage-unknown-flag", 2, []string{"history", "deploy/web", "--namespace-typo", "shop"}},
		{"usage-unknown-command", 2, []string{"histroy", "deploy/web"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) { checkGolden(t, j, tc.name, tc.code, tc.args...) })
	}
}

// TestGoldenRelist pins how a relist shows: an object it found unchanged
// (one CONFIRMED line, no new version), and a deletion a watch observed,
// beside the shop journal's deletion inferred by a relist (get-deleted).
func TestGoldenRelist(t *testing.T) {
	j := relistJournal(t)
	for _, tc := range []struct {
		name string
		code int
		args []string
	}{
		{"history-confirmed", 0, []string{"history", "cm/steady", "-n", "shop"}},
		{"history-confirmed-json", 0, []string{"history", "cm/steady", "-n", "shop", "-o", "jsonpath={range .entries[*]}{.kind} {.confirmation}{\"\\n\"}{end}"}},
		{"get-deleted-watch", 1, []string{"get", "cm/gone", "-n", "shop", "--at", stamp(90)}},
		{"history-deleted-watch", 0, []string{"history", "cm/gone", "-n", "shop"}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkGolden(t, j, tc.name, tc.code, tc.args...) })
	}
}

// A journal that does not exist is an error naming the flag, and no file
// is created.
func TestMissingJournal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "none.db")
	r := runPlugin(t, "--journal", path, "status")
	if r.code != exitError || !strings.Contains(r.stderr, "--journal") {
		t.Errorf("status on a missing journal: exit %d, stderr %q; want 1 naming --journal", r.code, r.stderr)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("a query created the journal %s: %v", path, err)
	}
}
