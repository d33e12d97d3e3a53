package main

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/klog/v2"

	"github.com/krply/krply"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/recorder"
	"github.com/krply/krply/retention"
)

// record's flags fill the recorder's Config: the operator's flags, with
// the retention package's defaults.
func TestRecordFlags(t *testing.T) {
	var r recordFlags
	fs := pflag.NewFlagSet("record", pflag.ContinueOnError)
	r.register(fs)
	if time.Duration(r.MinAge) != retention.DefaultMinAge || time.Duration(r.RetentionEvery) != retention.DefaultInterval ||
		time.Duration(r.EventsRetention) != recorder.DefaultEventsRetention {
		t.Fatalf("defaults: --min-age %s, --retention-every %s, --events-retention %s", time.Duration(r.MinAge), time.Duration(r.RetentionEvery), time.Duration(r.EventsRetention))
	}
	if err := fs.Parse([]string{"--all-resources", "--exclude", "pods,jobs.batch", "--include", "events", "--retention", "7d", "--events-retention", "2d", "--max-size", "4Gi",
		"--min-age=30m", "--disk-reserve=512Mi", "--retention-every=10s", "--metrics-addr=:9090", "--allow-secrets",
		"--listen=:8443", "--tls-cert-file=c", "--tls-key-file=k", "--listen-token-file=t", "--delegated-auth", "--listen-allow-writes", "--ui", "--serve-only"}); err != nil {
		t.Fatal(err)
	}
	c := r.Config
	if !c.AllResources || !slices.Equal(c.Exclude, []string{"pods", "jobs.batch"}) || !slices.Equal(c.Include, []string{"events"}) || !c.AllowSecrets ||
		time.Duration(c.Retention) != 7*24*time.Hour || time.Duration(c.EventsRetention) != 48*time.Hour || c.MaxSize != 4<<30 || time.Duration(c.MinAge) != 30*time.Minute ||
		c.DiskReserve != 512<<20 || time.Duration(c.RetentionEvery) != 10*time.Second || c.MetricsAddr != ":9090" {
		t.Fatalf("operator flags parsed as %+v", c)
	}
	if c.Listen != ":8443" || c.TLSCertFile != "c" || c.TLSKeyFile != "k" || c.TokenFile != "t" || !c.DelegatedAuth || !c.AllowWrites || !c.UI || !c.ServeOnly {
		t.Fatalf("query API flags parsed as %+v", c)
	}
	for _, bad := range [][]string{{"--retention", "a week"}, {"--max-size", "-1Gi"}} {
		if err := fs.Parse(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// record --version and version print the version stamped with -ldflags,
// which the image's build sets.
func TestVersion(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "kubectl-krply")
	build := exec.Command("go", "build", "-ldflags", "-X main.version=v9.8.7-test", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, args := range [][]string{{"record", "--version"}, {"version"}} {
		out, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil || string(out) != "kubectl-krply v9.8.7-test\n" {
			t.Errorf("%v = %q, %v", args, out, err)
		}
	}
	r := runPlugin(t, "version")
	if r.code != exitOK || !strings.HasPrefix(r.stdout, "kubectl-krply "+krply.Version()) {
		t.Errorf("unstamped version: exit %d, %q; want it to start with %s", r.code, r.stdout, krply.Version())
	}
}

// --log-format json writes one JSON object a line with the time, and
// client-go's klog lines reach the same sink in the same format; text is
// the default; anything else is refused naming the flag.
func TestLogFormat(t *testing.T) {
	var errOut strings.Builder
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	e := &env{now: func() time.Time { return at }}
	e.ErrOut = &errOut
	log, err := e.logger("json", 0)
	if err != nil {
		t.Fatal(err)
	}
	defer klog.ClearLogger()
	klog.SetLogger(log)
	log.Info("recording", "journal", "krply.db")
	klog.InfoS("from client-go", "resource", "configmaps")
	klog.Flush()
	lines := strings.Split(strings.TrimSpace(errOut.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2:\n%s", len(lines), errOut.String())
	}
	for i, want := range []map[string]any{{"msg": "recording", "journal": "krply.db"}, {"msg": "from client-go", "resource": "configmaps"}} {
		var got map[string]any
		if err := json.Unmarshal([]byte(lines[i]), &got); err != nil {
			t.Fatalf("line %q is not JSON: %v", lines[i], err)
		}
		if got["ts"] != "2026-01-02T03:04:05Z" {
			t.Errorf("line %q: ts %v", lines[i], got["ts"])
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("line %q: %s = %v, want %v", lines[i], k, got[k], v)
			}
		}
	}
	errOut.Reset()
	if log, err = e.logger("text", 0); err != nil {
		t.Fatal(err)
	}
	log.Info("recording")
	if got := errOut.String(); got != "2026-01-02T03:04:05Z  \"level\"=0 \"msg\"=\"recording\"\n" {
		t.Errorf("text: %q", got)
	}
	if _, err := e.logger("yaml", 0); err == nil || !strings.Contains(err.Error(), `--log-format "yaml": want text or json`) {
		t.Errorf("--log-format yaml: %v", err)
	}
}

// record --rule records only the objects its CEL expression is true for:
// get says the others are unknown, excluded by the rule, never "not
// found"; a rule that does not compile is refused, naming --rule, before
// the journal is created.
func TestRecordRule(t *testing.T) {
	env := testenv.Shared(t)
	ns := env.CreateNamespace(t)
	ctx := context.Background()
	cms := dynClient(t, env.Config()).Resource(configMaps).Namespace(ns)
	kept := object("v1", "ConfigMap", ns, "kept", map[string]any{"data": map[string]any{"color": "blue"}})
	kept.SetLabels(map[string]string{"record": "yes"})
	for _, cm := range []*unstructured.Unstructured{kept, object("v1", "ConfigMap", ns, "skipped", map[string]any{"data": map[string]any{"color": "red"}})} {
		if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	const rule = `has(object.metadata.labels) && has(object.metadata.labels.record) && object.metadata.labels.record == "yes"`
	journal := filepath.Join(t.TempDir(), "rule.db")
	record := []string{"--kubeconfig", env.Kubeconfig(), "--journal", journal, "--resource", "cm", "-n", ns, "--status-every", "0"}

	if r := runLive(t, append(record, "record", "--rule", "object.metadata.name ==")...); r.code != exitUsage || !strings.HasPrefix(r.stderr, "kubectl krply: error: --rule: ") {
		t.Errorf("record --rule that does not compile: exit %d\n%s", r.code, r.stderr)
	}
	if names, _ := filepath.Glob(journal + "*"); len(names) > 0 {
		t.Fatalf("the refused record left %q", names)
	}

	out, stop := startRecord(t, append(record, "--rule", rule)...)
	waitFor(t, "sync", 2*time.Minute, func() bool { return strings.Contains(out.String(), "synced:") })
	if r := stop(); r.code != exitOK {
		t.Fatalf("record stopped with exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := runLive(t, "--journal", journal, "get", "cm/kept", "-n", ns, "-o", "jsonpath={.data.color}"); r.code != exitOK || r.stdout != "blue" {
		t.Errorf("get cm/kept: exit %d, %q\n%s", r.code, r.stdout, r.stderr)
	}
	r := runLive(t, "--journal", journal, "get", "cm/skipped", "-n", ns)
	if r.code != exitError || !strings.Contains(r.stderr, "unknown at") || !strings.Contains(r.stderr, "excluded by rule") || !strings.Contains(r.stderr, rule) || strings.Contains(r.stderr, "not found") {
		t.Errorf("get cm/skipped: exit %d\nstdout %q\nstderr %q\nwant exit 1: unknown, excluded by rule %s", r.code, r.stdout, r.stderr, rule)
	}
}
