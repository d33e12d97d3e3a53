package soak

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	_ "modernc.org/sqlite"

	"github.com/krply/krply"
	"github.com/krply/krply/event"
	"github.com/krply/krply/krplytest/testenv"
	"github.com/krply/krply/storage"
)

// recorderBin is the recorder operators run, kubectl-krply (a nested
// module), built once for the package's tests into binDir (TestMain
// removes it).
var (
	binDir      string
	recorderBin struct {
		once sync.Once
		path string
		err  error
	}
)

// buildRecorder returns the path of the recorder, building it on first use.
func buildRecorder(t *testing.T) string {
	t.Helper()
	recorderBin.once.Do(func() {
		bin := filepath.Join(binDir, "kubectl-krply")
		build := exec.Command("go", "build", "-o", bin, ".")
		build.Dir = "../../../cmd/kubectl-krply"
		// The plugin's module resolves the core module through the repository's go.work.
		work, err := filepath.Abs("../../../go.work")
		if err != nil {
			recorderBin.err = err
			return
		}
		build.Env = append(os.Environ(), "GOWORK="+work)
		if out, err := build.CombinedOutput(); err != nil {
			recorderBin.err = fmt.Errorf("go build: %v\n%s", err, out)
			return
		}
		recorderBin.path = bin
	})
	if recorderBin.err != nil {
		t.Fatal(recorderBin.err)
	}
	return recorderBin.path
}

// startLimited starts cmd with its files limited to fileBytes each
// (RLIMIT_FSIZE, inherited by the child; this process's limit is restored
// at once): a write past it fails with EFBIG, as on a full disk.
func startLimited(t *testing.T, cmd *exec.Cmd, fileBytes uint64) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Fatal(err)
	}
	limited := syscall.Rlimit{Cur: fileBytes, Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limited); err != nil {
		t.Fatal(err)
	}
	err := cmd.Start()
	if rerr := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); rerr != nil {
		t.Fatal(rerr)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// A recorder whose disk fills stops with the store's error instead of
// recording on silently, and leaves a journal that is intact and claims no
// coverage past its last durable record.
func TestDiskFull(t *testing.T) {
	env := testenv.Shared(t)
	dir := t.TempDir()
	bin := buildRecorder(t)
	ns := env.CreateNamespace(t)
	store := filepath.Join(dir, "krply.db")
	var out testenv.Buffer
	rec := exec.Command(bin, "record", "--kubeconfig", env.Kubeconfig(), "--journal", store, "--resource", "cm", "--namespace", ns, "--status-every", "0")
	rec.Stdout, rec.Stderr = &out, &out
	startLimited(t, rec, 3<<20)
	exited := make(chan error, 1)
	go func() { exited <- rec.Wait() }()
	defer func() { _ = rec.Process.Kill() }()

	dyn, err := dynamic.NewForConfig(env.Config())
	if err != nil {
		t.Fatal(err)
	}
	cms := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(ns)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var exitErr error
	created := 0
	for stopped := false; !stopped; {
		select {
		case exitErr = <-exited:
			stopped = true
			continue
		case <-ctx.Done():
			t.Fatalf("the recorder still runs after %d ConfigMaps of 64 KiB on a 3 MiB disk:\n%s", created, out.String())
		case <-time.After(50 * time.Millisecond):
		}
		if created < 400 {
			cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
				"metadata": map[string]any{"name": fmt.Sprintf("big-%03d", created)}, "data": map[string]any{"blob": randomHex(64 << 10)}}}
			if _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			created++
		}
	}
	var ee *exec.ExitError
	if exitErr == nil || !errors.As(exitErr, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("the recorder exited with %v, want exit code 1\n%s", exitErr, out.String())
	}
	if text := out.String(); !strings.Contains(text, "store failed") {
		t.Fatalf("the recorder's last words do not name the store:\n%s", text)
	}
	t.Logf("the recorder stopped after %d ConfigMaps: %s", created, lastLine(out.String()))

	// The journal is intact and honest about where its evidence ends.
	db, err := sql.Open("sqlite", "file:"+store+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	var check string
	if err := db.QueryRow(`PRAGMA integrity_check`).Scan(&check); err != nil || check != "ok" {
		t.Fatalf("integrity_check = %q, %v", check, err)
	}
	db.Close()
	j, err := krply.Open(ctx, store, krply.WithReadOnly())
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	streams, err := j.Store().Streams(ctx, "")
	if err != nil || len(streams) != 1 {
		t.Fatalf("streams %+v, %v", streams, err)
	}
	st := streams[0]
	cov, err := storage.CoverageAt(ctx, j.Store(), st.StreamID, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if cov.Covered || !strings.Contains(cov.Reason, "not yet observed") {
		t.Fatalf("coverage now = %+v, want not covered: not yet observed", cov)
	}
	page, err := j.Store().Records(ctx, storage.Query{StreamID: st.StreamID, Types: []event.RecordType{event.TypeEvent}, Limit: 1000, WithoutBodies: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Records) == 0 || len(page.Records) >= created {
		t.Fatalf("%d object records of %d ConfigMaps created, want some, not all", len(page.Records), created)
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// randomHex returns 2n hex digits of random bytes: data no other body
// shares, which compresses to about half.
func randomHex(n int) string {
	b := make([]byte, n/2)
	for i := range b {
		b[i] = byte(rand.UintN(256))
	}
	return fmt.Sprintf("%x", b)
}
