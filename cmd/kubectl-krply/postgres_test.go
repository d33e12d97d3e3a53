package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/storage/postgres"
)

// startPostgres starts a PostgreSQL server for the test from the installed
// programs (KRPLY_PG_BIN, the PATH, or Debian's /usr/lib/postgresql; `make
// test` installs them with hack/postgres.sh) on a free loopback port, and
// returns a connection URL with a password, which the server (trust
// authentication) ignores and the plugin must not print. It fails the test
// when PostgreSQL cannot start; it never skips. (storage/postgres's own
// harness is internal to that module.)
func startPostgres(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("KRPLY_PG_BIN")
	if bin == "" {
		if p, err := exec.LookPath("initdb"); err == nil {
			bin = filepath.Dir(p)
		} else if dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin"); len(dirs) > 0 {
			bin = dirs[len(dirs)-1]
		}
	}
	if bin == "" {
		t.Fatal("PostgreSQL is required and its programs were not found: run hack/postgres.sh or set KRPLY_PG_BIN")
	}
	attr := &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	dir, err := os.MkdirTemp("", "kubectl-krply-pg-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if os.Geteuid() == 0 { // initdb and postgres refuse root
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatalf("running as root, and no user postgres to run PostgreSQL as: %v", err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		attr.Credential = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "krply", "--auth=trust", "--no-sync")
	initdb.Dir, initdb.SysProcAttr = dir, attr
	if out, err := initdb.CombinedOutput(); err != nil {
		t.Fatalf("initdb: %v\n%s", err, out)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	var log testenv.Buffer
	server := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=", "-c", "fsync=off")
	server.Dir, server.SysProcAttr, server.Stdout, server.Stderr = dir, attr, &log, &log
	if err := server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = server.Process.Signal(syscall.SIGINT)
		_ = server.Wait()
	})
	dsn := fmt.Sprintf("postgres://krply:s3cret@127.0.0.1:%d/postgres?sslmode=disable", port)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		store, err := postgres.Open(ctx, dsn)
		if err == nil {
			store.Close()
			return dsn
		}
		if ctx.Err() != nil {
			t.Fatalf("PostgreSQL not ready: %v\n%s", err, log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// record and the queries take a PostgreSQL connection URL for --journal:
// record writes the history there (printing the URL without its
// password), and history and get answer from it, while it records and
// after it stopped.
func TestPostgresJournal(t *testing.T) {
	env := testenv.Start(t)
	ns := env.CreateNamespace(t)
	dsn := startPostgres(t)
	ctx := context.Background()
	cms := dynClient(t, env.Config()).Resource(configMaps).Namespace(ns)
	if _, err := cms.Create(ctx, object("v1", "ConfigMap", ns, "settings", map[string]any{"data": map[string]any{"color": "blue"}}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out, stop := startRecord(t, "--kubeconfig", env.Kubeconfig(), "--journal", dsn, "--resource", "cm", "-n", ns, "--status-every", "0")
	waitFor(t, "sync", 2*time.Minute, func() bool { return strings.Contains(out.String(), "synced:") })
	if text := out.String(); strings.Contains(text, "s3cret") || !strings.Contains(text, "into postgres://krply:xxxxx@127.0.0.1:") {
		t.Errorf("record's output names the journal with its password or not at all:\n%s", text)
	}
	settings, err := cms.Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(settings.Object, "green", "data", "color")
	if _, err := cms.Update(ctx, settings, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var last result
	waitFor(t, "the change in PostgreSQL", time.Minute, func() bool {
		last = runLive(t, "--journal", dsn, "history", "cm/settings", "-n", ns)
		return last.code == exitOK && strings.Contains(last.stdout, "data.color: blue → green")
	}, &last)
	if r := stop(); r.code != exitOK || !strings.Contains(r.stdout, "stopped; final status:") {
		t.Fatalf("record stopped with exit %d:\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	if r := runLive(t, "--journal", dsn, "get", "cm/settings", "-n", ns, "-o", "jsonpath={.data.color}"); r.code != exitOK || r.stdout != "green" {
		t.Errorf("get from PostgreSQL after the stop: exit %d, %q\n%s", r.code, r.stdout, r.stderr)
	}
	if r := runLive(t, "record", "--journal", dsn, "--disk-reserve", "1Mi"); r.code != exitUsage || !strings.Contains(r.stderr, "--disk-reserve") {
		t.Errorf("--disk-reserve with PostgreSQL: exit %d\n%s", r.code, r.stderr)
	}
}
