package main

import (
	"context"
	"encoding/pem"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/krply/krply/cel"
	"github.com/krply/krply/server"
	"github.com/krply/krply/storage/sqlite"
)

// serve serves a copy of the journal at path through the query API, with
// writes (snapshots, plans) allowed and the token "secret".
func serve(t *testing.T, path string, opts ...server.Option) string {
	t.Helper()
	copyPath, _ := copyJournal(t, path, "served.db")
	return serveFile(t, copyPath, append([]server.Option{server.WithClock(clocktesting.NewFakePassiveClock(now)), server.WithConditions(cel.Conditions())}, opts...)...)
}

// serveFile serves the journal at path through the query API.
func serveFile(t *testing.T, path string, opts ...server.Option) string {
	t.Helper()
	store, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	opts = append([]server.Option{server.WithWrites(), server.WithTokenFile(tokens)}, opts...)
	srv := httptest.NewServer(server.NewHandler(store, opts...))
	t.Cleanup(srv.Close)
	return srv.URL
}

// --server gives the same output, errors and exit codes as --journal for
// every command the query API answers.
func TestServerSameAsJournal(t *testing.T) {
	j := shopJournal(t)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte("secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"status"}, {"status", "-o", "wide"}, {"status", "-o", "json"},
		{"gaps"}, {"gaps", "-o", "yaml"}, {"gaps", "--since", stamp(50)},
		{"get", "deploy/web", "-n", "shop", "--at", stamp(15), "-o", "yaml"},
		{"get", "cm/settings", "-n", "shop", "--at", stamp(60)},
		{"get", "cm/debug", "-n", "shop", "--at", stamp(90)},
		{"get", "deploy/nope", "-n", "shop", "--at", stamp(15)},
		{"history", "deploy/web", "-n", "shop"},
		{"history", "deploy/web", "-n", "shop", "-o", "json"},
		{"history", "configmaps/settings", "-n", "shop", "-o", "wide"},
		{"history", "deploy/web", "-n", "shop", "--ignore-status"},
		{"history", "cm/debug", "-n", "shop"},
		{"history", "deploy/nope", "-n", "shop"},
		{"history", "widgets/web", "-n", "shop"},
		{"blame", "deploy/web", "-n", "shop"},
		{"diff", "-n", "shop", "--from", stamp(5), "--to", stamp(35)},
		{"diff", "-n", "shop", "--from", stamp(5), "--to", stamp(60), "-o", "json"},
		{"diff", "-n", "shop", "--from", stamp(5), "--to", stamp(35), "-o", "unified"},
		{"snapshot", "-n", "shop", "--at", stamp(35), "-o", "yaml"},
		{"snapshot", "-A", "--at", stamp(60), "--require-complete"},
		{"replay", "plan", "-n", "shop", "--at", stamp(60)},
		{"find", `object.data.color != "white"`, "-A", "--first"},
		{"find", "object.spec.replicas > 1", "-n", "shop", "--resource", "deploy", "-o", "yaml"},
		{"find", "object.spec.replicas >", "-n", "shop"},
		{"history", "deploy/web", "-n", "shop", "--filter", `actor.user == "alice"`},
		{"history", "cm/settings", "-n", "shop", "--filter", `change.type == "DELETED"`},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			url := serve(t, j)
			want := runPlugin(t, append([]string{"--journal", j}, args...)...)
			got := runPlugin(t, append([]string{"--server", url, "--token-file", tokenFile}, args...)...)
			if got != want {
				t.Errorf("--server answers differently from --journal:\n--journal: exit %d\n%s%s\n--server: exit %d\n%s%s", want.code, want.stdout, want.stderr, got.code, got.stdout, got.stderr)
			}
		})
	}
}

// A replay plan saved through the API prints the same plan, and the plan
// loaded back is the one saved.
func TestServerReplayPlan(t *testing.T) {
	j := shopJournal(t)
	url := serve(t, j, server.WithPlannerOptions(testPlanOptions(t)...))
	args := []string{"replay", "plan", "-n", "shop", "--at", stamp(35), "--to-namespace", "shop-restore"}
	want := runPlugin(t, append([]string{"--journal", j}, args...)...)
	got := runPlugin(t, append([]string{"--server", url, "--token", "secret"}, args...)...)
	if got != want {
		t.Errorf("replay plan through --server:\n%s%s\nthrough --journal:\n%s%s", got.stdout, got.stderr, want.stdout, want.stderr)
	}
	noToken := runPlugin(t, append([]string{"--server", url}, args...)...)
	if noToken.code != exitError || !strings.Contains(noToken.stderr, "unauthenticated") {
		t.Errorf("--server without a token: exit %d\n%s", noToken.code, noToken.stderr)
	}
	if r := runPlugin(t, "--server", url, "--token", "secret", "audit", "ingest", "audit.log"); r.code != exitUsage || !strings.Contains(r.stderr, "--journal") {
		t.Errorf("audit ingest through --server: exit %d, want 2 naming --journal\n%s", r.code, r.stderr)
	}
	if r := runPlugin(t, "--server", url, "--journal", j, "status"); r.code != exitUsage {
		t.Errorf("--server with --journal: exit %d, want 2", r.code)
	}
}

// A history longer than the server's page is read page after page: the
// same as --journal.
func TestServerHistoryPages(t *testing.T) {
	j := shopJournal(t)
	url := serve(t, j, server.WithMaxPageSize(2))
	for _, args := range [][]string{
		{"history", "deploy/web", "-n", "shop"},
		{"history", "deploy/web", "-n", "shop", "-o", "json"},
		{"history", "configmaps/settings", "-n", "shop", "-o", "wide"},
	} {
		want := runPlugin(t, append([]string{"--journal", j}, args...)...)
		got := runPlugin(t, append([]string{"--server", url, "--token", "secret"}, args...)...)
		if got != want || strings.Count(want.stdout, "\n") < 4 {
			t.Errorf("%s through --server with pages of 2:\n%s%s\nthrough --journal:\n%s%s", strings.Join(args, " "), got.stdout, got.stderr, want.stdout, want.stderr)
		}
	}
}

// --request-timeout bounds each request to --server, as it bounds
// kubectl's to the API server: a query API that takes the connection and
// never answers fails the command after it, naming the flag, instead of
// hanging. A value that is no duration is refused.
func TestServerRequestTimeout(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		var held []net.Conn // accepted, never answered
		defer func() {
			for _, c := range held {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			held = append(held, c)
		}
	}()
	url := "http://" + l.Addr().String()
	start := time.Now()
	got := runPlugin(t, "status", "--server", url, "--request-timeout", "500ms")
	if took := time.Since(start); took > 10*time.Second {
		t.Fatalf("status against a server that never answers took %v with --request-timeout 500ms", took)
	}
	if got.code != exitError || !strings.Contains(got.stderr, "--request-timeout") || !strings.Contains(got.stderr, url) {
		t.Errorf("status against a server that never answers: exit %d, stderr %q; want an error naming %s and --request-timeout", got.code, got.stderr, url)
	}
	bad := runPlugin(t, "status", "--server", url, "--request-timeout", "soon")
	if bad.code != exitUsage || !strings.Contains(bad.stderr, "--request-timeout") {
		t.Errorf("--request-timeout soon: exit %d, stderr %q; want a usage error naming the flag", bad.code, bad.stderr)
	}
}

// --disable-compression (kubectl's flag) asks the query API for plain
// answers; without it the plugin accepts gzip, as Go's HTTP client does.
func TestServerDisableCompression(t *testing.T) {
	copyPath, _ := copyJournal(t, shopJournal(t), "served.db")
	store, err := sqlite.Open(context.Background(), copyPath)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	h := server.NewHandler(store)
	var asked atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Store(r.Header.Get("Accept-Encoding"))
		h.ServeHTTP(w, r)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		flags []string
		want  string
	}{{nil, "gzip"}, {[]string{"--disable-compression"}, "identity"}} {
		got := runPlugin(t, append([]string{"status", "--server", srv.URL}, tc.flags...)...)
		if got.code != 0 {
			t.Fatalf("status --server %v: exit %d, %s", tc.flags, got.code, got.stderr)
		}
		if enc, _ := asked.Load().(string); enc != tc.want {
			t.Errorf("status --server %v asked Accept-Encoding %q, want %q", tc.flags, enc, tc.want)
		}
	}
}

// A query API over HTTPS with a certificate of a private authority is
// trusted with --certificate-authority, or without checking it with
// --insecure-skip-tls-verify (kubectl's flags for its --server). Without
// either the error says which flag to give; a file without a certificate
// is refused.
func TestServerCertificateAuthority(t *testing.T) {
	j := shopJournal(t)
	copyPath, _ := copyJournal(t, j, "served.db")
	store, err := sqlite.Open(context.Background(), copyPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	srv := httptest.NewUnstartedServer(server.NewHandler(store, server.WithClock(clocktesting.NewFakePassiveClock(now))))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes
	srv.StartTLS()
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	ca := filepath.Join(dir, "ca.crt")
	if err := os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	notCA := filepath.Join(dir, "not-a-ca")
	if err := os.WriteFile(notCA, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := runPlugin(t, "--journal", j, "status")
	for _, tc := range []struct {
		flags  []string
		code   int
		stderr string
	}{
		{nil, exitError, "--certificate-authority FILE"},
		{[]string{"--certificate-authority", ca}, exitOK, ""},
		{[]string{"--insecure-skip-tls-verify"}, exitOK, ""},
		{[]string{"--certificate-authority", notCA}, exitUsage, "--certificate-authority " + notCA + ": no PEM certificate"},
		{[]string{"--certificate-authority", filepath.Join(dir, "missing")}, exitUsage, "--certificate-authority"},
		{[]string{"--certificate-authority", ca, "--insecure-skip-tls-verify"}, exitUsage, "not both"},
	} {
		got := runPlugin(t, append([]string{"status", "--server", srv.URL}, tc.flags...)...)
		if got.code != tc.code || !strings.Contains(got.stderr, tc.stderr) || tc.code == exitOK && got.stdout != want.stdout {
			t.Errorf("status --server %s %v: exit %d, stdout %q, stderr %q; want exit %d, the journal's status, stderr with %q", srv.URL, tc.flags, got.code, got.stdout, got.stderr, tc.code, tc.stderr)
		}
	}
}
