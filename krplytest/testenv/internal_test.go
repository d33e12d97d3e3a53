package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeTB records what Start reports instead of ending the test.
type fakeTB struct {
	fatal, skip string
	cleanups    []func()
}

func (f *fakeTB) Helper()                         {}
func (f *fakeTB) Name() string                    { return "TestFake" }
func (f *fakeTB) Cleanup(fn func())               { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) Failed() bool                    { return f.fatal != "" }
func (f *fakeTB) Logf(format string, args ...any) {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.fatal = fmt.Sprintf(format, args...)
}
func (f *fakeTB) Skipf(format string, args ...any) {
	f.skip = fmt.Sprintf(format, args...)
}

var _ TB = (*testing.T)(nil)

// Missing binaries are a skip by default and a failure under
// KRPLY_REQUIRE_TESTENV; both messages name `make testbin` and say what is
// missing.
func TestStartWithoutBinaries(t *testing.T) {
	empty := t.TempDir()
	half := t.TempDir()
	if err := os.WriteFile(filepath.Join(half, "etcd"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, assets, require string
		wantFatal             bool
		wantInMessage         string
	}{
		{"unset, skip", "", "", false, "KUBEBUILDER_ASSETS is not set"},
		{"empty folder, skip", empty, "0", false, "lacks etcd and kube-apiserver"},
		{"empty folder, required", empty, "1", true, "lacks etcd and kube-apiserver"},
		{"no kube-apiserver, required", half, "true", true, "lacks kube-apiserver"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(AssetsEnv, tc.assets)
			t.Setenv(RequireEnv, tc.require)
			tb := &fakeTB{}
			if env := Start(tb); env != nil {
				t.Fatal("Start returned an environment without binaries")
			}
			msg := tb.skip
			if tc.wantFatal {
				msg = tb.fatal
				if tb.skip != "" {
					t.Errorf("skipped (%q), want a failure", tb.skip)
				}
			} else if tb.fatal != "" {
				t.Errorf("failed (%q), want a skip", tb.fatal)
			}
			if !strings.Contains(msg, "make testbin") || !strings.Contains(msg, tc.wantInMessage) {
				t.Errorf("message %q does not name `make testbin` and %q", msg, tc.wantInMessage)
			}
			if len(tb.cleanups) != 0 {
				t.Errorf("Start registered %d cleanups without starting anything", len(tb.cleanups))
			}
		})
	}
}

func TestMergeFlags(t *testing.T) {
	defaults := []string{"--etcd-servers=http://e", "--watch-cache=true", "--profiling=false"}
	got, err := mergeFlags(defaults, []string{"--watch-cache=false", "--v=4", "--watch-cache-sizes=configmaps#0", "--v=2"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--etcd-servers=http://e", "--watch-cache=false", "--profiling=false", "--v=2", "--watch-cache-sizes=configmaps#0"}
	if !slices.Equal(got, want) {
		t.Errorf("mergeFlags = %q, want %q", got, want)
	}
	for _, bad := range []string{"--etcd-servers=http://other", "--secure-port=6443", "watch-cache=false", "-v=2"} {
		if _, err := mergeFlags(defaults, []string{bad}); err == nil {
			t.Errorf("mergeFlags accepted %q", bad)
		}
	}
}

func TestNamespaceName(t *testing.T) {
	for _, test := range []string{"TestX", "TestUsers/viewer_can't_write", strings.Repeat("TestLong", 20), "___"} {
		name := namespaceName(test)
		if len(name) > 63 || strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789-") != "" ||
			strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") {
			t.Errorf("namespaceName(%q) = %q, not a DNS label", test, name)
		}
	}
	if a, b := namespaceName("TestX"), namespaceName("TestX"); a == b {
		t.Errorf("namespaceName is not unique: %q twice", a)
	}
}

const spawnHelperEnv = "KRPLY_TESTENV_SPAWN_HELPER"

// TestChildDiesWithParent re-runs the test binary as a helper that starts a
// long sleep through startChild and exits at once; on Linux the sleep must
// be killed with it, as etcd and kube-apiserver are when a test binary
// panics or times out.
func TestChildDiesWithParent(t *testing.T) {
	if os.Getenv(spawnHelperEnv) == "1" {
		p := &process{name: "sleep", path: "/bin/sleep", args: []string{"60"}, logPath: filepath.Join(os.TempDir(), "krply-spawn-helper.log")}
		if err := p.start(); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Printf("pid=%d\n", p.cmd.Process.Pid)
		os.Exit(0)
	}
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux only")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestChildDiesWithParent$")
	cmd.Env = append(os.Environ(), spawnHelperEnv+"=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v: %s", err, out)
	}
	var pid int
	if _, err := fmt.Sscanf(string(out), "pid=%d", &pid); err != nil {
		t.Fatalf("helper printed %q: %v", out, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			t.Fatalf("child %d outlived its parent by 10s", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// alive reports whether pid runs (a zombie does not count).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		return stat[i+2] != 'Z' && stat[i+2] != 'X'
	}
	return true
}

// WithStartTimeout bounds Start: with binaries that never come up, Start
// fails once the bound has passed instead of after the default two minutes,
// and leaves no process behind.
func TestStartTimeout(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"etcd", "kube-apiserver"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\nexec sleep 600\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(AssetsEnv, dir)
	t.Setenv(RequireEnv, "1")
	tb := &fakeTB{}
	begin := time.Now()
	if env := Start(tb, WithStartTimeout(300*time.Millisecond)); env != nil {
		t.Fatal("Start returned an environment from binaries that never start")
	}
	took := time.Since(begin)
	if tb.fatal == "" {
		t.Fatalf("Start did not fail (skip %q)", tb.skip)
	}
	if took > 30*time.Second {
		t.Errorf("Start failed after %v, want about the 300ms bound", took)
	}
	t.Logf("Start failed after %v: %s", took, tb.fatal)
}
