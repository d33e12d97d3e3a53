// Package pgtest runs a real PostgreSQL server for the tests of
// storage/postgres, in the manner of krplytest/testenv: the installed server
// programs (initdb, postgres) started on a temporary folder and a free
// loopback port, stopped when the tests are done.
//
// # Programs
//
// The programs are found on PATH, else in Debian's
// /usr/lib/postgresql/<version>/bin (the newest version), else in the folder
// named by KRPLY_PG_BIN. hack/postgres.sh installs Debian's postgresql
// package when they are missing; `make test` runs it first. When PostgreSQL
// cannot be started the test fails, naming hack/postgres.sh; it never skips.
//
// # Running as root
//
// initdb and postgres refuse to run as root. When the test runs as root
// (a container, a CI job as root) the server runs as the unprivileged user
// "postgres" (which Debian's package creates), else "nobody": its folder is
// made theirs and the programs are started with that user's credentials
// (syscall.Credential, no setpriv or sudo needed).
//
// # Usage
//
//	func TestMain(m *testing.M) { os.Exit(pgtest.RunMain(m)) }
//
//	func TestX(t *testing.T) {
//		dsn := pgtest.NewDatabase(t) // a fresh, empty database
//		…
//	}
//
// The server is started on first use (1–2 s) and shared by the tests of the
// package; it runs without fsync (a test server: speed over durability
// across a machine crash, which no test needs).
package pgtest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// Server is a running PostgreSQL server.
type Server struct {
	dir  string
	port int
	cmd  *exec.Cmd
	done chan struct{}
	logf *os.File
}

// superuser is the role initdb makes; it authenticates with trust on
// loopback only.
const superuser = "krply"

// DSN returns the connection string of database db on the server.
func (s *Server) DSN(db string) string {
	return fmt.Sprintf("postgres://%s@127.0.0.1:%d/%s?sslmode=disable", superuser, s.port, db)
}

// Programs returns the folder holding initdb and postgres.
func Programs() (string, error) {
	if dir := os.Getenv("KRPLY_PG_BIN"); dir != "" {
		return dir, checkPrograms(dir)
	}
	if p, err := exec.LookPath("initdb"); err == nil {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			p = real
		}
		if dir := filepath.Dir(p); checkPrograms(dir) == nil {
			return dir, nil
		}
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return version(dirs[i]) > version(dirs[j]) })
	for _, dir := range dirs {
		if checkPrograms(dir) == nil {
			return dir, nil
		}
	}
	return "", errors.New("pgtest: PostgreSQL server programs (initdb, postgres) not found on PATH, in /usr/lib/postgresql/*/bin or in $KRPLY_PG_BIN; run hack/postgres.sh to install them")
}

func version(binDir string) int {
	v, _ := strconv.Atoi(filepath.Base(filepath.Dir(binDir)))
	return v
}

func checkPrograms(dir string) error {
	for _, p := range []string{"initdb", "postgres"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			return fmt.Errorf("pgtest: %s: %w", p, err)
		}
	}
	return nil
}

// runAs returns the credentials to run the server programs with: nil when
// the test does not run as root, else those of an unprivileged user.
func runAs() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	for _, name := range []string{"postgres", "nobody"} {
		u, err := user.Lookup(name)
		if err != nil {
			continue
		}
		uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
		gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
		if err1 != nil || err2 != nil || uid == 0 {
			continue
		}
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), NoSetGroups: true}, nil
	}
	return nil, errors.New("pgtest: running as root and neither user postgres nor nobody exists to run PostgreSQL as (initdb and postgres refuse root); create one or run the tests as another user")
}

// Start initializes a database cluster in a new temporary folder and starts
// a server on a free loopback port. Stop stops it and removes the folder.
func Start() (*Server, error) {
	bin, err := Programs()
	if err != nil {
		return nil, err
	}
	cred, err := runAs()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "krply-pg-")
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s := &Server{dir: dir, done: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(dir)
		}
	}()
	data := filepath.Join(dir, "data")
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			return nil, fmt.Errorf("pgtest: giving %s to uid %d: %w", dir, cred.Uid, err)
		}
	}
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", superuser, "--auth=trust",
		"--encoding=UTF8", "--locale=C", "--no-sync")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	initdb.Dir = dir
	if out, err := initdb.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pgtest: initdb: %w\n%s", err, out)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s.port = port
	s.logf, err = os.Create(filepath.Join(dir, "postgres.log"))
	if err != nil {
		return nil, fmt.Errorf("pgtest: %w", err)
	}
	s.cmd = exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port),
		"-c", "listen_addresses=127.0.0.1", "-c", "unix_socket_directories=",
		"-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off",
		"-c", "max_connections=200", "-c", "shared_buffers=128MB")
	s.cmd.Dir = dir
	s.cmd.Stdout, s.cmd.Stderr = s.logf, s.logf
	// The server dies with the test process, also when that is killed.
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("pgtest: starting postgres: %w", err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	if err := s.waitReady(30 * time.Second); err != nil {
		_ = s.Stop()
		return nil, err
	}
	ok = true
	return s, nil
}

func (s *Server) waitReady(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return fmt.Errorf("pgtest: postgres exited at start:\n%s", s.log())
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.DSN("postgres"))
		if err == nil {
			_ = conn.Close(ctx)
			cancel()
			return nil
		}
		cancel()
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("pgtest: postgres not ready after %s: %v\n%s", timeout, last, s.log())
}

func (s *Server) log() string {
	b, _ := os.ReadFile(filepath.Join(s.dir, "postgres.log"))
	return string(b)
}

// Stop stops the server (a fast shutdown) and removes its folder.
func (s *Server) Stop() error {
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	}
	if s.logf != nil {
		_ = s.logf.Close()
	}
	return os.RemoveAll(s.dir)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("pgtest: finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

var (
	sharedMu  sync.Mutex
	shared    *Server
	sharedErr error
	dbs       atomic.Int64
)

// RunMain runs the tests of a package and stops the shared server after
// them. Call it from TestMain.
func RunMain(m *testing.M) int {
	code := m.Run()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared != nil {
		if err := shared.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "pgtest: stopping the server:", err)
		}
	}
	return code
}

// Shared returns the package's server, starting it on first use. It fails
// the test when PostgreSQL cannot be started; it never skips.
func Shared(t testing.TB) *Server {
	t.Helper()
	sharedMu.Lock()
	defer sharedMu.Unlock()
	if shared == nil && sharedErr == nil {
		shared, sharedErr = Start()
	}
	if sharedErr != nil {
		t.Fatalf("PostgreSQL is required for these tests and could not be started: %v", sharedErr)
	}
	return shared
}

// NewDatabase creates a fresh database on the shared server and returns
// its connection string. The database is dropped when the test ends.
func NewDatabase(t testing.TB) string {
	t.Helper()
	s := Shared(t)
	name := fmt.Sprintf("krply_%d_%d", os.Getpid(), dbs.Add(1))
	if err := s.exec(context.Background(), "CREATE DATABASE "+name); err != nil {
		t.Fatalf("pgtest: %v", err)
	}
	t.Cleanup(func() {
		_ = s.exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	})
	return s.DSN(name)
}

func (s *Server) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.DSN("postgres"))
	if err != nil {
		return fmt.Errorf("connecting to the server: %w", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		return fmt.Errorf("%s: %w", strings.Fields(sql)[0], err)
	}
	return nil
}
